"""Human review of an evaluation: a stratified slice (`export_slice`), a local labelling app
(`rlvr.review.app`), and statistics (`write_stats`, read by the audit's check 7); docs/review.md.
The names below are imported on first use, so that mounting the CLI (`rlvr.review.cli`) does not
pull in numpy and scipy for `rlvr --help`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlvr.lazy import lazy_names

if TYPE_CHECKING:
    from rlvr.review.export import DIMENSIONS, export_slice, select, strata_of
    from rlvr.review.items import ReviewError, item_id, load_eval, load_slice, resolve_review_dir
    from rlvr.review.labelfile import read_label_file
    from rlvr.review.stats import compute_stats, write_stats
    from rlvr.review.store import CATEGORIES, Conflict, Label, LabelError, LabelStore, StoredLabel, parse_label

_WHERE = {
    "rlvr.review.export": ["DIMENSIONS", "export_slice", "select", "strata_of"],
    "rlvr.review.items": ["ReviewError", "item_id", "load_eval", "load_slice", "resolve_review_dir"],
    "rlvr.review.labelfile": ["read_label_file"],
    "rlvr.review.stats": ["compute_stats", "write_stats"],
    "rlvr.review.store": ["CATEGORIES", "Conflict", "Label", "LabelError", "LabelStore", "StoredLabel", "parse_label"],
}

__all__ = [
    "CATEGORIES",
    "DIMENSIONS",
    "Conflict",
    "Label",
    "LabelError",
    "LabelStore",
    "ReviewError",
    "StoredLabel",
    "compute_stats",
    "export_slice",
    "item_id",
    "load_eval",
    "load_slice",
    "parse_label",
    "read_label_file",
    "resolve_review_dir",
    "select",
    "strata_of",
    "write_stats",
]


__getattr__ = lazy_names(__name__, _WHERE)
