"""The reference pages built from the code at docs build time: each function returns one page's Markdown.

Every import is inside the function that needs it: the docs hook puts the checkout being documented first on
sys.path before it calls any of them, so a scratch copy documents its own code, not the installed one's."""
from __future__ import annotations

import ast
from pathlib import Path

import yaml

from tools.docs.text import generated_note, table

# page path (under docs/) -> the function that writes it; the nav in mkdocs.yml names these paths
PAGES = {}


def page(path: str):
    def register(function):
        PAGES[path] = function
        return function
    return register


@page("reference/profile.md")
def profile_fields(root: Path) -> str:
    from specops.profile.schema import Profile
    from tools.docs.profile_reference import page as fields_page

    return fields_page(Profile.model_json_schema())


@page("reference/cli.md")
def command_line(root: Path) -> str:
    from cli.main import _parser
    from tools.docs.cli_reference import page as cli_page

    return cli_page(_parser([]))


@page("reference/environment.md")
def environment(root: Path) -> str:
    from specops.settings import table as settings_table

    return "\n".join(["# Environment variables", "", generated_note("the pydantic-settings model "
                                                                   "`specops/settings.py::Settings`"),
                      "Every variable specops reads, in one model. An empty variable counts as unset; tokens and "
                      "keys are secrets, never printed. `specops settings` prints this table, and `specops settings "
                      "--get NAME` one value.", "", *settings_table(), ""])


@page("reference/exit-codes.md")
def exit_codes(root: Path) -> str:
    from cli.common import EXIT_CODES

    rows = [[f"`{code}`", name, meaning] for name, (code, meaning) in EXIT_CODES.items()]
    return "\n".join(["# Exit codes", "", generated_note("`cli/common.py::EXIT_CODES`, the table every command "
                                                         "returns from"),
                      "Everything but a failed step is checked before Prefect starts, and each problem is one "
                      "message naming the file, field or path and the fix, without a traceback (`specops --debug` "
                      "shows it).", "", *table(["status", "name", "when"], rows), ""])


@page("reference/methods-and-backends.md")
def methods_and_backends(root: Path) -> str:
    from specops.backends import BACKENDS
    from specops.methods import METHODS
    from specops.profile.catalog import gpu_profile_table

    backends = BACKENDS.names()
    matrix = [[f"`{m}`", *("yes" if BACKENDS.get(b).supports(m) else "-" for b in backends)] for m in METHODS.names()]
    methods = [[f"[`{m}`](profile.md#method-kind-{m})", METHODS.get(m).summary,
                "needs a draft" if METHODS.get(m).needs_draft else "-"] for m in METHODS.names()]
    about = [[f"`{b}`", "GPU host" if (s := BACKENDS.get(b)).needs_gpu else "this host",
              ", ".join(a.value for a in s.apis), s.note or "-"] for b in backends]
    return "\n".join(["# Methods and backends", "", generated_note("the method and backend registries and each "
                                                                  "backend's support table (`specops/methods/`, "
                                                                  "`specops/backends/`)"),
                      "`specops profiles` prints the same matrix.", "",
                      "## Which method each backend serves", "",
                      *table(["method", *(f"`{b}`" for b in backends)], matrix), "",
                      "A profile pairing a method with a backend that does not serve it is refused at load, naming "
                      "`method.kind` and the backends that do. A backend that serves a method on some framework "
                      "versions only refuses the others the same way (the support tables hold the versions).", "",
                      "## The methods", "", *table(["method (its fields)", "what it is", "draft"], methods), "",
                      "## The backends", "", *table(["backend", "servers run on", "APIs it serves", "note"], about),
                      "", "## GPU profiles: the image and the versions inside it", "", *gpu_profile_table(), ""])


@page("reference/profiles.md")
def shipped_profiles(root: Path) -> str:
    from specops.fleet.deployments import pool_of
    from specops.profile.errors import ProfileError
    from specops.profile.loader import list_profile_names, load_profile

    rows = []
    for name in list_profile_names():
        try:
            p = load_profile(name).profile
        except ProfileError as err:
            rows.append([f"`{name}`", "-", "-", "-", "-", f"INVALID: {err}"])
            continue
        rows.append([f"`{name}`", f"`{p.method.kind}`", f"`{p.backend.kind}`", f"`{pool_of(p)}`",
                     f"`{p.target.source}`", p.description])
    return "\n".join(["# Shipped profiles", "", generated_note("the YAML files of `profiles/`, each loaded and "
                                                              "validated"),
                      "Run any of them with `specops run NAME`; `specops plan NAME` shows what it would do. Fields: "
                      "[profile reference](profile.md).", "",
                      *table(["profile", "method", "backend", "work pool", "target", "description"], rows), ""])


def flow_name(root: Path, entrypoint: str) -> str:
    """The Prefect flow name of `path.py:function` (its @flow(name=...)), read from the source, not imported."""
    path, function = entrypoint.split(":")
    for node in ast.walk(ast.parse((root / path).read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            for deco in node.decorator_list:
                for kw in getattr(deco, "keywords", []):
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                        return kw.value.value
    return function


@page("reference/deployments.md")
def deployments(root: Path) -> str:
    listed = yaml.safe_load((root / "prefect.yaml").read_text())["deployments"]
    rows = []
    for d in listed:
        when = "; ".join(f"cron `{s['cron']}` {s.get('timezone', '')}".strip() for s in d.get("schedules") or [])
        when = when or "; ".join(f"on event ({t.get('name', 'trigger')})" for t in d.get("triggers") or []) or "-"
        rows.append([f"`{flow_name(root, d['entrypoint'])}/{d['name']}`", f"`{d['work_pool']['name']}`", when,
                     d.get("description", "")])
    return "\n".join(["# Deployments", "", generated_note("`prefect.yaml` (itself written from the profiles by "
                                                         "`specops deployments -o prefect.yaml`)"),
                      "`make up` (or `make deploy`) deploys every one of them; start one with "
                      "`prefect deployment run FLOW/NAME`. Each deployment's form in the Prefect UI explains its "
                      "parameters.", "", *table(["deployment", "work pool", "runs", "what it does"], rows), ""])


def render_all(root: Path) -> dict[str, str]:
    return {path: function(root) for path, function in PAGES.items()}
