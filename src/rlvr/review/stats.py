"""Statistics of a review (`rlvr review stats` writes `stats.json`): reviewer agreement, the consensus
label, the verifiers against people, the headline pass@1 and its population-corrected estimate.
Definitions and schema: docs/review.md, "stats and stats.json"."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rlvr.evaluate.stats import bootstrap_ci, cohen_kappa
from rlvr.review.items import SliceItem, load_slice
from rlvr.review.store import CATEGORIES, DB_FILE, LabelStore, StoredLabel
from rlvr.runs import write_json
from rlvr.runs.review import (
    Agreement,
    AgreementPair,
    ClassifierStats,
    Estimate,
    Headline,
    Pass1Headline,
    ReviewStats,
    ReviewSummary,
    SliceExport,
    StratumAgreement,
    StrictHeadline,
    Verifiers,
)

__all__ = ["classifier_stats", "compute_stats", "consensus", "corrected_accuracy", "reviewer_agreement", "write_stats"]

STATS_FILE = "stats.json"


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def consensus(labels: Sequence[StoredLabel]) -> dict[str, dict[str, bool]]:
    """Per item: `{"answer_correct", "reasoning_valid"}` by strict majority of its reviewers.

    >>> from rlvr.review.store import StoredLabel as L
    >>> c = consensus([L("a", "x", True, True), L("a", "y", True, False), L("b", "x", False, True)])
    >>> c["a"], c["b"]["answer_correct"]
    ({'answer_correct': True, 'reasoning_valid': False}, False)
    """
    by_item: dict[str, list[StoredLabel]] = defaultdict(list)
    for lab in labels:
        by_item[lab.item_id].append(lab)
    return {
        iid: {k: 2 * sum(getattr(x, k) for x in labs) > len(labs) for k in ("answer_correct", "reasoning_valid")}
        for iid, labs in sorted(by_item.items())
    }


def reviewer_agreement(labels: Sequence[StoredLabel]) -> list[AgreementPair]:
    """Per pair of reviewers (sorted names): items both labelled, raw agreement and kappa."""
    by_reviewer: dict[str, dict[str, StoredLabel]] = defaultdict(dict)
    for lab in labels:
        by_reviewer[lab.reviewer][lab.item_id] = lab
    pairs = []
    for a, b in itertools.combinations(sorted(by_reviewer), 2):
        shared = sorted(set(by_reviewer[a]) & set(by_reviewer[b]))
        row: dict[str, float | None] = {}
        for field in ("answer_correct", "reasoning_valid"):
            xa = [getattr(by_reviewer[a][i], field) for i in shared]
            xb = [getattr(by_reviewer[b][i], field) for i in shared]
            short = field.split("_")[0]
            row[f"{short}_agreement"] = _ratio(sum(x == y for x, y in zip(xa, xb, strict=True)), len(shared))
            row[f"{short}_kappa"] = cohen_kappa(xa, xb) if shared else None
        pairs.append(AgreementPair(a=a, b=b, n=len(shared), **row))
    return pairs


def classifier_stats(pred: Sequence[bool], truth: Sequence[bool]) -> ClassifierStats:
    """A binary judge (`pred`) against people (`truth`); positive = correct.

    >>> s = classifier_stats([True, True, True, False, False], [True, False, True, True, False])
    >>> s.tp, s.fp, s.fn, s.tn, s.precision, round(s.recall, 3), s.accuracy
    (2, 1, 1, 1, 0.6666666666666666, 0.667, 0.6)
    """
    pairs = list(zip(pred, truth, strict=True))
    tp = sum(p and t for p, t in pairs)
    fp = sum(p and not t for p, t in pairs)
    fn = sum(t and not p for p, t in pairs)
    tn = len(pairs) - tp - fp - fn
    return ClassifierStats(
        n=len(pairs),
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=_ratio(tp, tp + fp),
        recall=_ratio(tp, tp + fn),
        accuracy=_ratio(tp + tn, len(pairs)),
        kappa=cohen_kappa(list(pred), list(truth)) if pairs else None,
    )


def corrected_accuracy(
    verifier: Sequence[bool],
    human: Sequence[bool],
    population_correct: float,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Estimate:
    """Population pass@1 from the verifier's population rate and human labels per verdict group.

    value = q * mean(human | verifier correct) + (1 - q) * mean(human | verifier wrong), with q the
    verifier's pass@1 over the whole evaluation. CI: percentile bootstrap resampling each group
    separately. None when a group with q > 0 (or 1 - q > 0) has no labelled item.

    >>> corrected_accuracy([True, True, False, False], [True, False, False, True], 0.5).value
    0.5
    """
    v, h = np.asarray(verifier, dtype=bool), np.asarray(human, dtype=np.float64)
    groups = [(population_correct, h[v]), (1.0 - population_correct, h[~v])]
    groups = [(w, g) for w, g in groups if w > 0]
    if any(g.size == 0 for _, g in groups):
        return Estimate()
    value = float(sum(w * g.mean() for w, g in groups))
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_resamples)
    for w, g in groups:
        idx = rng.integers(0, g.size, size=(n_resamples, g.size))
        boot += w * g[idx].mean(axis=1)
    low, high = np.percentile(boot, [2.5, 97.5])
    return Estimate(value=value, ci=[float(low), float(high)])


def _mean_ci(values: Sequence[float], seed: int, n_resamples: int) -> Estimate:
    if not values:
        return Estimate()
    low, high = bootstrap_ci(np.asarray(values, dtype=np.float64), seed=seed, n_resamples=n_resamples)
    return Estimate(value=float(np.mean(values)), ci=[low, high])


def _headline(
    items: list[SliceItem],
    cons: dict[str, dict[str, bool]],
    population: SliceExport | None,
    seed: int,
    n_resamples: int,
) -> Headline:
    v = [float(it.correct) for it in items]
    h = [float(cons[it.item_id]["answer_correct"]) for it in items]
    strict = [float(cons[it.item_id]["answer_correct"] and cons[it.item_id]["reasoning_valid"]) for it in items]
    diff = Estimate()
    if items:
        low, high = bootstrap_ci(v, seed=seed, n_resamples=n_resamples, paired_with=h)
        diff = Estimate(value=float(np.mean(h) - np.mean(v)), ci=[low, high])
    n_pop, n_pop_correct = (population.n_population, population.population_correct) if population else (0, 0)
    corrected = Estimate()
    if items and n_pop:
        corrected = corrected_accuracy([x > 0 for x in v], [x > 0 for x in h], n_pop_correct / n_pop, n_resamples, seed)
    p1 = Pass1Headline(
        n=len(items),
        verifier=_mean_ci(v, seed, n_resamples),
        human=_mean_ci(h, seed, n_resamples),
        human_minus_verifier=diff,
        corrected=corrected,
        population_verifier=_ratio(n_pop_correct, n_pop) if n_pop else None,
    )
    return Headline(pass_at_1=p1, strict_at_1=StrictHeadline(n=len(items), human=_mean_ci(strict, seed, n_resamples)))


def _verifiers(items: list[SliceItem], cons: dict[str, dict[str, bool]]) -> Verifiers:
    human = [cons[it.item_id]["answer_correct"] for it in items]
    out = Verifiers(verifier=classifier_stats([it.correct for it in items], human))
    v2 = [(it.verifier2_correct, h) for it, h in zip(items, human, strict=True) if it.verifier2_correct is not None]
    if v2:
        out.verifier2 = classifier_stats([p for p, _ in v2], [t for _, t in v2])
    proc = [
        (it.process_score >= 0.5, cons[it.item_id]["reasoning_valid"]) for it in items if it.process_score is not None
    ]
    if proc:
        out.process = classifier_stats([p for p, _ in proc], [t for _, t in proc])
    return out


def _by_stratum(items: list[SliceItem], cons: dict[str, dict[str, bool]]) -> dict[str, dict[str, StratumAgreement]]:
    """Per stratum value: labelled items and how often the verifier agreed with people."""
    out: dict[str, dict[str, StratumAgreement]] = defaultdict(dict)
    for dim in sorted({d for it in items for d in it.strata}):
        groups: dict[str, list[bool]] = defaultdict(list)
        for it in items:
            groups[it.strata[dim]].append(it.correct == cons[it.item_id]["answer_correct"])
        for value, agree in sorted(groups.items()):
            out[dim][value] = StratumAgreement(n=len(agree), verifier_agrees=sum(agree) / len(agree))
    return dict(out)


def compute_stats(review_dir: Path, seed: int = 0, n_resamples: int = 2000) -> ReviewStats:
    """Everything `stats.json` holds, from a review folder's slice, export metadata and labels."""
    export, items = load_slice(review_dir)
    labels = LabelStore(review_dir / DB_FILE).labels()
    ids = {it.item_id for it in items}
    labels = [lab for lab in labels if lab.item_id in ids]
    cons = consensus(labels)
    labelled = [it for it in items if it.item_id in cons]
    pairs = reviewer_agreement(labels)
    kappas = [p.answer_kappa for p in pairs if p.answer_kappa is not None]
    agreement = Agreement(
        pairs=pairs,
        answer_kappa_min=min(kappas) if kappas else None,
        items_multiply_labelled=sum(1 for n in Counter(lab.item_id for lab in labels).values() if n > 1),
    )
    verifiers = _verifiers(labelled, cons)
    headline = _headline(labelled, cons, export, seed, n_resamples)
    return ReviewStats(
        review_dir=str(review_dir),
        eval=export.eval if export else None,
        seed=seed,
        n_items=len(items),
        n_labelled=len(labelled),
        coverage=len(labelled) / len(items),
        reviewers=dict(sorted(Counter(lab.reviewer for lab in labels).items())),
        summary=_summary(labelled, labels, agreement, verifiers, headline),
        agreement=agreement,
        verifiers=verifiers,
        headline=headline,
        errors={c: sum(lab.error_category == c for lab in labels) for c in CATEGORIES},
        by_stratum=_by_stratum(labelled, cons),
    )


def _summary(
    labelled: list[SliceItem],
    labels: Sequence[StoredLabel],
    agreement: Agreement,
    verifiers: Verifiers,
    headline: Headline,
) -> ReviewSummary:
    """The flat numbers the readiness audit (check 7) reads."""
    p1 = headline.pass_at_1
    published, ci = p1.population_verifier, p1.corrected.ci
    return ReviewSummary(
        n_labelled=len(labelled),
        n_reviewers=len({lab.reviewer for lab in labels}),
        answer_kappa_min=agreement.answer_kappa_min,
        verifier_precision=verifiers.verifier.precision,
        verifier_recall=verifiers.verifier.recall,
        pass_at_1_verifier=published,
        pass_at_1_corrected=p1.corrected.value,
        pass_at_1_corrected_ci=ci,
        verifier_in_corrected_ci=None if ci is None or published is None else ci[0] <= published <= ci[1],
    )


def write_stats(review_dir: Path, seed: int = 0, n_resamples: int = 2000) -> tuple[Path, ReviewStats]:
    """Compute the statistics and write them to `REVIEW_DIR/stats.json` (atomically)."""
    stats = compute_stats(review_dir, seed, n_resamples)
    path = review_dir / STATS_FILE
    write_json(path, stats.to_json())
    return path, stats
