"""Peer check: rlvr's IFEval checkers against lm-eval's (the reference implementation), instruction by
instruction, strict and loose, on a JSONL of responses; every disagreement listed by instruction type.

    python bench/ifeval_peer.py tests/data/ifeval_cases.jsonl --lmeval-python /work/venv-lmeval/bin/python

Each input line is either one instruction (`family`, `kwargs`, `response`, `prompt`, optional hand label
`strict`/`loose`: the format of tests/data/ifeval_cases.jsonl) or one prompt row (`instruction_id_list`,
`kwargs`, `prompt`, `response`, like IFEval's rows with a response), which yields one comparison per
instruction. lm-eval runs in its own interpreter (`--lmeval-python`, a venv with `lm-eval==0.4.13`, langdetect,
nltk, immutabledict and NLTK's `punkt_tab` data; docs/instructions.md says how it was set up offline); its
ifeval modules are loaded without `lm_eval.tasks/__init__` (which needs datasets, evaluate, ...), and langdetect
is seeded (0) so the table is reproducible. Prints a markdown table and the disagreements; `--json` writes
both as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Runs inside lm-eval's interpreter: reads [[instruction_id, kwargs, prompt, response], ...] on stdin, prints
# [[strict, loose], ...].
PEER = r"""
import json, sys, types, importlib.util, pathlib
spec = importlib.util.find_spec("lm_eval")
base = pathlib.Path(spec.submodule_search_locations[0])
for name, sub in [("lm_eval", ""), ("lm_eval.tasks", "tasks"), ("lm_eval.tasks.ifeval", "tasks/ifeval")]:
    m = types.ModuleType(name); m.__path__ = [str(base / sub)]; sys.modules[name] = m
import langdetect
langdetect.DetectorFactory.seed = 0
from lm_eval.tasks.ifeval import utils
out = []
for iid, kwargs, prompt, response in json.load(sys.stdin):
    inp = utils.InputExample(key=0, instruction_id_list=[iid], prompt=prompt, kwargs=[kwargs or {}])
    try:
        s = utils.test_instruction_following_strict(inp, response).follow_instruction_list[0]
        l = utils.test_instruction_following_loose(inp, response).follow_instruction_list[0]
        out.append([bool(s), bool(l), ""])
    except Exception as e:
        out.append([False, False, f"{type(e).__name__}: {e}"[:120]])
print(json.dumps(out))
"""


def read_items(path: Path) -> list[dict[str, Any]]:
    """One item per instruction: id, kwargs, prompt, response and the hand labels when given."""
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if "family" in row:
                items.append({"id": row["family"], "kwargs": row.get("kwargs") or {}, "prompt": row.get("prompt", ""),
                              "response": row["response"], "label": row.get("strict"), "label_loose": row.get("loose"),
                              "note": row.get("note", "")})  # fmt: skip
            else:
                for iid, kw in zip(row["instruction_id_list"], row["kwargs"], strict=True):
                    items.append({"id": iid, "kwargs": kw or {}, "prompt": row["prompt"], "response": row["response"],
                                  "label": None, "label_loose": None, "note": str(row.get("key", ""))})  # fmt: skip
        except (KeyError, ValueError, TypeError) as exc:
            print(f"{path}:{n}: bad row ({type(exc).__name__}: {exc})", file=sys.stderr)
            raise SystemExit(2) from None
    return items


def run_peer(python: str, items: list[dict[str, Any]]) -> list[list[Any]]:
    payload = json.dumps([[i["id"], {k: v for k, v in i["kwargs"].items() if v is not None}, i["prompt"],
                           i["response"]] for i in items])  # fmt: skip
    done = subprocess.run([python, "-c", PEER], input=payload, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        print(f"lm-eval run failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        raise SystemExit(2)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("responses", type=Path)
    ap.add_argument("--lmeval-python", default="/work/venv-lmeval/bin/python")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if not args.responses.is_file():
        print(f"{args.responses}: no such file", file=sys.stderr)
        raise SystemExit(2)
    sys.path.insert(0, str(ROOT / "src"))
    from rlvr.verify.ifeval import check_instruction

    items = read_items(args.responses)
    peer = run_peer(args.lmeval_python, items)
    per_type: dict[str, Counter[str]] = defaultdict(Counter)
    disagreements = []
    for item, (p_strict, p_loose, p_error) in zip(items, peer, strict=True):
        v = check_instruction(item["response"], item["id"], item["kwargs"], item["prompt"])
        c = per_type[item["id"]]
        c["n"] += 1
        c["agree_strict"] += v.strict == p_strict
        c["agree_loose"] += v.loose == p_loose
        if item["label"] is not None:
            c["labelled"] += 1
            c["rlvr_right"] += v.strict == item["label"]
            c["peer_right"] += p_strict == item["label"]
        if v.strict != p_strict or v.loose != p_loose:
            disagreements.append({"id": item["id"], "rlvr": [v.strict, v.loose], "lm_eval": [p_strict, p_loose],
                                  "label": item["label"], "rlvr_reason": v.reason, "lm_eval_error": p_error,
                                  "note": item["note"], "response": item["response"][:120],
                                  "kwargs": item["kwargs"]})  # fmt: skip
    total = Counter[str]()
    for c in per_type.values():
        total.update(c)
    print("| instruction | n | strict agree | loose agree | labelled | rlvr = label | lm-eval = label |")
    print("|---|---|---|---|---|---|---|")
    for iid in sorted(per_type) + ["all"]:
        c = total if iid == "all" else per_type[iid]
        print(f"| {iid} | {c['n']} | {c['agree_strict']} | {c['agree_loose']} | {c['labelled']} | {c['rlvr_right']} "
              f"| {c['peer_right']} |")  # fmt: skip
    print(f"\n{len(disagreements)} disagreements (strict or loose):\n")
    for d in disagreements:
        label = "" if d["label"] is None else f" label {'pass' if d['label'] else 'fail'};"
        print(f"- {d['id']}: rlvr {d['rlvr']} lm-eval {d['lm_eval']};{label} rlvr: {d['rlvr_reason']}; "
              f"{d['note']} | {d['response']!r} {d['kwargs']}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"per_type": per_type, "disagreements": disagreements}, indent=1))


if __name__ == "__main__":
    main()
