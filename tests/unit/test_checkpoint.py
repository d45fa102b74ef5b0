"""A run resumed from a checkpoint continues exactly as the uninterrupted run (the crash-resume contract)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from solvers import CONSTRAINTS, ModelSpec, Problem, solve
from solvers import checkpoint as ckpt
from solvers.models import model_factory
from solvers.observer import RecordingObserver
from tests.unit.conftest import planted_problem_data

K, AT = 24, 10


class CheckpointAt(RecordingObserver):
    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.saved = at, None

    def checkpoint_due(self) -> bool:
        return len(self.records) == self.at

    def on_checkpoint(self, checkpoint) -> None:
        self.saved = checkpoint


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


def test_checkpoint_file_write_is_atomic(tmp_path):
    path = tmp_path / "c.safetensors"
    one = ckpt.Checkpoint(1, 10, 0.5, {"w": torch.ones(3)}, {"scalars": {"k": 1}})
    ckpt.save(path, one)
    ckpt.save(path, ckpt.Checkpoint(2, 20, 1.0, {"w": torch.zeros(3)}, {"scalars": {"k": 2}}))
    back = ckpt.load(path)
    assert back.iteration == 2 and back.meta["scalars"] == {"k": 2} and not list(tmp_path.glob("*.tmp"))
