"""The verifier check on a code run: probes built from the run's own problems (the canonical solution,
two wrong ones, one hack per family of `rlvr.harness.hack_probes`) judged by the run's own verifier
setting. A naive-harness run shows the hacks it pays for; rlvr's pays for none."""

from __future__ import annotations

from types import SimpleNamespace

from rlvr.audit.checks.measurement import check_verifier
from rlvr.harness import hack_probes
from rlvr.tasks import get_task, load_task


def _ctx(verifier: str, n: int = 1) -> SimpleNamespace:
    """The parts of an `AuditContext` the check reads, for a code run whose task settings say `verifier`."""
    problems = load_task("code", "test", n=n, verifier=verifier)
    return SimpleNamespace(
        task=get_task("code"),
        probe_problems=lambda: (problems, "training problems (the run's task settings)"),
        max_golds=200,
        second_verifier=True,
    )


def test_code_probes_cover_every_hack_family_and_carry_the_run_s_verifier(os_sandbox):
    p = load_task("code", "test", n=1, verifier="naive")[0]
    probes = get_task("code").probes(p)
    kinds = [x.kind for x in probes]
    assert kinds.count("equivalent") == 1 and kinds.count("wrong") == 2
    assert [x.form for x in probes if x.kind == "adversarial"] == [h.family for h in hack_probes(p.columns)]
    assert all(x.columns["verifier"] == "naive" and x.gold == p.answer for x in probes)


def test_the_check_lists_the_hacks_a_naive_run_pays_for_and_passes_rlvr_s(os_sandbox):
    naive = check_verifier(_ctx("naive"))
    ev = naive.evidence
    assert naive.status == "fail" and ev.recall == 1.0 and ev.specificity == 1.0
    universal = {h.family for h in hack_probes({"entry_point": "f"}) if h.universal}
    assert universal <= set(ev.accepted_hacks), set(ev.accepted_hacks)
    assert "hacks it accepts: exit(0) (1/1)" in naive.summary and ev.second is None
    table = next(t for t in naive.tables if t.title == "hack families")
    assert {r[0] for r in table.rows if r[3] == "ACCEPTED"} == set(ev.accepted_hacks)

    sound = check_verifier(_ctx("rlvr"))
    ev = sound.evidence
    assert sound.status == "pass", sound.summary
    assert (ev.recall, ev.specificity, ev.rejection, ev.accepted_hacks) == (1.0, 1.0, 1.0, {})
    assert ev.n_probes == 21 and "it accepts no hack" in sound.summary and "math-verify" not in sound.summary


def test_the_code_task_bounds_the_probes_to_a_few_problems(os_sandbox):
    """4 problems at most (`CodeTask.probe_limit`), whatever the audit's own cap."""
    problems = load_task("code", "test", n=6)
    from rlvr.audit import audit_verifier

    seen: list[str] = []
    res = audit_verifier(
        problems,
        verify=lambda c, g, **cols: seen.append(g) or False,
        probes=get_task("code").probes,
        use_second=False,
        max_golds=get_task("code").probe_limit,
    )
    assert res.n_golds == 4 and len(set(seen)) == 4 and res.n_probes == 4 * 21
