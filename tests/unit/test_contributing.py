"""CONTRIBUTING.md's recipes work as written: every file and name they give exists, and each recipe, followed
with a toy plugin, yields a profile that loads, validates and plans (or a flow that deploys).

A recipe is followed in a copy of the sources (tmp_path): the toy's files are written, and the files the
recipe says to edit get the toy's entry appended, each checked to be one that recipe names. The copy runs in
its own interpreter, so the registries, the profile schema built from them at import, and prefect.yaml are
the edited ones, as they would be in a checkout, and this process's modules stay untouched.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "CONTRIBUTING.md"
# The project's packages (as pyproject.toml installs them) and its profiles.
COPIED = (*(name.rstrip("*") for name in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                                                   ["packages"]["find"]["include"]), "profiles")
# A backticked span that names a file or folder of the repository, optionally `path::NAME`.
PATH = re.compile(r"^((?:[\w.<>-]+/)+(?:[\w.<>-]+\.(?:py|ya?ml|json|md|toml))?|[\w.-]+\.(?:md|ya?ml|toml)|Makefile)"
                  r"(?:::(\w+))?$")
RECIPES = ("A backend", "A method", "A benchmark tool", "A flow")


def recipe(title: str) -> str:
    sections = re.split(r"^## ", DOC.read_text(), flags=re.M)
    (text,) = [s for s in sections if s.startswith(title + "\n")]
    return text


def named(text: str) -> list[tuple[str, str | None]]:
    """(path, name or None) for every file the text names, in order."""
    spans = re.findall(r"`([^`]*)`", text)
    return [(m[1], m[2]) for s in spans if (m := PATH.match(s.strip()))]


def names_path(text: str, path: str) -> bool:
    """Whether the recipe names `path` (or a folder it is in), a `<placeholder>` standing for any name."""
    patterns = [re.escape(p).replace(re.escape("<"), "<").replace(re.escape(">"), ">") for p, _ in named(text)]
    return any(re.fullmatch(re.sub(r"<[^>]*>", r"[\\w-]+", p) + (".+" if p.endswith("/") else ""), path)
               for p in patterns)


def test_the_recipes_are_there_and_readme_links_them():
    assert [t for t in RECIPES if recipe(t)] == list(RECIPES)
    assert "(CONTRIBUTING.md)" in (ROOT / "README.md").read_text()
    for title in RECIPES:  # a checklist, each step numbered, one screen
        steps = re.findall(r"^(\d+)\. ", recipe(title), flags=re.M)
        assert steps == [str(i) for i in range(1, len(steps) + 1)] and len(steps) >= 5, title
        assert len(recipe(title).splitlines()) <= 40, title


@pytest.mark.parametrize("title", ["", *RECIPES])
def test_every_file_and_name_a_recipe_gives_exists(title):
    text = recipe(title) if title else DOC.read_text().split("\n## ")[0]
    found = named(text)
    assert found or not title
    for path, name in found:
        if "<" in path:  # a file the contributor creates: its folder exists
            folder = ROOT / path[:path.index("<")].rpartition("/")[0]
            assert folder.is_dir(), f"{title}: {path}: no folder {folder}"
            continue
        assert (ROOT / path).exists(), f"{title}: no {path}"
        if name:
            source = (ROOT / path).read_text()
            assert re.search(rf"^(?:class |def )?{name}\b", source, flags=re.M), f"{title}: {path} defines no {name}"


def test_placeholders_match_the_files_they_stand_for():
    text = recipe("A backend")
    assert names_path(text, "specops/backends/toy/backend.py") and names_path(text, "specops/backends/toy/config.py")
    assert names_path(text, "specops/backends/toy/__init__.py") and not names_path(text, "specops/backends/toy.py")
    assert names_path(text, "specops/backends/__init__.py")
    assert not names_path(text, "specops/profile/schema.py/x") and not names_path(text, "specops/bench/tool.py")
    assert names_path(recipe("A flow"), "specops/toy/__init__.py") and not names_path(recipe("A flow"), "specops")


def follow(tmp_path: Path, title: str, edits: dict[str, str]) -> Path:
    """A copy of the sources with `edits` applied: new files written, existing ones appended to. Each edited
    file must be one the recipe names."""
    text = recipe(title)
    repo = tmp_path / "repo"
    for top in COPIED:
        shutil.copytree(ROOT / top, repo / top, ignore=shutil.ignore_patterns("__pycache__"))
    for path, content in edits.items():
        assert names_path(text, path), f"{title} does not name {path}, which the toy had to edit"
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        before = target.read_text() if target.exists() else ""
        target.write_text(before + "\n" + textwrap.dedent(content).lstrip())
    return repo


def run_in(repo: Path, tmp_path: Path, *parts: str) -> dict:
    """Run the script `parts` make in a fresh interpreter on the copy; it prints one JSON object."""
    env = {**os.environ, "PYTHONPATH": str(repo), "SPECOPS_CACHE": str(tmp_path / "cache"),
           "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("SPECOPS_PROFILES", None)
    prelude = f"import json, specops\nassert specops.__file__.startswith({str(repo)!r}), specops.__file__\n"
    done = subprocess.run([sys.executable, "-c", "\n".join([prelude, *map(textwrap.dedent, parts)])], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# Refusals as `specops plan` prints them, one per profile and overrides.
REFUSE = """
def refused(name, overrides):
    from specops.profile.errors import ProfileError
    from specops.profile.loader import load_profile
    try:
        load_profile(name, overrides)
    except ProfileError as err:
        return str(err)
    return None
"""

TOY_BACKEND = {
    "specops/backends/toy/__init__.py": '''
        """The toy engine family."""
    ''',
    "specops/backends/toy/config.py": '''
        """Config of the toy backend: one OpenAI-completions server, n-gram or plain."""
        from __future__ import annotations

        from typing import ClassVar, Literal

        from pydantic import Field

        from specops.backends.spec import BackendConfig, FieldError
        from specops.fields import Count

        METHODS = frozenset({"none", "ngram"})


        class ToyBackendConfig(BackendConfig):
            kind: Literal["toy"] = "toy"
            summary: ClassVar[str] = "a toy server"
            workers: Count = Field(1, ge=1, le=8, description="server workers")

            def resolve(self, method):
                if method.kind not in METHODS:
                    raise FieldError("method.kind", f"toy serves {', '.join(sorted(METHODS))}")
                return {"speculation": method.kind, "draft_tokens": method.draft_length()}
    ''',
    "specops/backends/toy/backend.py": '''
        """Backend `toy`: renders and plans; it serves nothing."""
        from __future__ import annotations

        import json

        from specops.backends.base import Backend
        from specops.bench.target import BenchTarget, addresses
        from specops.run.plan_step import PlanStep


        class ToyBackend(Backend):
            def _files(self, variant):
                return {"toy.json": json.dumps(self.config.resolve(variant.method), sort_keys=True)}

            def render(self, variant, target, draft, out_dir):
                for name, text in self._files(variant).items():
                    (out_dir / name).write_text(text)

            def launch(self, variant, repo, log_path):
                raise NotImplementedError("a toy")

            def generate(self, server, variant, prompt, max_tokens):
                raise NotImplementedError("a toy")

            def acceptance(self, server, variant, settle=False):
                return None

            def bench_target(self, server, variant):
                http = f"http://{self.serving.host}:<toy port>"
                return BenchTarget(model=variant.model_name, endpoints=addresses(self.registration.apis, http=http))

            def plan(self, variant, target, draft):
                return [PlanStep("render", files=self._files(variant)),
                        PlanStep("serve", commands=[f"toy-server --workers {self.config.workers} {variant.name}"])]

            def served(self):
                return {"image": None, "framework": "toy 0", "version_source": "the toy"}
    ''',
    "specops/backends/__init__.py": '''
        from specops.backends.toy.config import METHODS as TOY_METHODS  # noqa: E402
        from specops.backends.toy.config import ToyBackendConfig  # noqa: E402

        BACKENDS.register("toy", BackendSpec("toy", ToyBackendConfig, TOY_METHODS,
                                             "specops.backends.toy.backend:ToyBackend", (Api.OPENAI_COMPLETIONS,)))
    ''',
    "profiles/ngram-toy.yaml": '''
        name: ngram-toy
        description: n-gram on the toy backend
        method: {kind: ngram, num_speculative_tokens: 3}
        backend: {kind: toy, workers: 2}
        target: {source: hf://org/target}
    ''',
}

# The layout and size budgets (tests/unit/test_code_budgets.py, copied beside the toy) over the copy's backends
# and the toy's files: what they report, empty where the toy passes.
BUDGETS = """
def budgets(files):
    import sys
    sys.path.insert(0, "tests/unit")
    from test_code_budgets import ROOT, over_budget, test_every_backend_is_implemented_in_the_folder_of_its_engine_family
    found = [line for rel in files for line in over_budget(ROOT / rel, rel)]
    try:
        test_every_backend_is_implemented_in_the_folder_of_its_engine_family()
    except AssertionError as err:
        found.append(str(err))
    return found
"""

# The recipe's regenerate step, as `make schema` and `specops deployments -o prefect.yaml` run it.
REGENERATE = """
import io, contextlib, yaml
from cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["schema", "-o", "profiles/profile.schema.json"]) == 0
    assert main(["deployments", "-o", "prefect.yaml"]) == 0
schema = open("profiles/profile.schema.json").read()
deployments = {(d["entrypoint"], d["name"]): d for d in yaml.safe_load(open("prefect.yaml"))["deployments"]}
"""


def test_a_backend_registered_as_the_recipe_says_loads_validates_and_plans(tmp_path):
    repo = follow(tmp_path, "A backend", TOY_BACKEND)
    (repo / "tests" / "unit").mkdir(parents=True)  # the layout and size budgets, run on the copy the toy is in
    shutil.copy(ROOT / "tests" / "unit" / "test_code_budgets.py", repo / "tests" / "unit")
    out = run_in(repo, tmp_path, REFUSE, REGENERATE, BUDGETS, """
        from specops.profile.catalog import matrix_lines
        from specops.pipeline.backend import backend_for
        from specops.pipeline.plan import format_plan
        from specops.profile.loader import load_profile

        loaded = load_profile("ngram-toy")
        d = deployments[("flows/specdec.py:specdec", "ngram-toy")]
        print(json.dumps({
            "plan": format_plan(loaded), "class": type(backend_for(loaded.profile)).__name__,
            "method": refused("ngram-toy", ["method.kind=medusa", "draft.source=hf://org/draft"]),
            "key": refused("ngram-toy", ["backend.workers=9"]), "unknown": refused("ngram-toy", ["backend.port=1"]),
            "schema": "ToyBackendConfig" in schema, "pool": d["work_pool"]["name"], "tags": d["tags"],
            "matrix": matrix_lines(), "budgets": budgets(["specops/backends/toy/config.py",
                                                           "specops/backends/toy/backend.py"])}))
    """)
    assert out["budgets"] == [], out["budgets"]  # in its family's folder, within the size budgets
    plan = out["plan"]
    assert plan.startswith("plan for ngram-toy: method ngram on backend toy") and out["class"] == "ToyBackend"
    assert "toy-server --workers 2 speculative" in plan and "toy-server --workers 2 base" in plan
    assert '{"draft_tokens": 3, "speculation": "ngram"}' in plan and '"speculation": "none"' in plan
    assert "--endpoint-type completions" in plan  # genai-perf, the default tool, on the API the spec registers
    assert "method.kind: method 'medusa' is not supported by backend 'toy'; allowed with 'toy': ngram, none" \
        in out["method"]
    assert "backend.workers:" in out["key"] and "backend.port: unknown key 'port'" in out["unknown"]
    assert out["schema"] and out["pool"] == "specops-cpu" and out["tags"] == ["specops", "ngram", "toy"]
    header, ngram = out["matrix"][0].split(), next(line.split() for line in out["matrix"] if line.startswith("ngram"))
    assert "toy" in header and ngram[header.index("toy")] == "yes"


TOY_METHOD = {
    "specops/methods/specs.py": '''
        class ToyRepeatMethod(MethodConfig):
            """Drafts the last token again."""

            kind: Literal["toy-repeat"] = "toy-repeat"
            summary: ClassVar[str] = "the last token, repeated (a toy)"
            num_speculative_tokens: Count = Field(2, ge=1, le=8, description="max draft tokens per step")


        ALL_METHODS = (*ALL_METHODS, ToyRepeatMethod)
    ''',
    "specops/backends/local/config.py": '''
        METHODS = METHODS | {"toy-repeat"}
    ''',
    "specops/runtime/proposers.py": '''
        @register
        class ToyRepeatProposer(Proposer):
            name = "toy-repeat"

            @dataclasses.dataclass(frozen=True)
            class Options:
                num_speculative_tokens: int = 2

            @property
            def max_draft(self) -> int:
                return self.options.num_speculative_tokens

            def propose(self, context_ids, limit, state):
                return [context_ids[-1]] * min(self.options.num_speculative_tokens, limit)
    ''',
    "profiles/toy-repeat-local.yaml": '''
        include: _shared/embedded-cpu.yaml
        name: toy-repeat-local
        description: the toy method on the embedded runtime
        method: {kind: toy-repeat, num_speculative_tokens: 3}
    ''',
}


def test_a_method_added_as_the_recipe_says_plans_where_its_table_says_and_is_refused_elsewhere(tmp_path):
    repo = follow(tmp_path, "A method", TOY_METHOD)
    out = run_in(repo, tmp_path, REFUSE, REGENERATE, """
        from specops.backends.local.backend import runtime_options
        from specops.profile.catalog import matrix_lines
        from specops.pipeline.plan import format_plan
        from specops.profile.loader import load_profile
        from specops.runtime.proposers import make_proposer

        loaded = load_profile("toy-repeat-local")
        proposer = make_proposer(loaded.profile.method.kind, runtime_options(loaded.profile.method))
        print(json.dumps({
            "plan": format_plan(loaded), "drafts": proposer.propose([5, 6, 7], 8, None),
            "elsewhere": refused("toy-repeat-local", ["backend={kind: vllm-serve}"]),
            "bound": refused("toy-repeat-local", ["method.num_speculative_tokens=9"]),
            "schema": "ToyRepeatMethod" in schema,
            "deployed": ("flows/specdec.py:specdec", "toy-repeat-local") in deployments,
            "matrix": matrix_lines()}))
    """)
    plan = out["plan"]
    assert "== variant speculative (method toy-repeat)" in plan and 'string_value: "toy-repeat"' in plan
    assert '{\\"num_speculative_tokens\\": 3}' in plan  # the method's fields reach the runtime's config
    assert out["drafts"] == [7, 7, 7]
    assert ("method.kind: method 'toy-repeat' is not supported by backend 'vllm-serve'; allowed with 'vllm-serve': "
            in out["elsewhere"]) and "backends that serve it: local" in out["elsewhere"]
    assert "method.num_speculative_tokens: Input should be less than or equal to 8" in out["bound"]
    assert out["schema"] and out["deployed"]
    header = out["matrix"][0].split()
    row = next(line.split() for line in out["matrix"] if line.startswith("toy-repeat"))
    assert [b for b, cell in zip(header[1:], row[1:], strict=False) if cell == "yes"] == ["local"]


TOY_TOOL = {
    "specops/bench/toy_load_tool.py": '''
        """toy-load: plans its command; runs nothing."""
        from __future__ import annotations

        from specops.bench.target import Api
        from specops.bench.tool import BenchTool, BenchToolError


        class ToyLoad(BenchTool):
            name = "toy-load"
            apis = (Api.TRITON_GENERATE, Api.OPENAI_COMPLETIONS)

            def preflight(self):
                return []

            def version(self):
                return "0"

            def command(self, job):
                return ["toy-load", "--url", job.address, "--api", job.api.value, "--requests", str(job.requests)]

            def run(self, job, on_line=None, watch=None):
                raise BenchToolError("a toy")
    ''',
    "specops/bench/tool.py": '''
        BENCH_TOOLS.register("toy-load", "specops.bench.toy_load_tool:ToyLoad")
    ''',
}


def test_a_benchmark_tool_registered_as_the_recipe_says_is_chosen_by_a_profile_and_planned(tmp_path):
    repo = follow(tmp_path, "A benchmark tool", TOY_TOOL)
    # A backend that serves none of the tool's APIs: trtllm-engine answers kserve/tensorrtllm only.
    other = tmp_path / "draft-target-trtllm-engine.yaml"
    other.write_text(yaml.safe_dump({"name": "draft-target-trtllm-engine", "method": {"kind": "draft-target"},
                                     "backend": {"kind": "trtllm-engine"}, "target": {"source": "hf://org/target"},
                                     "draft": {"source": "hf://org/draft"}, "benchmark": {"tool": "toy-load"}}))
    out = run_in(repo, tmp_path, REFUSE, REGENERATE, f"""
        from specops.pipeline.plan import format_plan
        from specops.profile.loader import load_profile

        print(json.dumps({{
            "plan": format_plan(load_profile("ngram-local", ["benchmark.tool=toy-load", "benchmark.num_requests=5"])),
            "refused": refused({str(other)!r}, []), "unknown": refused("ngram-local", ["benchmark.tool=toy-lod"]),
            "schema": "toy-load" in schema}}))
    """)
    benchmark = out["plan"].split("[benchmark]\n")[1].splitlines()[0]
    assert benchmark == "  $ toy-load --url 'http://127.0.0.1:<http port>' --api triton/generate --requests 5"
    assert ("benchmark.tool: toy-load drives triton/generate, openai/completions; backend 'trtllm-engine' serves "
            "kserve/tensorrtllm") in out["refused"]
    assert "allowed: aiperf, genai-perf, toy-load" in out["unknown"] and out["schema"]


TOY_FLOW = {
    "specops/toy/__init__.py": '''
        """What the toy flow says about a profile."""
        from specops.profile.loader import load_profile


        def describe(name: str) -> str:
            p = load_profile(name).profile
            return f"{p.name}: {p.method.kind} on {p.backend.kind}"
    ''',
    "tasks/toy.py": '''
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        from specops.toy import describe


        @task(cache_policy=NO_CACHE, persist_result=False)
        def describe_profile(name: str) -> str:
            return describe(name)
    ''',
    "flows/toy.py": '''
        from prefect import flow

        from prefect_adapters.reaping import reap_servers
        from tasks.toy import describe_profile


        @flow(name="toy", on_cancellation=[reap_servers], on_crashed=[reap_servers])
        def toy(profile: str) -> str:
            return describe_profile(profile)
    ''',
    "specops/fleet/deployments.py": '''
        def toy_deployments(profiles: list[Profile]) -> list[dict[str, Any]]:
            return [deployment(p, "flows/toy.py:toy", ["specops", "toy"]) for p in profiles if p.name == "ngram-local"]


        FLOW_DEPLOYMENTS = (*FLOW_DEPLOYMENTS, toy_deployments)
    ''',
}


def test_a_flow_declared_as_the_recipe_says_is_deployed_and_prefect_loads_it(tmp_path):
    repo = follow(tmp_path, "A flow", TOY_FLOW)
    out = run_in(repo, tmp_path, REGENERATE, """
        from prefect.cli.deploy._models import PrefectYamlModel
        from prefect.flows import load_flow_from_entrypoint

        from specops.toy import describe

        PrefectYamlModel.model_validate(yaml.safe_load(open("prefect.yaml")))
        toy = [d for (entrypoint, _), d in deployments.items() if entrypoint == "flows/toy.py:toy"]
        flow = load_flow_from_entrypoint(toy[0]["entrypoint"])
        print(json.dumps({"toy": toy, "flow": flow.name, "parameters": sorted(flow.parameters.properties),
                          "specdec": ("flows/specdec.py:specdec", "ngram-local") in deployments,
                          "says": describe("ngram-local")}))
    """)
    (toy,) = out["toy"]
    assert toy["name"] == "ngram-local" and toy["work_pool"]["name"] == "specops-cpu"
    assert toy["parameters"] == {"profile": "ngram-local"} and out["parameters"] == ["profile"]
    assert out["flow"] == "toy" and out["specdec"]  # `prefect deploy` registers it as toy/ngram-local
    assert out["says"] == "ngram-local: ngram on local"
