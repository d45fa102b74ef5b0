"""Prediction-log audits: a log of a job's own test predictions audits to the same metric values (and CIs) as
re-scoring the job's model on the same rows; decision-only and label-less logs offer only the metrics they can
give; bad columns are named; ``fairsolve-admin audit run --predictions``. Score drift (KS, PSI per group) against
a reference run's summary: an alert on a planted shift, none on a resample of the same data."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.stats import ks_2samp

from app.audits.drift import Q, compare, summarise
from app.audits.logs import PredictionLog
from app.audits.metrics import AUDIT_METRICS, MetricSpec, Scored
from app.audits.model import AuditModel, ModelError
from app.audits.report import evaluate
from app.cli import main
from solvers import ProblemSpec, run
from solvers.encoding import TableEncoder
from bench.common.datagen import planted_table

SPEC = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
        "solver": {"name": "plada", "params": {"eta": 0.05}}, "max_iterations": 30, "device": "cpu",
        "split": {"test": 0.4, "validation": 0.0, "seed": 0}}
NO_OPTIONS_NEEDED = {"partial_statistical_parity": {"interval": [0, 0.5]},
                     "partial_demographic_parity": {"interval": [0, 0.5]},
                     "partial_group_auc": {"interval": [0, 0.5]},
                     "partial_equal_opportunity": {"interval": [0, 0.5]},
                     "partial_equalized_odds": {"interval": [0, 0.5]}}
ROW_METRICS = [MetricSpec(type=m.name, **NO_OPTIONS_NEEDED.get(m.name, {}))
               for m in AUDIT_METRICS.classes() if m.drift is None]


@pytest.fixture(scope="module")
def job():
    """A tiny job trained in-process: its model, its test rows and the predictions it stored for them."""
    table = planted_table(800)
    spec = ProblemSpec.model_validate(SPEC)
    out = run(table, spec)
    model = AuditModel(spec, TableEncoder.from_dict(out.encoder), out.state_dict, out.groups, "job-1")
    test_rows = table.loc[out.predictions["row"]].reset_index(drop=True)
    log = test_rows[["sex", "income"]].assign(score=out.predictions["score"].to_numpy(),
                                              decision=out.predictions["prediction"].to_numpy())
    return model, test_rows, log


LOG = {"score_column": "score", "label_column": "income", "positive_label": ">50K", "sensitive": ["sex"]}


def test_a_log_of_the_jobs_predictions_audits_like_rescoring_the_model(job):
    model, test_rows, log = job
    by_model = evaluate(ROW_METRICS, model.score(test_rows), n_boot=40)
    by_log = evaluate(ROW_METRICS, PredictionLog(**LOG).score(log), n_boot=40)
    assert len(by_model["results"]) == len(AUDIT_METRICS.names()) - 2  # every metric but the two drift ones
    assert by_log["group_sizes"] == by_model["group_sizes"]
    for a, b in zip(by_model["results"], by_log["results"]):
        assert a["key"] == b["key"]
        assert b["value"] == pytest.approx(a["value"], abs=1e-6), a["key"]
        assert (a["ci"] is None) == (b["ci"] is None) and (a["ci"] is None or
                                                           b["ci"] == pytest.approx(a["ci"], abs=1e-6)), a["key"]
        per_model = {(s, g): v["value"] for s, groups in a["by_group"].items() for g, v in groups.items()}
        per_log = {(s, g): v["value"] for s, groups in b["by_group"].items() for g, v in groups.items()}
        assert per_log.keys() == per_model.keys() and all(
            (per_model[k] is None and per_log[k] is None) or per_log[k] == pytest.approx(per_model[k], abs=1e-6)
            for k in per_model), a["key"]


def test_decision_column_and_threshold(job):
    model, test_rows, log = job
    by_model = model.score(test_rows)
    decisions = PredictionLog(**{**LOG, "score_column": None, "prediction_column": "decision"}).score(log)
    assert (decisions.pred == by_model.pred).all()
    dp = MetricSpec(type="demographic_parity")
    assert dp.metric.compute(decisions, dp.options)[0] == pytest.approx(dp.metric.compute(by_model, dp.options)[0])
    strict = PredictionLog(**LOG, threshold=0.7).score(log)
    assert (strict.pred == (log["score"] > 0.7)).all() and strict.pred.sum() < by_model.pred.sum()
    raw = PredictionLog(**{**LOG, "score_scale": "raw"}).score(log.assign(score=by_model.logits))
    assert (raw.pred == by_model.pred).all() and raw.logits == pytest.approx(by_model.logits)


def test_a_log_offers_only_the_metrics_its_columns_give():
    no_label = PredictionLog(score_column="s", sensitive=["g"])
    assert no_label.refusal([MetricSpec(type="demographic_parity"), MetricSpec(type="psp")]) is None
    assert no_label.refusal([MetricSpec(type="accuracy")])[0] == "label_column"
    decisions = PredictionLog(prediction_column="d", label_column="y", sensitive=["g"])
    assert decisions.refusal([MetricSpec(type="equalized_odds"), MetricSpec(type="score_psi")]) is None
    field, message = decisions.refusal([MetricSpec(type="roc_auc")])
    assert field == "score_column" and "roc_auc" in message
    for bad in ({"sensitive": ["g"]}, {"score_column": "s", "prediction_column": "d", "sensitive": ["g"]},
                {"score_column": "s", "threshold": 1.5, "sensitive": ["g"]},
                {"prediction_column": "d", "threshold": 0.5, "sensitive": ["g"]},
                {"score_column": "s", "sensitive": []},
                {"score_column": "s", "sensitive": ["g"], "positive_label": "a\x00"},
                {"score_column": "s", "sensitive": ["g\x00"]}):
        with pytest.raises(ValidationError):
            PredictionLog.model_validate(bad)


def test_bad_log_columns_are_named(job):
    _, _, log = job
    with pytest.raises(ModelError, match="lacks the column.*'nope'"):
        PredictionLog(**{**LOG, "score_column": "nope"}).score(log)
    with pytest.raises(ModelError, match="score_column.*outside \\[0, 1\\]"):
        PredictionLog(**LOG).score(log.assign(score=log["score"] * 3))
    with pytest.raises(ModelError, match="score_column.*not finite"):
        PredictionLog(**LOG).score(log.assign(score=log["score"].where(log.index > 0)))
    with pytest.raises(ModelError, match="prediction_column.*'maybe'"):
        PredictionLog(**{**LOG, "score_column": None, "prediction_column": "decision"}).score(
            log.assign(decision=np.where(log.index == 3, "maybe", "1")))
    with pytest.raises(ModelError, match="positive_label"):
        PredictionLog(**{**LOG, "positive_label": "yes"}).score(log)


def test_cli_audits_a_prediction_log(job, tmp_path, capsys):
    _, _, log = job
    log.to_csv(tmp_path / "log.csv", index=False)
    args = ["audit", "run", "--predictions", json.dumps(LOG), "--data", str(tmp_path / "log.csv"), "--metrics"]
    assert main([*args, '[{"type": "demographic_parity", "threshold": 0.0}]', "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["breached"] == ["demographic_parity"] and report["n_rows"] == len(log)
    assert set(report["score_summary"]["groups"]) == {"Female", "Male"}
    (tmp_path / "reference.json").write_text(json.dumps(report))
    shifted = log.assign(score=np.where(log["sex"] == "Female", np.minimum(log["score"] + 0.3, 1.0), log["score"]))
    shifted.to_csv(tmp_path / "shifted.csv", index=False)
    psi = '[{"type": "score_psi", "threshold": 0.25}]'
    drift = ["audit", "run", "--predictions", json.dumps(LOG), "--metrics", psi, "--format", "json",
             "--reference", str(tmp_path / "reference.json")]
    assert main([*drift, "--data", str(tmp_path / "log.csv")]) == 0  # the same rows: no drift
    assert json.loads(capsys.readouterr().out)["results"][0]["value"] == 0.0
    assert main([*drift, "--data", str(tmp_path / "shifted.csv")]) == 1
    assert json.loads(capsys.readouterr().out)["breached"] == ["score_psi"]
    label_less = json.dumps({"score_column": "score", "sensitive": ["sex"]})
    assert main(["audit", "run", "--predictions", label_less, "--data", str(tmp_path / "log.csv"),
                 "--metrics", '[{"type": "accuracy"}]']) == 2
    assert "--predictions: label_column" in capsys.readouterr().err


# -- drift ---------------------------------------------------------------------------------------------------

def scores(n: int, seed: int, shift: float = 0.0) -> Scored:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, n)
    logits = rng.normal(0.5 * group, 1.0) + shift * (group == 1)
    return Scored(np.zeros(n, np.int64), logits, group, ["a", "b"])


def test_summary_ks_is_within_two_over_q_of_the_exact_statistic():
    one, two = scores(5000, 1), scores(3000, 2, shift=0.3)
    drift = compare(summarise(two), summarise(one), "r1")
    for g, name in enumerate(["a", "b"]):
        exact = ks_2samp(two.logits[two.group == g], one.logits[one.group == g]).statistic
        assert abs(drift["ks"][name] - exact) <= 2 / Q
    assert drift["run_id"] == "r1" and drift["ks"]["b"] > 0.1 > drift["ks"]["a"]


def test_psi_uses_the_references_deciles_and_a_floor_for_empty_bins():
    ref = summarise(scores(4000, 3))
    same = compare(ref, ref, "r")
    assert same["psi"] == {"a": 0.0, "b": 0.0} and same["ks"] == {"a": 0.0, "b": 0.0}
    far = compare(summarise(scores(4000, 4, shift=20.0)), ref, "r")  # group b entirely above its top bin
    # all mass in the last bin: p = (ε, .., ε, 1), q ≈ 0.1 each: finite, about 0.9·ln(10) + 9·0.1·ln(0.1/ε)
    assert 7 < far["psi"]["b"] < 9 and far["psi"]["a"] < 0.05
    assert compare(summarise(scores(100, 5)), None, None) is None


def test_drift_alerts_on_a_planted_shift_and_not_on_a_resample():
    rng = np.random.default_rng(7)
    base = scores(3000, 6)
    resample = base.take(rng.integers(0, 3000, 3000))
    shifted = Scored(base.y, base.logits + 0.8 * (base.group == 1), base.group, base.group_names)
    specs = [MetricSpec(type="score_psi", threshold=0.1, against="baseline"),
             MetricSpec(type="score_ks", threshold=0.1)]
    reference = summarise(base)
    first = evaluate(specs, base, n_boot=5, drift={"previous": None, "baseline": None})
    assert [r["passed"] for r in first["results"]] == [None, None] and first["passed"] is None
    for data, breached in ((resample, []), (shifted, ["score_psi[against=baseline]", "score_ks"])):
        drift = compare(summarise(data), reference, "base")
        report = evaluate(specs, data, n_boot=5, drift={"previous": drift, "baseline": drift})
        assert report["breached"] == breached, report["results"]
        psi = report["results"][0]
        assert psi["reference_run_id"] == "base" and psi["value"] == max(drift["psi"].values())
        assert set(psi["by_group"]["psi"]) == {"a", "b"}
