"""Optional LLM judge (`rlvr judge`): sort wrong completions into error categories (`CATEGORIES`).

Any OpenAI-compatible chat-completions endpoint through the `openai` package (`pip install 'rlvr[judge]'`,
imported only when a judge runs). `judge_samples` is the entry point; docs/evaluation.md ("LLM judge")
has the settings, the strict reply parsing, the cache, the retries and the output files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from rlvr.config import StrictModel
from rlvr.runs import JudgeSummary, RunFileError, Sample, read_samples, write_json, write_jsonl
from rlvr.runs.eval import JudgedSample

__all__ = [
    "CATEGORIES",
    "JudgeConfig",
    "JudgeError",
    "Judgement",
    "JudgeCache",
    "Judge",
    "build_messages",
    "judge_samples",
    "parse_judgement",
    "resolve_config",
]

CATEGORIES = ("derivation_error", "calculation_error", "missing_step", "contradiction", "other")
PROMPT_VERSION = "judge-v1"  # part of the cache key: change it when the prompt changes
_RETRY_STATUS = (408, 409, 429)  # and every 5xx
_FENCE_RE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)

SYSTEM_PROMPT = """You grade wrong solutions to math word problems. Pick the ONE category that best \
explains the first error in the student's solution:
- derivation_error: sets up the wrong operation or relation (misreads the problem, wrong formula).
- calculation_error: the setup is right but an arithmetic result is wrong.
- missing_step: skips a step the solution needs, so the answer is incomplete or stops early.
- contradiction: the final answer disagrees with the student's own work, or steps contradict each other.
- other: anything else (no answer, garbled text, truncated output, correct work judged wrong).
Answer with exactly one JSON object and nothing else: {"category": "<category>", "explanation": "<one sentence>"}"""


class JudgeError(RuntimeError):
    """The judge cannot run: missing package or settings, endpoint refusing, too many failures."""


class JudgeConfig(StrictModel):
    """LLM-judge settings; unset `base_url`, `model`, `api_key` are read from the environment."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    max_tokens: int = Field(default=256, ge=1)
    timeout_s: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=1.0, ge=0, allow_inf_nan=False)
    max_consecutive_errors: int = Field(default=5, ge=1)
    cache: str | None = None  # JSONL path; default <eval_dir>/judge_cache.jsonl


def resolve_config(cfg: JudgeConfig | None = None) -> JudgeConfig:
    """Fill unset fields from RLVR_JUDGE_BASE_URL, RLVR_JUDGE_MODEL, RLVR_JUDGE_API_KEY / OPENAI_API_KEY.

    A local endpoint often needs no key: with a base URL and no key, the placeholder "EMPTY" is sent.
    """
    cfg = cfg or JudgeConfig()
    base_url = cfg.base_url or os.environ.get("RLVR_JUDGE_BASE_URL") or None
    model = cfg.model or os.environ.get("RLVR_JUDGE_MODEL") or None
    key = cfg.api_key or os.environ.get("RLVR_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY") or None
    if model is None:
        raise JudgeError("no judge model: set JudgeConfig.model or RLVR_JUDGE_MODEL")
    if key is None:
        if base_url is None:
            raise JudgeError("no judge endpoint: set RLVR_JUDGE_BASE_URL, or an API key (RLVR_JUDGE_API_KEY)")
        key = "EMPTY"
    return cfg.model_copy(update={"base_url": base_url, "model": model, "api_key": key})


@dataclass(frozen=True)
class Judgement:
    """One verdict. `category` is in CATEGORIES; `raw` is the judge's text ("" when the call failed)."""

    category: str
    explanation: str
    raw: str
    parse_error: str | None = None
    error: str | None = None


def parse_judgement(text: str) -> Judgement:
    """Strictly parse `{"category": ..., "explanation": ...}`; anything else is "other" + parse_error.

    The whole reply (optionally inside one ```json fence) must be a JSON object. The category is
    compared after lower-casing and turning spaces and hyphens into underscores.

    >>> parse_judgement('{"category": "Calculation error", "explanation": "7*8 is not 54"}').category
    'calculation_error'
    >>> j = parse_judgement("I think it is a calculation error.")
    >>> j.category, j.parse_error, j.raw
    ('other', 'not JSON', 'I think it is a calculation error.')
    """
    body = text.strip()
    fence = _FENCE_RE.match(body)
    if fence:
        body = fence.group(1).strip()
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return Judgement("other", "", text, parse_error="not JSON")
    if not isinstance(obj, dict) or not isinstance(obj.get("category"), str):
        return Judgement("other", "", text, parse_error="not an object with a string 'category'")
    category = re.sub(r"[\s\-]+", "_", obj["category"].strip().lower())
    explanation = obj.get("explanation")
    explanation = explanation if isinstance(explanation, str) else ""
    if category not in CATEGORIES:
        return Judgement("other", explanation, text, parse_error=f"unknown category {obj['category']!r}")
    return Judgement(category, explanation, text)


def build_messages(row: Sample) -> list[dict[str, str]]:
    """Chat messages for one `samples.jsonl` row: question, reference solution, the student's work."""
    user = (
        f"Problem:\n{row.question}\n\n"
        f"Reference solution:\n{row.gold_solution or ''}\n"
        f"Correct final answer: {row.gold}\n\n"
        f"Student solution:\n{row.completion}\n\n"
        f"Student's parsed final answer: {row.parsed} (verifier: {row.reason or ''})"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class JudgeCache:
    """Append-only JSONL cache `{"key", "response"}` of raw judge replies; the last line of a key wins."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._data: dict[str, str] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self._data[row["key"]] = row["response"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a torn last line from an interrupted run

    @staticmethod
    def key(model: str, messages: list[dict[str, str]], temperature: float, max_tokens: int) -> str:
        """sha256 of everything that decides the reply."""
        blob = json.dumps([PROMPT_VERSION, model, messages, temperature, max_tokens], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> str | None:
        return self._data.get(key)

    def put(self, key: str, response: str) -> None:
        self._data[key] = response
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "response": response}, ensure_ascii=False) + "\n")


class Judge:
    """A chat-completions client with bounded retries and a disk cache; `n_requests` counts HTTP calls."""

    def __init__(self, cfg: JudgeConfig, cache: JudgeCache) -> None:
        self.cfg = resolve_config(cfg)
        self.cache = cache
        self.n_requests = 0
        self._client: Any = None

    def judge(self, messages: list[dict[str, str]]) -> tuple[Judgement, bool]:
        """(verdict, came from cache). Failed calls give category "other" with `error` set."""
        cfg = self.cfg
        assert cfg.model is not None  # resolve_config guarantees it
        key = JudgeCache.key(cfg.model, messages, cfg.temperature, cfg.max_tokens)
        cached = self.cache.get(key)
        if cached is not None:
            return parse_judgement(cached), True
        try:
            text = self._request(messages)
        except _TransientError as e:
            return Judgement("other", "", "", error=str(e)), False
        self.cache.put(key, text)
        return parse_judgement(text), False

    def _request(self, messages: list[dict[str, str]]) -> str:
        """One completion's text; retries transient failures, raises JudgeError on the others."""
        try:
            import openai
        except ImportError:
            raise JudgeError("the LLM judge needs the openai package: pip install 'rlvr[judge]'") from None
        if self._client is None:
            cfg = self.cfg
            self._client = openai.OpenAI(
                base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout_s, max_retries=0
            )
        last: Exception | None = None
        for attempt in range(self.cfg.max_retries + 1):
            if attempt:
                time.sleep(self.cfg.backoff_s * 2 ** (attempt - 1))
            self.n_requests += 1
            try:
                resp = self._client.chat.completions.create(
                    model=self.cfg.model,
                    messages=messages,
                    temperature=self.cfg.temperature,
                    max_tokens=self.cfg.max_tokens,
                )
            except openai.APIStatusError as e:
                if e.status_code not in _RETRY_STATUS and e.status_code < 500:
                    raise JudgeError(f"judge endpoint refused the request: HTTP {e.status_code}: {e.message}") from None
                last = e
                continue
            except (openai.APIError, json.JSONDecodeError) as e:  # connection, timeout, a body that is not JSON
                last = e
                continue
            choices = getattr(resp, "choices", None) or []
            content = choices[0].message.content if choices else None
            return content if isinstance(content, str) else ""
        raise _TransientError(f"{type(last).__name__}: {last} (after {self.cfg.max_retries + 1} attempts)")


class _TransientError(Exception):
    """Retries exhausted on a failure that might pass (connection, timeout, 429, 5xx)."""


def _select(rows: list[Sample], n: int | None, only_incorrect: bool, seed: int) -> list[Sample]:
    """A seeded random subset of n rows (all when n is None), kept in file order."""
    pool = [r for r in rows if not (only_incorrect and r.correct)]
    if n is not None and n < len(pool):
        keep = np.sort(np.random.default_rng(seed).choice(len(pool), size=n, replace=False))
        pool = [pool[i] for i in keep]
    return pool


def _read_samples(eval_dir: Path) -> list[Sample]:
    path = eval_dir / "samples.jsonl"
    if not path.is_file():
        raise JudgeError(f"{eval_dir}: no samples.jsonl (not an evaluation folder)")
    try:
        return read_samples(path)
    except RunFileError as e:
        raise JudgeError(str(e)) from None


def judge_samples(
    eval_dir: Path,
    cfg: JudgeConfig | None = None,
    *,
    n: int | None = 50,
    only_incorrect: bool = True,
    seed: int = 0,
) -> Path:
    """Judge a seeded random subset of up to `n` completions of an evaluation (only wrong ones by default);
    write `judge.jsonl` and `judge.json` (never the API key), return the latter."""
    eval_dir = Path(eval_dir)
    samples = _read_samples(eval_dir)
    rows = _select(samples, n, only_incorrect, seed)
    if not rows:  # nothing to judge: an error, and the finished evaluation is left as it is
        why = (
            "no completions in it" if not samples else f"all {len(samples)} completions are correct (--all judges them)"
        )
        raise JudgeError(f"{eval_dir / 'samples.jsonl'}: {why}; nothing to judge")
    resolved = resolve_config(cfg)
    judge = Judge(resolved, JudgeCache(Path(resolved.cache) if resolved.cache else eval_dir / "judge_cache.jsonl"))
    out_rows: list[JudgedSample] = []
    consecutive = 0
    for row in rows:
        verdict, cached = judge.judge(build_messages(row))
        consecutive = consecutive + 1 if verdict.error else 0
        if consecutive >= resolved.max_consecutive_errors:
            raise JudgeError(f"judge failed {consecutive} times in a row; last error: {verdict.error}")
        out_rows.append(
            JudgedSample(
                problem_id=row.problem_id,
                sample=row.sample,
                correct=row.correct,
                parsed=row.parsed,
                gold=row.gold,
                **asdict(verdict),  # category, explanation, raw, parse_error, error
                cached=cached,
            )
        )
    if out_rows and all(r.error is not None for r in out_rows):  # a dead or wrong endpoint: write nothing
        raise JudgeError(f"judge failed on all {len(out_rows)} completion(s); last error: {out_rows[-1].error}")
    write_jsonl(eval_dir / "judge.jsonl", [r.model_dump(mode="json") for r in out_rows])
    counts = Counter(r.category for r in out_rows)
    summary = JudgeSummary(
        model=resolved.model,
        base_url=resolved.base_url,
        prompt_version=PROMPT_VERSION,
        only_incorrect=only_incorrect,
        n_judged=len(out_rows),
        categories={c: counts.get(c, 0) for c in CATEGORIES},
        fractions={c: counts.get(c, 0) / len(out_rows) if out_rows else 0.0 for c in CATEGORIES},
        n_parse_errors=sum(r.parse_error is not None for r in out_rows),
        n_errors=sum(r.error is not None for r in out_rows),
        n_cached=sum(r.cached for r in out_rows),
        n_requests=judge.n_requests,
    )
    return write_json(eval_dir / "judge.json", summary.model_dump(mode="json"))
