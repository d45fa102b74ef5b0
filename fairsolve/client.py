"""``fairsolve.Client``: the FairSolve service from Python (httpx), for scripts and notebooks.

    fs = fairsolve.Client("http://localhost:8000", key="fsk_...")
    ds = fs.upload(frame, name="adult")                      # a DataFrame, or a CSV / Parquet file
    job = fs.submit(ds, target="income", positive_label=">50K", sensitive=["sex"],
                    constraints=[{"type": "demographic_parity", "tolerance": 0.05}]).wait()
    job.metrics()            # DataFrame: one row per split
    job.group_metrics()      # DataFrame: one row per group (test split)
    job.chart("trajectory")  # plotly.graph_objects.Figure
    job.model().predict(new_frame)

Every request is validated by the service itself, so a bad keyword argument raises
:class:`FairSolveError` with the API's own message (``body.constraints.0.tolerance: ...``).
:meth:`Job.wait` shows the job's own progress (iterations of ``max_iterations``) with tqdm's
``auto`` bar: a widget in a notebook, a text bar in a terminal.

An answer that asks to be retried (503 or 429 with ``Retry-After``: an overloaded or briefly unavailable
database, the rate limit) is retried after the time it names (at most ``MAX_RETRY_AFTER_S``), up to
``retries`` times, when repeating the request cannot do anything twice: reads, cancels, and submissions of jobs
and sweeps, which carry an ``Idempotency-Key`` of their own. An answer that is not JSON where JSON was expected
(a proxy's error page) raises :class:`FairSolveError` too.
"""
from __future__ import annotations

import io
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pandas as pd

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from .model import FairModel

ACTIVE = {"waiting", "queued", "running", "cancelling"}  # statuses of jobs, sweeps and audit runs still going
API = "/api/v1"
SPLITS = ("train", "validation", "test")
RETRIED_STATUS = frozenset({429, 503})
MAX_RETRY_AFTER_S = 30.0


class FairSolveError(RuntimeError):
    """An error answer of the service: ``status_code`` and the message(s) naming the field(s)."""

    def __init__(self, status_code: int, message: str, detail: Any = None) -> None:
        super().__init__(f"{status_code}: {message}")
        self.status_code, self.message, self.detail = status_code, message, detail


def _frame_file(frame: pd.DataFrame, name: str) -> tuple[str, bytes]:
    """A DataFrame as Parquet (types kept), or as CSV when a column mixes types Parquet cannot hold."""
    import pyarrow as pa

    buffer = io.BytesIO()
    try:
        frame.to_parquet(buffer, index=False)
        return f"{name}.parquet", buffer.getvalue()
    except (pa.ArrowException, TypeError, ValueError):
        return f"{name}.csv", frame.to_csv(index=False).encode()


def _message(detail: Any) -> str:
    """The API's ``detail`` as one line: validation errors as ``loc: msg`` joined by ``; ``."""
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg', '')}" if isinstance(d, dict)
                         else str(d) for d in detail)
    return str(detail)


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the service asks to wait before a retry (a 503 or 429 with ``Retry-After`` in seconds), else None."""
    if response.status_code not in RETRIED_STATUS:
        return None
    try:
        return min(max(float(response.headers.get("retry-after", "")), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return None


def _id(obj: Any) -> str:
    """An id from an id string, an answer dict or a Job / Sweep."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, dict):
        return obj["id"]
    return obj.id


class Client:
    """A FairSolve service at ``url`` used with API key ``key``."""

    def __init__(self, url: str, key: str, *, timeout: float = 60.0, poll_s: float = 0.5,
                 transport: httpx.BaseTransport | None = None, retries: int = 3) -> None:
        self.poll_s, self.retries = poll_s, retries
        self._http = httpx.Client(base_url=url.rstrip("/"), timeout=timeout, transport=transport,
                                  headers={"Authorization": f"Bearer {key}"})

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call, retried while the service asks to (see the module's docstring); a 4xx / 5xx answer raises
        :class:`FairSolveError` with the API's message."""
        repeatable = method in ("GET", "HEAD") or path.endswith("/cancel") or "Idempotency-Key" in (
            kwargs.get("headers") or {})
        for attempt in range(self.retries + 1):
            response = self._http.request(method, path, **kwargs)
            wait = _retry_after(response)
            if wait is None or not repeatable or attempt == self.retries:
                break
            time.sleep(wait)
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except (ValueError, AttributeError):
                detail = response.text
            raise FairSolveError(response.status_code, _message(detail), detail)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError: not the service's answer
            raise FairSolveError(response.status_code, "the answer is not JSON: "
                                 f"{response.headers.get('content-type', 'no content type')}, "
                                 f"{response.text[:200]!r}") from exc

    # datasets
    def upload(self, data: pd.DataFrame | str | Path, name: str | None = None, *, header: bool | None = None,
               column_names: list[str] | None = None, missing_values: list[str] | None = None) -> dict[str, Any]:
        """Upload a DataFrame (sent as Parquet, types kept) or a CSV / Parquet file; the dataset's answer.

        ``header=False`` / ``column_names`` / ``missing_values`` are the upload's reading options (CSV)."""
        if isinstance(data, pd.DataFrame):
            filename, content = _frame_file(data, name or "frame")
        else:
            path = Path(data)
            filename, content = path.name, path.read_bytes()
        form: dict[str, str] = {"name": name} if name else {}
        if header is not None:
            form["header"] = "true" if header else "false"
        if column_names is not None:
            form["column_names"] = json.dumps(list(column_names))
        if missing_values is not None:
            form["missing_values"] = json.dumps(list(missing_values))
        return self._json("POST", f"{API}/datasets", files={"file": (filename, content)}, data=form)

    def dataset(self, dataset: str | dict) -> dict[str, Any]:
        """The dataset with its profile (``summary``)."""
        return self._json("GET", f"{API}/datasets/{_id(dataset)}")

    def datasets(self, limit: int = 100) -> list[dict[str, Any]]:
        return self._json("GET", f"{API}/datasets", params={"limit": limit})

    def delete_dataset(self, dataset: str | dict) -> None:
        self.request("DELETE", f"{API}/datasets/{_id(dataset)}")

    def feature_screen(self, dataset: str | dict, target: str, positive_label: Any,
                       sensitive: list[str] | None = None) -> pd.DataFrame:
        """What ``features=None`` would leave out for this target: one row per excluded or flagged column
        (column, action, reason, detail); ``attrs["kept"]`` lists the columns it would use."""
        answer = self._json("GET", f"{API}/datasets/{_id(dataset)}/feature-screen",
                            params={"target": target, "positive_label": str(positive_label),
                                    "sensitive": list(sensitive or [])})
        return _notes(answer["notes"], answer["kept"])

    # catalog
    def solvers(self) -> list[dict[str, Any]]:
        return self._json("GET", f"{API}/solvers")

    def constraints(self) -> list[dict[str, Any]]:
        return self._json("GET", f"{API}/constraints")

    # jobs and sweeps
    def submit(self, dataset: str | dict, **spec: Any) -> "Job":
        """Submit a job: the keyword arguments are the job spec's fields (``target``, ``positive_label``,
        ``sensitive``, ``constraints``, ``solver`` as a name or ``{"name", "params"}``, ...)."""
        if isinstance(spec.get("solver"), str):
            spec["solver"] = {"name": spec["solver"]}
        answer = self._json("POST", f"{API}/jobs", json={"dataset_id": _id(dataset), **spec},
                            headers={"Idempotency-Key": uuid.uuid4().hex})
        return self.job(answer["id"])

    def job(self, job_id: str) -> "Job":
        return Job(self, job_id, self._json("GET", f"{API}/jobs/{job_id}"))

    def jobs(self, status: str | None = None, limit: int = 100) -> list["Job"]:
        params: dict[str, Any] = {"limit": limit} | ({"status": status} if status else {})
        return [Job(self, j["id"], j) for j in self._json("GET", f"{API}/jobs", params=params)]

    def sweep(self, dataset: str | dict, *, tolerances: list[float], seeds: list[int] | None = None,
              solvers: list[str | dict] | None = None, warm_start: bool = True, **base: Any) -> "Sweep":
        """Submit a sweep over tolerances × seeds × solvers of the base job given by the keyword arguments."""
        if isinstance(base.get("solver"), str):
            base["solver"] = {"name": base["solver"]}
        grid: dict[str, Any] = {"tolerances": tolerances}
        if seeds is not None:
            grid["seeds"] = seeds
        if solvers is not None:
            grid["solvers"] = [{"name": s} if isinstance(s, str) else s for s in solvers]
        body = {"base": {"dataset_id": _id(dataset), **base}, "grid": grid, "warm_start": warm_start}
        answer = self._json("POST", f"{API}/sweeps", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
        return self.get_sweep(answer["id"])

    def get_sweep(self, sweep_id: str) -> "Sweep":
        return Sweep(self, sweep_id, self._json("GET", f"{API}/sweeps/{sweep_id}"))

    # audits
    def audit(self, job: "str | Job | None" = None, *, metrics: list[dict[str, Any]],
              dataset: str | dict | None = None, predictions: dict[str, Any] | None = None,
              **fields: Any) -> dict[str, Any]:
        """Create an audit of ``job``'s model, or of a prediction log (``predictions``: the columns that hold the
        model's output, label and groups), on ``dataset`` (or a ``source``) with metric thresholds."""
        body = {"metrics": metrics, **fields}
        if job is not None:
            body["job_id"] = _id(job)
        if predictions is not None:
            body["predictions"] = predictions
        if dataset is not None:
            body["dataset_id"] = _id(dataset)
        return self._json("POST", f"{API}/audits", json=body)

    def run_audit(self, audit: str | dict, *, wait: bool = True, timeout: float | None = None) -> dict[str, Any]:
        """Run an audit now; with ``wait``, until its report is there (the run's answer)."""
        started = self._json("POST", f"{API}/audits/{_id(audit)}/run")
        path = f"{API}/audits/{started['audit_id']}/runs/{started['id']}"
        return self._poll(lambda: self._json("GET", path), timeout) if wait else started

    def pin_baseline(self, audit: str | dict, run: str | dict) -> dict[str, Any]:
        """Measure the audit's score drift (``score_ks`` / ``score_psi`` against ``baseline``) against ``run``."""
        return self._json("PUT", f"{API}/audits/{_id(audit)}/baseline", json={"run_id": _id(run)})

    def bias_report(self, run: dict, format: str = "json") -> Any:
        """An audit run's bias report: the JSON document (a dict), or the ``csv`` / ``html`` text."""
        path = f"{API}/audits/{run['audit_id']}/runs/{run['id']}/report"
        return self._json("GET", path, params={"format": "json"}) if format == "json" else \
            self.request("GET", path, params={"format": format}).text

    def _poll(self, read, timeout: float | None, on_change=None, wait_s: float | None = None) -> dict[str, Any]:
        """Read until the answer's status is final (or ``timeout`` seconds pass: TimeoutError).

        Without ``wait_s``, ``read()`` answers at once and the client sleeps ``poll_s`` between reads. With it (a
        job: the API's long-poll, ``GET /jobs/{id}?wait_s=``), ``read(w)`` waits on the server up to w = ``wait_s``
        seconds (less when less of ``timeout`` is left, and below the HTTP read timeout) for the end, and the
        client sleeps only when the answer came much sooner than asked (a server without the long-poll): the end is
        seen one server check after it happens."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if wait_s is not None and self._http.timeout.read is not None:
            wait_s = min(wait_s, max(0.0, self._http.timeout.read - 1))
        while True:
            sent = time.monotonic()
            if wait_s is None:
                answer, asked = read(), 0.0
            else:
                asked = wait_s if deadline is None else max(0.0, min(wait_s, deadline - sent))
                answer = read(asked)
            if on_change is not None:
                on_change(answer)
            if answer["status"] not in ACTIVE:
                return answer
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"still {answer['status']} after {timeout} s")
            if time.monotonic() - sent < asked / 2 or not asked:  # no wait asked, or a server without the long-poll
                time.sleep(self.poll_s)


def _notes(notes: list[dict[str, Any]], kept: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(notes, columns=["column", "action", "reason", "detail"])
    frame.attrs["kept"] = list(kept)
    return frame


def _figure(payload: str) -> "go.Figure":
    import plotly.io as pio

    return pio.from_json(payload)


@dataclass
class _Resource:
    """A job or sweep of the service; ``data`` is its latest answer (``refresh`` reads it again)."""

    client: Client = field(repr=False)
    id: str
    data: dict[str, Any] = field(repr=False)
    collection = ""   # the API's path segment
    unit = ""         # what the progress bar counts
    long_poll = False  # whether its GET takes ``wait_s`` (the API's long-poll, :mod:`app.jobs.wait`)

    @property
    def path(self) -> str:
        return f"{API}/{self.collection}/{self.id}"

    @property
    def status(self) -> str:
        return self.data["status"]

    def refresh(self):
        self.data = self.client._json("GET", self.path)
        return self

    def _total(self) -> int | None:
        raise NotImplementedError

    def _done(self, answer: dict[str, Any]) -> int:
        raise NotImplementedError

    def _follow(self, progress: bool, timeout: float | None) -> None:
        """Poll until the status is final, showing ``_done`` of ``_total`` in tqdm's auto bar."""
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=self._total(), desc=f"{self.collection[:-1]} {self.id}", unit=self.unit)

        def show(answer: dict[str, Any]) -> None:
            self.data = answer
            if bar is not None:
                bar.n = self._done(answer)
                if bar.total is not None and (bar.n > bar.total or answer["status"] == "succeeded"):
                    bar.total = bar.n  # done in fewer than its total (an older server's job: in more), the bar full
                bar.set_postfix_str(answer["status"], refresh=False)
                bar.refresh()

        try:
            if self.long_poll:  # each read waits on the server: 1 s with a bar to move, else up to 25 s
                self.client._poll(lambda w: self.client._json("GET", self.path, params={"wait_s": w}), timeout, show,
                                  wait_s=1.0 if progress else 25.0)
            else:
                self.client._poll(lambda: self.client._json("GET", self.path), timeout, show)
        finally:
            if bar is not None:
                bar.close()

    def chart(self, kind: str, **params: Any) -> "go.Figure":
        """Chart ``kind`` as a Plotly figure (jobs: ``trajectory``, ``scores``, ``roc``, ...; sweeps:
        ``pareto``, ``trajectories``, ``radar``, ``groups``)."""
        return _figure(self.client.request("GET", f"{self.path}/charts/{kind}", params=params).text)


@dataclass
class Job(_Resource):
    """A job of the service."""

    collection = "jobs"
    unit = "it"
    long_poll = True

    def _total(self) -> int | None:
        return self.data["progress"].get("max_iterations") or None

    def _done(self, answer: dict[str, Any]) -> int:
        return answer["progress"].get("iteration", 0)

    def wait(self, *, progress: bool = True, timeout: float | None = None, raise_on_failure: bool = True) -> "Job":
        """Follow the job until it finishes, with a progress bar of its iterations; FairSolveError when it failed."""
        self._follow(progress, timeout)
        if raise_on_failure and self.status != "succeeded":
            raise FairSolveError(409, f"job {self.id} {self.status}: {self.data.get('error')}", self.data)
        return self

    def feature_screen(self) -> pd.DataFrame:
        """Columns the service left out of (or flagged in) a job submitted with ``features=None``, and why."""
        spec = self.data["spec"]
        return _notes(spec.get("feature_screen") or [], spec.get("features") or [])

    def cancel(self) -> "Job":
        self.client.request("POST", f"{self.path}/cancel")
        return self.refresh()

    def metrics(self) -> pd.DataFrame:
        """Scalar metrics, one row per split (train, validation, test)."""
        splits = self.data.get("metrics") or {}
        order = [s for s in SPLITS if s in splits] + sorted(set(splits) - set(SPLITS))
        return pd.DataFrame({split: {k: v for k, v in splits[split].items() if isinstance(v, (int, float)) or v is None}
                             for split in order}).T

    def group_metrics(self, split: str = "test") -> pd.DataFrame:
        """Per-group metrics of one split, one row per group: every ``<metric>_by_group`` (nested ones as
        ``<metric>.<part>``) and ``n`` (the group sizes)."""
        metrics = (self.data.get("metrics") or {}).get(split)
        if metrics is None:
            raise KeyError(f"job {self.id} has no metrics of split {split!r}")
        columns: dict[str, dict[str, Any]] = {}
        for key, value in metrics.items():
            if not key.endswith("_by_group") or not isinstance(value, dict):
                continue
            name = key.removesuffix("_by_group")
            frame = pd.DataFrame.from_dict(value, orient="index")
            if frame.shape[1] == 1 and frame.columns[0] == 0:
                columns[name] = frame[0].to_dict()
            else:
                columns.update({f"{name}.{c}": frame[c].to_dict() for c in frame.columns})
        out = pd.DataFrame(columns)
        out.insert(0, "n", pd.Series(metrics.get("group_sizes") or {}))
        out.index.name = "group"
        return out

    def trajectory(self, max_points: int = 500) -> pd.DataFrame:
        """The solver's iterates (objective, violations, ...), one row per recorded iteration."""
        points = self.client._json("GET", f"{self.path}/trajectory", params={"max_points": max_points})
        return pd.json_normalize(points["points"])

    def predictions(self) -> pd.DataFrame:
        """The test split's predictions (row, group, label, score, prediction)."""
        content = self.client.request("GET", f"{self.path}/artifacts/predictions").content
        return pd.read_parquet(io.BytesIO(content))

    def model(self) -> "FairModel":
        """The trained model with the job's encoder: ``predict`` / ``predict_proba`` on raw DataFrames
        (classes 0 / 1, 1 = the job's positive label)."""
        from .model import FairModel

        return FairModel.from_audit_bytes(self.client.request("GET", f"{self.path}/audit-model").content)

    def onnx(self, path: str | Path | None = None) -> bytes:
        """The whole fitted pipeline (encoder, model, post-processing, threshold) as one ONNX model over the raw
        columns (outputs ``logit``, ``score``, ``decision``; README "ONNX models in and out"), also written to
        ``path`` when given."""
        content = self.client.request("GET", f"{self.path}/model.onnx").content
        if path is not None:
            Path(path).write_bytes(content)
        return content


@dataclass
class Sweep(_Resource):
    """A sweep of the service."""

    collection = "sweeps"
    unit = "job"

    def _total(self) -> int | None:
        return self.data["n_jobs"]

    def _done(self, answer: dict[str, Any]) -> int:
        return sum(int(answer["progress"].get(k) or 0) for k in ("succeeded", "failed", "cancelled"))

    def wait(self, *, progress: bool = True, timeout: float | None = None) -> "Sweep":
        """Follow the sweep until no job of it runs, with a progress bar of its finished jobs."""
        self._follow(progress, timeout)
        return self

    def points(self) -> pd.DataFrame:
        """One row per sweep point (solver, tolerance, ...) with its test metrics' means."""
        rows = []
        for p in self.data.get("points") or []:
            row = {k: v for k, v in p.items() if k not in ("metrics", "job_ids")}
            for name, stats in ((p.get("metrics") or {}).get("test") or {}).items():
                if isinstance(stats, dict) and "mean" in stats:
                    row[name] = stats["mean"]
            row["job_ids"] = p.get("job_ids")
            rows.append(row)
        return pd.DataFrame(rows)

    def jobs(self) -> list[Job]:
        return [self.client.job(j) for p in self.data.get("points") or [] for j in p.get("job_ids") or []]

    def report(self) -> dict[str, Any]:
        return self.client._json("GET", f"{self.path}/report", params={"format": "json"})
