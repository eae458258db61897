"""config.pbtxt from Triton's ModelConfig proto: round trip and the vLLM backend's I/O contract."""
import json

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from specops.triton import vllm_io
from specops.triton.model_config import (
    parse_pbtxt,
    python_generate_config,
    set_string_parameters,
    to_pbtxt,
    write_pbtxt,
)


def _config(**kw):
    args = dict(model_dir="/models/smöl lm", method="ngram", options={"num_speculative_tokens": 4}, threads=2)
    args.update(kw)
    return python_generate_config("spec", **args)


def test_round_trip_is_lossless():
    config = _config()
    assert parse_pbtxt(to_pbtxt(config)) == config


def test_pbtxt_keeps_utf8_readable_and_quotes_escaped():
    text = to_pbtxt(_config(model_dir='/a "quoted" dir/é'))
    assert "é" in text
    assert parse_pbtxt(text).parameters[vllm_io.PARAM_MODEL_DIR].string_value == '/a "quoted" dir/é'


def test_parse_rejects_unknown_fields():
    with pytest.raises(text_format.ParseError):
        parse_pbtxt('name: "x"\nbogus_field: 3\n')


def test_vllm_io_contract_matches_vllm_backend():
    config = _config()
    inputs = {i.name: i for i in config.input}
    assert list(inputs) == ["text_input", "stream", "sampling_parameters", "exclude_input_in_output"]
    expected = {
        "text_input": (mc.TYPE_STRING, False),
        "stream": (mc.TYPE_BOOL, True),
        "sampling_parameters": (mc.TYPE_STRING, True),
        "exclude_input_in_output": (mc.TYPE_BOOL, True),
    }
    for name, (dtype, optional) in expected.items():
        assert inputs[name].data_type == dtype, name
        assert list(inputs[name].dims) == [1], name
        assert inputs[name].optional is optional, name
    (output,) = config.output
    assert (output.name, output.data_type, list(output.dims)) == ("text_output", mc.TYPE_STRING, [-1])
    assert config.model_transaction_policy.decoupled is True
    assert config.max_batch_size == 0
    assert config.backend == "python"
    (group,) = config.instance_group
    assert (group.kind, group.count) == (mc.ModelInstanceGroup.KIND_CPU, 1)


def test_engine_settings_travel_as_string_parameters():
    params = {k: v.string_value for k, v in _config().parameters.items()}
    assert params == {
        vllm_io.PARAM_MODEL_DIR: "/models/smöl lm",
        vllm_io.PARAM_METHOD: "ngram",
        vllm_io.PARAM_METHOD_OPTIONS: json.dumps({"num_speculative_tokens": 4}),
        vllm_io.PARAM_THREADS: "2",
        vllm_io.PARAM_ADAPTIVE: "false",
    }
    assert _config(adaptive_draft_length=True).parameters[vllm_io.PARAM_ADAPTIVE].string_value == "true"
    assert _config(engine="pkg.mod:Engine").parameters[vllm_io.PARAM_ENGINE].string_value == "pkg.mod:Engine"


def test_invalid_threads_and_non_string_parameters_are_refused():
    with pytest.raises(ValueError):
        _config(threads=0)
    with pytest.raises(TypeError):
        set_string_parameters(mc.ModelConfig(), {"threads": 2})


def test_write_pbtxt(tmp_path):
    path = write_pbtxt(_config(), tmp_path / "spec")
    assert path == tmp_path / "spec" / "config.pbtxt"
    assert parse_pbtxt(path.read_text()) == _config()
