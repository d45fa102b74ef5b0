"""Small solver problems shared by the solver tests: planted data, a GBDT problem, train/validation splits, and an
observer that checkpoints once."""

from __future__ import annotations

import numpy as np

from solvers import CONSTRAINTS, ConstraintSpec, ModelSpec, Problem
from solvers.models import model_factory
from solvers.observer import RecordingObserver


def planted_problem_data(n: int = 4000, seed: int = 0):
    """Two groups a/b; feature x0 is shifted by +1 in group b and drives the label,
    so the unconstrained classifier selects group b far more often (DP gap ≈ 0.33)."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 0] += 1.0 * s
    logit = 2.0 * (2.0 * X[:, 0] + X[:, 1] - 0.5 * X[:, 2]) - 1.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    X = np.column_stack([X, s])
    X = (X - X.mean(0)) / X.std(0)
    return X.astype(np.float32), y, s


class CheckpointAt(RecordingObserver):
    """Records every iterate and asks for one checkpoint, after iteration ``at``; keeps it in ``saved``."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.saved = at, None

    def checkpoint_due(self) -> bool:
        return len(self.records) == self.at

    def on_checkpoint(self, checkpoint) -> None:
        self.saved = checkpoint


SMALL = {"type": "gbdt", "n_estimators": 12, "num_leaves": 7, "min_child_samples": 10}


def gbdt_problem(n: int = 600, spec: dict = SMALL) -> Problem:
    X, y, s = planted_problem_data(n=n)
    return Problem(X, y, s, ["a", "b"], model_factory=model_factory(ModelSpec(**spec)), model_type="gbdt",
                   objective="logistic", constraints=[CONSTRAINTS.get("demographic_parity")(0.05)], device="cpu")


def train_validation_problems(n: int = 3000, tolerance: float = 0.05):
    """A demographic-parity problem on 70 % of planted rows, the unconstrained rest as validation, and the
    validation arrays."""
    X, y, s = planted_problem_data(n, seed=3)
    cut = int(0.7 * n)
    family = ConstraintSpec(type="demographic_parity", tolerance=tolerance).build()
    train = Problem(X=X[:cut], y=y[:cut], group=s[:cut], group_names=["a", "b"], constraints=[family], device="cpu")
    val = Problem(X=X[cut:], y=y[cut:], group=s[cut:], group_names=["a", "b"], device="cpu")
    return train, val, (X[cut:], y[cut:], s[cut:])
