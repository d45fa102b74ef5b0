"""What more than one route module (or the dashboard) needs: refusals naming a field, the caller's dataset, labels
made printable, a chart answered as JSON or as a page. Routes import this, never each other."""

from __future__ import annotations

from typing import Literal

from fastapi import HTTPException, Request
from fastapi.responses import Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from app.api.deps import KEEP, owned
from app.auth.keys import Caller
from app.models import Dataset
from app.render import TEMPLATES_DIR
from app.render.static_assets import plotly_js

templates = Jinja2Templates(directory=TEMPLATES_DIR)
PlotlyMode = Literal["inline", "link"]


def spec_error(loc: tuple, msg: str) -> HTTPException:
    return HTTPException(status_code=422, detail=[{"loc": ["body", *loc], "msg": msg, "type": "value_error"}])


def owned_dataset(db: Session, dataset_id: str, caller: Caller, loc: tuple) -> Dataset:
    """The caller's dataset, or a 422 naming the field (another owner's dataset is not found).

    The row is held (FOR KEY SHARE) until the request commits: a concurrent DELETE waits, then sees the
    new jobs and answers 409; a DELETE that came first makes this request find no dataset."""
    dataset = owned(db, Dataset, dataset_id, caller, lock=KEEP)
    if dataset is None:
        raise spec_error(loc, f"dataset {dataset_id!r} not found")
    return dataset


def printable(text: str | None) -> str:
    """Client-given names are labels only (never paths): control characters (NUL included) dropped."""
    return "".join(ch for ch in text or "" if ch.isprintable())


def figure_response(request: Request, fig_json: str, title: str, format: str, plotly: PlotlyMode = "inline") -> Response:
    if format == "html":
        return templates.TemplateResponse(request, "chart.html", {
            "title": title, "figure_json": fig_json.replace("</", "<\\/"),
            "plotly_inline": plotly_js() if plotly == "inline" else None,
            "plotly_src": request.url_for("static", path="plotly.min.js").path})
    return Response(content=fig_json, media_type="application/json")
