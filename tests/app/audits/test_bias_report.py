"""The bias report's one document and its three renderings: every metric type is explained, disparities and
the four-fifths rule against the reference group, and the CSV and HTML carry the JSON's numbers."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest

from app.audits.bias_report import EXPLANATIONS, document, reference_group, render
from app.audits.metrics import AUDIT_METRICS, MetricSpec, Scored
from app.audits.report import evaluate


@pytest.fixture(scope="module")
def doc():
    rng = np.random.default_rng(0)
    n = 900
    group = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    y = (rng.random(n) < 0.4).astype(np.int64)
    logits = rng.normal(y - 0.6 * (group == 2), 1.0)
    scored = Scored(y, logits, group, ["a", "b", "c"])
    report = evaluate([MetricSpec(type="demographic_parity", threshold=0.05), MetricSpec(type="accuracy"),
                       MetricSpec(type="equalized_odds", threshold=1.0)], scored, n_boot=30)
    return document(subject={"kind": "audit_run", "id": "r1", "name": "nightly"},
                    data={"sha256": "ab" * 32, "n_rows": n}, columns=["race"], report=report)


def test_every_metric_type_is_explained():
    assert set(EXPLANATIONS) == set(AUDIT_METRICS.names())


def test_disparities_and_four_fifths_against_the_largest_group(doc):
    [attribute] = doc["attributes"]
    assert attribute["reference"] == "a" and attribute["name"] == "race"
    rates = next(t for t in attribute["tables"] if t["stat"] == "selection_rate")
    by = {r["group"]: r for r in rates["rows"]}
    for g in "bc":
        assert by[g]["difference"] == pytest.approx(by[g]["value"] - by["a"]["value"])
        assert by[g]["ratio"] == pytest.approx(by[g]["value"] / by["a"]["value"])
        r = by[g]["ratio"]
        assert by[g]["four_fifths"] is (min(r, 1 / r) >= 0.8)
    assert by["c"]["four_fifths"] is False and by["a"]["reference"] and by["a"]["ratio"] == 1.0
    tpr = next(t for t in attribute["tables"] if t["stat"] == "tpr")
    assert all(r["four_fifths"] is None for r in tpr["rows"])  # marked on selection rates only
    assert doc["summary"][0]["passed"] is False and doc["passed"] is False
    assert [e["type"] for e in doc["explanations"]] == ["demographic_parity", "accuracy", "equalized_odds"]
    assert reference_group({"x": 5, "y": 5}) == "x"
    with pytest.raises(ValueError, match="reference: 'z'"):
        reference_group({"x": 5}, "z")


def test_csv_and_html_carry_the_json_numbers(doc):
    assert json.loads(render(doc, "json")[0]) == doc
    rows = list(csv.DictReader(io.StringIO(render(doc, "csv")[0])))
    summary = [r for r in rows if r["section"] == "summary"]
    assert [float(r["value"]) for r in summary] == [s["value"] for s in doc["summary"]]
    groups = [r for r in rows if r["section"] == "group"]
    table_rows = [r for t in doc["attributes"][0]["tables"] for r in t["rows"]]
    assert len(groups) == len(table_rows)
    assert [float(r["ratio"]) for r in groups] == [r["ratio"] for r in table_rows]
    page, media = render(doc, "html")
    assert media == "text/html" and "<script" not in page and "http" not in page.split("<body>")[1]
    assert "@media print" in page and "BELOW 4/5" in page
    values = [float(v) for v in re.findall(r'data-value="([^"]+)"', page)]
    expected = [s["value"] for s in doc["summary"]] + [x for r in table_rows
                                                       for x in (r["value"], r["difference"], r["ratio"])]
    assert values == pytest.approx([v for v in expected if v is not None], rel=1e-12)


def test_a_job_report_is_computed_in_the_api_without_torch_sklearn_or_scipy_stats():
    """The job report runs in the API process, which loads none of them (tests/solvers/catalog/test_catalog.py); its rate
    gaps' Clopper–Pearson intervals (solvers.fairness.intervals) load scipy.special alone, not scipy.stats."""
    from tests.support.imports import imported_after

    result = imported_after(
        "import numpy as np, pandas as pd\n"
        "import app.main\n"
        "from app.audits.bias_report import document, render\n"
        "from app.audits.report import evaluate\n"
        "from app.api.routes.reports import JOB_PREDICTIONS, job_metrics\n"
        "rng = np.random.default_rng(0)\n"
        "frame = pd.DataFrame({'row': range(300), 'group': rng.choice(['F', 'M'], 300),\n"
        "                      'label': rng.integers(0, 2, 300), 'score': rng.random(300)})\n"
        "spec = {'constraints': [{'type': 'demographic_parity', 'tolerance': 0.05}]}\n"
        "report = evaluate(job_metrics(spec), JOB_PREDICTIONS.score(frame), n_boot=20)\n"
        "doc = document(subject={'kind': 'job', 'id': 'j', 'name': 'job j'}, data={'sha256': 'x', 'n_rows': 300},\n"
        "               columns=['sex'], report=report)\n"
        "render(doc, 'html')\n"
        "print(doc['thresholds'])\n"
        "print(sorted(m for m in ('scipy.stats', 'scipy.special') if m in sys.modules))")
    assert result["heavy"] == ["scipy"]
    assert result["printed"][1] == "['scipy.special']"
    assert result["printed"][0] == "[{'key': 'demographic_parity', 'direction': 'max', 'threshold': 0.05}]"
