"""Dashboard pages: sign-in, datasets, jobs, sweeps. Server-rendered from the database, for the caller's owner.

Every page goes through :class:`PageRoute`: no valid key redirects to the sign-in page, an
``HTTPException`` (another owner's resource: 404) renders the error page with its status, and
anything unexpected is logged and shown as a short message, never a stack trace.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Depends, Form, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from sqlalchemy import func, select
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.audits.metrics import describe_metrics
from app.auth.keys import Caller, authenticate
from app.render import TEMPLATES_DIR
from app.render.charts import CHARTS
from app.render.charts.labels import figure_json
from app.api.dashboard import promise
from app.datasets import stats
from app.api.deps import DB, AppSettings, caller_cache, current_caller, get_or_404
from app.models import Alert, Audit, AuditRun, Dataset, Job, Sweep, UploadedModel
from app.datasets.storage import dataset_path, dataset_summary
from app.jobs.answers import job_out
from app.auth.sessions import (clear_session_cookies, close_session, cookie_credential, from_this_origin,
                          has_session_cookie, is_session_token, open_session, set_session_cookies)
from app.sweeps.summary import default_axes, direction, pareto_front, summarize, sweep_jobs
from app.api.unavailable import UNAVAILABLE, retry_after

log = logging.getLogger("fairsolve.dashboard")

TEMPLATES = Jinja2Templates(directory=TEMPLATES_DIR)
ACTIVE = ("queued", "waiting", "running")
JOB_CHARTS = ("trajectory", "scores", "roc", "ccdf")


class SignInRequired(Exception):
    pass


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("caller", getattr(request.state, "caller", None))
    return TEMPLATES.TemplateResponse(request, f"dashboard/{name}", context, status_code=status_code)


def error_page(request: Request, status_code: int, message: str) -> HTMLResponse:
    titles = {404: "Not found", 403: "Forbidden", 422: "Invalid request", 429: "Too many requests",
              503: "Unavailable"}
    return render(request, "error.html", status_code=status_code, title=titles.get(status_code, "Error"),
                  message=message, status_code_=status_code)


def sign_in_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    response = RedirectResponse(f"/signin?next={quote(target, safe='')}", status_code=303)
    if has_session_cookie(request):
        clear_session_cookies(response, request)
    return response


class PageRoute(APIRoute):
    """Turns a page's failures into a redirect (no key) or an HTML message (everything else)."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                return sign_in_redirect(request)
            except StarletteHTTPException as exc:  # FastAPI's, and Starlette's own from form parsing
                if exc.status_code == 401:
                    return sign_in_redirect(request)
                detail = exc.detail if isinstance(exc.detail, str) else "the request was refused"
                return error_page(request, exc.status_code, detail)
            except RequestValidationError as exc:
                fields = ", ".join(".".join(str(p) for p in e["loc"][1:]) for e in exc.errors())
                return error_page(request, 422, f"invalid parameter: {fields}")
            except UNAVAILABLE as exc:  # an exhausted pool or a database outage: retry, not a fault
                page = error_page(request, 503, "The service is briefly unavailable; retry in a moment.")
                page.headers["Retry-After"] = retry_after(exc, request.method, request.url.path)
                return page
            except Exception:
                log.exception("dashboard error on %s %s", request.method, request.url.path)
                return error_page(request, 500, "Something went wrong on the server; the server log has the details.")

        return run


router = APIRouter(route_class=PageRoute, include_in_schema=False, default_response_class=HTMLResponse)


async def page_caller(request: Request, db: DB) -> Caller:
    """The signed-in caller (the session cookie, checked like any API key and rate-limited)."""
    if not has_session_cookie(request):
        raise SignInRequired()
    caller = await current_caller(request, db)
    request.state.caller = caller
    return caller


PageCaller = Annotated[Caller, Depends(page_caller)]


# ---------------------------------------------------------------- filters

def fmt_num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.{digits}g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    return str(value)


def fmt_time(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return "—" if value is None else str(value)


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(n)


def progress_of(job: dict) -> dict[str, Any]:
    prog = job.get("progress") or {}
    done, total = prog.get("iteration") or 0, prog.get("max_iterations") or 0
    if job.get("status") == "succeeded":
        pct = 100.0
    else:
        pct = min(100.0, 100.0 * done / total) if total else 0.0
    return {"iteration": done, "max_iterations": total, "percent": pct}


TEMPLATES.env.filters.update(num=fmt_num, time=fmt_time, bytes=fmt_bytes,
                             pretty=lambda v: json.dumps(v, indent=2, sort_keys=True, default=str))
TEMPLATES.env.globals.update(progress_of=progress_of, ACTIVE=ACTIVE, job_verdict=promise.job_verdict)


def safe_next(target: str | None) -> str:
    """Only a path on this site (no scheme, no host, no ``//``) may follow sign-in."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    return "/" if parts.scheme or parts.netloc else target


# ---------------------------------------------------------------- sign-in

@router.get("/signin")
def signin_page(request: Request, db: DB, next: str | None = None) -> Response:
    key = cookie_credential(request)
    if key:
        try:
            authenticate(db, key)
            return RedirectResponse(safe_next(next), status_code=303)
        except HTTPException:
            pass
    return render(request, "signin.html", next=safe_next(next), error=None)


@router.post("/signin")
def signin(request: Request, db: DB, settings: AppSettings, api_key: str = Form("", max_length=512),
           next: str = Form("/", max_length=2048)) -> Response:
    """Open a session for a valid API key; the cookies hold the session's id and binding, never the key
    (:mod:`app.auth.sessions`). A session an earlier sign-in left in this browser is closed (no fixation)."""
    if not from_this_origin(request):
        return error_page(request, 403, "Sign-in must come from this site's own page.")
    key = api_key.strip()
    try:
        if is_session_token(key):
            raise HTTPException(status_code=401)
        caller = authenticate(db, key)
    except HTTPException:
        return render(request, "signin.html", status_code=401, next=safe_next(next),
                      error="That API key is not valid (unknown or revoked)." if key else "Enter an API key.")
    end_session(request, db)
    response = RedirectResponse(safe_next(next), status_code=303)
    set_session_cookies(response, request, *open_session(db, caller.key_id, settings.session_ttl_s))
    return response


def end_session(request: Request, db: DB) -> None:
    """Revoke the session of the request's cookie, if any, here and in this process's caller cache."""
    token = cookie_credential(request)
    if token is not None:
        close_session(db, token)
        caller_cache().forget_credential(token)


@router.post("/signout")
def signout(request: Request, db: DB) -> Response:
    if not from_this_origin(request):
        return error_page(request, 403, "Sign-out must come from this site's own page.")
    end_session(request, db)
    response = RedirectResponse("/signin", status_code=303)
    clear_session_cookies(response, request)
    return response


# ---------------------------------------------------------------- overview

@router.get("/")
def home(request: Request, db: DB, caller: PageCaller) -> Response:
    counts = dict(db.execute(select(Job.status, func.count()).where(Job.owner == caller.owner)
                             .group_by(Job.status)).all())
    n_datasets = db.scalar(select(func.count()).select_from(Dataset).where(Dataset.owner == caller.owner))
    n_sweeps = db.scalar(select(func.count()).select_from(Sweep).where(Sweep.owner == caller.owner))
    recent = [job_row(db, j) for j in db.scalars(select(Job).where(Job.owner == caller.owner)
                                                  .order_by(Job.created_at.desc()).limit(10))]
    return render(request, "home.html", counts=counts, n_datasets=n_datasets, n_sweeps=n_sweeps, jobs=recent)


# ---------------------------------------------------------------- datasets

@router.get("/datasets")
def datasets_page(request: Request, db: DB, caller: PageCaller) -> Response:
    rows = list(db.scalars(select(Dataset).where(Dataset.owner == caller.owner).order_by(Dataset.created_at.desc())))
    return render(request, "datasets.html", datasets=rows)


@router.get("/datasets/{dataset_id}")
def dataset_page(request: Request, dataset_id: str, db: DB, settings: AppSettings, caller: PageCaller,
                 sensitive: str | None = Query(None, max_length=255), label: str | None = Query(None, max_length=255),
                 positive: str | None = Query(None, max_length=255)) -> Response:
    dataset = get_or_404(db, Dataset, dataset_id, "dataset", caller)
    columns = [c["name"] for c in dataset.columns]
    error = None
    if sensitive is not None and sensitive not in columns:
        error, sensitive = f"sensitive: unknown column {sensitive!r}", None
    if label is not None and label not in columns:
        error, label = f"label: unknown column {label!r}", None
    info = {c["name"]: c for c in dataset.columns}
    if sensitive is None:  # a low-cardinality column, preferring names that look sensitive
        few = [c for c in columns if 1 < info.get(c, {}).get("n_distinct", 0) <= 10]
        hinted = [c for c in few if c.lower() in ("sex", "gender", "race", "ethnicity", "age_group")]
        sensitive = (hinted or few or columns)[0] if columns else None
    if label is None:
        binary = [c for c in columns if info.get(c, {}).get("n_distinct") == 2 and c != sensitive]
        label = binary[-1] if binary else None
    labels, groups = [], None
    if sensitive is not None:
        try:
            counts = stats.stored_pair_counts(dataset_path(settings, dataset), dataset.format, dataset.read_options,
                                              dataset.sha256, sensitive, label)
        except stats.TooManyValues as exc:
            error, counts = str(exc), None
        if counts is not None:
            labels = stats.label_values(counts) if label else []
            if positive is not None and positive not in labels:
                error, positive = f"positive: {positive!r} is not a value of {label!r}", None
            if positive is None and labels:
                positive = labels[0]
            groups = stats.group_table(counts, positive if label else None)
    return render(request, "dataset.html", dataset=dataset, summary=dataset_summary(db, settings, dataset),
                  columns=columns, sensitive=sensitive, label=label, positive=positive, labels=labels, groups=groups,
                  error=error)


# ---------------------------------------------------------------- jobs

def job_row(db, job: Job) -> dict[str, Any]:
    out = job_out(db, job)
    out["progress_view"] = progress_of(out)
    return out


@router.get("/jobs")
def jobs_page(request: Request, db: DB, caller: PageCaller,
              status: str | None = Query(None, max_length=16)) -> Response:
    stmt = select(Job).where(Job.owner == caller.owner).order_by(Job.created_at.desc()).limit(200)
    if status:
        stmt = stmt.where(Job.status == status)
    names = dict(db.execute(select(Dataset.id, Dataset.name).where(Dataset.owner == caller.owner)).all())
    jobs = [job_row(db, j) for j in db.scalars(stmt)]
    return render(request, "jobs.html", jobs=jobs, dataset_names=names, status=status)


@router.get("/jobs/new")
def new_job_page(request: Request, db: DB, caller: PageCaller,
                 dataset_id: str | None = Query(None, max_length=64)) -> Response:
    from app.schemas import JobCreate

    rows = list(db.scalars(select(Dataset).where(Dataset.owner == caller.owner).order_by(Dataset.created_at.desc())))
    choices = [{"id": d.id, "name": d.name, "n_rows": d.n_rows,
                "columns": [{"name": c["name"], "dtype": c["dtype"], "n_distinct": c["n_distinct"],
                             "examples": c.get("examples", []),
                             **({"values": c["values"]} if c["n_distinct"] <= 2 and "values" in c else {})}
                            for c in d.columns]} for d in rows]
    schema = JobCreate.model_json_schema()
    defs = schema.get("$defs", {})
    spec_form = {"objective": schema["properties"]["objective"],
                 "device": schema["properties"]["device"],
                 "max_iterations": schema["properties"]["max_iterations"],
                 "time_limit_s": schema["properties"]["time_limit_s"],
                 "seed": schema["properties"]["seed"],
                 "model": defs.get("ModelSpec", {}), "split": defs.get("SplitSpec", {}),
                 "guarantee": "guarantee" in schema["properties"]}
    return render(request, "job_new.html", datasets=choices, selected=dataset_id, spec_form=spec_form)


GROUP_COLUMNS = {"demographic_parity": "positive rate", "equal_opportunity": "true-positive rate",
                 "equalized_odds": "equalized odds", "loss_gap": "loss gap", "minority_rate": "share of positives"}


def metrics_view(metrics: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per split: the scalar metrics, and one table of groups × per-group metrics."""
    views = []
    for split in ("test", "validation", "train"):
        block = (metrics or {}).get(split)
        if not isinstance(block, dict):
            continue
        scalars = {k: v for k, v in block.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool) or v is None and not k.endswith("_group")}
        columns: list[str] = []
        cells: dict[str, dict[str, Any]] = {}
        for key, value in block.items():
            if not isinstance(value, dict) or not (key.endswith("_by_group") or key == "group_sizes"):
                continue
            base = "size" if key == "group_sizes" else key[: -len("_by_group")]
            base = GROUP_COLUMNS.get(base, base)
            for group, v in value.items():
                items = v.items() if isinstance(v, dict) else [(None, v)]
                for sub, x in items:
                    col = base if sub is None else f"{base} {sub}"
                    if col not in columns:
                        columns.append(col)
                    cells.setdefault(str(group), {})[col] = x
        if "size" in columns:
            columns.remove("size")
            columns.insert(0, "size")
        others = {k: v for k, v in block.items() if k not in scalars and not isinstance(v, dict)
                  and not isinstance(v, list)}
        views.append({"split": split, "scalars": scalars, "others": others, "columns": columns,
                      "groups": cells})
    return views


@router.get("/jobs/{job_id}")
def job_page(request: Request, job_id: str, db: DB, caller: PageCaller) -> Response:
    job = get_or_404(db, Job, job_id, "job", caller)
    out = job_row(db, job)
    dataset = db.get(Dataset, job.dataset_id)
    kinds = [k for k in JOB_CHARTS if k in CHARTS]
    return render(request, "job.html", job=out, dataset=dataset, metrics=metrics_view(out["metrics"]),
                  charts=kinds, plotly=True, promise={"constraints": promise.constraint_rows(out["result"]),
                                                      "baseline": promise.baseline_rows(out)})


# ---------------------------------------------------------------- sweeps

@router.get("/sweeps")
def sweeps_page(request: Request, db: DB, caller: PageCaller) -> Response:
    rows = list(db.scalars(select(Sweep).where(Sweep.owner == caller.owner).order_by(Sweep.created_at.desc())
                           .limit(200)))
    statuses: dict[str, dict[str, int]] = {}
    if rows:
        for sweep_id, status, n in db.execute(select(Job.sweep_id, Job.status, func.count())
                                              .where(Job.sweep_id.in_([s.id for s in rows]))
                                              .group_by(Job.sweep_id, Job.status)):
            statuses.setdefault(sweep_id, {})[status] = n
    names = dict(db.execute(select(Dataset.id, Dataset.name).where(Dataset.owner == caller.owner)).all())
    return render(request, "sweeps.html", sweeps=rows, statuses=statuses, dataset_names=names)


@router.get("/sweeps/{sweep_id}")
def sweep_page(request: Request, sweep_id: str, db: DB, caller: PageCaller,
               split: str = Query("test", pattern="^(test|validation)$")) -> Response:
    sweep = get_or_404(db, Sweep, sweep_id, "sweep", caller)
    summary = summarize(sweep_jobs(db, sweep_id))
    x, y = default_axes(sweep)
    front = pareto_front([p for p in summary["points"] if p["succeeded"]], x, y, split)
    front_keys = {p["job_ids"][0] for p in front if p["job_ids"]}
    metric_names = sorted({m for p in summary["points"] for m in (p["metrics"].get(split) or {})})
    shown = [m for m in (x, y) if m in metric_names] + [m for m in metric_names if m not in (x, y)][:6]
    dataset = db.get(Dataset, sweep.dataset_id)
    return render(request, "sweep.html", sweep=sweep, summary=summary, dataset=dataset, x=x, y=y, split=split,
                  directions={x: direction(x), y: direction(y)}, front=front, front_keys=front_keys,
                  metric_names=shown, plotly=True, active=summary["status"] == "running")


# ---------------------------------------------------------------- audits

def history_figure(audit: Audit, runs: list[AuditRun]) -> dict[str, Any] | None:
    """Each metric's value per finished run (95% CI as error bars) and its threshold, as Plotly figure JSON."""
    import plotly.graph_objects as go

    done = [r for r in sorted(runs, key=lambda r: r.created_at) if r.results]
    if not done:
        return None
    fig = go.Figure()
    keys = list(dict.fromkeys(res["key"] for r in done for res in r.results))
    for key in keys:
        xs, ys, lo, hi, run_ids, thresholds = [], [], [], [], [], []
        for run in done:
            res = next((x for x in run.results if x["key"] == key), None)
            if res is None or res.get("value") is None:
                continue
            ci = res.get("ci") or [res["value"], res["value"]]
            xs.append((run.finished_at or run.created_at).isoformat())
            ys.append(res["value"])
            hi.append(ci[1] - res["value"])
            lo.append(res["value"] - ci[0])
            run_ids.append(run.id)
            thresholds.append(res.get("threshold"))
        if not xs:
            continue
        fig.add_trace(go.Scatter(x=xs, y=ys, name=key, mode="lines+markers", customdata=run_ids,
                                 error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
                                 hovertemplate="%{x}<br>" + key + " %{y:.4f}<extra>run %{customdata}</extra>"))
        if any(t is not None for t in thresholds):
            fig.add_trace(go.Scatter(x=xs, y=thresholds, name=f"{key} threshold", mode="lines+markers",
                                     line={"dash": "dash"}, marker={"symbol": "line-ew-open", "size": 18},
                                     hoverinfo="skip"))
    if not fig.data:
        return None
    fig.update_layout(title=f"History — {audit.name}", xaxis_title="run (UTC)", yaxis_title="value",
                      template="plotly_white")
    return json.loads(figure_json(fig))


@router.get("/audits")
def audits_page(request: Request, db: DB, caller: PageCaller) -> Response:
    audits = list(db.scalars(select(Audit).where(Audit.owner == caller.owner).order_by(Audit.created_at.desc())
                             .limit(200)))
    last: dict[str, AuditRun] = {}
    if audits:
        for run in db.scalars(select(AuditRun).where(AuditRun.audit_id.in_([a.id for a in audits]))
                              .order_by(AuditRun.created_at)):
            last[run.audit_id] = run
    alerts = list(db.scalars(select(Alert).where(Alert.owner == caller.owner).order_by(Alert.created_at.desc())
                             .limit(20)))
    names = {a.id: a.name for a in audits}
    directions = {m["type"]: m["direction"] for m in describe_metrics()}
    return render(request, "audits.html", audits=audits, last=last, alerts=alerts, audit_names=names,
                  directions=directions)


@router.get("/audits/new")
def new_audit_page(request: Request, db: DB, caller: PageCaller,
                   job_id: str | None = Query(None, max_length=64)) -> Response:
    jobs = list(db.scalars(select(Job).where(Job.owner == caller.owner, Job.status == "succeeded")
                           .order_by(Job.created_at.desc()).limit(200)))
    datasets = list(db.scalars(select(Dataset).where(Dataset.owner == caller.owner)
                               .order_by(Dataset.created_at.desc())))
    names = {d.id: d.name for d in datasets}
    models = list(db.scalars(select(UploadedModel).where(UploadedModel.owner == caller.owner)
                             .order_by(UploadedModel.created_at.desc()).limit(200)))
    return render(request, "audit_new.html", jobs=jobs, datasets=datasets, dataset_names=names, selected=job_id,
                  models=models)


@router.get("/audits/{audit_id}")
def audit_page(request: Request, audit_id: str, db: DB, caller: PageCaller) -> Response:
    audit = get_or_404(db, Audit, audit_id, "audit", caller)
    runs = list(db.scalars(select(AuditRun).where(AuditRun.audit_id == audit_id)
                           .order_by(AuditRun.created_at.desc()).limit(200)))
    report = next((r for r in runs if r.results), None)
    alerts = list(db.scalars(select(Alert).where(Alert.audit_id == audit_id).order_by(Alert.created_at.desc())
                             .limit(50)))
    dataset = db.get(Dataset, audit.dataset_id) if audit.dataset_id else None
    return render(request, "audit.html", audit=audit, runs=runs, report=report, alerts=alerts, dataset=dataset,
                  history=history_figure(audit, runs), plotly=True,
                  active=any(r.status in ("queued", "running") for r in runs))
