"""Evaluation: sampling-budget-aware metrics and paired statistics (numpy/scipy only at this level).

`rlvr.evaluate.evaluation.run_eval` (torch) is the `rlvr eval` command; `compare.compare_runs` puts
evaluations side by side; `plots` and `judge` are optional views.
"""

from rlvr.evaluate.metrics import maj_at_k, maj_at_ks, majority_vote, pass_at_k, pass_at_k_array, summarize
from rlvr.evaluate.stats import McNemarResult, bonferroni, bootstrap_ci, cohen_kappa, holm, mcnemar, paired_diff_ci

__all__ = [
    "McNemarResult",
    "bonferroni",
    "bootstrap_ci",
    "cohen_kappa",
    "holm",
    "maj_at_k",
    "maj_at_ks",
    "majority_vote",
    "mcnemar",
    "paired_diff_ci",
    "pass_at_k",
    "pass_at_k_array",
    "summarize",
]
