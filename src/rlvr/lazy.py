"""Package names imported on first use (PEP 562), so that importing a package for one light name
(a config, the CLI) does not load what its heavy modules import (torch, scipy)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: dict[str, list[str]]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports each name from its module (`where`: module ->
    names) when first asked for, and keeps it in the package.

    >>> getattr_ = lazy_names("rlvr", {"rlvr.lazy": ["lazy_names"]})
    >>> getattr_("lazy_names") is lazy_names
    True
    """
    module_of = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_of[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
