"""specops/triton/bridge/specops_vllm_bridge.py, run as the vLLM environment runs it: a .pth line in a site
directory imports it and calls install(); it acts only where $SPECOPS_VLLM_BRIDGE names a bridges.json.

Each test starts a fresh interpreter of .venv/bin/python whose site directory holds the bridge (installed by
VllmVenv.install_bridge, the path specops uses) and a package tree standing in for vLLM's modules: `pkg.old`
lacks a name `pkg.new` has (vllm.v1.metrics.loggers lost build_1_2_5_buckets to vllm.v1.metrics.buckets), and
`pkg.gone` no longer exists (vllm.inputs.data in 0.32.0). The interpreter runs in the C locale with UTF-8 mode
off (`-X utf8=0`, PYTHONCOERCECLOCALE=0), as Triton's stub does (an isolated config: no PYTHONUTF8, no coercion).

The last two tests run the real vLLM CPU venv: the two imports Triton's vllm_backend makes succeed only with the
bridge's table, and in the C locale vLLM imports only with the bridge's locale fix.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specops.backends.vllm import cpu as vllm_cpu
from specops.backends.vllm.cpu import BRIDGE_MODULE, BRIDGE_VAR, VllmVenv

PKG = {
    "pkg/__init__.py": "",
    "pkg/new.py": "def moved():\n    return 'from pkg.new'\n\nclass Thing:\n    pass\n",
    "pkg/old.py": "HERE = 'pkg.old ran'\n",
}
TABLE = [{"module": "pkg.old", "name": "moved", "source": "pkg.new"},
         {"module": "pkg.gone", "name": "Thing", "source": "pkg.new"},
         {"module": "pkg.gone", "name": "moved", "source": "pkg.new"}]


@pytest.fixture
def tree(tmp_path) -> dict[str, Path]:
    """A fake venv with the bridge installed in its site-packages, the stand-in package, and the table."""
    venv = VllmVenv(tmp_path / "venv")
    site = venv.root / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    site.mkdir(parents=True)
    venv.install_bridge()
    for rel, text in PKG.items():
        (tmp_path / "modules" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "modules" / rel).write_text(text)
    table = tmp_path / "bridges.json"
    table.write_text(json.dumps(TABLE))
    return {"site": site, "modules": tmp_path / "modules", "table": table}


def run(tree: dict[str, Path], code: str, bridge: bool) -> subprocess.CompletedProcess:
    """`code` after the site directory (and its .pth) is added, in the C locale without UTF-8 mode."""
    prelude = (f"import sys, site; sys.path.insert(0, {str(tree['modules'])!r}); "
               f"site.addsitedir({str(tree['site'])!r})\n")
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0"}
    if bridge:
        env[BRIDGE_VAR] = str(tree["table"])
    return subprocess.run([sys.executable, "-X", "utf8=0", "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60, env=env)


def test_the_pth_line_is_what_install_bridge_writes(tree):
    pth = tree["site"] / f"{BRIDGE_MODULE}.pth"
    assert pth.read_text() == f"import {BRIDGE_MODULE}; {BRIDGE_MODULE}.install()\n"
    source = Path(vllm_cpu.__file__).parents[2] / "triton" / "bridge" / f"{BRIDGE_MODULE}.py"
    assert (tree["site"] / f"{BRIDGE_MODULE}.py").read_text() == source.read_text()


def test_a_missing_name_is_importable_from_its_old_place(tree):
    done = run(tree, """
        import sys
        assert "pkg.old" not in sys.modules and "pkg.new" not in sys.modules  # nothing imported before asked
        from pkg.old import moved, HERE
        import pkg.new
        print(moved(), HERE, moved is pkg.new.moved, sep="|")
    """, bridge=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "from pkg.new|pkg.old ran|True"


def test_a_module_that_no_longer_exists_is_an_alias(tree):
    done = run(tree, """
        import pkg.gone
        from pkg.gone import Thing
        import pkg.new
        print(Thing is pkg.new.Thing, pkg.gone.moved is pkg.new.moved, pkg.gone.__name__, sep="|")
    """, bridge=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True|True|pkg.gone"


def test_names_outside_the_table_are_not_invented(tree):
    done = run(tree, """
        try:
            from pkg.old import Thing
        except ImportError as err:
            print("ImportError", err)
        try:
            import pkg.other
        except ModuleNotFoundError as err:
            print("ModuleNotFoundError", err)
    """, bridge=True)
    assert done.returncode == 0, done.stderr
    assert "ImportError cannot import name 'Thing' from 'pkg.old'" in done.stdout
    assert "ModuleNotFoundError No module named 'pkg.other'" in done.stdout


def test_without_the_variable_nothing_happens(tree):
    done = run(tree, f"""
        import locale, sys
        print(locale.getpreferredencoding(False))
        print(any(type(f).__module__ == {BRIDGE_MODULE!r} for f in sys.meta_path))
        try:
            from pkg.old import moved
        except ImportError:
            print("old: no moved")
        try:
            import pkg.gone
        except ModuleNotFoundError:
            print("gone: missing")
    """, bridge=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["ANSI_X3.4-1968", "False", "old: no moved", "gone: missing"]


def test_the_locale_becomes_utf8(tree):
    done = run(tree, """
        import locale, sys
        print(sys.flags.utf8_mode, locale.getpreferredencoding(False), locale.setlocale(locale.LC_CTYPE))
    """, bridge=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "UTF-8", "C.UTF-8"]


def test_install_is_idempotent(tree):
    done = run(tree, f"""
        import sys, {BRIDGE_MODULE}
        {BRIDGE_MODULE}.install(); {BRIDGE_MODULE}.install()
        print(sum(type(f).__name__ == "_Finder" for f in sys.meta_path))
    """, bridge=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


# --- the real vLLM CPU venv -----------------------------------------------------------------------------------

VLLM = vllm_cpu.venv()
IMPORTS = "from vllm.inputs.data import TokensPrompt; from vllm.v1.metrics.loggers import build_1_2_5_buckets"


needs_vllm = pytest.mark.skipif(not VLLM.python.is_file(), reason=f"no vLLM CPU venv at {VLLM.root} (`make install`): "
                                "these tests run the imports of Triton's vllm_backend against the pinned vLLM")


def run_vllm(tmp_path: Path, code: str, locale_all: str, bridge: bool) -> subprocess.CompletedProcess:
    """`python -I` of the vLLM venv (PYTHON* variables ignored, as in the stub), UTF-8 mode off."""
    VLLM.install_bridge()  # what VllmBackend.triton_process does before serving (a no-op when unchanged)
    table = tmp_path / "bridges.json"
    table.write_text(vllm_cpu.bridge_table())
    env = {"PATH": f"{VLLM.bin}:/usr/bin:/bin", "LC_ALL": locale_all, "HOME": str(tmp_path)}
    if bridge:
        env[BRIDGE_VAR] = str(table)
    return subprocess.run([str(VLLM.python), "-I", "-X", "utf8=0", "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.slow  # imports vLLM twice (~15 s each on this host)
@needs_vllm
def test_the_vllm_backends_imports_work_in_the_real_venv_only_with_the_bridge(tmp_path):
    """In a UTF-8 locale, so that only the import bridges are tested."""
    bridged = run_vllm(tmp_path, IMPORTS + "; print('ok')", "C.UTF-8", bridge=True)
    assert bridged.returncode == 0, bridged.stderr[-3000:]
    assert bridged.stdout.split()[-1] == "ok"
    plain = run_vllm(tmp_path, IMPORTS, "C.UTF-8", bridge=False)
    assert plain.returncode != 0
    assert "ModuleNotFoundError: No module named 'vllm.inputs.data'" in plain.stderr


@pytest.mark.slow
@needs_vllm
def test_vllm_imports_in_the_c_locale_only_with_the_bridge(tmp_path):
    """The stub's C locale: torch inductor reads its UTF-8 kernel templates with open() and the default encoding
    while vLLM is imported (torch/_inductor/utils.py load_template)."""
    code = IMPORTS + "; import locale; print('ok', locale.getpreferredencoding(False))"
    bridged = run_vllm(tmp_path, code, "C", bridge=True)
    assert bridged.returncode == 0, bridged.stderr[-3000:]
    assert bridged.stdout.split()[-2:] == ["ok", "UTF-8"]
    plain = run_vllm(tmp_path, "import vllm.v1.metrics.loggers", "C", bridge=False)
    assert plain.returncode != 0 and "UnicodeDecodeError: 'ascii' codec" in plain.stderr
