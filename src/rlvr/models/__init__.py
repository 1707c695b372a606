"""Models: load any local Hugging Face causal LM, build the embedded tiny one, sample from either."""

from rlvr.models.load import ModelLoadError, load_model, load_tokenizer, resolve_model_path
from rlvr.models.sampling import Completions, sample
from rlvr.models.tiny import TinyConfig, build_tiny_model, build_tokenizer

__all__ = [
    "Completions",
    "ModelLoadError",
    "TinyConfig",
    "build_tiny_model",
    "build_tokenizer",
    "load_model",
    "load_tokenizer",
    "resolve_model_path",
    "sample",
]
