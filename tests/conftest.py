"""Shared fixtures: a tiny model and tokenizer built in-process and saved to disk, so tests load
them by path exactly as a real model is loaded. Never the network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

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
