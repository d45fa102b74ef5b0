"""A live audit run is never taken for a lost one: with ``FAIRSOLVE_STALE_AFTER_S`` = 3 s and beat looking for
lost runs every second, a prediction-log run whose source (a local HTTP server) trickles its rows out over
about 9 s succeeds, because the run beats its heartbeat while it works (a run whose heartbeat stopped is still
failed as lost: tests/integration/test_audits.py). Real API, Celery worker, beat, PostgreSQL, Redis."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

import pytest
import redis

from tests.support.audits import finished_runs, local_server, wait_for
from bench.common.stack import AUDIT_REDIS_URL, pg_database, start_stack, stop_stack

STALE_S = 3
TRICKLE_S = 9.0
ROWS = 3000


class Trickle(BaseHTTPRequestHandler):
    """GET answers a prediction-log CSV in 30 chunks spread over TRICKLE_S seconds."""

    def do_GET(self):  # noqa: N802 - http.server's naming
        lines = ["sex,outcome,score"] + [f"{'FM'[i % 2]},{i % 3 == 0:d},{(i % 97) / 97:.4f}" for i in range(ROWS)]
        body = ("\n".join(lines) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        chunks = 30
        size = -(-len(body) // chunks)
        for k in range(chunks):
            self.wfile.write(body[k * size:(k + 1) * size])
            self.wfile.flush()
            time.sleep(TRICKLE_S / chunks)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def slow_source():
    with local_server(Trickle, "/logs") as url:
        yield url


@pytest.fixture(scope="module")
def stack(tmp_path_factory, slow_source):
    redis.Redis.from_url(AUDIT_REDIS_URL).flushdb()
    database_url, drop = pg_database()
    stack = start_stack("heartbeat", tmp_path_factory.mktemp("heartbeat-home"), database_url, AUDIT_REDIS_URL,
                        beat=True, extra_env={"FAIRSOLVE_AUDIT_TRIGGER_EVERY_S": "1",
                                              "FAIRSOLVE_STALE_AFTER_S": str(STALE_S),
                                              "FAIRSOLVE_AUDIT_SOURCES": slow_source,
                                              # the slow run's 3,000 rows fit (2 metrics: 1.3e6); counting the
                                              # streamed log's 20,000 rows would not (1.2e7): it resamples cells
                                              "FAIRSOLVE_AUDIT_MAX_WORK": "5e6"})
    stack.database_url = database_url
    yield stack
    stop_stack(stack)
    drop()


def test_a_long_audit_run_heartbeats_and_succeeds(stack, slow_source):
    body = {"name": "slow", "source": f"{slow_source}/today.csv",
            "predictions": {"score_column": "score", "label_column": "outcome", "positive_label": 1,
                            "sensitive": ["sex"]},
            "metrics": [{"type": "demographic_parity", "threshold": 1.0}, {"type": "accuracy"}]}
    with stack.client() as client:
        created = client.post("/api/v1/audits", json=body)
        assert created.status_code == 201, created.text
        audit = created.json()
        started = time.monotonic()
        assert client.post(f"/api/v1/audits/{audit['id']}/run").status_code == 202
        run = wait_for(lambda: finished_runs(client, audit["id"]), 120, stack, "the slow run")[0]
        assert time.monotonic() - started > STALE_S + 2  # it outlived the stale cut-off several times over
        assert run["status"] == "succeeded", run["error"]
        assert run["n_rows"] == ROWS and run["results"][0]["value"] is not None



@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_log_dataset_is_streamed_with_the_in_memory_report(stack, fmt):
    """A prediction log uploaded as Parquet or CSV, audited on rate and drift metrics, is streamed by the worker
    (its log says so) and its report equals the whole table's (the same counts, the same seeded cell draws); its
    metric work is the cells', so a work cap its rows would exceed does not refuse it."""
    import io

    import numpy as np
    import pandas as pd

    from app.audits.logs import PredictionLog
    from app.audits.metrics import MetricSpec
    from app.audits.report import evaluate

    rng = np.random.default_rng(7)
    n = 20_000 if fmt == "parquet" else 20_001
    y = rng.random(n) < 0.3
    frame = pd.DataFrame({"race": rng.choice(["a", "b", "NA"], n), "sex": rng.choice(["F", "M"], n),
                          "outcome": y.astype(int), "score": 1 / (1 + np.exp(-rng.normal(1.2 * y - 0.7, 1.0)))})
    log = {"score_column": "score", "label_column": "outcome", "positive_label": 1, "sensitive": ["race", "sex"]}
    metrics = [{"type": "demographic_parity", "threshold": 0.01}, {"type": "equal_opportunity"},
               {"type": "accuracy", "threshold": 0.5}, {"type": "score_ks", "threshold": 0.2}]
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False) if fmt == "parquet" else frame.to_csv(buffer, index=False)
    with stack.client() as client:
        dataset = client.post("/api/v1/datasets", files={"file": (f"log.{fmt}", buffer.getvalue())},
                              data={"name": "log"})
        assert dataset.status_code == 201, dataset.text
        audit = client.post("/api/v1/audits", json={"name": "parquet", "dataset_id": dataset.json()["id"],
                                                     "predictions": log, "metrics": metrics}).json()
        client.post(f"/api/v1/audits/{audit['id']}/run")
        run = wait_for(lambda: finished_runs(client, audit["id"]), 120, stack, f"the {fmt} run")[0]
    assert run["status"] == "succeeded", run["error"]
    assert f"streamed {n} rows" in stack.log("worker")
    # the whole table as the in-memory path reads it ("NA" is a default missing-value marker)
    whole = PredictionLog.model_validate(log).score(frame.replace({"race": {"NA": None}}))
    expected = evaluate([MetricSpec.model_validate(m) for m in metrics], whole)
    assert run["group_sizes"] == expected["group_sizes"] and "__missing__ & F" in run["group_sizes"]
    for got, want in zip(run["results"], expected["results"]):
        assert (got["key"], got["value"], got["ci"], got["passed"]) == (want["key"], want["value"], want["ci"],
                                                                        want["passed"])
