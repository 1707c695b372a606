"""Load a causal LM and its tokenizer from a local folder in Hugging Face format.

The embedded tiny model and a real checkpoint go through the same function. Nothing is downloaded:
`local_files_only=True` always.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["load_model", "load_tokenizer", "ModelLoadError"]


class ModelLoadError(ValueError):
    """The model folder is missing or unreadable; the message names the path."""


def _check(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not (p / "config.json").is_file():
        raise ModelLoadError(f"{p}: not a model folder (no config.json); give a local Hugging Face model path")
    return p


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved in `path`, with padding on the left for batched generation."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_check(path), local_files_only=True)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_model(path: str | Path, *, dtype: str = "float32", device: str = "cpu") -> Any:
    """The causal LM saved in `path`, on `device`, in `dtype` (float32, bfloat16 or float16)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(_check(path), dtype=getattr(torch, dtype), local_files_only=True)
    return model.to(device)  # type: ignore[arg-type]  # transformers' stubs type .to oddly
