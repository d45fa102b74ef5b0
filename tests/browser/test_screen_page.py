"""The job page lists the columns the feature screen left out and why (issue 30 item 2), in a real Chromium
against a real stack: a COMPAS-like table whose ``is_recid`` recodes the target and whose ``days_to_recid`` is
recorded only for those who re-offended."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.browser import sign_in
from tests.support.jobs import job_when
from bench.common.datagen import compas_like_table
from bench.common.jobs import upload

pytestmark = pytest.mark.integration


def test_job_page_lists_the_excluded_columns(web_stack, owner_key, page):  # noqa: F811
    table = compas_like_table(1200, seed=3)
    rng = np.random.default_rng(3)
    table["days_to_recid"] = np.where((table["two_year_recid"] == 1) & (rng.random(len(table)) < 0.5),
                                      rng.integers(1, 700, len(table)), np.nan)
    with web_stack.client(owner_key) as client:
        dataset = upload(client, table, name="compas-like")
        resp = client.post("/api/v1/jobs", json={"dataset_id": dataset["id"], "target": "two_year_recid",
                                                 "positive_label": 1, "sensitive": ["race"],
                                                 "solver": {"name": "erm"}, "max_iterations": 50})
        assert resp.status_code == 202, resp.text
        job = job_when(client, resp.json()["id"], lambda j: j["status"] in ("succeeded", "failed"))
    excluded = {n["column"]: n["reason"] for n in job["spec"]["feature_screen"] if n["action"] == "excluded"}
    assert excluded["days_to_recid"] == "outcome_only" and excluded["is_recid"] == "near_duplicate"

    sign_in(page, web_stack, owner_key, f"/jobs/{job['id']}")
    rows = page.locator("#screen-table tbody tr")
    assert rows.count() == len(excluded)
    for column, reason in excluded.items():
        assert page.inner_text(f'#screen-table tr[data-column="{column}"] [data-field=reason]') == reason
    assert "recorded only after the outcome" in page.inner_text('#screen-table tr[data-column="days_to_recid"]')
