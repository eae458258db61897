"""Backend vllm-serve (specops.backends.vllm.serve, vllm_config.VllmServeBackendConfig): serve.yaml in the spelling
vLLM's --config loader reads, the server command for a container and a process launch, read-back only on
loopback, and the images it runs.

The loader is vllm/utils/argparse_utils.py FlexibleArgumentParser.load_config_file (vLLM 0.32.0): a boolean
false becomes `--no-<key>` only if that option exists under the YAML key as written, so `enforce_eager: false`
is dropped and `enforce-eager: false` is kept. The slow test runs that loader from the vLLM CPU venv.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.serve import (
    ALIAS,
    CONFIG_NAME,
    DEV_MODE,
    PER_REQUEST_FLAGS,
    VllmServeBackend,
    config_text,
)
from specops.bench.target import Api
from specops.pipeline.backend import backend_for
from specops.profile.errors import ProfileError
from specops.run.variant import Variant, base_method, variants_of

GPU, CPU = "ngram-vllm-serve", "ngram-vllm-serve-cpu"


def _variants(profile) -> dict:
    return {v.name: v for v in variants_of(profile.method, profile.comparison.baseline)}


def _backend(load_gpu_profile, name: str, overrides=()) -> tuple[VllmServeBackend, dict]:
    profile = load_gpu_profile(name, overrides)
    backend = backend_for(profile)
    assert isinstance(backend, VllmServeBackend)
    return backend, _variants(profile)


def _args(backend: VllmServeBackend, variant) -> dict:
    """What the engine-args renderer gives for the variant (the source serve.yaml is written from)."""
    return backend.rendered_args(variant, backend.place(variant, None, None))


# --- serve.yaml spelling ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [GPU, CPU])
@pytest.mark.parametrize("variant_name", ["speculative", "base"])
def test_serve_yaml_dashes_top_level_keys_and_keeps_nested_ones(load_gpu_profile, name, variant_name):
    backend, variants = _backend(load_gpu_profile, name)
    variant = variants[variant_name]
    args = _args(backend, variant)
    text = backend.all_files(variant, None, None)[CONFIG_NAME]
    doc = yaml.safe_load(text)
    assert list(doc) == [key.replace("_", "-") for key in args]  # every key, in the renderer's order
    assert not any("_" in key for key in doc)
    for key, value in args.items():
        assert doc[key.replace("_", "-")] == value  # nested dicts unchanged: speculative_config keys keep "_"
    spec = doc.get("speculative-config")
    assert (spec is not None) == (variant_name == "speculative")
    if spec is not None:
        assert spec == args["speculative_config"] and all("-" not in key for key in spec)


def test_enforce_eager_false_is_written_in_the_flag_spelling(load_gpu_profile):
    backend, variants = _backend(load_gpu_profile, CPU, ("backend.engine_args.enforce_eager=false",))
    text = backend.all_files(variants["speculative"], None, None)[CONFIG_NAME]
    assert yaml.safe_load(text)["enforce-eager"] is False
    assert "enforce_eager" not in text


def test_config_text_keeps_values_and_nested_keys():
    args = {"model": "/m", "enforce_eager": False, "max_model_len": 2048, "gpu_memory_utilization": 0.9,
            "speculative_config": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4},
            "override_generation_config": {"max_new_tokens": 8}}
    doc = yaml.safe_load(config_text(args))
    assert doc == {key.replace("_", "-"): value for key, value in args.items()}


VLLM_PYTHON = vllm_cpu.venv().python

PARSE = """
import json, sys
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = make_arg_parser(FlexibleArgumentParser())
out = {}
for path in sys.argv[1:]:
    ns = vars(parser.parse_args(["--config", path]))
    out[path] = {"argv": parser.load_config_file(path), "parsed": ns}
print("RESULT " + json.dumps(out, default=str))
"""


@pytest.mark.slow  # imports vLLM (~20 s on this host)
@pytest.mark.skipif(not VLLM_PYTHON.is_file(), reason=f"no vLLM CPU venv at {VLLM_PYTHON.parent.parent} "
                    "(`make install`): the test runs vLLM's own --config loader")
def test_vllms_config_loader_reads_every_rendered_key(load_gpu_profile, tmp_path):
    """serve.yaml as rendered, read by vLLM 0.32.0's parser: every key arrives with its value, enforce_eager
    false included; the same file with the engine-arg spelling loses it (why the renderer dashes keys)."""
    backend, variants = _backend(load_gpu_profile, CPU, (
        "backend.engine_args.enforce_eager=false", "backend.engine_args.max_num_seqs=8",
        "backend.engine_args.enable_prefix_caching=false", "backend.gpu_memory_utilization=0.5"))
    variant = variants["speculative"]
    args = _args(backend, variant)
    ours = tmp_path / "ours" / CONFIG_NAME
    ours.parent.mkdir()
    ours.write_text(backend.all_files(variant, None, None)[CONFIG_NAME])
    underscored = tmp_path / "underscored" / CONFIG_NAME
    underscored.parent.mkdir()
    underscored.write_text(yaml.safe_dump(args, sort_keys=False))
    done = subprocess.run([str(VLLM_PYTHON), "-I", "-c", PARSE, str(ours), str(underscored)], capture_output=True,
                          text=True, timeout=300, env=vllm_cpu.venv().environment() | {"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.rsplit("RESULT ", 1)[1])
    parsed = result[str(ours)]["parsed"]
    assert "--no-enforce-eager" in result[str(ours)]["argv"]
    for key, value in args.items():
        assert parsed[key] == value, (key, parsed[key], value)
    falses = [key for key, value in args.items() if value is False]
    assert set(falses) == {"enforce_eager", "enable_prefix_caching"}
    for key in falses:
        assert f"--no-{key.replace('_', '-')}" in result[str(ours)]["argv"]
        assert f"--no-{key.replace('_', '-')}" not in result[str(underscored)]["argv"]  # dropped
    # enable_prefix_caching's default is None (the engine decides: on); the dropped false never reaches it
    assert result[str(underscored)]["parsed"]["enable_prefix_caching"] is None


@pytest.mark.slow  # imports vLLM (~20 s on this host)
@pytest.mark.skipif(not VLLM_PYTHON.is_file(), reason=f"no vLLM CPU venv at {VLLM_PYTHON.parent.parent} "
                    "(`make install`): the test runs vLLM's own argument parser")
def test_vllms_parser_takes_the_variant_and_the_alias_as_served_names_in_order(load_gpu_profile, tmp_path):
    """vLLM 0.32.0 answers to every served name and names each answer after the first (vllm/config/model.py
    ModelConfig.served_model_name): the parser must keep both, in the order rendered."""
    backend, variants = _backend(load_gpu_profile, CPU)
    config = tmp_path / CONFIG_NAME
    config.write_text(backend.all_files(variants["base"], None, None)[CONFIG_NAME])
    args = backend.serve_args(variants["base"], str(config), backend.plan_endpoint())
    args = [a.replace("<free port>", "8000") for a in args]
    parse = ("import json, sys\nfrom vllm.entrypoints.launchers.cli_args import make_arg_parser\n"
             "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
             "ns = make_arg_parser(FlexibleArgumentParser()).parse_args(sys.argv[1:])\n"
             "print('RESULT ' + json.dumps(ns.served_model_name))\n")
    done = subprocess.run([str(VLLM_PYTHON), "-I", "-c", parse, *args], capture_output=True, text=True, timeout=300,
                          env=vllm_cpu.venv().environment() | {"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.rsplit("RESULT ", 1)[1]) == ["base", ALIAS]


# --- the command ----------------------------------------------------------------------------------------------

def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _names(argv: list[str]) -> list[str]:
    """The values of --served-model-name (vLLM's nargs="+": up to the next flag)."""
    start = argv.index("--served-model-name") + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("--")), len(argv))
    return argv[start:end]


def test_both_variants_answer_to_one_alias_and_name_themselves_in_each_answer(load_gpu_profile):
    backend, variants = _backend(load_gpu_profile, CPU)
    targets = {name: backend.bench_target(None, variant) for name, variant in variants.items()}
    assert {t.alias for t in targets.values()} == {ALIAS} and {t.model for t in targets.values()} == set(variants)
    assert all(t.apis == (Api.OPENAI_COMPLETIONS, Api.OPENAI_CHAT) for t in targets.values())
    # the data step's synthesis server is asked by its own name only (specops/draft/gpu.py)
    synthesis = Variant("synthesis", base_method())
    assert _names(backend.serve_args(synthesis, "/x", backend.plan_endpoint())) == ["synthesis"]
    assert backend.bench_target(None, synthesis).alias is None


@pytest.mark.parametrize("variant_name", ["speculative", "base"])
def test_container_command(load_gpu_profile, variant_name):
    backend, variants = _backend(load_gpu_profile, GPU)
    variant = variants[variant_name]
    endpoint = backend.plan_endpoint()
    argv = backend.command(variant, endpoint)
    assert argv[:2] == ["vllm", "serve"]
    assert _flag(argv, "--config") == f"{backend.repo_in_container}/{CONFIG_NAME}"
    assert _flag(argv, "--host") == backend.serving.host
    assert _flag(argv, "--port") == str(endpoint.http_port)
    assert _flag(argv, "--served-model-name") == variant.model_name == variant_name
    assert _names(argv) == [variant_name, ALIAS]  # its own name first: vLLM names each answer after it
    assert (PER_REQUEST_FLAGS[0] in argv) == variant.method.speculative
    if variant.method.speculative:
        assert _flag(argv, PER_REQUEST_FLAGS[0]) == PER_REQUEST_FLAGS[1]
    spec = backend.server_spec(variant, "/runs/repo", [], endpoint)
    assert spec.command == argv and spec.image == "vllm/vllm-openai:v0.32.0"
    assert any(m.target == backend.repo_in_container and m.read_only for m in spec.mounts)


@pytest.mark.parametrize("variant_name", ["speculative", "base"])
def test_process_command_is_the_cpu_venvs_server_module_with_the_same_arguments(load_gpu_profile, variant_name):
    backend, variants = _backend(load_gpu_profile, CPU)
    variant = variants[variant_name]
    serve = next(step for step in backend.plan(variant, None, None) if step.step == "serve")
    line = serve.commands[0]
    assert "docker" not in line
    config = f"{backend.run_repo(variant)}/{CONFIG_NAME}"
    args = backend.serve_args(variant, config, backend.plan_endpoint())
    # the CPU venv's server module, then exactly what the container's `vllm serve` gets
    assert line.endswith(backend.show_ports(shlex.join([*vllm_cpu.venv().server_argv(), *args])))
    in_container = backend.serve_args(variant, f"{backend.repo_in_container}/{CONFIG_NAME}", backend.plan_endpoint())
    assert backend.command(variant, backend.plan_endpoint()) == ["vllm", "serve", *in_container]
    assert [a for a in args if a != config] == [a for a in in_container if a != _flag(in_container, "--config")]
    assert vllm_cpu.venv().server_argv()[1:] == ["-m", vllm_cpu.facts()["server_module"]]
    assert _flag(args, "--config") == config and _names(args) == [variant_name, ALIAS]
    assert (PER_REQUEST_FLAGS[0] in args) == (variant_name == "speculative")
    for name in ("LD_PRELOAD", *vllm_cpu.facts()["environment"], *DEV_MODE):
        assert f"{name}=" in line


@pytest.mark.parametrize("image, per_request", [
    ("vllm/vllm-openai:v0.32.0", True),  # vLLM 0.32.0 has per_request_spec_decode_metrics
    ("vllm/vllm-openai:v0.27.1", False),
    ("vllm/vllm-openai:v0.24.0", False),
    ("nvcr.io/nvidia/tritonserver:26.08-vllm-python-py3", False),  # vLLM 0.27.1
])
def test_per_request_flags_only_where_the_version_has_them(load_gpu_profile, image, per_request):
    backend, variants = _backend(load_gpu_profile, GPU, (f"backend.image={image}",))
    has = PER_REQUEST_FLAGS[0] in backend.command(variants["speculative"], backend.plan_endpoint())
    assert has == per_request == backend.support(variants["speculative"]).per_request_metrics
    assert PER_REQUEST_FLAGS[0] not in backend.command(variants["base"], backend.plan_endpoint())


def test_per_request_flags_can_be_turned_off(load_gpu_profile):
    backend, variants = _backend(load_gpu_profile, CPU, ("backend.per_request_metrics=false",))
    assert PER_REQUEST_FLAGS[0] not in backend.serve_args(variants["speculative"], "/x", backend.plan_endpoint())


def test_extra_args_come_last_verbatim(load_gpu_profile):
    backend, variants = _backend(load_gpu_profile, GPU, ("backend.extra_args=[--max-log-len, '10']",))
    argv = backend.command(variants["speculative"], backend.plan_endpoint())
    assert argv[-2:] == ["--max-log-len", "10"]


# --- read-back: loopback only ------------------------------------------------------------------------------------

@pytest.mark.parametrize("host, reads_back", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True), ("0.0.0.0", False),
])
def test_read_back_and_dev_endpoints_only_on_loopback(load_gpu_profile, host, reads_back):
    for name in (GPU, CPU):
        backend, variants = _backend(load_gpu_profile, name, (f"serving.host={host}",))
        assert backend.reads_back() is reads_back
        env = backend.container_env(variants["speculative"])
        assert (env.get("VLLM_SERVER_DEV_MODE") == "1") is reads_back
        serve = " ".join(next(s for s in backend.plan(variants["speculative"], None, None)
                              if s.step == "serve").commands)
        assert ("VLLM_SERVER_DEV_MODE" in serve) is reads_back


def test_read_back_off_opens_no_dev_endpoints(load_gpu_profile):
    backend, variants = _backend(load_gpu_profile, GPU, ("backend.read_back=false",))
    assert backend.reads_back() is False and "VLLM_SERVER_DEV_MODE" not in backend.container_env(variants["base"])


# --- images ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("image, version", [
    ("vllm/vllm-openai:v0.32.0", "0.32.0"),
    ("nvcr.io/nvidia/tritonserver:26.08-vllm-python-py3", "0.27.1"),
])
def test_images_it_runs(load_gpu_profile, image, version):
    profile = load_gpu_profile(GPU, (f"backend.image={image}",))
    assert profile.backend.image == image and profile.backend.release() == version


@pytest.mark.parametrize("image", [
    "nvcr.io/nvidia/tritonserver:25.12-trtllm-python-py3",
    "nvcr.io/nvidia/tritonserver:26.02-py3",
])
def test_images_it_refuses_name_backend_image(load_gpu_profile, image):
    with pytest.raises(ProfileError) as err:
        load_gpu_profile(GPU, (f"backend.image={image}",))
    assert [field for field, _ in err.value.problems] == ["backend.image"]
    assert image in str(err.value) and "vllm/vllm-openai" in str(err.value)


def test_an_old_vllm_image_is_refused_for_its_acceptance_source(load_gpu_profile):
    with pytest.raises(ProfileError, match="older than 0.11.0") as err:
        load_gpu_profile(GPU, ("backend.image=nvcr.io/nvidia/tritonserver:25.02-vllm-python-py3",))
    assert [field for field, _ in err.value.problems] == ["backend.image"]


def test_process_launch_ignores_the_image_and_runs_the_cpu_engine(load_gpu_profile):
    profile = load_gpu_profile(CPU)
    assert profile.backend.in_process and profile.backend.image_info() is None
    assert profile.backend.release() == vllm_cpu.version()
    assert backend_for(profile).gpus() == "none"


def test_known_images_are_the_ones_accepted(load_gpu_profile):
    images = type(load_gpu_profile(GPU).backend).known_images()
    assert "vllm/vllm-openai:v0.32.0" in images and not any("trtllm" in i for i in images)
    assert all(i.startswith("vllm/vllm-openai:") or i.endswith("-vllm-python-py3") for i in images)


def test_process_environment_carries_no_foreign_python_settings(load_gpu_profile, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    backend, variants = _backend(load_gpu_profile, CPU)
    env = backend.process_env(variants["speculative"])
    assert "PYTHONPATH" not in env and env["PATH"].split(os.pathsep)[0] == str(vllm_cpu.venv().bin)
    assert all(Path(p).name in env["LD_PRELOAD"] for p in vllm_cpu.venv().preload())
    assert env["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"] == "600"  # idle interleaved connections stay open (vllm_cpu.yaml)


def test_each_environment_variable_set_is_one_the_installed_vllm_reads():
    """A misspelt or retired name would be set and silently ignored: each is a key of vLLM's own envs.py table."""
    envs = (vllm_cpu.venv().site_packages() / "vllm" / "envs.py").read_text(encoding="utf-8")
    for name in vllm_cpu.facts()["environment"]:
        assert f'\n    "{name}": ' in envs, name  # a key of its environment_variables dict


# --- check_served: serve.yaml against a real /server_info, over HTTP ---------------------------------------------

SERVER_INFO = Path(__file__).parent / "fixtures" / "vllm-0.32.0" / "server_info.json"


@pytest.fixture
def server_info_origin():
    """GET /server_info?config_format=json answered with the fixture a real vLLM 0.32.0 server gave (K=3)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = SERVER_INFO.read_bytes()
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            asked.append(self.path)
            if self.path != "/server_info?config_format=json":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1], asked
    httpd.shutdown()
    httpd.server_close()


def _check(load_gpu_profile, tmp_path, port, k: int):
    from types import SimpleNamespace

    from specops.triton.client import Endpoint

    # the n-gram settings the recorded server ran (max 4 given, min 4 set by vLLM; test_vllm_readback.AS_STARTED)
    backend, variants = _backend(load_gpu_profile, CPU, (f"method.num_speculative_tokens={k}",
                                                         "method.prompt_lookup_max=4", "method.prompt_lookup_min=4"))
    variant = variants["speculative"]
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / CONFIG_NAME).write_text(backend.all_files(variant, None, None)[CONFIG_NAME])
    log_path = tmp_path / "logs" / "server-speculative.log"
    log_path.parent.mkdir()
    server = SimpleNamespace(endpoint=Endpoint("127.0.0.1", port, port, port))  # what check_served reads of it
    backend.check_served(server, variant, repo, log_path)
    return log_path.with_name("server-speculative-engine-config.json")


def test_check_served_passes_what_the_server_runs_and_keeps_its_config(load_gpu_profile, tmp_path, server_info_origin):
    port, asked = server_info_origin
    kept = _check(load_gpu_profile, tmp_path, port, 3)
    assert asked == ["/server_info?config_format=json"]
    assert json.loads(kept.read_text()) == json.loads(SERVER_INFO.read_text())["vllm_config"]


def test_check_served_stops_on_what_the_server_runs_without(load_gpu_profile, tmp_path, server_info_origin):
    from specops.backends.vllm.readback import ServedConfigError

    port, _ = server_info_origin
    with pytest.raises(ServedConfigError) as err:
        _check(load_gpu_profile, tmp_path, port, 4)
    message = str(err.value)
    assert "speculative_config.num_speculative_tokens: rendered 4, the engine runs 3" in message
    assert f"http://127.0.0.1:{port}/server_info?config_format=json" in message and CONFIG_NAME in message


def test_a_null_engine_arg_never_reaches_vllm_as_the_text_none(load_gpu_profile):
    try:
        backend, variants = _backend(load_gpu_profile, CPU, ("backend.engine_args.max_num_seqs=null",))
    except ProfileError:
        return  # refused at load: as good
    doc = yaml.safe_load(backend.all_files(variants["speculative"], None, None)[CONFIG_NAME])
    assert None not in doc.values()
