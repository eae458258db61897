"""Every foreseeable bad input or environment ends as one message from the real `specops` CLI:
the documented exit code, the file, field or path named, and no traceback (unless --debug).

One row per class; each runs `python -m cli` in a subprocess and stops before Prefect starts
(a row that got past its check would run the flow: the timeout bounds that mistake).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# Each row is a fresh interpreter (3-6 s): slow, though no service is started.
pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[3]
EXIT_PROFILE, EXIT_PREREQUISITES = 2, 4


def closed_port() -> int:
    """A port nothing listens on (the kernel's pick, released at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Case:
    args: list[str]
    code: int
    names: list[str]  # what stderr must name: the file, the field, the path, the fix
    files: dict[str, bytes | str] = field(default_factory=dict)  # written under tmp first
    env: dict[str, str] = field(default_factory=dict)


PROFILE = "include: {include}\nname: bad-include\n"
NESTED = "benchmark:\n  output_tokens: 8\n  num_requests: 3\n  num_requests: 4\n"
PROMPTS = '{"text": "def f():"}\n{"question": "no text field"}\n'
OTHER_TARGET = f"include: {REPO_ROOT / 'profiles' / 'ngram-local.yaml'}\nname: other\ntarget:\n  source: {{tmp}}/model\n"
PREFECT_PROFILES = 'active = "gone"\n[profiles.gone]\nPREFECT_API_URL = "http://127.0.0.1:{port}/api"\n'

CASES = {
    # 1. a directory, or bytes that are not text, where a profile is expected
    "profile is a directory": Case(["plan", "{tmp}/somedir.yaml"], EXIT_PROFILE, ["somedir.yaml", "is a directory"],
                                   files={"somedir.yaml/x": ""}),
    "profile is binary": Case(["plan", "{tmp}/bin.yaml"], EXIT_PROFILE, ["bin.yaml", "not a text file"],
                              files={"bin.yaml": b"\x00\xff\xfe\x01 binary"}),
    # 2. include: of the wrong type
    "include is a number": Case(["plan", "{tmp}/p.yaml"], EXIT_PROFILE, ["p.yaml", "include:", "list of file names"],
                                files={"p.yaml": PROFILE.format(include="5")}),
    "include lists a non-string": Case(["plan", "{tmp}/p.yaml"], EXIT_PROFILE, ["p.yaml", "include:", "got ['a.yaml', 3]"],
                                       files={"p.yaml": PROFILE.format(include="[a.yaml, 3]")}),
    # 3. a duplicate key, nested, in an included file
    "duplicate key in an include": Case(
        ["plan", "{tmp}/p.yaml"], EXIT_PROFILE, ["frag.yaml", "num_requests", "line 3", "line 4"],
        files={"frag.yaml": NESTED, "p.yaml": "include: frag.yaml\nname: dup\n"}),
    # 4. a boolean where a count or a number goes
    "boolean count": Case(["plan", "ngram-local", "--set", "benchmark.num_requests=true"], EXIT_PROFILE,
                          ["benchmark.num_requests", "got the boolean true"]),
    "boolean in a backend config": Case(["plan", "ngram-local", "--set", "backend.threads=false"], EXIT_PROFILE,
                                        ["backend.threads", "got the boolean false"]),
    # 5. timeouts are finite and sane
    "infinite timeout": Case(["plan", "ngram-local", "--set", "serving.ready_timeout_s=.inf"], EXIT_PROFILE,
                             ["serving.ready_timeout_s", "finite"]),
    "absurd timeout": Case(["plan", "ngram-local", "--set", "benchmark.timeout_s=100000"], EXIT_PROFILE,
                           ["benchmark.timeout_s", "86400"]),
    # 6. a malformed prompt file
    "prompt line without text": Case(["plan", "ngram-local", "--set", "benchmark.prompts={tmp}/prompts.jsonl"],
                                     EXIT_PROFILE, ["benchmark.prompts", "prompts.jsonl, line 2", "no prompt field"],
                                     files={"prompts.jsonl": PROMPTS}),
    "binary prompt file": Case(["plan", "ngram-local", "--set", "benchmark.prompts={tmp}/b.jsonl"], EXIT_PROFILE,
                               ["benchmark.prompts", "b.jsonl, line 1", "not UTF-8"], files={"b.jsonl": b"\xff\xfe\x00"}),
    # 7. an address servers cannot bind
    "host not of this machine": Case(["run", "ngram-local", "--set", "serving.host=192.0.2.1"], EXIT_PROFILE,
                                     ["serving.host", "192.0.2.1", "not an address of this machine"]),
    "host unresolvable": Case(["run", "ngram-local", "--set", "serving.host=no-such-host.invalid"], EXIT_PROFILE,
                              ["serving.host", "cannot be resolved"]),
    # 8. artifact and cache roots
    "cache root is a file": Case(["run", "ngram-local"], EXIT_PREREQUISITES, ["SPECOPS_CACHE={tmp}/f", "not a directory"],
                                 files={"f": "x"}, env={"SPECOPS_CACHE": "{tmp}/f"}),
    "artifacts under a file": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                   ["SPECOPS_ARTIFACTS={tmp}/f/artifacts", "is a file"],
                                   files={"f": "x"}, env={"SPECOPS_ARTIFACTS": "{tmp}/f/artifacts"}),
    "lock directory is a file": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                     ["SPECOPS_LOCK_DIR={tmp}/f", "not a directory"],
                                     files={"f": "x"}, env={"SPECOPS_LOCK_DIR": "{tmp}/f"}),
    "a variable that does not parse": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                           ["SPECOPS_MIN_FREE_MB='abc'", "valid integer", "specops settings"],
                                           env={"SPECOPS_MIN_FREE_MB": "abc"}),
    # 9. --run-id
    "run id with a separator": Case(["run", "ngram-local", "--run-id", "../outside"], EXIT_PROFILE,
                                    ["--run-id '../outside'", "letters, digits"]),
    "run id already used": Case(["run", "ngram-local", "--run-id", "taken"], EXIT_PROFILE,
                                ["{tmp}/artifacts/ngram-local/taken", "already exists", "omit it"],
                                files={"artifacts/ngram-local/taken/report.md": "a finished run"}),
    # 10. a configured Prefect API that nothing answers
    "prefect api from the environment": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                             ["PREFECT_API_URL=http://127.0.0.1:{port}/api", "the environment",
                                              "make up"], env={"PREFECT_API_URL": "http://127.0.0.1:{port}/api"}),
    "prefect api from a profile": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                       ["profile 'gone'", "PREFECT_HOME={tmp}/prefect",
                                        "prefect config unset PREFECT_API_URL"],
                                       files={"prefect/profiles.toml": PREFECT_PROFILES}),
    # 11. an hf:// source, not cached, and no hub
    "hub unreachable": Case(["run", "ngram-local", "--set", "target.source=hf://specops-test/absent"],
                            EXIT_PREREQUISITES, ["target.source", "hf://specops-test/absent", "cannot be reached"],
                            env={"HF_ENDPOINT": "http://127.0.0.1:{port}"}),
    # 12. (issue 28) what reaches Prefect, a database or a long sweep before it is checked
    "compare-profiles of one profile": Case(["compare-profiles", "ngram-local"], EXIT_PROFILE,
                                            ["compare-profiles", "two profiles or more"]),
    "compare-profiles of two targets": Case(["compare-profiles", "ngram-local", "{tmp}/other.yaml"], EXIT_PROFILE,
                                            ["one target model", "other: {tmp}/model"],
                                            files={"other.yaml": OTHER_TARGET, "model/config.json": "{}",
                                                   "model/tokenizer.json": "{}"}),
    "compare an unknown run": Case(["compare", "no-such-run", "nor-this"], EXIT_PROFILE,
                                   ["'no-such-run'", "specops history"]),
    "sweep K with an empty item": Case(["sweep", "ngram-local", "--k", "1,,2"], EXIT_PROFILE,
                                       ["--k", "'1,,2'", "positive whole numbers"]),
    # issue 38: n-gram knobs and the replay's settings as a sweep's series, refused before any work
    "sweep n-gram min above the method's bound": Case(["sweep", "ngram-local", "--ngram-min", "17"], EXIT_PROFILE,
                                                      ["--ngram-min", "[17]", "takes 1 to 16"]),
    "sweep n-gram min above every max": Case(["sweep", "ngram-local", "--ngram-min", "4", "--ngram-max", "2,3"],
                                             EXIT_PROFILE, ["--ngram-min/--ngram-max", "prompt_lookup_min >"]),
    "sweep n-gram value twice": Case(["sweep", "ngram-local", "--ngram-max", "3,3"], EXIT_PROFILE,
                                     ["--ngram-max", "[3] given more than once"]),
    "sweep n-gram knobs of a suffix profile": Case(["sweep", "suffix-vllm-serve-cpu", "--ngram-max", "3"],
                                                   EXIT_PROFILE, ["--ngram-max", "a knob of method 'ngram'",
                                                                  "'suffix'"]),
    "sweep from the replay with --k": Case(["sweep", "ngram-local", "--from-replay", "2", "--k", "1"], EXIT_PROFILE,
                                           ["--from-replay", "drop --k"]),
    "sweep from the replay of too many": Case(["sweep", "ngram-local", "--from-replay", "17"], EXIT_PROFILE,
                                              ["--from-replay", "'17'", "from 0 to 16"]),
    "sweep from the replay of a method without one": Case(["sweep", "eagle-vllm-nested", "--from-replay", "2"],
                                                          EXIT_PROFILE, ["--from-replay", "'eagle'", "has no replay"]),
    "history with a negative limit": Case(["history", "-n", "-5"], EXIT_PROFILE, ["--limit", "'-5'", "1 or more"]),
    "sweep of 352 cells": Case(["sweep", "ngram-local", "--k", ",".join(map(str, range(1, 12))), "--concurrency",
                                ",".join(map(str, range(1, 33)))], EXIT_PROFILE, ["352 cells", "--max-cells 64"]),
    "local target without a tokenizer": Case(["run", "ngram-local", "--set", "target.source={tmp}/model"],
                                             EXIT_PROFILE, ["target.source", "{tmp}/model lacks a tokenizer"],
                                             files={"model/config.json": "{}"}),
    "results database down": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                  ["cannot open the results database at postgresql://specops@127.0.0.1:{port}/x",
                                   "server is running"],
                                  env={"SPECOPS_RESULTS_URL": "postgresql://specops@127.0.0.1:{port}/x"}),
    "results file not a database": Case(["history"], EXIT_PREREQUISITES,
                                        ["{tmp}/r.db is not a readable SQLite database", "move it aside"],
                                        files={"r.db": "not SQLite\n" * 200},
                                        env={"SPECOPS_RESULTS_URL": "sqlite:///{tmp}/r.db"}),
    "prefect api answering 500": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                      ["PREFECT_API_URL=http://127.0.0.1:{http500}/api", "answers HTTP 500"],
                                      env={"PREFECT_API_URL": "http://127.0.0.1:{http500}/api"}),
    "prefect api of version 2": Case(["run", "ngram-local"], EXIT_PREREQUISITES,
                                     ["PREFECT_API_URL=http://127.0.0.1:{prefect2}/api", "is a Prefect 2.19.9 server"],
                                     env={"PREFECT_API_URL": "http://127.0.0.1:{prefect2}/api"}),
    # issue 51: every flow command checks its environment and its run id before Prefect starts, as `run` does
    **{f"{args[0]} with a results file that is not a database": Case(
        args, EXIT_PREREQUISITES, ["{tmp}/r.db is not a readable SQLite database", "move it aside"],
        files={"r.db": "not SQLite\n" * 200}, env={"SPECOPS_RESULTS_URL": "sqlite:///{tmp}/r.db"})
       for args in (["calibrate", "ngram-local", "--runs", "2"], ["compare-profiles", "ngram-local", "draft-target-local"],
                    ["sweep", "ngram-local", "--k", "1", "--concurrency", "1"],
                    ["upgrade-check", "ngram-local", "--after", "backend.threads=2"])},
    **{f"{args[0]} with a run id that leaves its directory": Case(
        [*args, "--run-id", "../esc"], EXIT_PROFILE, ["--run-id '../esc'", "no '..'"])
       for args in (["calibrate", "ngram-local", "--runs", "2"], ["sweep", "ngram-local", "--k", "1"],
                    ["upgrade-check", "ngram-local", "--after", "backend.threads=2"])},
    **{f"{args[0]} with a run id taken": Case(
        [*args, "--run-id", "taken"], EXIT_PROFILE, ["--run-id 'taken'", f"{{tmp}}/artifacts/{where}/taken"],
        files={f"artifacts/{where}/taken/report.md": "an earlier run's\n"})
       for args, where in ((["calibrate", "ngram-local", "--runs", "2"], "calibrate/ngram-local"),
                           (["sweep", "ngram-local", "--k", "1"], "ngram-local"),
                           (["upgrade-check", "ngram-local", "--after", "backend.threads=2"], "upgrade/ngram-local"))},
    # beyond the list: a profile name with a typo
    "profile name typo": Case(["plan", "ngram-lcal"], EXIT_PROFILE, ["did you mean 'ngram-local'?"]),
    "unknown --set key": Case(["plan", "ngram-local", "--set", "benchmark.requests=3"], EXIT_PROFILE,
                              ["benchmark.requests", "unknown key", "num_requests"]),
}


def specops(args: list[str], tmp: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "HF_"))}
    env.update(SPECOPS_ARTIFACTS=str(tmp / "artifacts"), SPECOPS_CACHE=str(tmp / "cache"),
               PREFECT_HOME=str(tmp / "prefect"), HF_HOME=str(tmp / "hf-home"))
    env.update(extra_env)
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


class _Answers(BaseHTTPRequestHandler):
    """A server at PREFECT_API_URL that is not a Prefect 3 API: it fails every request, or says version 2."""

    def do_GET(self):  # noqa: N802 - http.server's name
        version = self.server.version  # type: ignore[attr-defined]
        status, body = (500, b"Internal Server Error") if version is None else \
            (200, b"true" if self.path.endswith("/health") else f'"{version}"'.encode())
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _serve(version: str | None) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    server.version = version  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def answering() -> dict[str, str]:
    servers = {"{http500}": _serve(None), "{prefect2}": _serve("2.19.9")}
    yield {key: str(server.server_port) for key, server in servers.items()}
    for server in servers.values():
        server.shutdown()


def materialize(case: Case, tmp: Path, ports: dict[str, str] | None = None) -> tuple[list[str], dict[str, str],
                                                                                   list[str]]:
    port = str(closed_port())

    def fill(text: str) -> str:
        text = text.replace("{tmp}", str(tmp)).replace("{port}", port)
        for key, value in (ports or {}).items():
            text = text.replace(key, value)
        return text

    for rel, content in case.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(fill(content))
    return [fill(a) for a in case.args], {k: fill(v) for k, v in case.env.items()}, [fill(n) for n in case.names]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, answering) -> dict[str, tuple[subprocess.CompletedProcess, list[str], Path]]:
    """Every row's CLI run, two at a time (each is seconds of interpreter start-up and imports)."""
    def one(name: str):
        tmp = tmp_path_factory.mktemp(name.replace(" ", "-").replace("/", "-"))
        args, env, names = materialize(CASES[name], tmp, answering)
        return name, (specops(args, tmp, env), names, tmp)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, CASES))


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_message(name, outcomes):
    proc, names, tmp_path = outcomes[name]
    assert proc.returncode == CASES[name].code, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout and "unexpected" not in proc.stderr
    for expected in names:
        assert expected in proc.stderr, f"{expected!r} not in:\n{proc.stderr}"
    assert not (tmp_path / "prefect" / "prefect.db").exists(), "Prefect started"


def test_debug_shows_the_traceback(tmp_path):
    args, env, _ = materialize(CASES["profile is binary"], tmp_path)
    proc = specops(["--debug", *args], tmp_path, env)
    assert proc.returncode == EXIT_PROFILE
    assert "Traceback" in proc.stderr and "not a text file" in proc.stderr


def test_a_reader_that_stops_early_ends_the_output_quietly(tmp_path):
    """`specops plan X | head`: the closed pipe is the reader's choice, not an error to print."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(SPECOPS_CACHE=str(tmp_path / "cache"), DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    proc = subprocess.Popen([sys.executable, "-m", "cli", "plan", "eagle3-trtllm"], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # The reader is gone before the plan is printed (the interpreter's imports take seconds): every write
    # meets a closed pipe, as `| head` does to a plan longer than the pipe's buffer.
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and stderr == "", stderr
