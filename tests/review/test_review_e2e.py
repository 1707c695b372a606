"""End to end: `python -m rlvr.review serve` in a subprocess, driven in headless Chromium via Playwright.

Labels three items with the keyboard, kills the server (SIGKILL) mid-review, labels a fourth while
it is down (the page reports the error and keeps the form), restarts it, saves the fourth, and checks
on a fresh page and through the API that every label survived and that `stats.json` is right. A
screenshot of the page is kept in `$RLVR_ARTIFACTS` (default `runs/artifacts/`) as `review.png`.

Needs the `playwright` Python package and a Chromium at `$RLVR_CHROMIUM` (default /usr/bin/chromium,
Debian's `chromium` package); `playwright install` is not needed. Skipped with a reason otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlvr.review import export_slice, load_slice, write_stats

CHROMIUM = os.environ.get("RLVR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="the playwright Python package is not installed (pip install playwright; no browser download)",
    ),
    pytest.mark.skipif(
        not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)),
        reason=f"no Chromium at {CHROMIUM} (apt-get install chromium, or set RLVR_CHROMIUM)",
    ),
]
ROOT = Path(__file__).resolve().parents[2]


def _row(pid: int, correct: bool, parsed: bool = True) -> dict:
    a, b = 10 + pid, 3 + pid
    gold = a * 2 - b
    work = f"Twice {a} is {a} * 2 = {a * 2}. Minus {b}: {a * 2} - {b} = {gold if correct else gold + 1}."
    return {
        "problem_id": f"arith-{pid:02d}",
        "question": f"Tom has {a} apples, doubles them and gives {b} away. How many are left?",
        "gold": str(gold),
        "gold_solution": f"{a}*2=<<{a}*2={a * 2}>>{a * 2}\n{a * 2}-{b}=<<{a * 2}-{b}={gold}>>{gold}\n#### {gold}",
        "gold_steps": [[f"{a}*2", str(a * 2)], [f"{a * 2}-{b}", str(gold)]],
        "n_steps": 2,
        "sample": 0,
        "completion": work + (f" The answer is {gold if correct else gold + 1}." if parsed else " So"),
        "parsed": (str(gold) if correct else str(gold + 1)) if parsed else None,
        "correct": correct,
        "reason": "match" if correct else ("mismatch" if parsed else "no answer"),
        "tokens": 30 + 5 * pid,
        "truncated": not parsed,
        "process_score": 1.0 if correct else 0.5,
    }


@pytest.fixture
def review_dir(tmp_path: Path) -> Path:
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    rows = [
        _row(0, True),
        _row(1, False),
        _row(2, True),
        _row(3, False, parsed=False),
        _row(4, True),
        _row(5, False),
    ]
    meta = {"model": "tiny-llama", "task": "arith", "split": "test", "n_samples": 1, "temperature": 0.0}
    (eval_dir / "eval.json").write_text(json.dumps({**meta, "metrics": {"pass@1": 0.5}}))
    (eval_dir / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return export_slice(eval_dir, n=5, seed=0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`python -m rlvr.review serve` as a subprocess on 127.0.0.1:port."""

    def __init__(self, review_dir: Path, port: int, log: Path) -> None:
        self.args = [sys.executable, "-m", "rlvr.review", "serve", str(review_dir), "--port", str(port)]
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.log.read_text()}")
            try:
                with urllib.request.urlopen(self.url + "/api/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"server did not come up: {self.log.read_text()}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)  # no shutdown hooks: what was committed must survive
        self.proc.wait(timeout=10)

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=5) as r:
            return json.loads(r.read())


@pytest.fixture
def server(review_dir: Path, tmp_path: Path) -> Iterator[Server]:
    srv = Server(review_dir, _free_port(), tmp_path / "server.log")
    srv.start()
    yield srv
    if srv.proc is not None and srv.proc.poll() is None:
        srv.kill()


def _keep_artifact(path: Path) -> Path:
    out = Path(os.environ.get("RLVR_ARTIFACTS", ROOT / "runs" / "artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(path, out / path.name))


def test_label_with_keyboard_survive_kill_and_stats(server: Server, review_dir: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    _, items = load_slice(review_dir)
    progress_re = lambda k, i: rf"^{k} of 5 labelled · item {i} of 5$"  # noqa: E731
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(10_000)
        page.goto(server.url + "/")
        page.fill("#name", "alice")
        page.press("#name", "Enter")
        progress = page.locator("#progress")
        expect(progress).to_have_text(_re(progress_re(0, 1)))
        expect(page.locator("#itemid")).to_have_text(items[0].item_id)
        expect(page.locator("#completion .step").first).to_be_visible()

        kb = page.keyboard
        for key in ("y", "v", "Enter"):  # item 1: right answer, valid reasoning
            kb.press(key)
        expect(progress).to_have_text(_re(progress_re(1, 2)))
        for key in ("n", "i", "2", "t"):  # item 2: wrong, invalid, calculation, with a note
            kb.press(key)
        kb.type("off by one")
        for key in ("Escape", "Enter"):
            kb.press(key)
        expect(progress).to_have_text(_re(progress_re(2, 3)))
        for key in ("y", "i", "1", "Enter"):  # item 3: right answer, invalid derivation
            kb.press(key)
        expect(progress).to_have_text(_re(progress_re(3, 4)))
        kb.press("k")
        kb.press("k")  # back to item 2 to show a stored label
        expect(page.locator("#status")).to_contain_text("labelled (version 1")
        expect(page.locator("#note")).to_have_value("off by one")
        shot = tmp_path / "review.png"
        page.screenshot(path=str(shot), full_page=True)
        _keep_artifact(shot)

        kb.press("u")  # the first unlabelled item, then the server dies
        expect(progress).to_have_text(_re(progress_re(3, 4)))
        server.kill()
        for key in ("n", "v", "Enter"):  # item 4 while the server is down: the page says so, keeps the form
            kb.press(key)
        expect(page.locator("#status")).to_have_class("error")
        server.start()
        kb.press("Enter")  # the same form, saved now
        expect(progress).to_have_text(_re(progress_re(4, 5)))
        page.goto(server.url + "/?reviewer=alice&item=1")  # a fresh page on the restarted server
        expect(progress).to_have_text(_re(progress_re(4, 2)))
        answer_on = page.locator('[data-field="answer_correct"] button.on')
        expect(answer_on).to_have_attribute("data-value", "false")
        category_on = page.locator('[data-field="error_category"] button.on')
        expect(category_on).to_have_attribute("data-value", "calculation")
        expect(page.locator("#note")).to_have_value("off by one")
        browser.close()

    labels = {lab["item_id"]: lab for lab in server.get("/api/labels?reviewer=alice")["labels"]}
    want = {
        items[0].item_id: (True, True, None, ""),
        items[1].item_id: (False, False, "calculation", "off by one"),
        items[2].item_id: (True, False, "derivation", ""),
        items[3].item_id: (False, True, None, ""),
    }
    got = {k: (v["answer_correct"], v["reasoning_valid"], v["error_category"], v["note"]) for k, v in labels.items()}
    assert got == want
    server.kill()

    _, stats = write_stats(review_dir, seed=0, n_resamples=300)
    verifier = [bool(it.correct) for it in items[:4]]
    human = [True, False, True, False]
    p1 = stats.headline.pass_at_1
    assert stats.n_labelled == 4 and stats.reviewers == {"alice": 4}
    assert p1.human.value == pytest.approx(2 / 4)
    assert p1.verifier.value == pytest.approx(sum(verifier) / 4)
    tp = sum(v and h for v, h in zip(verifier, human, strict=True))
    v = stats.verifiers.verifier
    assert (v.tp, v.fp, v.fn) == (tp, sum(verifier) - tp, 2 - tp)
    assert stats.headline.strict_at_1.human.value == pytest.approx(1 / 4)
    assert stats.errors["calculation"] == 1 and stats.errors["derivation"] == 1
    assert (review_dir / "stats.json").exists()


def _re(pattern: str):
    import re

    return re.compile(pattern)
