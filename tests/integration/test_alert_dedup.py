"""Alerts (issue 30, item 12): an unchanged breach alerts once, not at every run; one open alert per audit and
metric until a run passes it, after which a new breach alerts again. Real API, worker and SQLite broker."""
from __future__ import annotations

import pytest

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

pytestmark = pytest.mark.integration


def run_now(stack, client, audit_id: str) -> dict:
    run = client.post(f"/api/v1/audits/{audit_id}/run")
    assert run.status_code == 202, run.text
    def ended() -> dict | None:
        runs = {r["id"]: r for r in client.get(f"/api/v1/audits/{audit_id}/runs").json()}
        return runs[run.json()["id"]] if runs[run.json()["id"]]["status"] in ("succeeded", "failed") else None
    return stack.until(ended, 120, f"audit run {run.json()['id']} ended")


def alerts(client, audit_id: str) -> list[dict]:
    return client.get("/api/v1/alerts", params={"audit_id": audit_id}).json()


def test_an_unchanged_breach_alerts_once_until_it_clears(embedded_stack):
    with embedded_stack.client() as client:
        dataset = upload(client, planted_table(600), name="alerts")
        job = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=30)).json()
        embedded_stack.wait_job(client, job["id"], {"succeeded"})
        audit = client.post("/api/v1/audits", json={
            "name": "dedup", "job_id": job["id"], "dataset_id": dataset["id"],
            "metrics": [{"type": "demographic_parity", "threshold": 0.0}, {"type": "accuracy", "threshold": 0.0}]}
        ).json()
        for _ in range(3):  # the same breach three times: one alert
            assert run_now(embedded_stack, client, audit["id"])["breached"] == ["demographic_parity"]
        [first] = alerts(client, audit["id"])
        assert [b["key"] for b in first["breached"]] == ["demographic_parity"]

        accuracy_too = [{"type": "demographic_parity", "threshold": 0.0}, {"type": "accuracy", "threshold": 1.01}]
        assert client.patch(f"/api/v1/audits/{audit['id']}", json={"metrics": accuracy_too}).status_code == 200
        run = run_now(embedded_stack, client, audit["id"])
        assert sorted(run["breached"]) == ["accuracy", "demographic_parity"]
        newest = alerts(client, audit["id"])
        assert len(newest) == 2 and [b["key"] for b in newest[0]["breached"]] == ["accuracy"]  # only the new one

        cleared = [{"type": "demographic_parity", "threshold": 1.0}, {"type": "accuracy", "threshold": 1.01}]
        assert client.patch(f"/api/v1/audits/{audit['id']}", json={"metrics": cleared}).status_code == 200
        assert run_now(embedded_stack, client, audit["id"])["breached"] == ["accuracy"]  # DP passes: it clears
        assert len(alerts(client, audit["id"])) == 2
        assert client.patch(f"/api/v1/audits/{audit['id']}", json={"metrics": accuracy_too}).status_code == 200
        run_now(embedded_stack, client, audit["id"])  # DP breached again after it cleared: a new alert
        again = alerts(client, audit["id"])
        assert len(again) == 3 and [b["key"] for b in again[0]["breached"]] == ["demographic_parity"]
