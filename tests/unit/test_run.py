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
    from tests.datagen import planted_table

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
