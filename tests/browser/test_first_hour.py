"""Issue 30 in a real headless Chromium against a real stack: what a new user meets in the first hour — the API
documentation offline, the favicon, the default job, live charts, raw files and the audit form."""

from __future__ import annotations

import re

import pytest

from tests.support.browser import sign_in
from bench.common.datagen import planted_table
from bench.common.jobs import job_spec, upload

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def owner_key(web_stack):
    return web_stack.new_key("browser-first-hour")


def offline(page, base_url: str) -> list[str]:
    """Refuse every request that leaves the stack (as a machine without internet would); return their URLs."""
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith(base_url):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    return refused


def test_api_docs_render_offline_with_a_favicon(web_stack, page):
    refused = offline(page, web_stack.url)
    page.goto(web_stack.url + "/docs")
    page.locator(".swagger-ui .opblock").first.wait_for()  # Swagger UI drew the operations
    assert page.locator(".swagger-ui .opblock").count() > 20
    assert "FairSolve" in page.inner_text(".swagger-ui .info")
    assert refused == []
    icon = page.request.get(web_stack.url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"].startswith("image/svg+xml")


def test_dashboard_pages_name_their_favicon(web_stack, owner_key, page):
    sign_in(page, web_stack, owner_key, "/datasets")
    href = page.get_attribute("link[rel=icon]", "href")
    assert page.request.get(web_stack.url + href).status == 200


def test_a_headerless_file_keeps_its_first_row_and_is_renamed_in_one_click(web_stack, owner_key, page, tmp_path):
    frame = planted_table(300, seed=5)
    raw = tmp_path / "raw-adult.csv"
    frame.to_csv(raw, index=False, header=False)
    sign_in(page, web_stack, owner_key, "/datasets")
    page.fill("#upload-name", "raw-upload")
    page.set_input_files("#file-input", str(raw))
    page.wait_for_url(re.compile(r"/datasets/[0-9a-f]{32}$"))  # a warning: the dataset page shows it
    warning = page.locator('#read-options .message.warning[data-field="header"]')
    assert "read as the first data row" in warning.inner_text()
    assert "300 rows" in page.inner_text(".meta")  # the first data row was not eaten
    assert page.input_value("#rename-columns").startswith("column_1, column_2")
    page.fill("#rename-columns", ", ".join(frame.columns))
    page.click("#rename-submit")
    page.locator("#rename-form").wait_for(state="detached")  # the page reloads without the warning and the form
    assert page.locator("#read-options .message.warning").count() == 0
    options = page.locator("#groups-form select[name=sensitive] option").all_inner_texts()
    assert options == list(frame.columns)


@pytest.fixture(scope="module")
def planted(web_stack, owner_key):
    with web_stack.client(owner_key) as client:
        return upload(client, planted_table(600, seed=1), name="planted-first-hour")


def test_the_trajectory_chart_follows_a_running_job_without_a_reload(web_stack, owner_key, planted, page, tmp_path):
    """The page opens before the job has a trajectory; its chart appears and grows while the job runs."""
    with web_stack.client(owner_key) as client:
        spec = job_spec(planted["id"], solver={"name": "plada", "params": {"eta": 0.05}}, max_iterations=1_000_000,
                        time_limit_s=120)
        job = client.post("/api/v1/jobs", json=spec).json()
        try:
            sign_in(page, web_stack, owner_key, f"/jobs/{job['id']}")
            page.evaluate("window.__sameDocument = true")
            chart = page.locator("#chart-trajectory")
            page.wait_for_function("document.querySelector('#chart-trajectory').dataset.state === 'rendered'",
                                   timeout=90_000)
            first = chart.get_attribute("data-cursor")
            page.wait_for_function(f"document.querySelector('#chart-trajectory').dataset.cursor !== {first!r}",
                                   timeout=60_000)  # redrawn with more points
            assert page.evaluate("window.__sameDocument === true")  # no reload
            assert page.inner_text("#job-status") in ("running", "queued", "waiting")
            plot, legend = _boxes(page, "#chart-trajectory")
            assert all(not _overlap(legend, box) for box in plot)  # the legend does not sit on a panel
            assert min(b["width"] for b in plot) > 300  # the panels are not squeezed beside the legend
            shot = tmp_path / "live.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            client.post(f"/api/v1/jobs/{job['id']}/cancel")
            web_stack.wait_job(client, job["id"], {"cancelled", "succeeded", "failed"}, timeout=120)


def _boxes(page, selector: str) -> tuple[list[dict], dict]:
    plot = page.eval_on_selector_all(f"{selector} .nsewdrag", "els => els.map(e => e.getBoundingClientRect().toJSON())")
    legend = page.eval_on_selector(f"{selector} .legend .bg", "e => e.getBoundingClientRect().toJSON()")
    return plot, legend


def _overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and \
        a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def test_the_audit_form_audits_an_uploaded_onnx_model(web_stack, owner_key, planted, page):
    with web_stack.client(owner_key) as client:
        job = client.post("/api/v1/jobs", json=job_spec(planted["id"], max_iterations=30)).json()
        web_stack.wait_job(client, job["id"], {"succeeded"})
        exported = client.get(f"/api/v1/jobs/{job['id']}/model.onnx")
        assert exported.status_code == 200, exported.text
        model = client.post("/api/v1/models", files={"file": ("m.onnx", exported.content)},
                            data={"name": "portable-onnx", "dataset_id": planted["id"]})
        assert model.status_code == 201, model.text
    sign_in(page, web_stack, owner_key, "/audits/new")
    page.wait_for_selector("#audit-form[data-ready=true]")
    page.check("#a-kind-model")
    assert page.is_hidden("#job-field") and page.is_visible("#model-field")
    page.select_option("#a-model", model.json()["id"])
    page.select_option("#a-dataset", planted["id"])
    page.click("#submit-audit")
    page.wait_for_url(re.compile(r"/audits/[0-9a-f]{32}$"))
    with web_stack.client(owner_key) as client:
        audit = client.get(f"/api/v1/audits/{page.url.rsplit('/', 1)[1]}").json()
    assert audit["model_artifact_id"] == model.json()["id"] and audit["job_id"] is None


def test_the_default_job_form_never_offers_the_target_and_ticks_the_users_group(web_stack, owner_key, page):
    """Before: ``race`` (5 groups) was ticked because it came first, and the target was offered as a sensitive
    column."""
    frame = planted_table(400, seed=6)  # race (4 groups) comes before sex (2)
    with web_stack.client(owner_key) as client:
        dataset = upload(client, frame, name="default-form")
    sign_in(page, web_stack, owner_key, f"/jobs/new?dataset_id={dataset['id']}")
    page.wait_for_selector("#job-form[data-ready=true]")
    assert page.input_value("#f-target") == "income"
    # the rarer class, whatever order the stored summary keeps (PostgreSQL's JSONB sorts keys by length first)
    page.wait_for_function("document.querySelector('#f-positive').value !== ''")
    assert page.input_value("#f-positive") == frame["income"].value_counts().idxmin()
    offered = page.eval_on_selector_all("#f-sensitive input", "els => els.map(e => e.value)")
    ticked = page.eval_on_selector_all("#f-sensitive input:checked", "els => els.map(e => e.value)")
    assert "income" not in offered and ticked == ["sex"]  # the usual attribute with the fewest groups
    page.select_option("#f-target", "sex")  # another target: it leaves the sensitive list, the list is rebuilt
    assert "sex" not in page.eval_on_selector_all("#f-sensitive input", "els => els.map(e => e.value)")
    page.select_option("#f-target", "income")
    page.check('#f-sensitive input[value="race"]')
    page.uncheck('#f-sensitive input[value="sex"]')
    page.reload()  # the user's choice of group is remembered
    page.wait_for_selector("#job-form[data-ready=true]")
    assert page.eval_on_selector_all("#f-sensitive input:checked", "els => els.map(e => e.value)") == ["race"]
