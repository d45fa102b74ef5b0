"""The baseline key and the once-only creation of a baseline row, against a real SQLite database."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from app.jobs.baselines import (MAX_ITERATIONS, baseline_key, baseline_spec, ensure_baseline, solved_as_baseline,
                           solves_as_baseline, store_as_baseline)
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


ERM = dict(SPEC, solver={"name": "erm", "params": {}}, seed=0, exact_enforcement=True, max_iterations=2000,
           time_limit_s=600)


def test_an_erm_job_with_the_baselines_fields_solves_as_its_baseline_until_a_cap_differs():
    assert solves_as_baseline(ERM)  # enforcement and the guarantee do nothing after erm; caps are checked at the end
    for other in (SPEC, dict(ERM, seed=1), dict(ERM, solver={"name": "erm", "params": {"lr": 0.5}}),
                  dict(ERM, solver={"name": "plada", "params": {}})):
        assert not solves_as_baseline(other)
    assert solved_as_baseline(ERM, 200, "max_iterations", 3.0)      # 200 gbdt rounds: under the baseline's 1,000
    assert not solved_as_baseline(ERM, 1000, "max_iterations", 3.0)  # the job went on past the baseline's cap
    assert solved_as_baseline(dict(ERM, max_iterations=1000), 1000, "max_iterations", 3.0)
    assert not solved_as_baseline(ERM, 200, "time_limit", 3.0)
    assert not solved_as_baseline(ERM, 200, "converged", 301.0)     # the baseline stops at 300 s
    assert not solved_as_baseline(dict(ERM, seed=2), 200, "converged", 3.0)


def test_a_result_is_stored_only_on_a_queued_row_of_the_same_run(dataset_db):
    with dataset_db() as s, s.begin():
        assert ensure_baseline(s, ERM) is not None
    with dataset_db() as s, s.begin():  # tolerances are not in the key but are in the stored run's fairness report
        assert not store_as_baseline(s, dict(ERM, constraints=[{"type": "demographic_parity", "tolerance": 0.3}]),
                                     {"metrics": {}})
    with dataset_db() as s, s.begin():
        assert store_as_baseline(s, ERM, {"metrics": {"test": {"accuracy": 0.8}}})
    with dataset_db() as s, s.begin():
        assert not store_as_baseline(s, ERM, {"metrics": {}})  # succeeded already: kept
        row = s.scalar(select(Baseline).where(Baseline.key == baseline_key(ERM)))
        assert row.status == "succeeded" and row.result == {"metrics": {"test": {"accuracy": 0.8}}}
