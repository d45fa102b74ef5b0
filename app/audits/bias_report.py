r"""The bias report people can hand on: one document, rendered as JSON, CSV and a self-contained HTML page.

:func:`document` builds the one source of truth from an audit report (:func:`app.audits.report.evaluate`'s
``results`` of an audit run, or of a job's test predictions); :func:`render` writes it as

* ``json``: the document itself;
* ``csv``: one row per number (section, metric, statistic, group, value, CI, difference, ratio, four-fifths,
  threshold, verdict), spreadsheet formulas neutralised;
* ``html``: ``templates/bias_report.html``: inline CSS and no script or external fetch, a print stylesheet
  (A4, tables kept whole, no colours needed) so the browser's "print to PDF" gives a clean file. Every number
  cell carries its exact value in ``data-value`` and shows it with 4 decimals.

Shape (what auditors expect): the header (date, data hash and rows, the attribute and its columns, the
reference group, the thresholds), the pass / fail summary per metric, per attribute and per-group statistic a
table of the groups' values with 95% CIs and their disparities to the reference group as differences
(v_g − v_ref) and ratios (v_g / v_ref), and per metric a "what it is / when it matters" paragraph.

**Attribute.** An audit's groups are the observed values of its sensitive column(s) (several columns: their
intersections, as in training), so the report has one attribute: the sensitive columns together.

**Reference group**: the largest group (ties: the first by name), unless the caller names one.

**Four-fifths rule** (the US EEOC's adverse-impact rule of thumb): on the selection rates, a group whose rate
ratio to the reference min(r, 1/r) is below 0.8 is marked (either side is disadvantaged); other statistics show
their ratios unmarked.
"""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from app.render import TEMPLATES_DIR
from app.sweeps.report import safe_cell

FOUR_FIFTHS = 0.8
FOUR_FIFTHS_STATS = ("selection_rate",)
TEMPLATES = Environment(loader=FileSystemLoader(TEMPLATES_DIR),
                        autoescape=select_autoescape(["html"]))

EXPLANATIONS: dict[str, tuple[str, str]] = {
    "accuracy": ("The share of decisions that match the outcome.",
                 "A floor on quality: a fair model that is rarely right helps no group. Compare it per group: a "
                 "model can be accurate overall and poor for a small group."),
    "balanced_accuracy": ("The mean of the true positive rate and the true negative rate.",
                          "When positives are rare, where plain accuracy rewards predicting the majority class."),
    "roc_auc": ("The probability that a random positive scores above a random negative (ties count ½).",
                "When the score is used for ranking or at several thresholds; per group it shows whom the score "
                "separates worse."),
    "log_loss": ("The mean cross-entropy of the predicted probabilities.",
                 "When the probabilities themselves are used (pricing, risk scores): it punishes confident errors."),
    "demographic_parity": ("The largest difference between groups in the share of positive decisions "
                           "(selection rate).",
                           "When the decision grants or withholds an opportunity regardless of the outcome (hiring "
                           "short-lists, ads, loans offered); the four-fifths rule reads the same rates."),
    "equal_opportunity": ("The largest difference between groups in the true positive rate: of those who "
                          "deserve a positive decision, the share who get one.",
                          "When missing a deserving person is the harm (credit to good payers, admission of "
                          "qualified applicants) and the outcome labels are trusted."),
    "equalized_odds": ("The larger of the between-group differences in true positive rate and in false positive "
                       "rate.",
                       "When both errors harm: wrongly flagged and wrongly cleared (risk assessment, fraud, "
                       "medical triage)."),
    "loss_gap": ("How far the worst group's mean loss lies above the overall mean loss.",
                 "When the model's quality of fit, not only its decisions, must be comparable across groups."),
    "minority_rate": ("The minority group's share of all positive decisions.",
                      "When a quota or a floor on representation applies (a lower bound)."),
    "partial_statistical_parity": ("The largest Kolmogorov-Smirnov distance between groups' score distributions "
                                   "within a percentile interval of each group.",
                                   "When only part of the ranking is acted on (the top 20% are interviewed) and the "
                                   "scores there must be comparable."),
    "partial_demographic_parity": ("The largest difference between groups in the share of scores above the "
                                   "threshold, among the scores in the interval.",
                                   "When a threshold decides within a band of the ranking."),
    "partial_group_auc": ("How far, within the interval, a random member of one group outranks one of another "
                          "from a coin flip.",
                          "When rankings are shown or shortlisted and no threshold is fixed."),
    "partial_equal_opportunity": ("Partial demographic parity among the positives only.",
                                  "When deserving people within the acted-on band must be treated alike."),
    "partial_equalized_odds": ("The larger of the partial demographic parity among positives and among "
                               "negatives.",
                               "When both kinds of error within the acted-on band matter."),
    "auc_parity": ("The difference in AUC between the protected group and the rest, for the chosen AUC "
                   "variant (within-group, or across groups).",
                   "When a score ranks people and its ranking quality must not depend on the group."),
    "score_ks": ("The largest Kolmogorov-Smirnov distance, over groups, between this run's scores and the "
                 "reference run's.",
                 "When the population or the model changes over time: a shift in one group's scores precedes "
                 "a change in its decisions."),
    "score_psi": ("The largest population stability index, over groups, of this run's scores in ten bins cut at "
                  "the reference run's deciles (below 0.1 stable, above 0.25 shifted).",
                  "When monitoring a deployed model: the industry's usual trigger for re-validation."),
}


def _ratio(value: float | None, ref: float | None) -> float | None:
    return None if value is None or ref is None or ref == 0 else value / ref


def _four_fifths(stat: str, ratio: float | None) -> bool | None:
    """True when the ratio keeps the rule, False when it breaks it, None when not applicable."""
    if stat not in FOUR_FIFTHS_STATS or ratio is None:
        return None
    return min(ratio, 1 / ratio) >= FOUR_FIFTHS if ratio > 0 else False


def reference_group(group_sizes: dict[str, int], requested: str | None = None) -> str:
    """``requested`` when it is a group, else the largest group (ties: the first by name)."""
    if requested is not None:
        if requested not in group_sizes:
            raise ValueError(f"reference: {requested!r} is not a group of this report; groups: "
                             + ", ".join(map(repr, group_sizes)))
        return requested
    return min(group_sizes, key=lambda g: (-group_sizes[g], g))


def _table(result: dict[str, Any], stat: str, groups: dict[str, Any], sizes: dict[str, int],
           reference: str) -> dict[str, Any]:
    ref = (groups.get(reference) or {}).get("value")
    rows = []
    for group, cell in groups.items():
        value = cell.get("value")
        ratio = _ratio(value, ref)
        rows.append({"group": group, "n": sizes.get(group), "value": value, "ci": cell.get("ci"),
                     "difference": None if value is None or ref is None else value - ref, "ratio": ratio,
                     "four_fifths": _four_fifths(stat, ratio), "reference": group == reference})
    return {"metric": result["key"], "type": result["type"], "stat": stat, "rows": rows}


def document(*, subject: dict[str, Any], data: dict[str, Any], columns: list[str], report: dict[str, Any],
             reference: str | None = None, generated_at: datetime | None = None) -> dict[str, Any]:
    """The report's one source of truth (see the module docstring). ``report``: ``results``, ``group_sizes``,
    ``passed``; ``data``: ``sha256``, ``n_rows`` (and what else the header should say)."""
    sizes = report["group_sizes"]
    ref = reference_group(sizes, reference)
    results = report["results"]
    tables = [_table(r, stat, groups, sizes, ref) for r in results for stat, groups in r["by_group"].items()]
    return {
        "title": f"Bias report — {subject['name']}",
        "subject": subject,
        "generated_at": (generated_at or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        "data": data,
        "attributes": [{"name": " × ".join(columns), "columns": columns, "reference": ref,
                        "groups": [{"group": g, "n": n} for g, n in sizes.items()], "tables": tables}],
        "thresholds": [{"key": r["key"], "direction": r["direction"], "threshold": r["threshold"]}
                       for r in results if r["threshold"] is not None],
        "summary": [{"key": r["key"], "type": r["type"], "value": r["value"], "ci": r["ci"],
                     "direction": r["direction"], "threshold": r["threshold"], "passed": r["passed"]}
                    for r in results],
        "passed": report["passed"],
        "four_fifths": {"stats": list(FOUR_FIFTHS_STATS), "ratio": FOUR_FIFTHS},
        "explanations": [{"type": t, "what": EXPLANATIONS[t][0], "when": EXPLANATIONS[t][1]}
                         for t in dict.fromkeys(r["type"] for r in results) if t in EXPLANATIONS],
    }


CSV_FIELDS = ("section", "attribute", "metric", "stat", "group", "n", "value", "ci_low", "ci_high", "difference",
              "ratio", "four_fifths", "threshold", "direction", "passed")


def csv_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every number of the document, one row each."""
    rows = [{"section": "summary", "metric": s["key"], "value": s["value"], "ci_low": (s["ci"] or [None])[0],
             "ci_high": (s["ci"] or [None, None])[1], "threshold": s["threshold"], "direction": s["direction"],
             "passed": s["passed"]} for s in doc["summary"]]
    for attribute in doc["attributes"]:
        rows += [{"section": "group", "attribute": attribute["name"], "metric": t["metric"], "stat": t["stat"],
                  "group": r["group"], "n": r["n"], "value": r["value"], "ci_low": (r["ci"] or [None])[0],
                  "ci_high": (r["ci"] or [None, None])[1], "difference": r["difference"], "ratio": r["ratio"],
                  "four_fifths": r["four_fifths"]}
                 for t in attribute["tables"] for r in t["rows"]]
    return rows


def render(doc: dict[str, Any], fmt: str) -> tuple[str, str]:
    """``(body, media type)`` of the document as ``json``, ``csv`` or ``html``."""
    if fmt == "json":
        return json.dumps(doc), "application/json"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows({k: safe_cell(v) for k, v in row.items()} for row in csv_rows(doc))
        return buf.getvalue(), "text/csv"
    return TEMPLATES.get_template("bias_report.html").render(doc=doc), "text/html"
