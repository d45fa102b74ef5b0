"""The audit metric registry against brute force and scikit-learn, the bootstrap CIs against an explicit
loop, spec validation, pass/fail directions and drift."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy.stats import ks_2samp
from sklearn import metrics as skm

from app.audits.metrics import AUDIT_METRICS, MetricSpec, Scored, bootstrap, passes, resamples
from app.audits.report import evaluate, format_table


@pytest.fixture(scope="module")
def scored() -> Scored:
    rng = np.random.default_rng(3)
    n = 400
    group = rng.integers(0, 3, n)
    y = (rng.random(n) < 0.3 + 0.15 * group).astype(np.int64)
    logits = rng.normal(0.8 * y + 0.3 * group - 0.5, 1.0)
    return Scored(y, logits, group, ["a", "b", "c"])


def value(scored: Scored, **spec):
    return MetricSpec(**spec).metric.compute(scored, MetricSpec(**spec).options)


def test_group_fairness_matches_brute_force(scored):
    frame = pd.DataFrame({"y": scored.y, "pred": (scored.logits > 0).astype(int), "g": scored.group})
    sr = frame.groupby("g")["pred"].mean()
    tpr = frame[frame.y == 1].groupby("g")["pred"].mean()
    fpr = frame[frame.y == 0].groupby("g")["pred"].mean()
    dp, by_group = value(scored, type="demographic_parity")
    assert dp == pytest.approx(sr.max() - sr.min())
    assert by_group["selection_rate"] == pytest.approx({n: sr[i] for i, n in enumerate(scored.group_names)})
    assert value(scored, type="equal_opportunity")[0] == pytest.approx(tpr.max() - tpr.min())
    eodds, rates = value(scored, type="equalized_odds")
    assert eodds == pytest.approx(max(tpr.max() - tpr.min(), fpr.max() - fpr.min()))
    assert rates["fpr"]["b"] == pytest.approx(fpr[1])


def test_performance_metrics_match_sklearn(scored):
    pred = (scored.logits > 0).astype(int)
    acc, by_group = value(scored, type="accuracy")
    assert acc == pytest.approx(skm.accuracy_score(scored.y, pred))
    rows = scored.group == 2
    assert by_group["accuracy"]["c"] == pytest.approx(skm.accuracy_score(scored.y[rows], pred[rows]))
    auc, auc_by_group = value(scored, type="auc")  # an alias of roc_auc
    assert auc == pytest.approx(skm.roc_auc_score(scored.y, scored.logits))
    assert auc_by_group["roc_auc"]["a"] == pytest.approx(skm.roc_auc_score(scored.y[scored.group == 0],
                                                                           scored.logits[scored.group == 0]))


def test_partial_and_auc_fairness_match_brute_force(scored):
    two = scored.take(np.flatnonzero(scored.group < 2))
    s0, s1 = two.logits[two.group == 0], two.logits[two.group == 1]
    assert value(two, type="psp", interval=[0, 1])[0] == pytest.approx(ks_2samp(s0, s1).statistic)
    top0 = np.sort(s0)[::-1][: int(np.ceil(0.3 * s0.size))]  # each group's top 30% (ranks ⌈0.3 n_k⌉)
    top1 = np.sort(s1)[::-1][: int(np.ceil(0.3 * s1.size))]
    assert value(two, type="psp", interval=[0, 0.3])[0] == pytest.approx(ks_2samp(top0, top1).statistic)
    pdp, rates = value(two, type="pdp", interval=[0, 0.3], score_threshold=1.0)
    assert pdp == pytest.approx(abs((top0 > 1.0).mean() - (top1 > 1.0).mean()))
    assert rates["rate_above_threshold"]["a"] == pytest.approx((top0 > 1.0).mean())
    # AUC fairness, variant 'group': |Pr(f_i > f_j | i ∈ a, j ∈ rest) − ½| with ties ½
    prot = scored.group == 0
    diff = scored.logits[prot][:, None] - scored.logits[~prot][None, :]
    brute = abs(((diff > 0) + 0.5 * (diff == 0)).mean() - 0.5)
    gap, by_group = value(scored, type="auc_parity", variant="group", protected="a")
    assert gap == pytest.approx(brute) and by_group["one_vs_rest"]["a"] == pytest.approx(brute)


def test_bootstrap_is_the_percentile_interval_of_the_resamples(scored):
    """A metric that reads rows (log loss) is bootstrapped over row resamples; the rate metrics' and the AUC's
    cell draws: tests/app/audits/test_audit_cells.py."""
    spec = MetricSpec(type="log_loss", threshold=0.6)
    rows = resamples(len(scored.y), n_boot=50, seed=0)
    rng = np.random.default_rng(0)
    expected = rng.integers(0, len(scored.y), size=(50, len(scored.y)))
    assert np.array_equal(np.stack(list(rows)), expected)  # the rows of one (B, n) draw, seeded
    loop = [spec.metric.compute(scored.take(r), spec.options)[0] for r in expected]
    out = bootstrap(spec, scored, rows)
    assert out["ci"] == pytest.approx(list(np.quantile(loop, [0.025, 0.975])))
    assert out["ci"][0] <= out["value"] <= out["ci"][1]
    group_a = [spec.metric.compute(scored.take(r), spec.options)[1]["log_loss"]["a"] for r in expected]
    assert out["by_group"]["log_loss"]["a"]["ci"] == pytest.approx(list(np.quantile(group_a, [0.025, 0.975])))
    assert bootstrap(spec, scored, rows) == out  # reproducible


def test_specs_are_validated_naming_the_field():
    with pytest.raises(ValidationError) as err:
        MetricSpec(type="fairness_vibes", threshold=0.1)
    assert err.value.errors()[0]["loc"] == ("type",)
    assert "demographic_parity" in str(err.value) and "auc_parity" in str(err.value)
    with pytest.raises(ValidationError, match="variant"):
        MetricSpec(type="auc_parity", variant="sideways")
    with pytest.raises(ValidationError, match="interval"):
        MetricSpec(type="psp", interval="auto")
    with pytest.raises(ValidationError, match="foo"):
        MetricSpec(type="accuracy", foo=1)
    assert MetricSpec(type="pdp", interval=[0, 0.2]).key == "partial_demographic_parity[interval=[0, 0.2]]"
    assert set(AUDIT_METRICS.names()) >= {"demographic_parity", "equal_opportunity", "equalized_odds", "accuracy",
                                          "roc_auc", "partial_statistical_parity", "partial_demographic_parity",
                                          "auc_parity"}


def test_thresholds_drift_and_table(scored):
    assert passes("max", 0.1, 0.2) and not passes("max", 0.3, 0.2) and passes("min", 0.9, 0.8)
    assert passes("max", None, 0.2) is False and passes("max", 0.5, None) is None
    specs = [MetricSpec(type="accuracy", threshold=0.0), MetricSpec(type="demographic_parity", threshold=0.0)]
    first = evaluate(specs, scored, n_boot=20)
    assert first["breached"] == ["demographic_parity"] and first["passed"] is False
    assert first["group_sizes"] == {n: int((scored.group == i).sum()) for i, n in enumerate(scored.group_names)}
    again = evaluate(specs, scored.take(np.arange(300)), previous=first["results"], n_boot=20)
    drift = again["results"][1]["drift"]
    assert drift["previous"] == first["results"][1]["value"]
    assert drift["delta"] == pytest.approx(again["results"][1]["value"] - first["results"][1]["value"])
    table = format_table(again)
    assert "BREACH" in table and "selection_rate · a" in table


def test_rate_gaps_state_the_batchs_noise_floor_and_the_alert_says_it(scored):
    """A rate gap with a threshold carries what a batch of this size can show: a model with no gap on the
    population keeps DP ≤ 0.01 on 400 rows in 3 groups less often than DP ≤ 0.5 (always); the alert names it."""
    from app.audits.lifecycle import breach_message

    specs = [MetricSpec(type="demographic_parity", threshold=0.01), MetricSpec(type="equalized_odds", threshold=0.5),
             MetricSpec(type="accuracy", threshold=0.5), MetricSpec(type="demographic_parity")]
    results = evaluate(specs, scored, n_boot=20)["results"]
    tight, wide, other, unbounded = (r["noise_floor"] for r in results)
    assert 0.0 <= tight["keep_probability"] < 0.5 and tight["rates"]["rate"] == pytest.approx(scored.pred.mean())
    assert wide["keep_probability"] == 1.0 and other is None and unbounded is None
    assert "zero-gap keeps" in format_table({"results": results, "group_sizes": {}, "breached": []})
    breached = [{k: results[0].get(k) for k in ("key", "value", "noise_floor")},
                {"key": "accuracy", "value": 0.4, "noise_floor": None}]
    message = breach_message("weekly", breached)
    assert f"with probability {1 - tight['keep_probability']:.0%}" in message and "accuracy = 0.4" in message
