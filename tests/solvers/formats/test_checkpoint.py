"""A run resumed from a checkpoint continues exactly as the uninterrupted run (the crash-resume contract)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from solvers import CONSTRAINTS, ModelSpec, Problem, solve
from solvers.formats import checkpoint as ckpt
from solvers.algorithms.linear_scores import SPARSE_DENSITY
from solvers.pipeline import prepare
from solvers.catalog import ALGORITHMS, list_solvers
from solvers.data.spec import ProblemSpec
from solvers.models.factory import model_factory
from solvers.observer import RecordingObserver
from tests.support.problems import CheckpointAt, planted_problem_data

K, AT = 24, 10


def problem(model: str) -> Problem:
    X, y, s = planted_problem_data(n=600)
    return Problem(X, y, s, ["a", "b"], model_factory=model_factory(ModelSpec(type=model, hidden=[8])),
                   model_type=model, objective="logistic",
                   constraints=[CONSTRAINTS.get("demographic_parity")(0.05)], device="cpu")


CASES = [("plada", "linear", {}), ("plada", "mlp", {"batch_size": 64}), ("ssg", "linear", {}),
         ("ssl_alm", "linear", {}), ("lagrangian", "mlp", {"batch_size": 50}), ("erm", "linear", {"batch_size": 64}),
         ("ipc", "linear", {}), ("ssw", "linear", {})]


@pytest.mark.parametrize("name,model,params", CASES, ids=[f"{n}-{m}-{'mb' if p else 'fb'}" for n, m, p in CASES])
def test_resume_continues_the_uninterrupted_run(name, model, params, tmp_path):
    full = CheckpointAt(AT)
    reference = solve(problem(model), {"name": name, "params": params}, full, max_iterations=K, seed=3)
    assert full.saved is not None and full.saved.iteration == AT

    path = tmp_path / "run.safetensors"
    ckpt.save(path, full.saved)
    saved = ckpt.load(path)  # through the file: tensors and JSON scalars only
    assert saved.iteration == AT and saved.samples_seen == full.records[AT - 1].samples_seen

    torch.manual_seed(12345)  # the resumed process' global RNG differs; the checkpoint restores it
    resumed_obs = RecordingObserver()
    resumed = solve(problem(model), {"name": name, "params": params}, resumed_obs, max_iterations=K, seed=3,
                    resume=saved)
    assert resumed.iterations == reference.iterations == K
    assert [r.iteration for r in resumed_obs.records] == list(range(AT + 1, K + 1))
    tail = full.records[AT:]
    np.testing.assert_allclose([r.objective for r in resumed_obs.records], [r.objective for r in tail],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([r.constraints for r in resumed_obs.records], [r.constraints for r in tail],
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(resumed.model.parameters(), reference.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- every registered solver, on a service-shaped problem
# The service encodes tables one-hot (Adult: 8 categorical columns, ~100 columns, density ~0.1), so the linear
# score-space paths (IDCA, the partial baselines) hold X as a sparse CSR matrix: issue 19 #15, "Sparse CSR tensors
# do not have is_contiguous" at the first checkpoint of an IDCA job on Adult.
SERVICE_N, SERVICE_K, SERVICE_AT = 2400, 10, 4


def adult_like(n: int, seed: int = 0) -> pd.DataFrame:
    """A table shaped like Adult: two numeric columns, three categorical ones (74 categories), a binary sex."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["Male", "Female"], n)
    education = rng.integers(0, 16, n)
    age, hours = rng.integers(17, 90, n), rng.integers(1, 99, n)
    logit = 0.04 * (age - 40) + 0.03 * (hours - 40) + (sex == "Male") + 0.15 * (education - 8) - 1.0
    income = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-logit)), ">50K", "<=50K")
    return pd.DataFrame({"age": age, "hours": hours, "sex": sex, "education": [f"e{e}" for e in education],
                         "occupation": rng.choice([f"o{i}" for i in range(14)], n),
                         "country": rng.choice([f"c{i}" for i in range(44)], n), "income": income})


def service_constraint(info: dict) -> dict:
    """The constraint a job of this solver would carry: the partial family for the partial-fairness solvers
    (IDCA's failing job was partial_statistical_parity), AUC parity for the AUC-only ones, else DP."""
    supported = info["supports"]["constraints"]
    if info["name"] in ("idca", "partial_regularized", "pairwise_auc_pg"):
        return {"type": "partial_statistical_parity", "tolerance": 0.05, "interval": [0.0, 0.5]}
    if "demographic_parity" in supported:
        return {"type": "demographic_parity", "tolerance": 0.05}
    return {"type": "auc_parity", "tolerance": 0.05}


SOLVERS = {info["name"]: info for info in list_solvers()}


def service_problems(name: str) -> tuple[Problem, Problem]:
    """Train and validation problems built as the service builds them (:func:`solvers.pipeline.prepare`)."""
    model = "linear" if "linear" in SOLVERS[name]["supports"]["models"] else SOLVERS[name]["supports"]["models"][0]
    spec = ProblemSpec(target="income", positive_label=">50K", sensitive=["sex"],
                       model={"type": model}, objective="logistic", constraints=[service_constraint(SOLVERS[name])],
                       solver={"name": name}, split={"test": 0.2, "validation": 0.2, "seed": 0},
                       max_iterations=SERVICE_K)
    data = prepare(adult_like(SERVICE_N), spec)
    train, val = data.splits["train"], data.splits["validation"]
    factory = model_factory(spec.model)
    problem = Problem(data.X[train], data.y[train], data.group[train], data.group_names, model_factory=factory,
                      model_type=model, objective="logistic", constraints=[c.build() for c in spec.constraints],
                      device="cpu")
    validation = Problem(data.X[val], data.y[val], data.group[val], data.group_names, model_factory=factory,
                         model_type=model, device="cpu")
    return problem, validation


def test_every_registered_solver_is_resumed():
    assert sorted(SOLVERS) == sorted(ALGORITHMS.names())


NO_CHECKPOINTS = {"auto"}  # a portfolio: a redelivered auto job starts its portfolio again (solvers.auto)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_resumes_on_a_one_hot_problem(name, tmp_path):
    problem, validation = service_problems(name)
    assert float((problem.X != 0).float().mean()) <= SPARSE_DENSITY  # the CSR path of the linear solvers
    X = problem.X
    full = CheckpointAt(SERVICE_AT)
    reference = solve(problem, {"name": name}, full, max_iterations=SERVICE_K, seed=1, validation=validation)
    if name in NO_CHECKPOINTS:
        assert full.saved is None and reference.iterations >= SERVICE_AT
        return
    assert full.saved is not None and full.saved.iteration == SERVICE_AT

    path = tmp_path / "run.safetensors"
    ckpt.save(path, full.saved)
    torch.manual_seed(12345)
    resumed_obs = RecordingObserver()
    problem, validation = service_problems(name)
    resumed = solve(problem, {"name": name}, resumed_obs, max_iterations=SERVICE_K, seed=1, validation=validation,
                    resume=ckpt.load(path))
    assert resumed.iterations == reference.iterations
    assert [r.iteration for r in resumed_obs.records] == list(range(SERVICE_AT + 1, reference.iterations + 1))
    tail = full.records[SERVICE_AT:]
    np.testing.assert_allclose([r.objective for r in resumed_obs.records], [r.objective for r in tail],
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(resumed.model.parameters(), reference.model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(resumed.model(X), reference.model(X), rtol=1e-5, atol=1e-6)  # gbdt: no parameters


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr, torch.sparse_csc])
def test_sparse_tensors_go_through_the_file(layout, tmp_path):
    dense = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]])
    sparse = dense.to_sparse(layout=layout)
    one = ckpt.Checkpoint(1, 10, 0.5, {})
    one.tensors = {name: array for name, array in ckpt._parts("X", sparse).items()}
    ckpt.save(tmp_path / "c.safetensors", one)
    back = ckpt._assembled(ckpt.load(tmp_path / "c.safetensors").tensors)["X"]
    assert back.layout == layout
    torch.testing.assert_close(back.to_dense(), dense)


def test_checkpoint_file_write_is_atomic(tmp_path):
    path = tmp_path / "c.safetensors"
    one = ckpt.Checkpoint(1, 10, 0.5, {"w": torch.ones(3)}, {"scalars": {"k": 1}})
    ckpt.save(path, one)
    ckpt.save(path, ckpt.Checkpoint(2, 20, 1.0, {"w": torch.zeros(3)}, {"scalars": {"k": 2}}))
    back = ckpt.load(path)
    assert back.iteration == 2 and back.meta["scalars"] == {"k": 2} and not list(tmp_path.glob("*.tmp"))
