"""Problems with known answers, shared by the solver tests.

* :func:`simple_example` — the IPC paper's "Simple Example" (Section 5):
  min_{‖x‖₁ ≤ 1} xᵀAx/2  s.t.  xᵀBx/2 − 10 ≤ 0, A = diag(10, −1), B = diag(50, −5),
  started at x₀ = (0, 0.5). Weakly convex (ρ = 5); optimum x* = (0, ±1), f* = −0.5.
* :func:`convex_problem` — logistic regression with one constraint linear in the
  score, mean_{g=1} f − mean_{g=0} f − ε ≤ 0 (convex), and its SLSQP reference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor, nn

from solvers import Problem
from solvers.batching import BatchSampler
from solvers.constraints import ConstraintFamily
from solvers.problem import Evaluation


class _Point(nn.Module):
    def __init__(self, x0: Tensor) -> None:
        super().__init__()
        self.x = nn.Parameter(x0.clone())


def _project_l1(v: Tensor, radius: float) -> Tensor:
    """Euclidean projection onto {‖v‖₁ ≤ radius} (Duchi et al. 2008)."""
    if v.abs().sum() <= radius:
        return v
    u = v.abs().sort(descending=True).values
    css = u.cumsum(0) - radius
    k = torch.arange(1, v.numel() + 1, dtype=v.dtype)
    rho = int((u - css / k > 0).nonzero().max())
    theta = css[rho] / (rho + 1)
    return v.sign() * (v.abs() - theta).clamp_min(0)


@dataclass
class SimpleExample:
    """Duck-typed problem: the solver contract needs only these members."""

    A: Tensor = torch.diag(torch.tensor([10.0, -1.0], dtype=torch.float64))
    B: Tensor = torch.diag(torch.tensor([50.0, -5.0], dtype=torch.float64))
    radius: float = 1.0
    f_star: float = -0.5
    device: torch.device = torch.device("cpu")
    n_samples: int = 1
    n_features: int = 2
    group_names: tuple = ("all",)
    model_type: str = "point"
    constraint_names: tuple = ("g",)
    tolerances: tuple = (0.0,)

    def make_model(self) -> nn.Module:
        return _Point(torch.tensor([0.0, 0.5], dtype=torch.float64))

    def evaluate(self, model: nn.Module, idx: Tensor | None = None) -> Evaluation:
        x = model.x
        f = 0.5 * x @ self.A @ x
        g = 0.5 * x @ self.B @ x - 10.0
        return Evaluation(x, f, g.reshape(1))

    def sampler(self, seed: int) -> BatchSampler:
        return BatchSampler(torch.zeros(1, dtype=torch.long), 1, seed)

    @torch.no_grad()
    def project_(self, params: list[Tensor]) -> None:
        params[0].copy_(_project_l1(params[0], self.radius))


def simple_example() -> SimpleExample:
    return SimpleExample()


class MeanScoreGap(ConstraintFamily):
    """G(θ) = mean_{g=1} f_θ(x) − mean_{g=0} f_θ(x) − ε: linear in θ for a linear model."""

    name = "mean_score_gap"

    def gap(self, scores, data):
        means = data.by_group.means(scores)
        return (means[1] - means[0]).reshape(1)


@dataclass
class Reference:
    problem: Problem
    objective: float
    constraint: float
    theta: np.ndarray


def convex_problem(n: int = 300, d: int = 3, tolerance: float = 0.05, seed: int = 0) -> Reference:
    """A planted problem whose constraint is active at the optimum, solved by SLSQP."""
    rng = np.random.default_rng(seed)
    group = (rng.random(n) < 0.4).astype(np.int64)
    X = rng.normal(size=(n, d)) + group[:, None] * np.array([0.8] + [0.0] * (d - 1))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0.4).astype(np.float64)
    problem = Problem(X=torch.tensor(X), y=torch.tensor(y), group=torch.tensor(group), group_names=["a", "b"],
                      constraints=[MeanScoreGap(tolerance)], device="cpu")
    Xb = np.hstack([X, np.ones((n, 1))])
    s = 2 * y - 1
    diff = Xb[group == 1].mean(0) - Xb[group == 0].mean(0)

    def F(w):
        return np.logaddexp(0.0, -s * (Xb @ w)).mean()

    def dF(w):
        return -(Xb * (s / (1 + np.exp(s * (Xb @ w))))[:, None]).mean(0)

    res = minimize(F, np.zeros(d + 1), jac=dF, method="SLSQP", tol=1e-12,
                   constraints=[{"type": "ineq", "fun": lambda w: tolerance - diff @ w, "jac": lambda w: -diff}])
    assert res.success, res.message
    return Reference(problem, float(res.fun), float(diff @ res.x - tolerance), res.x)
