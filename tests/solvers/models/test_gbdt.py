"""Model type ``gbdt`` (LightGBM): the spec's bounds, ``erm`` boosting, the text-model state through safetensors,
the audit model file and a checkpoint resume."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import torch
from pydantic import ValidationError
from safetensors.torch import load_file, save_file

from solvers import ModelSpec, solve
from solvers import checkpoint as ckpt
from solvers.algorithms.auc_postprocess import restore_model
from solvers.api import run
from solvers.models import model_factory
from solvers.observer import RecordingObserver
from solvers.spec import MAX_TREE_LEAVES, ProblemSpec, SolverSpec, SpecError, check_solver_supports
from bench.common.datagen import planted_table
from tests.support.problems import SMALL, CheckpointAt, gbdt_problem

def test_spec_bounds_and_refusals():
    with pytest.raises(ValidationError, match="n_estimators"):
        ModelSpec(type="gbdt", n_estimators=5000, num_leaves=4096)  # a model bomb: 20 M leaves
    assert ModelSpec(type="gbdt").parameter_count(10) <= MAX_TREE_LEAVES
    with pytest.raises(ValidationError, match="num_leaves"):
        ModelSpec(type="linear", num_leaves=8)  # a gbdt field on another model type
    linear = ModelSpec(type="linear")
    assert ModelSpec.model_validate(linear.model_dump()) == linear  # a stored spec (every field dumped) reads back
    with pytest.raises(ValidationError, match="objective"):
        ProblemSpec(target="y", positive_label=1, sensitive=["s"], model={"type": "gbdt"}, objective="hinge")
    spec = ProblemSpec(target="y", positive_label=1, sensitive=["s"], model={"type": "gbdt"}, solver={"name": "ssg"})
    with pytest.raises(SpecError, match="gbdt") as err:  # gradient-step solvers cannot train trees
        check_solver_supports(spec)
    assert err.value.loc == ("model", "type")
    check_solver_supports(spec.model_copy(update={"solver": SolverSpec(name="erm")}))


def test_erm_boosts_one_tree_per_iteration_like_plain_lightgbm():
    problem = gbdt_problem()
    observer = RecordingObserver()
    result = solve(problem, "erm", observer, max_iterations=100, seed=0)
    assert result.iterations == SMALL["n_estimators"] == result.model.num_trees  # converged after n_estimators
    objectives = [r.objective for r in observer.records]
    assert objectives[-1] < objectives[0] < np.log(2)
    assert all(len(r.constraints) == 1 for r in observer.records)
    # the same trees as lightgbm.train with the model's parameters
    X, y = problem.X.numpy(), problem.y.numpy()
    from solvers.gbdt import lightgbm_params

    params = {**lightgbm_params(problem.make_model().spec, 0), "objective": "binary"}
    plain = lgb.train(params, lgb.Dataset(X, label=y), num_boost_round=SMALL["n_estimators"])
    ours = result.model(problem.X).double().numpy()
    np.testing.assert_allclose(ours, plain.predict(X, raw_score=True), rtol=1e-5, atol=1e-5)
    # the last record's objective is F at the model's own predictions
    np.testing.assert_allclose(objectives[-1], float(problem.objective(result.model(problem.X), problem.y)),
                               rtol=1e-5)


def test_state_is_the_text_model_and_round_trips_through_safetensors(tmp_path):
    problem = gbdt_problem()
    model = solve(problem, "erm", max_iterations=5, seed=0).model
    state = model.state_dict()
    assert list(state) == ["booster"] and state["booster"].dtype == torch.uint8
    assert bytes(state["booster"].numpy()).decode().startswith("tree")  # LightGBM's own text format
    save_file(state, str(tmp_path / "w.safetensors"))
    back = restore_model(problem.make_model(), load_file(str(tmp_path / "w.safetensors")))
    torch.testing.assert_close(back(problem.X), model(problem.X))
    with pytest.raises(RuntimeError, match="features"):  # trees of another width are refused
        restore_model(model_factory(ModelSpec(**SMALL))(3), state)
    with pytest.raises(RuntimeError, match="LightGBM"):
        restore_model(problem.make_model(), {"booster": torch.tensor(list(b"not a model"), dtype=torch.uint8)})


def test_resume_after_a_stop_grows_the_same_trees(tmp_path):
    full = CheckpointAt(5)
    reference = solve(gbdt_problem(), "erm", full, max_iterations=100, seed=2)
    ckpt.save(tmp_path / "c.safetensors", full.saved)
    resumed_obs = RecordingObserver()
    resumed = solve(gbdt_problem(), "erm", resumed_obs, max_iterations=100, seed=2,
                    resume=ckpt.load(tmp_path / "c.safetensors"))
    assert [r.iteration for r in resumed_obs.records] == list(range(6, SMALL["n_estimators"] + 1))
    assert resumed.iterations == reference.iterations and resumed.model.num_trees == reference.model.num_trees
    np.testing.assert_allclose([r.objective for r in resumed_obs.records], [r.objective for r in full.records[5:]],
                               rtol=1e-6)
    X = gbdt_problem().X
    torch.testing.assert_close(resumed.model(X), reference.model(X))


def test_run_and_audit_model_file_score_the_same(tmp_path):
    from app.audits.model import AuditModel

    table = planted_table(n=1200)
    spec = ProblemSpec(target="income", positive_label=">50K", sensitive=["sex"], model=SMALL, solver={"name": "erm"},
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}], max_iterations=50)
    out = run(table, spec)
    assert out.iterations == SMALL["n_estimators"] and out.metrics["test"]["accuracy"] > 0.6
    from solvers.api import prepare

    audit = AuditModel(spec, prepare(table, spec).encoder, out.state_dict, out.groups)
    audit.save(tmp_path / "m.safetensors")
    loaded = AuditModel.load_checked(tmp_path / "m.safetensors")
    test = table.loc[out.predictions["row"]]
    scored = loaded.score(test)
    np.testing.assert_allclose(1 / (1 + np.exp(-scored.logits)), out.predictions["score"], rtol=1e-5)
