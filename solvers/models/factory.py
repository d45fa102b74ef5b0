"""Model factories f_θ: R^d → R (a score; predict y = 1 when f_θ(x) > 0), and the
feasible set Θ of the linear model.

* ``linear``: f_θ(x) = wᵀx + b, initialised at θ_0 = 0 (deterministic; the PLADA
  paper's linear experiments are convex-in-θ logistic regressions where a zero start
  is the natural choice; the notes suggest θ_0 = 0). Optionally constrained to a ball
  Θ = {(w, b): ‖w‖_p ≤ r}, p ∈ {1, 2} (the IPC paper trains in {‖x‖_1 ≤ 20}; PLADA
  assumes a compact Θ). The ball bounds the weight vector w only; the bias b is free.
  θ_0 = 0 lies in every ball.
* ``mlp``: x → [Linear → activation] × len(hidden) → Linear(·, 1), PyTorch's default
  initialisation drawn from the solver's seeded generator.
* ``gbdt``: gradient-boosted trees on LightGBM (:mod:`solvers.models.gbdt`), no torch parameters; trained by the
  boosting solvers only.

Algorithms keep iterates in Θ by calling :func:`project_` after every step
(Proj_Θ of PLADA step (9) and IPC Algorithms 2–3); it is a no-op for unconstrained models.
The projections are exact Euclidean projections, vectorised over leading dimensions.
All parameters are float32.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

ModelFactory = Callable[[int], nn.Module]
SCORE_ROWS = 65_536  # rows scored at once outside autograd: bounds an MLP's activations to this many rows


def scores_in_blocks(model: nn.Module, X: Tensor, device: torch.device | None = None) -> Tensor:
    """f_θ(x) of every row of ``X``, :data:`SCORE_ROWS` rows at a time (each block moved to ``device`` first when
    given): for scoring outside autograd, where the blocks' activations are freed one after the other, so memory
    beyond X and the (n,) scores is O(SCORE_ROWS · width) whatever n. A loop over row blocks, not samples."""
    if X.shape[0] <= SCORE_ROWS:
        return model(X if device is None else X.to(device))
    return torch.cat([model(block if device is None else block.to(device)) for block in X.split(SCORE_ROWS)])

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh}


class ScoreModel(nn.Module):
    """Wraps a network with one output unit and returns scores of shape (n,).

    ``ball`` / ``radius``: the feasible set of a linear model's weights (None = R^d);
    :meth:`project_` maps the weights onto it in place.
    """

    def __init__(self, net: nn.Module, ball: str | None = None, radius: float | None = None) -> None:
        super().__init__()
        self.net = net
        if (ball is None) != (radius is None):
            raise ValueError("ball and radius go together")
        if ball is not None and ball not in ("l1", "l2"):
            raise ValueError(f"unknown ball {ball!r}; known: l1, l2")
        if radius is not None and not radius > 0:
            raise ValueError("radius must be > 0")
        self.ball = ball
        self.radius = None if radius is None else float(radius)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)

    @torch.no_grad()
    def project_(self) -> "ScoreModel":
        if self.ball is not None:
            weight = self.net.weight  # (1, d), linear models only
            weight.copy_(project_ball(weight.double(), self.ball, self.radius))  # float64: no cancellation
        return self


def project_l2_ball(v: Tensor, radius: float) -> Tensor:
    """argmin_{‖w‖_2 ≤ r} ‖w − v‖_2 = v · min(1, r/‖v‖_2), row-wise over the last dimension."""
    norm = torch.linalg.vector_norm(v, ord=2, dim=-1, keepdim=True)
    return v * (radius / norm.clamp_min(torch.finfo(v.dtype).tiny)).clamp(max=1.0)


def project_l1_ball(v: Tensor, radius: float) -> Tensor:
    """argmin_{‖w‖_1 ≤ r} ‖w − v‖_2, row-wise over the last dimension (Duchi et al. 2008, Fig. 1).

    For ‖v‖_1 > r: with μ = |v| sorted decreasingly and ρ = max{j : μ_j − (Σ_{k≤j} μ_k − r)/j > 0},
    θ = (Σ_{k≤ρ} μ_k − r)/ρ and w = sign(v) · max(|v| − θ, 0). Otherwise w = v. O(d log d),
    no Python loop (batched rows are handled by one sort).
    """
    if radius <= 0:
        raise ValueError("radius must be > 0")
    a = v.abs()
    mu = torch.sort(a, dim=-1, descending=True).values
    css = mu.cumsum(-1) - radius
    j = torch.arange(1, v.shape[-1] + 1, device=v.device, dtype=v.dtype)
    cond = mu - css / j > 0
    rho = (cond * j).amax(-1, keepdim=True).clamp_min(1)           # largest j with cond (cond holds at j=1)
    theta = css.gather(-1, rho.long() - 1) / rho
    w = torch.sign(v) * (a - theta).clamp_min(0.0)
    inside = a.sum(-1, keepdim=True) <= radius
    return torch.where(inside, v, w)


def project_ball(v: Tensor, ball: str, radius: float) -> Tensor:
    if ball == "l2":
        return project_l2_ball(v, radius)
    if ball == "l1":
        return project_l1_ball(v, radius)
    raise ValueError(f"unknown ball {ball!r}; known: l1, l2")


def project_(model: nn.Module, spec=None) -> nn.Module:
    """Project ``model``'s parameters onto its feasible set Θ in place; return the model.

    With ``spec`` (a :class:`~solvers.data.spec.ModelSpec`), its ``ball``/``radius`` are used
    (the weight of the model's final linear layer); otherwise the model's own (a
    :class:`ScoreModel` built by :func:`linear`). Models without a ball are left unchanged.
    """
    if spec is not None and getattr(spec, "ball", None) is not None:
        linear_layer = model.net if isinstance(model, ScoreModel) else model
        if not isinstance(linear_layer, nn.Linear):
            raise ValueError("a ball constraint applies to linear models only")
        with torch.no_grad():
            linear_layer.weight.copy_(project_ball(linear_layer.weight.double(), spec.ball, spec.radius))
        return model
    if isinstance(model, ScoreModel):
        model.project_()
    return model


def ball_domain(spec) -> Callable[[list[Tensor]], None] | None:
    """Π_Θ for :class:`~solvers.problem.Problem`'s ``domain`` from a ModelSpec: projects the
    weight matrix (every 2-D parameter; the linear model's w) onto the spec's ball in place,
    leaving the bias free. None when the spec has no ball."""
    if getattr(spec, "ball", None) is None:
        return None
    ball, radius = spec.ball, float(spec.radius)

    @torch.no_grad()
    def project(params: list[Tensor]) -> None:
        for p in params:
            if p.ndim == 2:
                p.copy_(project_ball(p.double(), ball, radius))

    return project


def linear(n_features: int, ball: str | None = None, radius: float | None = None) -> nn.Module:
    net = nn.Linear(n_features, 1)
    nn.init.zeros_(net.weight)
    nn.init.zeros_(net.bias)
    return ScoreModel(net, ball, radius).float()


def mlp(n_features: int, hidden: list[int] | tuple[int, ...] = (64, 64), activation: str = "relu") -> nn.Module:
    layers: list[nn.Module] = []
    width = n_features
    for h in hidden:
        layers += [nn.Linear(width, h), _ACTIVATIONS[activation]()]
        width = h
    layers.append(nn.Linear(width, 1))
    return ScoreModel(nn.Sequential(*layers)).float()


def model_factory(spec) -> ModelFactory:
    """Factory ``n_features -> nn.Module`` for a :class:`~solvers.data.spec.ModelSpec`."""
    if spec.type == "gbdt":
        from .gbdt import gbdt  # imports LightGBM only when a gbdt model is loaded

        return lambda d: gbdt(d, spec)
    if spec.type == "linear":
        ball, radius = getattr(spec, "ball", None), getattr(spec, "radius", None)
        if ball is None:
            return linear
        return lambda d: linear(d, ball, radius)
    return lambda d: mlp(d, spec.hidden, spec.activation)
