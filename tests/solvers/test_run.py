import json

import numpy as np
import pandas as pd
import pytest
import torch

from solvers import ConstraintSpec, GroupRule, ProblemSpec, SolverSpec, SplitSpec, run


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 600
    age = rng.integers(18, 80, n).astype(float)
    job = rng.choice(["clerk", "engineer", "nurse"], n)
    hours = rng.normal(40, 8, n)
    hours[::20] = np.nan  # 30 missing values: some land in train
    logit = 0.05 * (age - 45) + (job == "engineer") * 1.0 + 0.05 * (np.nan_to_num(hours, nan=40) - 40)
    income = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), " >50K", "<=50K")
    return pd.DataFrame({"age": age, "job": job, "hours": hours, "income": income}, index=np.arange(1000, 1000 + n))


def _spec(**kw):
    base = dict(
        target="income", positive_label=">50K", sensitive=["age"],
        group_rules={"age": GroupRule(ranges={"<30": (None, 30), "30-60": (30, 60)}, other="60+")},
        constraints=[ConstraintSpec(type="demographic_parity", tolerance=0.1)],
        solver=SolverSpec(name="plada", params={"eta": 0.5}), max_iterations=50, device="cpu",
    )
    return ProblemSpec(**(base | kw))


def test_run_end_to_end(table):
    out = run(table, _spec())
    assert out.status == "completed" and out.iterations == 50 and out.device == "cpu"
    assert set(out.metrics) == {"train", "validation", "test"}
    json.dumps(out.metrics)
    test = out.metrics["test"]
    for key in ("accuracy", "balanced_accuracy", "roc_auc", "log_loss", "n", "demographic_parity",
                "demographic_parity_by_group", "equal_opportunity", "equal_opportunity_by_group",
                "equalized_odds", "equalized_odds_by_group", "group_sizes"):
        assert key in test
    assert set(test["group_sizes"]) <= {"<30", "30-60", "60+"}
    assert sum(m["n"] for m in out.metrics.values()) == len(table)
    p = out.predictions
    assert list(p.columns) == ["row", "group", "label", "score", "prediction"]
    assert len(p) == test["n"] and p["row"].isin(table.index).all()
    assert p["score"].between(0, 1).all() and ((p["score"] > 0.5).astype(int) == p["prediction"]).all()
    assert (p["label"] == (table.loc[p["row"], "income"].str.strip() == ">50K").astype(int).to_numpy()).all()
    assert "hours__missing" in out.feature_names and "job=engineer" in out.feature_names
    assert out.constraint_names == ["demographic_parity"] and out.tolerances == [0.1]
    assert all(v.device.type == "cpu" and v.is_contiguous() for v in out.state_dict.values())
    assert out.state_dict["net.weight"].shape == (1, len(out.feature_names))
    json.dumps(out.encoder)


def test_run_without_validation_and_mlp(table):
    out = run(table, _spec(split=SplitSpec(validation=0), model={"type": "mlp", "hidden": [8]},
                           solver=SolverSpec(name="erm"), max_iterations=5))
    assert set(out.metrics) == {"train", "test"}
    json.dumps(out.metrics)


def test_a_diverged_solver_is_reported_not_evaluated(monkeypatch):
    import solvers.api as api
    from bench.common.datagen import planted_table

    real_solve = api.solve

    def exploding(*args, **kwargs):  # a solver whose iterates overflowed
        result = real_solve(*args, **kwargs)
        with torch.no_grad():
            next(result.model.parameters()).fill_(float("inf"))
        return result

    monkeypatch.setattr(api, "solve", exploding)
    spec = ProblemSpec.model_validate({"target": "income", "positive_label": ">50K", "sensitive": ["sex"],
                                       "solver": {"name": "erm"}, "max_iterations": 3, "device": "cpu"})
    with pytest.raises(api.SolverDiverged, match="diverged.*after 3 iterations"):
        api.run(planted_table(200), spec)


def test_run_reports_the_exact_fairness_of_every_split(table):
    out = run(table, _spec(constraints=[ConstraintSpec(type="demographic_parity", tolerance=0.1),
                                        ConstraintSpec(type="loss_gap", tolerance=0.2)]))
    json.dumps(out.fairness)
    json.dumps(out.warnings)
    dp, lg = out.fairness
    assert dp["type"] == "demographic_parity" and dp["tolerance"] == 0.1 and dp["method"] == "clopper_pearson"
    assert lg["type"] == "loss_gap" and lg["method"] == "bootstrap"
    for split in ("train", "validation", "test"):
        assert dp[split]["value"] == pytest.approx(out.metrics[split]["demographic_parity"])
        assert lg[split]["value"] == pytest.approx(out.metrics[split]["loss_gap"])
        for entry in (dp, lg):
            lo, hi = entry[split]["ci"]
            assert lo <= entry[split]["value"] <= hi
            assert entry[split]["kept"] == (entry[split]["value"] <= entry["tolerance"])
    assert dp["test_upper_95"] >= dp["test"]["ci"][1] - 1e-12  # simultaneous over 2 constraints: wider
    assert dp["kept_on_test"] == dp["test"]["kept"]


def test_run_warns_on_a_near_trivial_model(table):
    from solvers.fairness.report import warnings_for

    out = run(table, _spec(solver=SolverSpec(name="plada"), max_iterations=2,  # η = 0.001: cannot move
                           exact_enforcement=False))
    assert any(w.startswith("near-trivial") for w in out.warnings)
    test = {"balanced_accuracy": 0.53, "demographic_parity_by_group": {"F": 0.004, "M": 0.2}}
    trivial = warnings_for([], {"test": test})
    assert "balanced accuracy" in trivial[0] and "F 0.4 %" in trivial[1] and len(trivial) == 2
    entry = {"type": "demographic_parity", "tolerance": 0.01, "validation": {"value": 0.05, "ci": [0, 0.1],
                                                                          "kept": False}}
    assert "not kept on the validation split" in warnings_for([entry], {"test": {}})[0]
