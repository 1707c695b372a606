"""The verifier alone, apart from training (check 2): a task's `Task.probes(problem)` writes equivalent, wrong
and adversarial completions, `audit_verifier` scores them (recall, specificity, rejection) with the task's
`verify(completion, gold, **columns)`, the problem's columns included (a code run's own tests and verifier
setting), and, when `math_verify` is installed, compares a second verifier. The probes: docs/audit.md,
"2. Verifier audit"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from pydantic import ConfigDict

from rlvr.audit.result import Record
from rlvr.tasks.problem import Problem
from rlvr.verify import Verdict, verify_answer
from rlvr.verify.probes import Probe, number_probes

__all__ = ["Probe", "answer_probes", "audit_verifier", "make_probes", "probes_for", "second_verifier"]


class FormCount(Record):
    kind: str
    form: str
    n: int
    failed: int


class ProbeFailure(Record):
    """A probe the verifier judged wrongly (an example of the report)."""

    kind: str
    form: str
    completion: str
    gold: str
    accepted: bool
    reason: str


class SecondExample(Record):
    """A probe on which the second verifier disagrees with ours; its verdict sits under its own name
    (e.g. `math_verify`), kept as an extra field."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)  # the verdict's key is the verifier's name

    form: str
    completion: str
    gold: str
    rlvr: bool
    right: str


class Disagreement(Record):
    form: str
    n: int
    rlvr_right: int


class SecondVerifier(Record):
    name: str
    n: int
    disagreement: float | None
    rlvr_right: int
    second_right: int
    second_accuracy: float | None
    by_form: list[Disagreement] = []
    examples: list[SecondExample] = []


class VerifierEvidence(Record):
    """The verifier alone on probes built from gold answers (see rlvr.audit.verifier_audit)."""

    n_golds: int = 0
    n_probes: int = 0
    recall: float | None = None
    specificity: float | None = None
    rejection: float | None = None
    counts: dict[str, int] = {}
    by_form: list[FormCount] = []
    failures: list[ProbeFailure] = []
    second: SecondVerifier | None = None
    source: str = ""
    thresholds: dict[str, tuple[float, float]] = {}
    error: str | None = None  # the check could not run (or, where said, what it could not read)
    accepted_hacks: dict[str, int] = {}  # adversarial form -> how many of its probes the verifier accepted


probes_for = number_probes  # the numeric probes under their old name (rlvr.verify.probes)


def answer_probes(problem: Problem) -> list[Probe]:
    """The numeric probes of a problem's gold answer (`Task.probes`'s default)."""
    return number_probes(problem.answer)


def _as_problem(gold: str | Problem) -> Problem:
    return gold if isinstance(gold, Problem) else Problem(str(gold).strip(), "", str(gold).strip(), [], "gold")


def make_probes(
    golds: Iterable[str | Problem], max_golds: int = 200, probes: Callable[[Problem], list[Probe]] = answer_probes
) -> list[Probe]:
    """`probes(problem)` (a task's `Task.probes`; numeric by default) for up to `max_golds` problems with
    distinct golds (an even spread over them sorted by gold); a bare gold string is a problem of its own."""
    by_gold: dict[str, Problem] = {}
    for p in map(_as_problem, golds):
        if p.answer.strip():
            by_gold.setdefault(p.answer.strip(), p)
    distinct = sorted(by_gold, key=lambda s: (len(s), s))
    if len(distinct) > max_golds:
        step = len(distinct) / max_golds
        distinct = [distinct[int(i * step)] for i in range(max_golds)]
    return [p for g in distinct for p in probes(by_gold[g])]


def second_verifier() -> tuple[str, Callable[[str, str], bool]] | None:
    """`("math_verify", accept(completion, gold))` when the package is installed, else None."""
    try:
        from math_verify import parse, verify
    except Exception:  # not installed, or broken: the audit goes on without it
        return None

    def accept(completion: str, gold: str) -> bool:
        try:
            # the gold boxed: math-verify misreads 51 of MATH-500's 500 bare golds (docs/rewards.md)
            return bool(verify(parse(f"\\boxed{{{gold}}}"), parse(completion)))
        except Exception:
            return False

    return "math_verify", accept


def _rate(ok: Sequence[bool]) -> float | None:
    return sum(ok) / len(ok) if ok else None


def _second(
    probes: list[Probe], ours: list[bool], second: tuple[str, Callable[[str, str], bool]], limit: int, n_ex: int
) -> SecondVerifier:
    """Disagreement of a second verifier with ours on an even spread of at most `limit` probes."""
    name, accept = second
    idx = list(range(len(probes))) if len(probes) <= limit else [int(i * len(probes) / limit) for i in range(limit)]
    theirs = {i: accept(probes[i].completion, probes[i].gold) for i in idx}
    differ = [i for i in idx if theirs[i] != ours[i]]
    labels = [f"{probes[i].kind}/{probes[i].form}" for i in differ]
    first: dict[str, int] = {}  # the first disagreement of each form
    for i, label in zip(differ, labels, strict=True):
        first.setdefault(label, i)
    examples = [
        SecondExample.model_validate(
            {
                "form": f"{probes[i].kind}/{probes[i].form}",
                "completion": probes[i].completion,
                "gold": probes[i].gold,
                "rlvr": ours[i],
                name: theirs[i],
                "right": "rlvr" if ours[i] == probes[i].should_accept else name,
            }
        )
        for i in list(first.values())[:n_ex]
    ]
    right = Counter(lb for i, lb in zip(differ, labels, strict=True) if ours[i] == probes[i].should_accept)
    by_form = [Disagreement(form=f, n=n, rlvr_right=right[f]) for f, n in Counter(labels).most_common()]
    return SecondVerifier(
        name=name,
        n=len(idx),
        disagreement=len(differ) / len(idx) if idx else None,
        rlvr_right=sum(ours[i] == probes[i].should_accept for i in differ),
        second_right=sum(theirs[i] == probes[i].should_accept for i in differ),
        second_accuracy=_rate([theirs[i] == probes[i].should_accept for i in idx]),
        by_form=by_form,
        examples=examples,
    )


def audit_verifier(
    golds: Iterable[str | Problem],
    *,
    verify: Callable[..., bool | Verdict] | None = None,
    probes: Callable[[Problem], list[Probe]] = answer_probes,
    use_second: bool = True,
    max_golds: int = 200,
    max_second: int = 400,
    max_examples: int = 8,
) -> VerifierEvidence:
    """Recall, specificity and adversarial rejection of `verify(completion, gold, **columns)` (a task's
    verifier, returning a `Verdict`, or a bool; default `rlvr.verify.verify_answer`) on probes of `golds`
    (gold strings, or problems whose columns the probes carry), with per-form counts, failing examples,
    the hack forms it accepts and, under `use_second`, a second verifier's disagreement. `probes(problem)`
    writes each problem's probes (the task's `Task.probes`; numeric by default)."""
    cases = make_probes(golds, max_golds, probes)
    judge = verify or verify_answer
    verdicts = [judge(p.completion, p.gold, **p.columns) if p.columns else judge(p.completion, p.gold) for p in cases]
    ours = [v.correct if isinstance(v, Verdict) else bool(v) for v in verdicts]
    ok = [o == p.should_accept for p, o in zip(cases, ours, strict=True)]
    by_kind = {
        k: [o for p, o in zip(cases, ok, strict=True) if p.kind == k] for k in ("equivalent", "wrong", "adversarial")
    }
    forms = Counter((p.kind, p.form) for p in cases)
    misses = Counter((p.kind, p.form) for p, good in zip(cases, ok, strict=True) if not good)
    failures: list[ProbeFailure] = []  # at most two of a form
    for p, o, good, v in zip(cases, ours, ok, verdicts, strict=True):
        if not good and sum(1 for f in failures if f.form == p.form) < 2 and len(failures) < max_examples:
            reason = v.reason if isinstance(v, Verdict) else verify_answer(p.completion, p.gold).reason
            failures.append(
                ProbeFailure(kind=p.kind, form=p.form, completion=p.completion, gold=p.gold, accepted=o, reason=reason)
            )
    second = second_verifier() if use_second else None
    return VerifierEvidence(
        n_golds=len({p.gold for p in cases}),
        n_probes=len(cases),
        recall=_rate(by_kind["equivalent"]),
        specificity=_rate(by_kind["wrong"]),
        rejection=_rate(by_kind["adversarial"]),
        counts={k: len(v) for k, v in by_kind.items()},
        by_form=[FormCount(kind=k, form=f, n=n, failed=misses[(k, f)]) for (k, f), n in sorted(forms.items())],
        failures=failures,
        accepted_hacks=dict(Counter(p.form for p, o in zip(cases, ours, strict=True) if o and p.kind == "adversarial")),
        second=_second(cases, ours, second, max_second, max_examples) if second else None,
    )
