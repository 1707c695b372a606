"""The labelling web app (Starlette) of `rlvr review serve`: one static page (`static/index.html`, vanilla
JS, no build step) and a small JSON API (routes, bodies, error statuses: docs/review.md, "JSON API")."""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from rlvr.review.highlight import TextView, annotate
from rlvr.review.items import load_slice
from rlvr.review.store import CATEGORIES, DB_FILE, Conflict, LabelError, LabelStore, StoredLabel, parse_label
from rlvr.runs import conversation_text
from rlvr.runs.review import ReviewedEval
from rlvr.tasks import Step

__all__ = ["Progress", "create_app"]

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "testserver"]  # testserver: Starlette's TestClient


# ---------------------------------------------------------------- response bodies (docs/review.md)


class Progress(BaseModel):
    """A reviewer's progress: items in the slice, items they labelled, the index to resume at."""

    n_items: int
    n_labelled: int
    resume: int


class MetaView(Progress):
    """`GET /api/meta`: progress, the evaluation (None without export.json) and the error categories."""

    eval: ReviewedEval | None
    categories: list[str]


class ItemView(BaseModel):
    """`GET /api/items/{index}`: one slice item as the page shows it, with its texts cut into highlighted
    step segments and this reviewer's label (None when they have not labelled it)."""

    item_id: str
    index: int
    problem_id: str
    sample: int
    question: str
    gold: str
    gold_solution: str
    n_steps: int | None
    completion: str
    parsed: str | None
    correct: bool
    reason: str
    tokens: int
    truncated: bool
    process_score: float | None
    rewards: dict[str, float | None] | None
    verifier2_correct: bool | None
    strata: dict[str, str]
    gold_steps: list[Step]
    completion_view: TextView
    gold_view: TextView
    label: StoredLabel | None


def _json(body: Any, status: int = 200) -> JSONResponse:
    """A response model, or a dict of them and labels, as `model_dump(mode="json")` writes it."""
    return JSONResponse(to_jsonable_python(body, by_alias=False), status_code=status)


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    """`{"error", "field"}`; `field` (the offending field) is left out when there is none."""
    return JSONResponse({"error": message} if field is None else {"error": message, "field": field}, status)


class _Review:
    """The loaded slice and its label store; one per app."""

    def __init__(self, review_dir: Path) -> None:
        self.export, self.items = load_slice(review_dir)
        self.ids = {it.item_id: i for i, it in enumerate(self.items)}
        self.store = LabelStore(review_dir / DB_FILE)
        self.page = resources.files("rlvr.review").joinpath("static/index.html").read_text(encoding="utf-8")

    def view(self, index: int, reviewer: str | None) -> ItemView:
        item = self.items[index]
        gold_steps = [Step(e, r) for e, r in item.gold_steps]
        own = {"index", "gold_steps", "completion_view", "gold_view", "label"}  # what the view adds
        return ItemView(
            **item.model_dump(include=set(ItemView.model_fields) - own),
            index=index,
            gold_steps=gold_steps,
            completion_view=annotate(
                conversation_text(item.messages) if item.messages else item.completion, gold_steps
            ),
            gold_view=annotate(item.gold_solution),
            label=self.store.get(item.item_id, reviewer) if reviewer else None,
        )

    def progress(self, reviewer: str | None) -> Progress:
        done = {lab.item_id for lab in self.store.labels(reviewer)} if reviewer else set()
        done &= set(self.ids)
        resume = next((i for i, it in enumerate(self.items) if it.item_id not in done), len(self.items) - 1)
        return Progress(n_items=len(self.items), n_labelled=len(done), resume=resume)


async def _meta(request: Request) -> Response:
    review: _Review = request.app.state.review
    reviewer = request.query_params.get("reviewer") or None
    p = await run_in_threadpool(review.progress, reviewer)
    evaluation = review.export.eval if review.export else None
    return _json(MetaView(**p.model_dump(), eval=evaluation, categories=list(CATEGORIES)))


async def _item(request: Request) -> Response:
    review: _Review = request.app.state.review
    index = request.path_params["index"]
    if not 0 <= index < len(review.items):
        return _error(404, f"no item at index {index} (the slice has {len(review.items)})", "index")
    reviewer = request.query_params.get("reviewer") or None
    return _json(await run_in_threadpool(review.view, index, reviewer))


async def _labels(request: Request) -> Response:
    review: _Review = request.app.state.review
    reviewer = request.query_params.get("reviewer") or None
    labels = await run_in_threadpool(review.store.labels, reviewer)
    return _json({"labels": labels})


async def _put_label(request: Request) -> Response:
    review: _Review = request.app.state.review
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return _error(415, "send the label as application/json")
    try:
        body = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return _error(400, f"body is not valid JSON ({e})")
    try:
        label = parse_label(body, review.ids)
    except LabelError as e:
        return _error(404 if e.field == "item_id" and "unknown" in str(e) else 400, str(e), e.field)
    version = body.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        return _error(400, f"field 'version': must be a non-negative int, got {version!r:.40}", "version")
    try:
        stored = await run_in_threadpool(review.store.put, label, version)
    except Conflict as e:
        current = await run_in_threadpool(review.store.get, label.item_id, label.reviewer)
        return _json({"error": str(e), "current": current}, 409)  # the label as it now is
    except sqlite3.OperationalError as e:
        return _error(503, f"database unavailable, nothing was written; retry ({e})")
    p = await run_in_threadpool(review.progress, label.reviewer)
    return _json({"label": stored, **p.model_dump()})


async def _health(request: Request) -> Response:
    return JSONResponse({"ok": True})


async def _index(request: Request) -> Response:
    return HTMLResponse(request.app.state.review.page)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}")


class _HostCheck:
    """Refuse requests whose Host header is not an allowed name (DNS rebinding), with a JSON 400."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        self.app, self.allowed = app, set(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "*" not in self.allowed:
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            name = host.rsplit("]", 1)[0].lstrip("[") if host.startswith("[") else host.split(":")[0]
            if name not in self.allowed:
                await _error(400, f"Host {host!r} not allowed; open http://127.0.0.1:<port>/")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(review_dir: Path, allowed_hosts: list[str] | None = None) -> Starlette:
    """The app for one review folder. `allowed_hosts`: Host headers accepted (default loopback names)."""
    routes = [
        Route("/", _index),
        Route("/api/health", _health),
        Route("/api/meta", _meta),
        Route("/api/items/{index:int}", _item),
        Route("/api/labels", _labels, methods=["GET"]),
        Route("/api/labels", _put_label, methods=["PUT", "POST"]),
    ]
    hosts = LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts
    app = Starlette(
        routes=routes,
        middleware=[Middleware(_HostCheck, allowed_hosts=hosts)],
        exception_handlers={HTTPException: _http_error},
    )
    app.state.review = _Review(review_dir)
    return app
