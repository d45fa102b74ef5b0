"""An AUC-fairness job end to end: level_set under auc_parity (inter), its exact metrics and the ``roc`` chart."""

from __future__ import annotations

from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload
from tests.support.jobs import succeeded_job


def test_auc_job_metrics_and_roc_chart(embedded_stack):
    stack = embedded_stack
    with stack.client() as client:
        dataset = upload(client, planted_table(1500), name="planted-auc")
        spec = job_spec(dataset["id"], objective="auc_square",
                        constraints=[{"type": "auc_parity", "tolerance": 0.05, "variant": "inter", "n_boot": 20}],
                        solver={"name": "level_set", "params": {"inner_iterations": 100}}, max_iterations=300)
        job = succeeded_job(stack, client, spec)
        test = job["metrics"]["test"]
        detail = test["auc_parity_detail"]
        assert 0 <= test["auc_parity"] <= 1 and detail["variant"] == "inter"
        assert set(test["auc_parity_by_group"]) == {"Female", "Male"}
        assert detail["value_ci"][0] <= detail["value_ci"][1]

        roc = client.get(f"/api/v1/jobs/{job['id']}/charts/roc").json()
        names = [t.get("name") or "" for t in roc["data"]]
        assert any(n.startswith("Female: AUC") for n in names) and any(n.startswith("Male: AUC") for n in names)
        assert sum(n.startswith("xAUC") for n in names) == 2
        page = client.get(f"/api/v1/jobs/{job['id']}/charts/roc", params={"format": "html"})
        assert page.status_code == 200 and "plotly" in page.text.lower()
