"""Scheduled audits through real processes on PostgreSQL + Redis: an API, a Celery worker and a real
Celery beat. An audit with a one-minute schedule runs by itself, stores its report, and a failing
threshold raises an alert whose webhook (a local HTTP server; its first answer is a 500, so Celery's
retry delivers it) receives the alert JSON. Also: validation errors name the field, run now, drift,
allow-listed sources, and the audit model file driving ``fairsolve-admin audit run``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import redis

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from bench.common.stack import AUDIT_REDIS_URL as AUDIT_REDIS, ROOT, pg_database, start_stack, stop_stack
from tests.support.audits import Hook, finished_runs, hook, wait_for  # noqa: F401 - the webhook receiver fixture


@pytest.fixture(scope="module")
def beat_stack(tmp_path_factory):
    redis.Redis.from_url(AUDIT_REDIS).flushdb()
    sources = tmp_path_factory.mktemp("audit-sources")
    database_url, drop = pg_database()
    stack = start_stack("audits", tmp_path_factory.mktemp("audit-home"), database_url, AUDIT_REDIS, beat=True,
                        extra_env={"FAIRSOLVE_AUDIT_TRIGGER_EVERY_S": "2", "FAIRSOLVE_AUDIT_WEBHOOK_BACKOFF_S": "1",
                                   "FAIRSOLVE_AUDIT_SOURCES": str(sources), "FAIRSOLVE_MAX_ACTIVE_AUDIT_RUNS": "50",
                                   "FAIRSOLVE_WEBHOOK_ALLOW_PRIVATE": "true"})  # the test's receiver is local
    stack.sources = sources
    yield stack
    stop_stack(stack)
    drop()


@pytest.fixture(scope="module")
def trained(beat_stack):
    with beat_stack.client() as client:
        dataset = upload(client, planted_table(600))
        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=30)).json()
        beat_stack.wait_job(client, job["id"], {"succeeded"})
    return dataset, job


def test_bad_audits_are_refused_naming_the_field(beat_stack, trained):
    dataset, job = trained
    base = {"job_id": job["id"], "dataset_id": dataset["id"], "metrics": [{"type": "accuracy", "threshold": 0.5}]}
    cases = [({"schedule": "every minute"}, ["body", "schedule"]),
             ({"metrics": [{"type": "vibes"}]}, ["body", "metrics", 0, "type"]),
             ({"model_artifact_id": "m1"}, ["body", "job_id"]),                     # both models given
             ({"job_id": None, "model_artifact_id": "m1"}, ["body", "model_artifact_id"]),  # not found
             ({"job_id": "nope"}, ["body", "job_id"]),
             ({"dataset_id": None, "source": "/etc/passwd"}, ["body", "source"]),
             ({"source": str(beat_stack.sources / "x.csv")}, ["body", "dataset_id"]),
             ({"webhook_url": "ftp://x"}, ["body", "webhook_url"])]
    with beat_stack.client() as client:
        for change, loc in cases:
            response = client.post("/api/v1/audits", json={**base, **change})
            assert response.status_code == 422, (change, response.text)
            assert response.json()["detail"][0]["loc"] == loc, (change, response.text)
        assert "demographic_parity" in client.post("/api/v1/audits", json={**base, "metrics": [{"type": "vibes"}]}).text
        catalog = {m["type"]: m for m in client.get("/api/v1/audits/metrics").json()}
        assert catalog["accuracy"]["direction"] == "min" and "interval" in str(catalog["partial_demographic_parity"])


def test_scheduled_audit_runs_by_itself_and_alerts_the_webhook(beat_stack, trained, hook):
    dataset, job = trained
    Hook.answers[:] = [500]  # the first delivery fails; Celery retries it
    with beat_stack.client() as client:
        created = client.post("/api/v1/audits", json={
            "name": "nightly", "job_id": job["id"], "dataset_id": dataset["id"], "schedule": "* * * * *",
            "webhook_url": hook, "metrics": [{"type": "demographic_parity", "threshold": 0.0},
                                             {"type": "accuracy", "threshold": 0.0},
                                             {"type": "psp", "interval": [0, 0.3], "threshold": 1.0}]})
        assert created.status_code == 201, created.text
        audit = created.json()
        assert audit["next_run_at"] and audit["enabled"] and audit["last_run"] is None

        runs = wait_for(lambda: finished_runs(client, audit["id"], "schedule"), 150, beat_stack, "a scheduled run")
        run = runs[0]
        assert run["status"] == "succeeded", run
        assert run["data_sha256"] == dataset["sha256"] and run["n_rows"] == 600
        assert run["breached"] == ["demographic_parity"] and run["passed"] is False
        dp, acc, psp = run["results"]
        assert dp["value"] > 0 and dp["ci"][0] <= dp["value"] <= dp["ci"][1]
        assert set(dp["by_group"]["selection_rate"]) == {"Female", "Male"}
        assert acc["passed"] is True and psp["key"] == "partial_statistical_parity[interval=[0, 0.3]]"
        assert sum(run["group_sizes"].values()) == 600

        alerts = client.get("/api/v1/alerts", params={"audit_id": audit["id"]}).json()
        assert len(alerts) == 1 and alerts[0]["run_id"] == run["id"]
        assert alerts[0]["breached"][0]["key"] == "demographic_parity"
        # what a batch of 600 rows can show of the threshold, in the run and in the alert's words
        assert 0.0 <= dp["noise_floor"]["keep_probability"] <= 1.0 and acc["noise_floor"] is None
        assert alerts[0]["breached"][0]["noise_floor"] == dp["noise_floor"]
        assert "a model with no gap would breach it on a batch of this size with probability" in alerts[0]["message"]
        delivered = wait_for(lambda: [a for a in [client.get(f"/api/v1/alerts/{alerts[0]['id']}").json()]
                                      if a["webhook_status"] == "delivered"], 60, beat_stack, "webhook delivery")
        assert delivered[0]["webhook_attempts"] == 2 and delivered[0]["delivered_at"]
        assert [r["code"] for r in Hook.received] == [500, 200]
        body = Hook.received[-1]["body"]
        assert body["alert_id"] == alerts[0]["id"] and body["audit_id"] == audit["id"]
        assert body["breached"][0]["key"] == "demographic_parity" and body["run"]["n_rows"] == 600

        # run now: a second report with drift against the first; the schedule is then switched off
        assert client.patch(f"/api/v1/audits/{audit['id']}", json={"enabled": False}).json()["next_run_at"] is None
        started = client.post(f"/api/v1/audits/{audit['id']}/run")
        assert started.status_code == 202
        now = wait_for(lambda: [r for r in finished_runs(client, audit["id"], "manual")], 60, beat_stack, "run now")[0]
        assert now["previous_run_id"] is not None
        assert now["results"][0]["drift"] == {"previous": now["results"][0]["value"], "delta": 0.0}
        assert client.get(f"/api/v1/audits/{audit['id']}").json()["last_run"]["id"] == now["id"]


def test_source_audit_and_cli_with_the_audit_model(beat_stack, trained, tmp_path):
    dataset, job = trained
    planted_table(400, seed=5).to_csv(beat_stack.sources / "fresh.csv", index=False)
    with beat_stack.client() as client:
        audit = client.post("/api/v1/audits", json={
            "job_id": job["id"], "source": str(beat_stack.sources / "fresh.csv"),
            "metrics": [{"type": "equalized_odds", "threshold": 1.0}]}).json()
        assert audit["next_run_at"] is None  # no schedule: runs when asked
        client.post(f"/api/v1/audits/{audit['id']}/run")
        run = wait_for(lambda: finished_runs(client, audit["id"]), 60, beat_stack, "source run")[0]
        assert run["status"] == "succeeded" and run["n_rows"] == 400 and run["passed"] is True, run

        model = client.get(f"/api/v1/jobs/{job['id']}/audit-model")
        assert model.status_code == 200
        (tmp_path / "model.safetensors").write_bytes(model.content)
        assert client.delete(f"/api/v1/audits/{audit['id']}").status_code == 204
        assert client.get(f"/api/v1/audits/{audit['id']}").status_code == 404
    cli = [sys.executable, "-m", "app.cli", "audit", "run", "--model", str(tmp_path / "model.safetensors"),
           "--data", str(beat_stack.sources / "fresh.csv"), "--metrics"]
    ok = subprocess.run([*cli, '[{"type": "equalized_odds", "threshold": 1.0}]'], cwd=ROOT, capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    breach = subprocess.run([*cli, '[{"type": "equalized_odds", "threshold": 0.0}]', "--format", "json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert breach.returncode == 1 and json.loads(breach.stdout)["results"][0]["value"] == pytest.approx(
        run["results"][0]["value"])


def test_a_run_whose_worker_vanished_is_failed_by_beat(beat_stack, trained):
    """A run left `running` after its last start (its worker died; the redelivered message finds it no longer
    queued) is marked failed by the beat task instead of staying `running` forever (earlier starts are re-queued:
    tests/integration/test_audit_limits.py)."""
    from datetime import datetime, timedelta, timezone

    from sqlalchemy import create_engine, text

    dataset, job = trained
    with beat_stack.client() as client:
        audit = client.post("/api/v1/audits", json={"job_id": job["id"], "dataset_id": dataset["id"],
                                                     "metrics": [{"type": "accuracy"}]}).json()
        run_id = client.post(f"/api/v1/audits/{audit['id']}/run").json()["id"]
        wait_for(lambda: finished_runs(client, audit["id"], "manual"), 60, beat_stack, "run now")
        engine = create_engine(beat_stack.env["DATABASE_URL"])
        with engine.begin() as conn:
            conn.execute(text("UPDATE audit_runs SET status='running', finished_at=NULL, started_at=:t, "
                              "heartbeat_at=:t, starts=3 WHERE id=:id"),
                         {"t": datetime.now(timezone.utc) - timedelta(hours=1), "id": run_id})
        engine.dispose()
        run = wait_for(lambda: [r for r in [client.get(f"/api/v1/audits/{audit['id']}/runs/{run_id}").json()]
                                if r["status"] == "failed"], 60, beat_stack, "the lost run failed")[0]
        assert run["error"].startswith("worker lost")


def test_an_uploaded_model_is_audited_like_its_job(beat_stack, trained):
    """The job's exported model file, uploaded as a model (``model_artifact_id``), gives the same report as
    the job's own audit; a file that is not an audit model is refused naming ``file``; another owner's
    model is not found."""
    dataset, job = trained
    metrics = [{"type": "demographic_parity", "threshold": 1.0}, {"type": "accuracy"}]
    with beat_stack.client() as client:
        exported = client.get(f"/api/v1/jobs/{job['id']}/audit-model").content
        bad = client.post("/api/v1/models", files={"file": ("m.safetensors", b"not a model")})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "file"]
        uploaded = client.post("/api/v1/models", files={"file": ("m.safetensors", exported)}, data={"name": "prod"})
        assert uploaded.status_code == 201, uploaded.text
        model = uploaded.json()
        assert model["name"] == "prod" and model["spec"]["target"] == "income"
        assert model["id"] in {m["id"] for m in client.get("/api/v1/models").json()}

        runs = []
        for source in ({"job_id": job["id"]}, {"model_artifact_id": model["id"]}):
            audit = client.post("/api/v1/audits", json={**source, "dataset_id": dataset["id"], "metrics": metrics})
            assert audit.status_code == 201, audit.text
            client.post(f"/api/v1/audits/{audit.json()['id']}/run")
            runs.append(wait_for(lambda: finished_runs(client, audit.json()["id"], "manual"), 60, beat_stack,
                                 "run now")[0])
        by_job, by_model = runs
        assert by_model["status"] == "succeeded", by_model
        assert [r["value"] for r in by_model["results"]] == pytest.approx([r["value"] for r in by_job["results"]])

        with beat_stack.client(beat_stack.new_key("stranger")) as stranger:
            assert stranger.get(f"/api/v1/models/{model['id']}").status_code == 404
            refused = stranger.post("/api/v1/audits", json={"model_artifact_id": model["id"],
                                                            "dataset_id": dataset["id"], "metrics": metrics})
            assert refused.status_code == 422
        assert client.delete(f"/api/v1/models/{model['id']}").status_code == 204
        assert client.get(f"/api/v1/audits/{by_model['audit_id']}").status_code == 404  # its audits went with it


def test_deleting_an_audited_dataset_names_its_audits_unless_cascade(beat_stack, trained):
    """Issue 19 #13: deleting a dataset silently deleted its audits, their runs and alerts. Now 409 naming them;
    ``?cascade=true`` deletes them along."""
    _, job = trained
    with beat_stack.client() as client:
        data = upload(client, planted_table(300, seed=7), name="audit-data")
        audit = client.post("/api/v1/audits", json={"job_id": job["id"], "dataset_id": data["id"],
                                                     "metrics": [{"type": "demographic_parity", "threshold": 0.0}]})
        assert audit.status_code == 201, audit.text
        audit_id = audit.json()["id"]
        client.post(f"/api/v1/audits/{audit_id}/run")
        run = wait_for(lambda: finished_runs(client, audit_id), 60, beat_stack, "run now")[0]
        assert run["breached"] == ["demographic_parity"], run
        [alert] = client.get("/api/v1/alerts", params={"audit_id": audit_id}).json()

        refused = client.delete(f"/api/v1/datasets/{data['id']}")
        assert refused.status_code == 409, refused.text
        assert refused.json()["detail"] == (f"dataset_id: this dataset is read by 1 audit ({audit_id}) with 1 run "
                                            "and 1 alert; delete them first, or pass ?cascade=true to delete them "
                                            "with it")
        assert client.get(f"/api/v1/audits/{audit_id}").status_code == 200

        assert client.delete(f"/api/v1/datasets/{data['id']}", params={"cascade": "true"}).status_code == 204
        assert client.get(f"/api/v1/datasets/{data['id']}").status_code == 404
        assert client.get(f"/api/v1/audits/{audit_id}").status_code == 404
        assert client.get(f"/api/v1/alerts/{alert['id']}").status_code == 404


def prediction_log(n: int, seed: int):
    """A table that already holds a model's output: planted rows with a score column (no FairSolve model)."""
    import numpy as np

    table = planted_table(n, seed=seed)
    male = (table["sex"] == "Male").to_numpy()
    table["score"] = 1 / (1 + np.exp(-(-1.0 + 1.6 * male + 0.03 * (table["hours-per-week"].to_numpy() - 40))))
    return table


def test_prediction_log_audit_with_drift_alerts_baseline_and_reports(beat_stack, trained):
    """A prediction log on a source re-read at each run: 422s naming the field; the first run pinned as the
    baseline; a resample of the same rows raises no drift alert, a planted shift of one group's scores does
    (PSI against the baseline, KS against the previous run); the run's bias report in JSON, CSV and HTML."""
    import numpy as np

    dataset, job = trained
    log_file = beat_stack.sources / "log.csv"
    base = prediction_log(800, seed=11)
    base.to_csv(log_file, index=False)
    log = {"score_column": "score", "label_column": "income", "positive_label": ">50K", "sensitive": ["sex"]}
    metrics = [{"type": "demographic_parity", "threshold": 1.0}, {"type": "accuracy"},
               {"type": "score_psi", "threshold": 0.25, "against": "baseline"}, {"type": "score_ks", "threshold": 0.2}]
    body = {"name": "log", "predictions": log, "source": str(log_file), "metrics": metrics}
    with beat_stack.client() as client:
        cases = [({"job_id": job["id"]}, ["body", "job_id"]),
                 ({"predictions": {**log, "label_column": None}}, ["body", "predictions", "label_column"]),
                 ({"predictions": {**log, "score_column": None, "prediction_column": "income"},
                   "metrics": [{"type": "roc_auc"}]}, ["body", "predictions", "score_column"]),
                 ({"predictions": {**log, "threshold": 2}}, ["body", "predictions"]),
                 ({"source": None, "dataset_id": dataset["id"]}, ["body", "dataset_id"])]  # no score column
        for change, loc in cases:
            response = client.post("/api/v1/audits", json={**body, **change})
            assert response.status_code == 422, (change, response.text)
            assert response.json()["detail"][0]["loc"] == loc, (change, response.text)
        created = client.post("/api/v1/audits", json=body)
        assert created.status_code == 201, created.text
        audit = created.json()
        assert audit["predictions"]["score_column"] == "score" and audit["job_id"] is None

        def run_once(expected: int) -> dict:
            client.post(f"/api/v1/audits/{audit['id']}/run")
            runs = wait_for(lambda: (lambda r: r if len(r) == expected else None)(finished_runs(client, audit["id"])),
                            60, beat_stack, f"run {expected}")
            return runs[0]

        first = run_once(1)
        assert first["status"] == "succeeded", first
        assert first["passed"] is True and first["score_drift"] == {"previous": None, "baseline": None}
        assert [r["passed"] for r in first["results"]] == [True, None, None, None]
        refused = client.put(f"/api/v1/audits/{audit['id']}/baseline", json={"run_id": "nope"})
        assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "run_id"]
        pinned = client.put(f"/api/v1/audits/{audit['id']}/baseline", json={"run_id": first["id"]})
        assert pinned.status_code == 200 and pinned.json()["baseline_run_id"] == first["id"]

        base.sample(frac=1.0, replace=True, random_state=1).to_csv(log_file, index=False)  # same population
        second = run_once(2)
        assert second["status"] == "succeeded" and second["breached"] == [], second["results"]
        assert second["score_drift"]["baseline"]["run_id"] == first["id"]
        assert 0 <= second["results"][2]["value"] < 0.25 and second["results"][2]["passed"] is True

        female = (base["sex"] == "Female").to_numpy()
        base.assign(score=np.where(female, np.minimum(base["score"] + 0.25, 1.0), base["score"])).to_csv(
            log_file, index=False)
        third = run_once(3)
        assert third["breached"] == ["score_psi[against=baseline]", "score_ks"], third["results"]
        psi = third["results"][2]
        assert psi["by_group"]["psi"]["Female"]["value"] > 0.25 > psi["by_group"]["psi"]["Male"]["value"]
        assert psi["reference_run_id"] == first["id"] and third["results"][3]["reference_run_id"] == second["id"]
        alerts = client.get("/api/v1/alerts", params={"audit_id": audit["id"]}).json()
        assert [a["run_id"] for a in alerts] == [third["id"]]
        assert {b["key"] for b in alerts[0]["breached"]} == {"score_psi[against=baseline]", "score_ks"}

        url = f"/api/v1/audits/{audit['id']}/runs/{third['id']}/report"
        doc = client.get(url, params={"format": "json"}).json()
        assert [s["value"] for s in doc["summary"]] == [r["value"] for r in third["results"]]
        assert doc["attributes"][0]["reference"] == "Male" and doc["data"]["sha256"] == third["data_sha256"]
        csv_text = client.get(url, params={"format": "csv"})
        assert csv_text.headers["content-type"].startswith("text/csv") and "score_psi" in csv_text.text
        page = client.get(url)
        assert page.status_code == 200 and "Bias report" in page.text
        assert client.get(url, params={"reference": "Nobody"}).status_code == 422
        assert client.get(f"/api/v1/audits/{audit['id']}/runs/nope/report").status_code == 404
