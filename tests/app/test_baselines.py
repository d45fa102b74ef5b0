"""The baseline key and the once-only creation of a baseline row, against a real SQLite database."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from app.baselines import MAX_ITERATIONS, baseline_key, baseline_spec, ensure_baseline
from app.models import Baseline, utcnow

SPEC = {"dataset_id": "d", "target": "income", "positive_label": ">50K", "sensitive": ["sex"], "features": None,
        "group_rules": {}, "model": {"type": "linear"}, "objective": "logistic", "seed": 3,
        "constraints": [{"type": "demographic_parity", "tolerance": 0.02}], "solver": {"name": "plada", "params": {}},
        "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "max_iterations": 5000, "time_limit_s": 60,
        "guarantee": {"confidence": 0.95}}


def test_the_key_ignores_tolerances_solver_and_seed_but_not_data_split_or_constraint_types():
    same = [dict(SPEC, constraints=[{"type": "demographic_parity", "tolerance": 0.3}]),
            dict(SPEC, solver={"name": "ssg", "params": {}}, seed=9, max_iterations=10)]
    other = [dict(SPEC, split={"test": 0.3, "validation": 0.2, "seed": 0}), dict(SPEC, dataset_id="e"),
             dict(SPEC, constraints=[{"type": "equalized_odds", "tolerance": 0.02}]),
             dict(SPEC, model={"type": "mlp"}), dict(SPEC, features=["age"])]
    assert {baseline_key(s) for s in same} == {baseline_key(SPEC)}
    assert len({baseline_key(s) for s in [SPEC, *other]}) == 1 + len(other)


def test_the_baseline_runs_erm_within_its_caps_without_guarantee():
    spec = baseline_spec(SPEC)
    assert spec["solver"] == {"name": "erm", "params": {}} and spec["seed"] == 0
    assert spec["max_iterations"] == MAX_ITERATIONS and spec["time_limit_s"] == 60
    assert "guarantee" not in spec and "dataset_id" not in spec and spec["exact_enforcement"] is False
    assert "feature_screen" not in baseline_spec(dict(SPEC, feature_screen=[{"column": "id"}]))


def test_one_row_per_key_and_a_lost_message_is_sent_again_once(dataset_db):
    with dataset_db() as s, s.begin():
        first = ensure_baseline(s, SPEC)
    assert first is not None
    with dataset_db() as s, s.begin():
        assert ensure_baseline(s, dict(SPEC, constraints=[{"type": "demographic_parity", "tolerance": 0.1}])) is None
        assert s.scalar(select(func.count()).select_from(Baseline)) == 1
        s.execute(update(Baseline).values(created_at=utcnow() - timedelta(hours=1)))  # queued for an hour
    with dataset_db() as s, s.begin():
        assert ensure_baseline(s, SPEC, resend_after_s=60) == first
        assert ensure_baseline(s, SPEC, resend_after_s=60) is None  # claimed: the next job does not resend
