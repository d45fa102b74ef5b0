"""The bias report in headless Chromium: a job's report saved to disk renders offline with every section, its
numbers are the JSON's, and it prints to PDF; the dashboard's audit form audits a prediction log, and its run's
report opens from the audit page."""

from __future__ import annotations

import re

import pytest

from tests.support.browser import sign_in

pytestmark = pytest.mark.integration
SECTIONS = ("#report-header", "#summary", "#summary-table", "section.attribute", "table.group-table",
            "#explanations section.metric")


def cells(page) -> list[str]:
    return page.eval_on_selector_all("td.num[data-value]", "els => els.map(e => e.dataset.value)")


def expected_values(doc: dict) -> list:
    values = [s["value"] for s in doc["summary"]]
    for attribute in doc["attributes"]:
        for table in attribute["tables"]:
            for row in table["rows"]:
                values += [row["value"], row["difference"], row["ratio"]]
    return values


def test_job_report_renders_offline_with_every_section_and_the_json_numbers(web_stack, owner_key, succeeded_job,
                                                                            page, tmp_path):
    requests: list[str] = []
    page.context.route("http*://**/*", lambda route: (requests.append(route.request.url), route.abort()))
    with web_stack.client(owner_key) as client:
        url = f"/api/v1/jobs/{succeeded_job['id']}/report"
        html = client.get(url)
        doc = client.get(url, params={"format": "json"}).json()
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    saved = tmp_path / "report.html"
    saved.write_bytes(html.content)
    page.goto(saved.as_uri())
    for selector in SECTIONS:
        assert page.locator(selector).count() >= 1, selector
    assert page.inner_text("#data-sha256") == doc["data"]["sha256"]
    assert page.inner_text(".reference-group") == doc["attributes"][0]["reference"]
    assert page.locator("#explanations section.metric").count() == len(doc["summary"])
    shown = cells(page)
    expected = expected_values(doc)
    assert len(shown) == len(expected)
    assert [None if v == "" else float(v) for v in shown] == pytest.approx(expected, rel=1e-12)
    texts = page.eval_on_selector_all("td.num[data-value]", "els => els.map(e => e.textContent)")
    assert texts == ["—" if v is None else f"{v:.4f}" for v in expected]
    dp = page.locator('#summary-table tr[data-metric="demographic_parity"]')
    assert ("pass" if doc["summary"][2]["passed"] else "FAIL") in dp.inner_text()
    page.emulate_media(media="print")
    assert page.pdf(format="A4")[:5] == b"%PDF-"
    assert requests == []  # self-contained: nothing fetched


def test_audit_form_audits_a_prediction_log_and_links_its_report(web_stack, owner_key, dataset, page, tmp_path):
    sign_in(page, web_stack, owner_key, "/audits/new")
    page.wait_for_selector("#audit-form[data-ready=true]")
    page.check("#a-kind-log")
    assert page.is_hidden("#job-field") and page.is_visible("#log-fields")
    page.select_option("#a-dataset", dataset["id"])
    page.fill("#a-name", "log audit")
    page.fill("#p-output", "hours-per-week")  # a raw score the table already holds
    page.select_option("#p-output-kind", "raw")
    page.fill("#p-threshold", "40")
    page.fill("#p-sensitive", "sex")
    page.click("#add-metric")
    page.select_option(".metric >> nth=1 >> .m-type", "accuracy")
    page.click("#submit-audit")
    error = page.locator('.field[data-loc="predictions.label_column"] .field-error')
    error.wait_for()
    assert "accuracy" in error.inner_text()
    page.screenshot(path=str(tmp_path / "log-form-error.png"), full_page=True)

    page.fill("#p-label", "income")
    page.fill("#p-positive", ">50K")
    page.click("#submit-audit")
    page.wait_for_url(re.compile(r"/audits/[0-9a-f]{32}$"))
    assert "prediction log" in page.inner_text("#audit")
    page.click("#run-audit")
    page.wait_for_selector("#report-table", timeout=60_000)
    assert page.locator('#report-table tr.metric-row[data-key="accuracy"]').count() == 1
    assert "none pinned" in page.inner_text("#baseline-run")
    run_id = page.get_attribute("#pin-baseline", "data-run-id")
    page.click("#pin-baseline")
    page.wait_for_selector("#pin-baseline", state="detached")  # reloaded: this run is the baseline
    assert run_id[:8] in page.inner_text("#baseline-run")
    href = page.get_attribute("#bias-report", "href")
    page.goto(web_stack.url + href)
    for selector in SECTIONS:
        assert page.locator(selector).count() >= 1, selector
    assert page.inner_text(".reference-group") == "Male"
    page.goto(web_stack.url + "/audits")  # the list names a log audit's output column (it had no job or model)
    assert "prediction log" in page.locator("#audits-table tr", has_text="log audit").inner_text()


def test_the_job_page_and_the_job_report_give_one_interval_for_the_test_gap(web_stack, owner_key, succeeded_job,
                                                                            page):
    """Issue 30 item 6: the job page (Clopper–Pearson, the job's fairness report) and the bias report (a bootstrap
    of the same predictions) gave different 95 % intervals for the same test DP."""
    from app.api.dashboard.pages import fmt_num

    [entry] = succeeded_job["result"]["fairness"]
    low, high = entry["test"]["ci"]
    with web_stack.client(owner_key) as client:
        doc = client.get(f"/api/v1/jobs/{succeeded_job['id']}/report", params={"format": "json"}).json()
        html = client.get(f"/api/v1/jobs/{succeeded_job['id']}/report").text
    [dp] = [s for s in doc["summary"] if s["key"] == "demographic_parity"]
    assert dp["value"] == pytest.approx(entry["test"]["value"], abs=1e-12) and dp["ci"] == [low, high]
    assert f'data-low="{low}" data-high="{high}"' in html
    sign_in(page, web_stack, owner_key, f"/jobs/{succeeded_job['id']}")
    shown = page.inner_text('#fairness-table tr[data-constraint="demographic_parity"] td[data-split="test"]')
    assert f"[{fmt_num(low)}, {fmt_num(high)}]" in shown
