"""A partial-fairness job end to end: IDCA under pSP, its metrics, and the ``ccdf`` / shaded ``scores`` charts."""

from __future__ import annotations

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from tests.support.jobs import succeeded_job


def test_partial_job_metrics_and_charts(embedded_stack):
    stack = embedded_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(1500), name="planted-partial")
        spec = job_spec(dataset["id"], constraints=[{"type": "partial_statistical_parity", "tolerance": 0.1,
                                                     "interval": [0.0, 0.3]}],
                        solver={"name": "idca", "params": {"inner_iterations": 20}}, max_iterations=5)
        job = succeeded_job(stack, client, spec)
        test = job["metrics"]["test"]
        report = test["partial_statistical_parity_report"]
        assert 0 <= test["partial_statistical_parity"] <= 1
        assert report["interval"] == {"Female": [[0.0, 0.3]], "Male": [[0.0, 0.3]]}

        ccdf = client.get(f"/api/v1/jobs/{job['id']}/charts/ccdf").json()
        names = [t.get("name") for t in ccdf["data"]]
        assert "45° line" in names and any(" vs " in n for n in names if n)
        marks = [s for s in ccdf["layout"].get("shapes", []) if s.get("line", {}).get("color") == "red"]
        assert len(marks) == 4  # α and β on both axes

        scores = client.get(f"/api/v1/jobs/{job['id']}/charts/scores").json()
        shaded = [t for t in scores["data"] if t.get("fill") == "tozeroy"]
        assert {t["name"].split(":")[0] for t in shaded} == {"Female", "Male"}
