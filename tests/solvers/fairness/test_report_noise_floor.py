"""The job's fairness report states what its test split can show (solvers.fairness.report.test_noise_floor):
a zero-gap model's chance to keep the tolerance on a test split of these group sizes, at the model's own rates,
and a warning when that chance is below one half."""
from __future__ import annotations

import numpy as np
import pytest

from solvers import ProblemSpec, run
from solvers.fairness.report import NOISE_FLOOR_WARN, fairness_entries, warnings_for
from solvers.spec import ConstraintSpec
from bench.common.datagen import planted_table


def _family(kind, tolerance, **extra):
    return ConstraintSpec.model_validate({"type": kind, "tolerance": tolerance, **extra}).build()


def _split(rng, n, rate=0.3):
    group = rng.integers(0, 2, n)
    y = (rng.random(n) < rate).astype(np.int64)
    return y, rng.normal(size=n) - 0.5, group


@pytest.mark.parametrize("kind", ["demographic_parity", "equal_opportunity", "equalized_odds"])
def test_keep_probability_matches_a_direct_simulation_at_the_models_rates(kind):
    """Draw the zero-gap model's predictions row by row (each row positive with the model's pooled rate, given
    its label for TPR / FPR) on many copies of the split; its share of gaps ≤ ε equals the report's."""
    rng = np.random.default_rng(0)
    y, logits, group = _split(rng, 800)
    eps = 0.04
    entry = fairness_entries([_family(kind, eps)], y, logits, group, ["a", "b"], {"test": np.arange(800)},
                             n_boot=20)[0]
    floor = entry["test_noise_floor"]
    pred = logits > 0
    reps = 4000
    if kind == "demographic_parity":
        draws = rng.random((reps, 800)) < pred.mean()
        masks = [group == g for g in (0, 1)]
        gap = np.abs(draws[:, masks[0]].mean(1) - draws[:, masks[1]].mean(1))
    else:
        prob = np.where(y == 1, pred[y == 1].mean(), pred[y == 0].mean())
        draws = rng.random((reps, 800)) < prob
        def band(label):
            m = [(group == g) & (y == label) for g in (0, 1)]
            return np.abs(draws[:, m[0]].mean(1) - draws[:, m[1]].mean(1))
        gap = band(1) if kind == "equal_opportunity" else np.maximum(band(1), band(0))
    direct = float(np.mean(gap <= eps + 1e-12))
    se = np.hypot(floor["standard_error"], np.sqrt(direct * (1 - direct) / reps))
    assert abs(floor["keep_probability"] - direct) <= 4 * se + 1e-9
    assert floor["expected_gap"] == pytest.approx(gap.mean(), rel=0.1)
    assert floor["rates"]["rate"] == pytest.approx(pred.mean())


def test_a_tolerance_below_the_splits_noise_warns_and_a_wide_one_does_not():
    rng = np.random.default_rng(1)
    y, logits, group = _split(rng, 400)
    tight, wide = _family("demographic_parity", 0.005), _family("equalized_odds", 0.5)
    entries = fairness_entries([tight, wide], y, logits, group, ["a", "b"], {"test": np.arange(400)}, n_boot=20)
    assert entries[0]["test_noise_floor"]["keep_probability"] < NOISE_FLOOR_WARN
    assert entries[1]["test_noise_floor"]["keep_probability"] == 1.0
    warned = [w for w in warnings_for(entries, {"test": {}}) if "too small" in w]
    assert len(warned) == 1 and warned[0].startswith("constraint demographic_parity: the test split is too small")
    # no test split (an estimator's training data), another family, or the overall reference: no floor
    train_only = fairness_entries([tight], y, logits, group, ["a", "b"], {"train": np.arange(400)}, n_boot=20)
    assert "test_noise_floor" not in train_only[0]
    other = fairness_entries([_family("loss_gap", 0.1), _family("demographic_parity", 0.02, reference="overall")],
                             y, logits, group, ["a", "b"], {"test": np.arange(400)}, n_boot=20)
    assert [e["test_noise_floor"] for e in other] == [None, None]


def test_a_job_reports_its_test_noise_floor():
    table = planted_table(1500, seed=3)
    spec = ProblemSpec.model_validate({
        "target": "income", "positive_label": ">50K", "sensitive": ["sex"], "solver": {"name": "erm"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.001}], "max_iterations": 50, "device": "cpu"})
    out = run(table, spec)
    floor = out.fairness[0]["test_noise_floor"]
    assert 0.0 <= floor["keep_probability"] < NOISE_FLOOR_WARN and floor["repetitions"] == 2000
    assert any("the test split is too small to show a tolerance of 0.001" in w for w in out.warnings)
