"""The LLM judge against a fake OpenAI-compatible server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from rlvr.evaluate.judge import (  # noqa: E402
    CATEGORIES,
    JudgeConfig,
    JudgeError,
    judge_samples,
    parse_judgement,
    resolve_config,
)


def completion(content: str) -> tuple[int, str]:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    return 200, json.dumps(body)


def by_sample(req: dict[str, Any]) -> tuple[int, str]:
    """A category chosen from the completion text, so each sample gets a known answer."""
    user = req["messages"][-1]["content"]
    if "BADJSON" in user:
        return completion("It is clearly a calculation error.")
    category = "calculation_error" if "=<<2+2=5>>" in user else "missing_step"
    return completion(json.dumps({"category": category, "explanation": "because"}))


@pytest.fixture(autouse=True)
def _no_proxy_no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("RLVR_JUDGE_BASE_URL", "RLVR_JUDGE_MODEL", "RLVR_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def make_eval(tmp_path: Path, completions: list[tuple[str, bool]]) -> Path:
    d = tmp_path / "eval"
    d.mkdir()
    rows = [
        {
            "problem_id": f"p{i}", "question": "What is 2+2?", "gold": "4", "gold_solution": "2+2=<<2+2=4>>4\n#### 4",
            "gold_steps": [["2+2", "4"]], "n_steps": 1, "sample": 0, "temperature": 1.0, "completion": text,
            "parsed": text.rsplit("#### ", 1)[-1], "correct": ok, "reason": "ok" if ok else "wrong value",
            "tokens": 9, "truncated": False,
        }
        for i, (text, ok) in enumerate(completions)
    ]  # fmt: skip
    (d / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


SAMPLES = [
    ("2+2=<<2+2=5>>5\n#### 5", False),
    ("#### 7", False),
    ("2+2=<<2+2=4>>4\n#### 4", True),
    ("BADJSON #### 3", False),
]


def cfg(url: str, **kw: Any) -> JudgeConfig:
    return JudgeConfig(base_url=url, model="fake-judge", backoff_s=0.0, timeout_s=5, **kw)


def test_judge_categories_and_cache(tmp_path: Path, server_factory) -> None:
    srv = server_factory(by_sample)
    d = make_eval(tmp_path, SAMPLES)
    path = judge_samples(d, cfg(srv.url), n=None)
    summary = json.loads(path.read_text())
    rows = [json.loads(line) for line in (d / "judge.jsonl").read_text().splitlines()]
    assert [r["problem_id"] for r in rows] == ["p0", "p1", "p3"]  # the correct sample is skipped
    assert [r["category"] for r in rows] == ["calculation_error", "missing_step", "other"]
    assert rows[2]["parse_error"] == "not JSON" and rows[2]["raw"] == "It is clearly a calculation error."
    assert summary["categories"] == {c: int(c in ("calculation_error", "missing_step", "other")) for c in CATEGORIES}
    assert summary["n_requests"] == 3 and summary["n_parse_errors"] == 1 and summary["n_cached"] == 0
    assert srv.requests[0]["model"] == "fake-judge" and srv.requests[0]["path"] == "/v1/chat/completions"
    assert "api_key" not in json.dumps(summary) and "EMPTY" not in path.read_text()
    # a rerun answers every row from the cache: no request reaches the server
    n_before = len(srv.requests)
    summary2 = json.loads(judge_samples(d, cfg(srv.url), n=None).read_text())
    assert len(srv.requests) == n_before and summary2["n_requests"] == 0 and summary2["n_cached"] == 3
    assert summary2["categories"] == summary["categories"]


def test_judge_all_samples_seeded_subset(tmp_path: Path, server_factory) -> None:
    srv = server_factory(by_sample)
    d = make_eval(tmp_path, SAMPLES)
    a = json.loads(judge_samples(d, cfg(srv.url), n=2, only_incorrect=False, seed=3).read_text())
    ids_a = [json.loads(x)["problem_id"] for x in (d / "judge.jsonl").read_text().splitlines()]
    judge_samples(d, cfg(srv.url), n=2, only_incorrect=False, seed=3)
    ids_b = [json.loads(x)["problem_id"] for x in (d / "judge.jsonl").read_text().splitlines()]
    assert a["n_judged"] == 2 and ids_a == ids_b and ids_a == sorted(ids_a)


def test_server_errors_retried_then_recorded(tmp_path: Path, server_factory) -> None:
    calls = {"n": 0}

    def flaky(req: dict[str, Any]) -> tuple[int, str]:
        calls["n"] += 1
        return (503, '{"error": {"message": "busy"}}') if calls["n"] % 3 else by_sample(req)

    srv = server_factory(flaky)
    d = make_eval(tmp_path, SAMPLES[:1])
    summary = json.loads(judge_samples(d, cfg(srv.url, max_retries=2), n=None).read_text())
    assert summary["categories"]["calculation_error"] == 1 and summary["n_requests"] == 3  # 2 failures, 1 success

    dead = server_factory(lambda req: (500, '{"error": {"message": "down"}}'))
    (tmp_path / "x").mkdir()
    d2 = make_eval(tmp_path / "x", SAMPLES[:2])
    with pytest.raises(JudgeError, match="judge failed on all 2 completion.*InternalServerError"):
        judge_samples(d2, cfg(dead.url, max_retries=1), n=None)
    assert len(dead.requests) == 4  # bounded: 2 x (1+1)
    assert not (d2 / "judge.json").exists() and not (d2 / "judge.jsonl").exists()  # a dead endpoint writes nothing
    assert not (d2 / "judge_cache.jsonl").exists()  # failures are not cached, so a rerun retries them


def test_too_many_failures_or_refusal_raise(tmp_path: Path, server_factory) -> None:
    dead = server_factory(lambda req: (500, '{"error": {"message": "down"}}'))
    d = make_eval(tmp_path, SAMPLES)
    with pytest.raises(JudgeError, match="2 times in a row"):
        judge_samples(d, cfg(dead.url, max_retries=0, max_consecutive_errors=2), n=None)
    refused = server_factory(lambda req: (401, '{"error": {"message": "bad key"}}'))
    with pytest.raises(JudgeError, match="HTTP 401"):
        judge_samples(d, cfg(refused.url), n=None)
    assert len(refused.requests) == 1  # a 401 is not retried


def test_garbage_http_body_is_recorded(tmp_path: Path, server_factory) -> None:
    calls = {"n": 0}

    def half_garbage(req: dict[str, Any]) -> tuple[int, str]:
        calls["n"] += 1
        return (200, "<html>not json</html>") if calls["n"] == 1 else by_sample(req)

    d = make_eval(tmp_path, SAMPLES[:2])
    rows_summary = json.loads(
        judge_samples(d, cfg(server_factory(half_garbage).url, max_retries=0), n=None).read_text()
    )
    rows = [json.loads(x) for x in (d / "judge.jsonl").read_text().splitlines()]
    assert rows_summary["n_judged"] == 2 and rows_summary["n_errors"] + rows_summary["n_parse_errors"] == 1
    bad = next(r for r in rows if r["error"] is not None or r["parse_error"] is not None)
    assert bad["category"] == "other"
    # an endpoint that answers nothing but garbage is a malformed endpoint: nothing is written
    (tmp_path / "g").mkdir()
    d2 = make_eval(tmp_path / "g", SAMPLES[:1])
    with pytest.raises(JudgeError, match="judge failed on all 1 completion"):
        judge_samples(d2, cfg(server_factory(lambda req: (200, "<html>not json</html>")).url, max_retries=0), n=None)
    assert not (d2 / "judge.json").exists()


def test_parse_judgement_strict() -> None:
    ok = parse_judgement('```json\n{"category": "missing-step", "explanation": "skips 2*3"}\n```')
    assert (ok.category, ok.explanation, ok.parse_error) == ("missing_step", "skips 2*3", None)
    for text, err in [
        ('["calculation_error"]', "not an object"),
        ('{"category": "vibes"}', "unknown category"),
        ('Sure! {"category": "contradiction"}', "not JSON"),
    ]:
        j = parse_judgement(text)
        assert j.category == "other" and err in (j.parse_error or "") and j.raw == text


def test_config_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(JudgeError, match="RLVR_JUDGE_MODEL"):
        resolve_config(JudgeConfig())
    monkeypatch.setenv("RLVR_JUDGE_MODEL", "m")
    with pytest.raises(JudgeError, match="RLVR_JUDGE_BASE_URL"):
        resolve_config(JudgeConfig())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert resolve_config(JudgeConfig()).api_key == "sk-openai"
    monkeypatch.setenv("RLVR_JUDGE_API_KEY", "sk-rlvr")
    monkeypatch.setenv("RLVR_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    r = resolve_config(JudgeConfig())
    assert (r.model, r.api_key, r.base_url) == ("m", "sk-rlvr", "http://127.0.0.1:9/v1")
    assert resolve_config(JudgeConfig(model="other", api_key="k")).model == "other"


def test_missing_openai_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_openai(name: str, *args: Any, **kw: Any) -> Any:
        if name == "openai":
            raise ImportError("No module named 'openai'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_openai)
    d = make_eval(tmp_path, SAMPLES[:1])
    with pytest.raises(JudgeError, match=r"pip install 'rlvr\[judge\]'"):
        judge_samples(d, cfg("http://127.0.0.1:9/v1"), n=None)


def test_rlvr_judge_writes_into_the_eval_folder_and_compare_shows_it(
    tmp_path: Path, server_factory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command face: `rlvr judge EVAL_DIR` against the fake endpoint, then `rlvr compare` of two
    judged evaluations prints the category table and keeps the counts in compare.json."""
    import sys

    from rlvr.cli import main

    srv = server_factory(by_sample)
    monkeypatch.setenv("RLVR_JUDGE_BASE_URL", srv.url)
    monkeypatch.setenv("RLVR_JUDGE_MODEL", "fake-judge")
    dirs = []
    for name, samples in (("base", SAMPLES), ("grpo", SAMPLES[:2])):
        (tmp_path / name).mkdir()
        d = make_eval(tmp_path / name, samples)
        rows = [{"id": f"p{i}", "n": 1, "correct": int(ok), "tokens": 9.0, "greedy": ok}
                for i, (_, ok) in enumerate(SAMPLES)]  # fmt: skip
        metric = {"value": 0.25, "ci": [0.0, 0.5], "k": 1, "n": 1, "tokens_per_problem": 9.0}
        (d / "eval.json").write_text(json.dumps({"task": "arith", "split": "test", "metrics": {"pass@1": metric},
                                                 "per_problem": rows}))  # fmt: skip
        monkeypatch.setattr(sys, "argv", ["rlvr", "judge", str(d), "--items", "0"])
        with pytest.raises(SystemExit) as e:
            main()
        assert e.value.code in (0, None)
        dirs.append(d)
    out = "".join(capsys.readouterr())
    assert "calculation_error" in out and "judge:" in out and "requests 3, cached 0" in out
    summary = json.loads((dirs[0] / "judge.json").read_text())
    assert summary["schema_version"] == 1 and summary["categories"]["missing_step"] == 1
    monkeypatch.setattr(sys, "argv", ["rlvr", "compare", str(dirs[0]), str(dirs[1]), "--out", str(tmp_path / "cmp")])
    with pytest.raises(SystemExit) as e:
        main()
    out = "".join(capsys.readouterr())
    assert "Error categories of wrong completions" in out and "base/eval (fake-judge)" in out
    runs = json.loads((tmp_path / "cmp" / "compare.json").read_text())["runs"]
    assert runs[0]["judge"]["calculation_error"] == 1 and runs[1]["judge"]["other"] == 0
