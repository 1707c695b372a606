"""Training health: the entropy blow-up that ends a run, caught while it starts (`EntropyWatch`;
docs/train.md, and the SmolLM2 run in docs/real-models.md that drifted with small gradient norms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["EntropyWatch"]


@dataclass
class EntropyWatch:
    """Says once (a message; None otherwise) when the sampled tokens' mean entropy stays above
    `max(factor x start, start + margin)` for `patience` logged steps in a row, `start` being its mean
    over the first `baseline_steps` steps the watch saw. Feed it every step's `train/entropy`.

    >>> w = EntropyWatch(baseline_steps=2, patience=2)
    >>> [w(s, e) is not None for s, e in enumerate([0.6, 0.6, 1.5, 0.9, 1.3, 1.4, 3.0], 1)]
    [False, False, False, False, False, True, False]
    """

    baseline_steps: int = 10
    factor: float = 2.0
    margin: float = 0.5
    patience: int = 3
    _start: list[float] = field(default_factory=list)
    _over: int = 0
    fired: bool = False

    def __call__(self, step: int, entropy: float | None) -> str | None:
        if self.fired or entropy is None or not math.isfinite(entropy):
            return None
        if len(self._start) < self.baseline_steps:
            self._start.append(entropy)
            return None
        start = sum(self._start) / len(self._start)
        limit = max(self.factor * start, start + self.margin)
        self._over = self._over + 1 if entropy > limit else 0
        if self._over < self.patience:
            return None
        self.fired = True
        return (
            f"step {step}: token entropy {entropy:.2f} has stayed above {limit:.2f} ({self.factor:g}x the first "
            f"{len(self._start)} steps' {start:.2f}) for {self.patience} steps: the policy is drifting towards noise. "
            f"Lower lr, add a KL term (objective_overrides.beta), or resume from a checkpoint before step "
            f"{step - self.patience + 1}."
        )
