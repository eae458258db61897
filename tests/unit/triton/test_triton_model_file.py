"""The Python-backend model file against a fake `triton_python_backend_utils` (no server)."""
import importlib
import json
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

FINAL = 1


class FakeTensor:
    def __init__(self, name, array):
        self.name, self.array = name, np.asarray(array)

    def as_numpy(self):
        return self.array


class FakeResponse:
    def __init__(self, output_tensors=None, error=None):
        self.outputs = {t.name: t.array for t in output_tensors or []}
        self.error = error

    @property
    def text(self):
        return self.outputs["text_output"][0].decode() if "text_output" in self.outputs else None


class FakeError:
    CANCELLED = "CANCELLED"
    UNAVAILABLE = "UNAVAILABLE"

    def __init__(self, message, code=None):
        self.message, self.code = message, code


class FakeMetric:
    def __init__(self, family, labels):
        self.family, self.labels, self.value = family, labels, 0.0

    def increment(self, value):
        assert value > 0
        self.value += value


class FakeFamily:
    COUNTER = "COUNTER"
    created = []

    def __init__(self, name, description, kind):
        self.name, self.kind, self.metrics = name, kind, []
        FakeFamily.created.append(self)

    def Metric(self, labels):  # noqa: N802 - Triton's spelling
        metric = FakeMetric(self, labels)
        self.metrics.append(metric)
        return metric


class FakeLogger:
    lines = []

    @classmethod
    def log_info(cls, msg):
        cls.lines.append(("info", msg))

    log_warn = log_error = log_info


def _fake_pb_utils():
    mod = types.ModuleType("triton_python_backend_utils")
    mod.TRITONSERVER_RESPONSE_COMPLETE_FINAL = FINAL
    mod.Tensor, mod.InferenceResponse, mod.TritonError = FakeTensor, FakeResponse, FakeError
    mod.MetricFamily, mod.Logger = FakeFamily, FakeLogger
    mod.TritonModelException = type("TritonModelException", (Exception,), {})
    mod.get_input_tensor_by_name = lambda request, name: request.inputs.get(name)
    return mod


class Sender:
    def __init__(self, cancel_after=None):
        self.sent, self.cancel_after = [], cancel_after

    def send(self, response=None, flags=0):
        assert not (self.sent and self.sent[-1][1] == FINAL), "response after the final flag"
        self.sent.append((response, flags))
        if flags == FINAL:  # what a client reading the metrics port right now would see
            self.drafts_at_final = sum(m.value for f in FakeFamily.created if f.name == "spec_decode_num_drafts"
                                       for m in f.metrics)

    def is_cancelled(self):
        return self.cancel_after is not None and len(self.sent) >= self.cancel_after


class Request:
    def __init__(self, prompt, stream=None, exclude=None, params=None, sender=None):
        self.inputs = {"text_input": FakeTensor("text_input", np.array([prompt.encode()], dtype=object))}
        if stream is not None:
            self.inputs["stream"] = FakeTensor("stream", np.array([stream]))
        if exclude is not None:
            self.inputs["exclude_input_in_output"] = FakeTensor("x", np.array([exclude]))
        if params is not None:
            self.inputs["sampling_parameters"] = FakeTensor("p", np.array([json.dumps(params).encode()], dtype=object))
        self.sender = sender or Sender()

    def get_response_sender(self):
        return self.sender


class CountingEngine:
    """Test double for DecodingEngine: yields 'w0 w1 ...' and counts like a speculative engine."""

    loaded = []

    def __init__(self):
        self.num_drafts = self.num_draft_tokens = self.num_accepted_tokens = 0
        self.num_steps = self.num_generated_tokens = 0
        self.accepted_per_position = []
        self.calls = []

    @classmethod
    def load(cls, model_dir, method, options, threads=1, adaptive_draft_length=False):
        cls.loaded.append((model_dir, method, options, threads))
        return cls()

    def generate(self, prompt, max_tokens, **kw):
        self.calls.append((prompt, max_tokens, kw))
        if "boom" in prompt:
            raise RuntimeError("engine exploded")
        for i in range(max_tokens):
            self.num_drafts += 1
            self.num_draft_tokens += 3
            self.num_accepted_tokens += 2
            self.accepted_per_position = (self.accepted_per_position + [0, 0])[:2]
            self.accepted_per_position[0] += 1
            self.accepted_per_position[1] += 1
            self.num_generated_tokens += 1
            yield f" w{i}"
            if i == 1:
                yield ""  # empty deltas are skipped


@pytest.fixture()
def model(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _fake_pb_utils())
    monkeypatch.setitem(sys.modules, "fake_engine_mod", types.SimpleNamespace(CountingEngine=CountingEngine))
    sys.modules.pop("specops.runtime.triton_model", None)
    module = importlib.import_module("specops.runtime.triton_model")
    FakeFamily.created.clear()
    params = {"model_dir": "/m", "method": "ngram", "method_options": '{"k": 3}', "threads": "2",
              "engine": "fake_engine_mod:CountingEngine"}
    config = {"parameters": {k: {"string_value": v} for k, v in params.items()}}
    instance = module.TritonPythonModel()
    instance.initialize({"model_config": json.dumps(config), "model_name": "spec", "model_version": "1"})
    yield instance
    instance.finalize()
    sys.modules.pop("specops.runtime.triton_model", None)


def run(model, requests):
    """execute() only queues (decoupled); wait until the worker has answered everything."""
    assert model.execute(requests) is None
    model._queue.join()


def test_initialize_loads_engine_from_parameters(model):
    assert CountingEngine.loaded[-1] == (Path("/m"), "ngram", {"k": 3}, 2)


def test_streamed_request_sends_deltas_then_empty_final(model):
    req = Request("hi", stream=True, params={"max_tokens": 3, "temperature": 0})
    run(model, [req])
    texts = [(r.text if r else None, f) for r, f in req.sender.sent]
    assert texts == [(" w0", 0), (" w1", 0), (" w2", 0), (None, FINAL)]
    assert model.engine.calls[-1] == ("hi", 3, {"temperature": 0.0})


def test_non_streamed_request_prepends_prompt_by_default(model):
    req = Request("hi")
    run(model, [req])
    ((response, flags),) = req.sender.sent
    assert flags == FINAL and response.text == "hi" + "".join(f" w{i}" for i in range(16))


def test_non_streamed_request_can_exclude_prompt(model):
    req = Request("hi", exclude=True, params={"max_tokens": 2})
    run(model, [req])
    assert [(r.text, f) for r, f in req.sender.sent] == [(" w0 w1", FINAL)]


def test_errors_become_error_responses_and_model_keeps_serving(model):
    bad = [Request("boom", stream=True), Request("x", params={"presence_penalty": 1}),
           Request("x", stream=True, exclude=False)]
    good = Request("ok", params={"max_tokens": 1}, exclude=True)
    run(model, [*bad, good])
    for req in bad:
        (response, flags), = req.sender.sent
        assert flags == FINAL and response.error is not None
    assert "engine exploded" in bad[0].sender.sent[0][0].error.message
    assert [(r.text, f) for r, f in good.sender.sent] == [(" w0", FINAL)]


def test_cancellation_stops_generation_with_a_cancelled_final(model):
    req = Request("hi", stream=True, params={"max_tokens": 50}, sender=Sender(cancel_after=2))
    run(model, [req])
    *data, (last, flags) = req.sender.sent
    assert len(data) == 2 and flags == FINAL and last.error.code == FakeError.CANCELLED


def test_counters_follow_the_engine(model):
    first, second = Request("a", stream=True, params={"max_tokens": 3}), Request("b", params={"max_tokens": 2})
    run(model, [first, second])
    assert (first.sender.drafts_at_final, second.sender.drafts_at_final) == (3, 5)  # updated before the final
    values = {}
    for family in FakeFamily.created:
        for metric in family.metrics:
            key = family.name + (f"[{metric.labels['position']}]" if "position" in metric.labels else "")
            values[key] = metric.value
            assert metric.labels["model"] == "spec" and metric.labels["version"] == "1"
    assert values == {
        "spec_decode_num_drafts": 5, "spec_decode_num_draft_tokens": 15,
        "spec_decode_num_accepted_tokens": 10, "spec_decode_num_emitted_tokens": 5,
        "spec_decode_num_accepted_tokens_per_pos[0]": 5, "spec_decode_num_accepted_tokens_per_pos[1]": 5,
        # The stand-in engine keeps no step count or timings: those counters exist and stay 0.
        "spec_decode_num_steps": 0, "spec_decode_draft_seconds": 0, "spec_decode_verify_seconds": 0,
    }
    assert all(f.kind == "COUNTER" for f in FakeFamily.created)


def test_metric_and_label_names_are_valid_for_triton(model):
    # Triton refuses other characters ("Invalid metric name"/"Invalid label name"), and two
    # refused MetricFamily creations in a row aborted tritonserver 2.51 here.
    for family in FakeFamily.created:
        assert re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", family.name)
        for metric in family.metrics:
            assert all(re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", k) and not k.startswith("__") for k in metric.labels)


def test_finalize_stops_an_in_flight_generation(model):
    import threading

    release = threading.Event()

    def slow_generate(prompt, max_tokens, **kw):
        for i in range(max_tokens):
            yield f" s{i}"
            release.wait(5)

    model.engine.generate = slow_generate
    req, queued = Request("hi", stream=True, params={"max_tokens": 1000}), Request("later")
    model.execute([req, queued])
    for _ in range(100):
        if req.sender.sent:
            break
        release.wait(0.01)
    threading.Timer(0.2, release.set).start()
    model.finalize()
    assert not model._worker.is_alive()
    *data, (last, flags) = req.sender.sent
    assert len(data) <= 2 and flags == FINAL and last.error.code == FakeError.UNAVAILABLE
    ((response, flags),) = queued.sender.sent
    assert flags == FINAL and response.error.code == FakeError.UNAVAILABLE
