"""The job page keeps the user's promise visible, in a real Chromium against a real stack: a pass / fail badge
per constraint against its tolerance, the warnings, the unconstrained baseline beside the job, and the
trajectory chart's exact-metric traces; the job form defaults to the auto solver when it exists."""

from __future__ import annotations

import time

import pytest

from tests.browser.test_dashboard import dataset, owner_key, shot, sign_in  # noqa: F401 - fixtures
from tests.integration.test_job_flow import job_spec

pytestmark = pytest.mark.integration


def wait_for(client, job_id: str, ready, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if ready(job):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} never got ready: {job}")


def test_job_page_shows_badges_warning_and_baseline(web_stack, owner_key, dataset, page, tmp_path):  # noqa: F811
    # ERM ignores the constraints: demographic parity ≤ 0.001 fails, equalized odds ≤ 1 passes
    spec = job_spec(dataset["id"], solver={"name": "erm", "params": {}}, max_iterations=100,
                    constraints=[{"type": "demographic_parity", "tolerance": 0.001},
                                 {"type": "equalized_odds", "tolerance": 1.0}])
    with web_stack.client(owner_key) as client:
        resp = client.post("/api/v1/jobs", json=spec)
        assert resp.status_code == 202, resp.text
        job = wait_for(client, resp.json()["id"], lambda j: j["status"] in ("succeeded", "failed") and (
            j["baseline"] or {}).get("status") in ("succeeded", "failed"))
    assert job["status"] == "succeeded", job["error"]
    assert job["baseline"]["status"] == "succeeded", job["baseline"]["error"]

    sign_in(page, web_stack, owner_key, f"/jobs/{job['id']}")
    badges = {page.locator(f'#fairness-table tr[data-constraint="{c}"] .badge').get_attribute("data-verdict")
              for c in ("demographic_parity",)}
    assert badges == {"fail"}
    assert page.inner_text('#fairness-table tr[data-constraint="equalized_odds"] .badge') == "pass"
    warnings = page.locator("#job-warnings [data-warning]")
    assert warnings.count() >= 1
    assert "demographic_parity" in page.inner_text("#job-warnings")
    assert page.locator("#job-warnings .message.warning").first.is_visible()
    rows = page.locator("#baseline-table tbody tr")
    assert rows.count() == 2 and rows.nth(1).get_attribute("data-model") == "unconstrained (erm)"
    assert float(rows.nth(1).locator("td").nth(1).inner_text()) > 0.5  # its test accuracy

    page.wait_for_selector("#chart-trajectory[data-state=rendered]", timeout=30_000)
    names = page.evaluate("document.getElementById('chart-trajectory').data.map((t) => t.name)")
    assert {"demographic_parity exact (train)", "demographic_parity exact (validation)"} <= set(names)
    shot(page, tmp_path, "job-promise")


def test_job_form_defaults_to_auto(web_stack, owner_key, dataset, page):  # noqa: F811
    sign_in(page, web_stack, owner_key, "/jobs/new")
    page.wait_for_selector("#job-form[data-ready=true]")
    options = page.eval_on_selector_all("#f-solver option", "els => els.map((e) => e.value)")
    assert page.input_value("#f-solver") == ("auto" if "auto" in options else "plada")
