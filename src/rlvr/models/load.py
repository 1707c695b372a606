"""Load a causal LM and its tokenizer from a local folder in Hugging Face format.

The embedded tiny model and a real checkpoint go through the same function. Nothing is downloaded:
`local_files_only=True` always.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["load_model", "load_tokenizer", "resolve_model_path", "ModelLoadError"]


class ModelLoadError(ValueError):
    """The model folder is missing or unreadable; the message names the path."""


def resolve_model_path(spec: str | Path) -> Path:
    """A model folder, or a run folder whose `model/` holds one (`~` expanded)."""
    p = _reachable(Path(spec).expanduser())
    return p / "model" if (p / "model" / "config.json").is_file() else p


def _reachable(p: Path) -> Path:
    """`p`, unless no stat can reach it (a symlink loop, a name longer than the file system allows,
    a folder that cannot be read): then a ModelLoadError saying why. A missing folder passes; it is
    refused where it is read, with the install hint."""
    try:
        os.stat(p)
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.ENOTDIR):
            why = "a symlink loop: a link that leads back to itself" if e.errno == errno.ELOOP else e.strerror
            raise ModelLoadError(f"{p}: not a model folder ({why})") from None
    return p


def _check(path: str | Path) -> Path:
    """The folder, once its config.json reads as a JSON object; `ModelLoadError` (one line) otherwise."""
    p = _reachable(Path(path).expanduser())
    cfg = p / "config.json"
    if not cfg.is_file() and _adapter_base(p) is not None:
        return p  # a LoRA checkpoint: adapters beside the tokenizer, the base named in adapter_config.json
    if not cfg.is_file():
        raise ModelLoadError(f"{p}: not a model folder (no config.json); give a local Hugging Face model path")
    try:
        data = json.loads(cfg.read_bytes())
    except json.JSONDecodeError as e:
        raise ModelLoadError(f"{cfg}:{e.lineno}: invalid JSON: {e.msg}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelLoadError(f"{cfg}: cannot read: {e}") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise ModelLoadError(f"{cfg}: field 'model_type': missing (not a Hugging Face model config)")
    return p


def _adapter_base(p: Path) -> Path | None:
    """The base model folder of a LoRA checkpoint (`adapter_config.json` and no `config.json`)."""
    f = p / "adapter_config.json"
    if not f.is_file() or (p / "config.json").is_file():
        return None
    try:
        base = json.loads(f.read_bytes()).get("base_model_name_or_path")
    except (OSError, ValueError, AttributeError) as e:
        raise ModelLoadError(f"{f}: cannot read: {e}") from None
    if not isinstance(base, str) or not (Path(base).expanduser() / "config.json").is_file():
        raise ModelLoadError(f"{f}: field 'base_model_name_or_path': {base!r} is not a local model folder")
    return Path(base).expanduser()


def check_safetensors(f: Path) -> None:
    """Refuse (ModelLoadError naming `f`) a weights file that is empty or shorter than its own header
    says (a copy or download cut short), before the loader reports it as a deserialising error. Reads
    only the header: 8 bytes of length, then that much JSON with each tensor's byte range."""
    size = f.stat().st_size
    if size == 0:
        raise ModelLoadError(f"{f}: empty (0 bytes): the weights file is missing its contents; copy it again")
    with f.open("rb") as fh:
        head = fh.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if n < 0 or 8 + n > size:
            raise ModelLoadError(f"{f}: truncated ({size} bytes, shorter than its own header); copy it again")
        try:
            header = json.loads(fh.read(n))
        except (ValueError, UnicodeDecodeError):
            raise ModelLoadError(f"{f}: not a safetensors file (its header is not JSON); copy it again") from None
    ranges = [v.get("data_offsets") for v in header.values() if isinstance(v, dict)] if isinstance(header, dict) else []
    need = (
        8 + n + max((r[1] for r in ranges if isinstance(r, list) and len(r) == 2 and isinstance(r[1], int)), default=0)
    )
    if need > size:
        raise ModelLoadError(f"{f}: truncated ({size} bytes of the {need} its header describes); copy it again")


def _one_line(p: Path, what: str, e: Exception) -> ModelLoadError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return ModelLoadError(f"{p}: cannot load the {what}: {first}")


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved in `path`, with padding on the left for batched generation."""
    from transformers import AutoTokenizer

    p = _check(path)
    try:
        tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise _one_line(p, "tokenizer", e) from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_model(path: str | Path, *, dtype: str = "float32", device: str = "cpu") -> Any:
    """The causal LM saved in `path`, on `device`, in `dtype` (float32, bfloat16 or float16)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    p = _check(path)
    if (base := _adapter_base(p)) is not None:  # a LoRA checkpoint: the base with its adapters merged
        from peft import PeftModel

        merged = PeftModel.from_pretrained(load_model(base, dtype=dtype), p).merge_and_unload()
        return merged.to(device)
    for f in sorted(p.glob("*.safetensors")):
        check_safetensors(f)
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # its multi-line load report: rlvr says what is wrong in one line below
    model: Any
    info: dict[str, Any]
    try:
        model, info = AutoModelForCausalLM.from_pretrained(  # type: ignore[misc]  # a pair with output_loading_info
            p, dtype=getattr(torch, dtype), local_files_only=True, output_loading_info=True
        )
    except Exception as e:  # a truncated safetensors file, weights of the wrong shape, a broken config
        if "mismatched_sizes" in str(e):
            raise ModelLoadError(
                f"{p}: cannot load the model: its weights do not fit the shapes in config.json"
            ) from None
        raise _one_line(p, "model", e) from None
    finally:
        hf_logging.set_verbosity(level)
    # weights the architecture does not name, or names the file lacks: another architecture's checkpoint
    if odd := sorted(info.get("missing_keys") or []) + sorted(info.get("unexpected_keys") or []):
        raise ModelLoadError(
            f"{p}: cannot load the model: the weights do not match its config.json's architecture "
            f"({len(odd)} tensors, e.g. {odd[0]})"
        )
    return model.to(device)
