"""Triton Python-backend model serving a DecodingEngine with the vLLM backend's I/O contract.

Copied into a model repository as `<model>/1/model.py`; runs inside the Python-backend stub with
this project's interpreter (the stub finds it through the `python3` first on PATH). Decoupled:
requests are served one after another on a worker thread; a streamed request gets one response
per text delta and then an empty response carrying the final flag, a non-streamed one a single
final response. Errors, cancellation and shutdown end a request with a TritonError response.
"""
from __future__ import annotations

import json
import os
import pkgutil
import queue
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils

from specops.triton import vllm_io

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
_FINALIZE_JOIN_S = 30.0  # an in-flight generation stops within one decode step once told to
_ORPHAN_POLL_S = 0.5

# Counter name on the metrics port -> DecodingEngine attribute (cumulative).
_COUNTERS = {
    "spec_decode_num_drafts": "num_drafts",
    "spec_decode_num_draft_tokens": "num_draft_tokens",
    "spec_decode_num_accepted_tokens": "num_accepted_tokens",
    "spec_decode_num_emitted_tokens": "num_generated_tokens",
    "spec_decode_num_steps": "num_steps",
    "spec_decode_draft_seconds": "draft_seconds",
    "spec_decode_verify_seconds": "verify_seconds",
}
_PER_POSITION = "spec_decode_num_accepted_tokens_per_pos"


def _optional_input(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy().reshape(-1)[0]


class TritonPythonModel:
    def initialize(self, args):
        # Watched from the start: a server stopped while its model loads leaves a stub that ignores SIGTERM.
        threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), name="specops-orphan", daemon=True).start()
        self.logger = pb_utils.Logger
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        engine_class = pkgutil.resolve_name(params.get(vllm_io.PARAM_ENGINE, vllm_io.DEFAULT_ENGINE))
        # Optional settings reach the engine only when set, so engines without them still load.
        optional = {}
        if vllm_io.PARAM_RELAXED_TOPK in params:
            optional["relaxed_topk"] = int(params[vllm_io.PARAM_RELAXED_TOPK])
        self.engine = engine_class.load(
            Path(params[vllm_io.PARAM_MODEL_DIR]),
            params[vllm_io.PARAM_METHOD],
            json.loads(params.get(vllm_io.PARAM_METHOD_OPTIONS) or "{}"),
            threads=int(params.get(vllm_io.PARAM_THREADS, "1")),
            adaptive_draft_length=params.get(vllm_io.PARAM_ADAPTIVE, "false") == "true",
            **optional,
        )
        self.metrics = _SpecMetrics({"model": args["model_name"], "version": args["model_version"]})
        # Requests are generated one at a time on a worker thread, so the stub's main thread
        # stays free: finalize() (server shutdown, unload) then reaches us mid-generation and
        # stops it within one decode step instead of hanging shutdown until it completes.
        self._queue: queue.Queue = queue.Queue()
        self._stopping = threading.Event()
        self._worker = threading.Thread(target=self._work, name="specops-generate", daemon=True)
        self._worker.start()
        self.logger.log_info(f"[specops] engine ready: {params}")

    def execute(self, requests):
        for request in requests:
            self._queue.put(request)
        return None

    def finalize(self):
        self._stopping.set()
        self._queue.put(None)
        self._worker.join(timeout=_FINALIZE_JOIN_S)
        self.logger.log_info("[specops] finalized")

    def _work(self):
        while True:
            request = self._queue.get()
            try:
                if request is None:
                    return
                self._serve(request)
            finally:
                self._queue.task_done()

    def _serve(self, request):
        sender = request.get_response_sender()
        try:
            if self._stopping.is_set():
                raise _Abort("the model is shutting down", pb_utils.TritonError.UNAVAILABLE)
            final = self._generate(request, sender)
        except _Abort as abort:
            self.logger.log_info(f"[specops] request aborted: {abort.message}")
            final = pb_utils.InferenceResponse(error=pb_utils.TritonError(abort.message, abort.code))
        except Exception as exc:  # one bad request never takes the model down
            self.logger.log_error(f"[specops] request failed: {traceback.format_exc()}")
            final = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
        # Counters first: a client reading the metrics port after the final response sees them.
        try:
            self.metrics.update(self.engine)
        except Exception:
            self.logger.log_error(f"[specops] metrics update failed: {traceback.format_exc()}")
        try:
            sender.send(final, flags=FINAL)
        except Exception:  # the request may be gone
            self.logger.log_warn(f"[specops] could not send final response: {traceback.format_exc()}")

    def _generate(self, request, sender):
        """Stream deltas (if asked); return the final response (None: an empty final)."""
        prompt = _optional_input(request, "text_input")
        prompt = prompt.decode("utf-8") if isinstance(prompt, bytes) else str(prompt)
        stream = bool(_optional_input(request, "stream") or False)
        exclude = _optional_input(request, "exclude_input_in_output")
        prepend = vllm_io.prepend_prompt(stream, None if exclude is None else bool(exclude))
        kwargs = vllm_io.parse_sampling_parameters(_optional_input(request, "sampling_parameters"))
        pieces = [prompt] if prepend else []
        for delta in self.engine.generate(prompt, **kwargs):
            if sender.is_cancelled():
                raise _Abort("Request was cancelled", pb_utils.TritonError.CANCELLED)
            if self._stopping.is_set():
                raise _Abort("the model is shutting down", pb_utils.TritonError.UNAVAILABLE)
            if not delta:
                continue
            if stream:
                sender.send(_text_response(delta))
            else:
                pieces.append(delta)
        return None if stream else _text_response("".join(pieces))


def _exit_when_orphaned(server_pid: int) -> None:
    """Hard-exit the stub once tritonserver is gone.

    A stub whose server was SIGKILLed with a decoupled request in flight was seen to live on
    indefinitely (its own parent check never fired); nothing can be answered any more anyway.
    """
    while os.getppid() == server_pid:
        time.sleep(_ORPHAN_POLL_S)
    sys.stderr.write(f"[specops] tritonserver {server_pid} is gone; stub {os.getpid()} exits\n")
    sys.stderr.flush()
    os._exit(1)


class _Abort(Exception):
    def __init__(self, message: str, code):
        super().__init__(message)
        self.message, self.code = message, code


def _text_response(text: str):
    tensor = pb_utils.Tensor("text_output", np.array([text.encode("utf-8")], dtype=np.object_))
    return pb_utils.InferenceResponse(output_tensors=[tensor])


class _SpecMetrics:
    """Engine counters mirrored into Triton custom metrics (COUNTER families)."""

    def __init__(self, labels: dict[str, str]):
        self.labels = labels
        self.seen: dict[str, float] = {}
        self.counters = {}
        self.families = []  # a MetricFamily must outlive its Metrics, or increments fail
        try:
            for name in _COUNTERS:
                family = pb_utils.MetricFamily(name, f"speculative decoding: {name}", pb_utils.MetricFamily.COUNTER)
                self.families.append(family)
                self.counters[name] = family.Metric(labels=labels)
            self.per_pos_family = pb_utils.MetricFamily(
                _PER_POSITION, "accepted draft tokens per draft position", pb_utils.MetricFamily.COUNTER
            )
        except pb_utils.TritonModelException as exc:  # metrics disabled on the server
            pb_utils.Logger.log_warn(f"[specops] custom metrics unavailable: {exc}")
            self.counters, self.families, self.per_pos_family = {}, [], None
        self.per_pos = []

    def update(self, engine) -> None:
        for name, attr in _COUNTERS.items():
            self._bump(name, self.counters.get(name), float(getattr(engine, attr, 0) or 0))
        if self.per_pos_family is None:
            return
        for pos, value in enumerate(getattr(engine, "accepted_per_position", None) or []):
            while len(self.per_pos) <= pos:
                labels = dict(self.labels, position=str(len(self.per_pos)))
                self.per_pos.append(self.per_pos_family.Metric(labels=labels))
            self._bump(f"{_PER_POSITION}/{pos}", self.per_pos[pos], float(value))

    def _bump(self, key: str, metric, total: float) -> None:
        delta = total - self.seen.get(key, 0.0)
        self.seen[key] = total
        if metric is not None and delta > 0:
            metric.increment(delta)
