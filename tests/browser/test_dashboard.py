"""The dashboard in a real headless Chromium against a real stack: sign-in, upload, the job form,
live status, charts, cancel, validation messages, and the cross-tenant 404. Screenshots go to each
test's own directory (pytest's ``tmp_path``)."""

from __future__ import annotations

import re

import pytest

from bench.common.datagen import compas_like_table, planted_table
from bench.common.jobs import job_spec, upload
from tests.support.browser import shot, sign_in

pytestmark = pytest.mark.integration

ACTIVE = ("queued", "waiting", "running")


def assert_hidden_from(page, stack, key: str, paths: list[str]) -> None:
    """Another owner, signed in in a separate context, gets the 404 page for each of ``paths``."""
    context = page.context.browser.new_context()
    try:
        other = context.new_page()
        sign_in(other, stack, key, "/")
        for path in paths:
            response = other.goto(stack.url + path)
            assert response.status == 404, path
            assert "not found" in other.inner_text(".error-page")
            assert other.locator("table, .chart").count() == 0
    finally:
        context.close()


def test_sign_in_upload_and_dataset_page(web_stack, owner_key, page, browser_context, tmp_path):
    page.goto(web_stack.url + "/datasets")
    page.wait_for_url(re.compile(r"/signin\?next=%2Fdatasets$"))
    page.fill("#api_key", "fsk_not_a_key")
    page.click("#signin-form button[type=submit]")
    assert "not valid" in page.inner_text("#signin-error")
    shot(page, tmp_path, "signin-error")

    page.fill("#api_key", owner_key)
    page.click("#signin-form button[type=submit]")
    page.wait_for_url(web_stack.url + "/datasets")
    cookie = next(c for c in browser_context.cookies() if c["name"] == "fairsolve_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["expires"] == -1  # session cookie
    assert not cookie["secure"]  # plain http here; https requests get a Secure cookie
    assert page.evaluate("document.cookie") == ""  # scripts cannot read the session id

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    page.set_input_files("#file-input", str(empty))
    failure = page.locator("#messages .message.error")
    failure.wait_for()
    assert failure.inner_text().startswith("Upload failed: file:")  # the API's reason, no stack trace
    shot(page, tmp_path, "upload-error")

    csv = tmp_path / "adult-mini.csv"
    planted_table(300, seed=2).to_csv(csv, index=False)
    page.fill("#upload-name", "adult-mini")
    page.set_input_files("#file-input", str(csv))
    row = page.locator("#datasets-table tr", has_text="adult-mini")
    row.wait_for()
    assert "300" in row.inner_text()
    shot(page, tmp_path, "datasets")

    row.locator("a", has_text="adult-mini").click()
    page.wait_for_url(re.compile(r"/datasets/[0-9a-f]{32}$"))
    page.select_option("#groups-form select[name=sensitive]", "sex")
    page.wait_for_url(re.compile(r"sensitive=sex"))
    groups = page.locator("#groups-table tbody tr")
    assert sorted(groups.nth(i).locator("td").first.inner_text() for i in range(groups.count())) == ["Female", "Male"]
    assert "income" in page.inner_text("#groups-table thead")
    assert page.locator("#schema-table tbody tr").count() == 6
    shot(page, tmp_path, "dataset")

    page.click(".signout button")
    page.wait_for_url(re.compile(r"/signin$"))
    assert not [c for c in browser_context.cookies() if c["name"] == "fairsolve_session"]
    page.goto(web_stack.url + "/jobs")
    page.wait_for_url(re.compile(r"/signin\?next="))


def fill_job_form(page, dataset_id: str, max_iterations: int, tolerance: str = "0.05") -> None:
    page.wait_for_selector("#job-form[data-ready=true]")
    page.select_option("#f-dataset", dataset_id)
    page.select_option("#f-target", "income")
    page.fill("#f-positive", ">50K")
    for box in page.locator("#f-sensitive input").all():
        box.set_checked(box.get_attribute("value") == "sex")
    page.select_option("#f-solver", "plada")
    assert page.input_value('[data-loc="solver.params.alpha"] input') == "10"  # defaults filled in
    assert "Penalty parameter" in page.inner_text('[data-loc="solver.params.alpha"] .help')
    page.select_option(".constraint .c-type", "demographic_parity")
    page.fill(".constraint .c-tolerance", tolerance)
    page.fill("#f-max-iterations", str(max_iterations))
    page.select_option("#f-device", "cpu")


def test_job_form_live_status_and_charts(web_stack, owner_key, dataset, page, tmp_path):
    sign_in(page, web_stack, owner_key, f"/jobs/new?dataset_id={dataset['id']}")
    fill_job_form(page, dataset["id"], max_iterations=150)
    shot(page, tmp_path, "job-form")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    job_id = page.url.rsplit("/", 1)[1]

    page.goto(web_stack.url + "/jobs")
    status = page.locator(f'tr[data-job-id="{job_id}"] [data-field=status]')
    status.wait_for()
    page.wait_for_function(  # the list polls the API while a job is active
        f'document.querySelector(\'tr[data-job-id="{job_id}"] [data-field=status]\').textContent === "succeeded"',
        timeout=60_000)
    style = page.locator(f'tr[data-job-id="{job_id}"] [data-field=progress]').get_attribute("style")
    # the server renders "width: 100.0%"; the poll sets it through the CSSOM, which reads back "width: 100%;"
    assert float(re.search(r"width:\s*([\d.]+)%", style).group(1)) == 100.0, style
    shot(page, tmp_path, "jobs")

    page.click(f'tr[data-job-id="{job_id}"] a')
    page.wait_for_url(web_stack.url + f"/jobs/{job_id}")
    for kind in ("trajectory", "scores", "roc", "ccdf"):
        chart = page.locator(f"#chart-{kind}")
        page.wait_for_selector(f"#chart-{kind}[data-state=rendered]", timeout=30_000)
        assert chart.locator(".main-svg").count() > 0
        traces = page.evaluate(f"document.getElementById('chart-{kind}').data.length")
        assert traces > 0, kind
        assert chart.locator(".scatterlayer .trace, .barlayer .trace").count() > 0, kind
    groups = page.locator('table.metrics-groups[data-split=test] tbody tr')
    assert groups.count() == 2
    assert {a.get_attribute("data-artifact") for a in page.locator("a[data-artifact]").all()} >= {"weights",
                                                                                                  "predictions"}
    spec = page.inner_text("#job-spec")
    assert '"max_iterations": 150' in spec and '"positive_label": ">50K"' in spec
    assert page.locator("#cancel-job").count() == 0
    shot(page, tmp_path, "job")


def test_cancel_running_job_from_its_page(web_stack, owner_key, dataset, page, tmp_path):
    with web_stack.client(owner_key) as client:
        resp = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=5_000_000, time_limit_s=600))
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
    sign_in(page, web_stack, owner_key, f"/jobs/{job_id}")
    page.wait_for_function("document.getElementById('job-status').textContent === 'running'", timeout=60_000)
    page.wait_for_function("parseInt(document.getElementById('job-iterations').textContent) > 0", timeout=30_000)
    page.wait_for_selector("#chart-scores[data-state=empty]")  # a chart without data says so
    assert "no predictions" in page.inner_text("#chart-scores")
    shot(page, tmp_path, "job-running")
    with page.expect_navigation(timeout=30_000):  # the page reloads once the job has stopped
        page.click("#cancel-job")
    assert page.inner_text("#job-status") == "cancelled"
    page.wait_for_selector("#chart-trajectory[data-state]")
    assert page.locator("#cancel-job").count() == 0
    with web_stack.client(owner_key) as client:
        assert client.get(f"/api/v1/jobs/{job_id}").json()["status"] == "cancelled"
    shot(page, tmp_path, "job-cancelled")


def test_bad_tolerance_is_shown_next_to_its_field(web_stack, owner_key, dataset, page, tmp_path):
    sign_in(page, web_stack, owner_key, "/jobs/new")
    fill_job_form(page, dataset["id"], max_iterations=10, tolerance="-0.5")
    page.click("#submit-job")
    error = page.locator('.field[data-loc="constraints.0.tolerance"] .field-error')
    error.wait_for()
    assert "greater than or equal to 0" in error.inner_text()
    assert page.url.endswith("/jobs/new")
    assert page.locator(".field-error").count() == 1
    shot(page, tmp_path, "validation-error")

    page.fill(".constraint .c-tolerance", "0.05")  # a bad solver param lands next to that param
    page.fill('[data-loc="solver.params.alpha"] input', "-3")
    page.click("#submit-job")
    param_error = page.locator('.field[data-loc="solver.params.alpha"] .field-error')
    param_error.wait_for()
    assert "greater than 0" in param_error.inner_text()
    assert page.locator(".field-error").count() == 1


def test_a_many_valued_target_needs_the_binarize_box(web_stack, owner_key, dataset, page, tmp_path):
    """Issue 30 item 3: the form's 422 names positive_label with the value counts; ticking binarize submits."""
    sign_in(page, web_stack, owner_key, "/jobs/new")
    fill_job_form(page, dataset["id"], max_iterations=10)
    page.select_option("#f-target", "age")
    page.wait_for_function("document.getElementById('f-features').dataset.state !== 'loading'")  # onTarget ran
    page.fill("#f-positive", "40")
    page.click("#submit-job")
    error = page.locator('.field[data-loc="positive_label"] .field-error')
    error.wait_for()
    assert "distinct values, not 2 (value counts: " in error.inner_text() and "binarize" in error.inner_text()
    page.check("#f-binarize")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    assert '"binarize": true' in page.inner_text("#job-spec")


def test_another_owners_pages_are_404(web_stack, owner_key, other_key, dataset, page, tmp_path):
    with web_stack.client(owner_key) as client:
        resp = client.post("/api/v1/jobs", json=job_spec(dataset["id"], max_iterations=5))
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
    sign_in(page, web_stack, other_key, "/jobs")
    assert page.locator(f'tr[data-job-id="{job_id}"]').count() == 0
    assert page.locator("#jobs-table tr[data-job-id]").count() == 0  # nothing of alice's is listed
    page.goto(web_stack.url + "/datasets")
    assert page.locator("#datasets-table tr[data-dataset-id]").count() == 0
    response = page.goto(web_stack.url + f"/jobs/{job_id}")
    assert response.status == 404 and "not found" in page.inner_text(".error-page")
    shot(page, tmp_path, "other-owner-404")
    assert_hidden_from(page, web_stack, other_key, [f"/jobs/{job_id}", f"/datasets/{dataset['id']}"])


def test_audit_form_run_history_and_alert(web_stack, owner_key, other_key, dataset, succeeded_job, page, tmp_path):
    sign_in(page, web_stack, owner_key, f"/audits/new?job_id={succeeded_job['id']}")
    page.wait_for_selector("#audit-form[data-ready=true]")
    assert page.input_value("#a-dataset") == dataset["id"]  # the job's dataset by default
    page.fill("#a-name", "nightly fairness")
    page.select_option(".metric .m-type", "demographic_parity")
    page.fill(".metric .m-threshold", "0.0001")  # set to fail
    page.click("#add-metric")
    page.select_option(".metric >> nth=1 >> .m-type", "accuracy")
    page.fill(".metric >> nth=1 >> .m-threshold", "0.1")
    page.fill("#a-schedule", "every minute")
    page.click("#submit-audit")
    error = page.locator('.field[data-loc="schedule"] .field-error')
    error.wait_for()
    assert page.locator(".field-error").count() == 1
    shot(page, tmp_path, "audit-form-error")

    page.fill("#a-schedule", "0 3 * * *")
    page.click("#submit-audit")
    page.wait_for_url(re.compile(r"/audits/[0-9a-f]{32}$"))
    assert "No finished run yet" in page.inner_text("#chart-history-empty")
    page.click("#run-audit")
    page.wait_for_selector("#report-table", timeout=60_000)  # the page reloads when the run has finished
    page.wait_for_selector("#chart-history[data-state=rendered]")
    assert page.locator("#chart-history .main-svg").count() > 0
    assert page.evaluate("document.getElementById('chart-history').data.length") >= 2
    assert "BREACH" in page.inner_text('#report-table tr.metric-row[data-key="demographic_parity"]')
    assert "pass" in page.inner_text('#report-table tr.metric-row[data-key="accuracy"]')
    floor = page.inner_text('#report-table tr.metric-row[data-key="demographic_parity"] [data-field=floor]')
    assert floor.endswith(" %") and 0 <= int(floor[:-2]) <= 100   # what the batch can show of DP ≤ 0.0001
    assert page.inner_text('#report-table tr.metric-row[data-key="accuracy"] [data-field=floor]') == "—"
    assert page.locator("#report-table tr.group-row").count() > 0  # per-group statistics with CIs
    assert page.locator("#alerts-table tbody tr[data-alert-id]").count() == 1
    shot(page, tmp_path, "audit")
    assert_hidden_from(page, web_stack, other_key, [page.url.removeprefix(web_stack.url)])

    page.goto(web_stack.url + "/audits")
    row = page.locator("#audits-table tr", has_text="nightly fairness")
    assert "breach" in row.inner_text() and "0 3 * * *" in row.inner_text()
    assert page.locator("#alerts-table tbody tr[data-alert-id]").count() >= 1
    shot(page, tmp_path, "audits")


def test_sweep_page_pareto_click_opens_the_job(web_stack, owner_key, other_key, dataset, page, tmp_path):
    body = {"base": job_spec(dataset["id"], max_iterations=40),
            "grid": {"tolerances": [0.2, 0.02], "solvers": [{"name": "plada", "params": {"eta": 0.5}}],
                     "include_unconstrained": False}}
    with web_stack.client(owner_key) as client:
        resp = client.post("/api/v1/sweeps", json=body)
        assert resp.status_code == 202, resp.text
        sweep_id = resp.json()["id"]
    sign_in(page, web_stack, owner_key, "/sweeps")
    page.click(f'tr[data-sweep-id="{sweep_id}"] a')
    page.wait_for_url(web_stack.url + f"/sweeps/{sweep_id}")
    # the page follows the running sweep and reloads once it has finished
    page.wait_for_selector("#sweep[data-active=false]", timeout=60_000)
    page.wait_for_selector("#chart-pareto[data-state=rendered]")
    assert page.locator("#points-table tbody tr").count() == 2
    assert page.locator("#points-table tbody tr.front").count() >= 1
    ceilings = page.locator("#points-table tbody [data-field=zero-gap]").all_inner_texts()
    assert len(ceilings) == 2 and all(c.startswith("≤ ") and c.endswith(" %") for c in ceilings), ceilings
    shot(page, tmp_path, "sweep")

    with page.expect_download() as download:
        page.click("a[data-report=csv]")
    assert download.value.suggested_filename == f"sweep-{sweep_id}.csv"

    with web_stack.client(owner_key) as client:
        job_ids = {j for p in client.get(f"/api/v1/sweeps/{sweep_id}").json()["points"] for j in p["job_ids"]}
    point = page.locator("#chart-pareto .scatterlayer .point").first
    box = point.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # plotly_click
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    assert page.url.rsplit("/", 1)[1] in job_ids
    assert_hidden_from(page, web_stack, other_key, [f"/sweeps/{sweep_id}"])


EVIL = '<a href="https://evil.example/">Male</a>'


def test_group_values_are_text_in_charts_not_links(web_stack, owner_key, page, tmp_path):
    """Issue 19 #13: a group value spelled as markup drew a link in every Plotly chart. The legend shows the
    value as written, and no chart holds a link."""
    table = planted_table(600, seed=4)
    table["sex"] = table["sex"].replace({"Male": EVIL, "Female": "<b>Female</b>"})
    with web_stack.client(owner_key) as client:
        data = upload(client, table, name="markup-groups")
        resp = client.post("/api/v1/jobs", json=job_spec(data["id"], max_iterations=30))
        assert resp.status_code == 202, resp.text
        job = web_stack.wait_job(client, resp.json()["id"], {"succeeded", "failed"}, timeout=90)
    assert job["status"] == "succeeded", job["error"]
    sign_in(page, web_stack, owner_key, f"/jobs/{job['id']}")
    for kind in ("scores", "roc", "ccdf"):
        page.wait_for_selector(f"#chart-{kind}[data-state=rendered]", timeout=30_000)
        legend = page.locator(f"#chart-{kind} .legend").first.text_content()
        assert EVIL in legend and "<b>Female</b>" in legend, (kind, legend)
        assert page.locator(f"#chart-{kind} svg a").count() == 0, kind
        assert page.locator(f"#chart-{kind} svg text [style*='font-weight: bold'], #chart-{kind} svg b").count() == 0
    shot(page, tmp_path, "markup-groups")
def test_job_form_feature_picker_shows_the_screen(web_stack, owner_key, page, tmp_path):
    with web_stack.client(owner_key) as client:
        compas = upload(client, compas_like_table(800, seed=2), name="compas-like")
    sign_in(page, web_stack, owner_key, f"/jobs/new?dataset_id={compas['id']}")
    page.wait_for_selector("#job-form[data-ready=true]")
    page.select_option("#f-target", "two_year_recid")
    page.fill("#f-positive", "1")
    for box in page.locator("#f-sensitive input").all():
        box.set_checked(box.get_attribute("value") == "race")
    page.locator("#f-positive").dispatch_event("change")
    leak = page.locator('#f-features [data-column=is_recid] .warning[data-reason=near_duplicate]')
    leak.wait_for()
    assert "AUC" in leak.inner_text()
    page.wait_for_selector("#f-features[data-state=ready]")
    for column, reason in (("id", "identifier"), ("dob", "date"), ("c_charge_desc", "free_text"),
                           ("type_of_assessment", "constant")):
        row = page.locator(f"#f-features [data-column={column}]")
        assert not row.locator("input").is_checked() and row.locator(".warning").get_attribute("data-reason") == reason
    assert page.locator("#f-features [data-column=priors_count] input").is_checked()
    assert page.locator("#f-features [data-column=priors_count] .warning").count() == 0
    shot(page, tmp_path, "feature-picker")

    page.locator("#f-features [data-column=age] input").set_checked(False)  # a pick is sent as the features
    page.fill("#f-max-iterations", "10")
    page.select_option("#f-device", "cpu")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    spec = page.inner_text("#job-spec")
    assert '"features": [' in spec and '"priors_count"' in spec and '"is_recid"' not in spec and '"age"' not in spec


def test_upload_without_header_warns_then_reads_with_the_options(web_stack, owner_key, page, tmp_path):
    frame = planted_table(200, seed=3)
    frame["workclass"] = frame["workclass"].fillna("?")
    csv = tmp_path / "noheader.csv"
    frame.to_csv(csv, index=False, header=False)
    sign_in(page, web_stack, owner_key, "/datasets")
    page.fill("#upload-name", "noheader-raw")
    page.set_input_files("#file-input", str(csv))
    page.wait_for_url(re.compile(r"/datasets/[0-9a-f]{32}$"))  # a warned upload opens its page
    warning = page.locator('#read-options .message.warning[data-field=header]')
    assert "looks like data" in warning.inner_text() and "read as the first data row" in warning.inner_text()
    shot(page, tmp_path, "header-warning")

    page.goto(web_stack.url + "/datasets")
    page.click(".read-options summary")
    page.select_option("#upload-header", "false")
    page.fill("#upload-columns", ", ".join(frame.columns))
    page.fill("#upload-name", "noheader-fixed")
    page.set_input_files("#file-input", str(csv))
    row = page.locator("#datasets-table tr", has_text="noheader-fixed")
    row.wait_for()
    assert "200" in row.inner_text()
    row.locator("a", has_text="noheader-fixed").click()
    page.wait_for_url(re.compile(r"/datasets/[0-9a-f]{32}$"))
    assert page.locator("#read-options .message.warning").count() == 0
    assert page.inner_text("#read-options [data-field=header]") == "no"
    assert "?" in page.inner_text("#read-options [data-field=missing_values]")
    workclass = page.locator("#schema-table tbody tr", has_text="workclass")
    assert str(int((frame["workclass"] == "?").sum())) in workclass.inner_text()
