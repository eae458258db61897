"""Render a variant's model repository into a content-addressed directory of the cache.

Each repository and engine directory records its files in its `.complete` marker when it is
published and is verified against it when used (specops/sources/integrity.py); specops/sources/entry_lock.py
makes each once across concurrent runs and says whether a step found its entry there. start_variant and
stop_variant start and stop a variant's server on it.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path

from specops.backends.base import Backend, Server
from specops.pipeline import janitor
from specops.run.rundir import RunDir
from specops.run.variant import Variant
from specops.sources.entry_lock import Stored, produce_once
from specops.sources.integrity import Entry, publish, rename_into_place, verify
from specops.sources.schemes import ModelArtifact
from specops.versions import facts_digest

RECIPE = "repository-4"  # bump when a rendered repository or engine layout changes
COMPLETE = ".complete"  # written last; holds the entry's file manifest
# The whole engines entry of a backend that builds nothing: a later run knows it without asking the
# backend. It holds no `.complete`: specops before this marker verified any entry with one and
# called the marker corrupt; without, an older specops sees no entry and builds nothing again.
NO_ENGINES = ".no-engines"


def _entry(directory: Path, rebuild: str) -> Entry:
    """<cache>/repos/<key> or <cache>/engines/<key>, whose `.complete` is its manifest."""
    return Entry(root=directory, content=directory, manifest=directory / COMPLETE,
                 rebuild=rebuild, exclude=frozenset({COMPLETE}))


def _repo_entry(directory: Path) -> Entry:
    return _entry(directory, "renders the repository again")


def _engines_entry(directory: Path) -> Entry:
    return _entry(directory, "builds the engines again")


def build_engines(backend: Backend, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                  cache_dir: Path) -> Stored[Path | None]:
    """The variant's engines in a content-addressed cache directory (None: the backend builds none)."""
    out = Path(cache_dir) / "engines" / repository_key(backend, variant, target, draft)
    cached = produce_once(out, lambda: _engines_done(out),
                          lambda: _build_into(out, backend, variant, target, draft))
    if (out / NO_ENGINES).is_file():
        return Stored(None, cached)
    verify(_engines_entry(out))
    if not cached:
        backend.use_engines(variant, out)  # where the build left them is gone: point render at the entry
    return Stored(out, cached)


def _build_into(out: Path, backend: Backend, variant: Variant, target: ModelArtifact,
                draft: ModelArtifact | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=out.parent))
    try:  # built beside its entry and renamed into place: a crash never leaves half an entry
        tmp.chmod(0o755)  # mkdtemp's 0700 would lock out the build and serve containers' users
        if backend.build(variant, target, draft, tmp) is None:
            (tmp / NO_ENGINES).write_text("")
        else:
            publish(_engines_entry(tmp))
        rename_into_place(tmp, out, _engines_done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _published(directory: Path) -> bool:
    return (directory / COMPLETE).is_file()


def _engines_done(directory: Path) -> bool:
    return _published(directory) or (directory / NO_ENGINES).is_file()


def repository_key(backend: Backend, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                   engines: Path | None = None) -> str:
    # facts: what each image's framework accepts decides what is rendered
    payload = {"engines": str(engines) if engines else None, "recipe": RECIPE, "facts": facts_digest(),
               "backend": backend.cache_identity(), "method": variant.method.model_dump(mode="json"),
               "variant": variant.name, "parallel": variant.parallel, "target": target.sha256,
               "target_path": str(target.path), "draft": draft.sha256 if draft else None}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def render_repository(backend: Backend, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                      cache_dir: Path, engines: Path | None = None) -> Stored[Path]:
    """The variant's repository in a content-addressed cache directory; verified where it is used (stage_repository)."""
    out = Path(cache_dir) / "repos" / repository_key(backend, variant, target, draft, engines)
    cached = produce_once(out, lambda: _published(out),
                          lambda: _render_into(out, backend, variant, target, draft, engines))
    return Stored(out, cached)


def _render_into(out: Path, backend: Backend, variant: Variant, target: ModelArtifact, draft: ModelArtifact | None,
                 engines: Path | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".render-", dir=out.parent))
    try:
        if engines is not None:
            backend.use_engines(variant, engines)
        backend.render(variant, target, draft, tmp)
        publish(_repo_entry(tmp))
        rename_into_place(tmp, out, _published)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stage_repository(repo: Path, dest: Path) -> Path:
    """Copy a rendered repository into the run directory, which is what the server loads."""
    if (repo / COMPLETE).is_file():  # a cache entry: serve only what was rendered (a hand-made repo has no record)
        verify(_repo_entry(repo))
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(repo, dest, ignore=shutil.ignore_patterns(COMPLETE))
    return dest


def start_variant(backend: Backend, variant: Variant, repo: Path, run: RunDir, owner: str | None) -> Server:
    """Start a variant's server on its staged repository, recorded so a dead run's servers can be reaped."""
    staged = stage_repository(repo, run.path / "repository" / variant.name)
    log_path = run.logs() / f"server-{variant.name}.log"
    server = backend.launch(variant, staged, log_path)
    record = server.record() | {"owner": owner, "run_dir": str(run.path),
                                "what": f"{backend.deployment.profile}/{variant.name}"}
    janitor.register(record)
    run.write_json(f"servers/{variant.name}.json", record | {"started_at": time.time()})
    return server


def stop_variant(server: Server, timeout_s: float) -> None:
    try:
        server.stop(timeout_s)
    finally:
        janitor.unregister(server.record())
