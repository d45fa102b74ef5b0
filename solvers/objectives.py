"""Training objectives F(θ) = (1/N) Σ_i ℓ(f_θ(x_i), y_i), labels y_i ∈ {0,1}.

With ỹ = 2y − 1 ∈ {−1,+1}:

* ``logistic``: ℓ = log(1 + exp(−ỹ f)) (PLADA eq. 16), computed by the fused binary-cross-entropy-with-logits
  kernel (the same function of f and y, in one pass over the samples instead of five for softplus(−ỹ f));
* ``hinge``:    ℓ = [1 − ỹ f]^+ (the loss inside PLADA eq. 18);
* ``bce``:      ℓ = −y log σ(f) − (1−y) log(1−σ(f)), binary cross-entropy on σ(f)
  (the stochastic benchmark's loss). Mathematically identical to ``logistic``;
  computed from the logits for stability and kept as its own name because users ask for it;
* ``truncated_logistic``: ℓ = φ_α(log(1 + exp(−ỹ f))) with φ_α(s) = α log(1 + s/α), α = 2
  (IPC paper, Sec. 5: "truncated logistic loss", Xu et al. 2018). Non-convex, bounded
  growth: ℓ ≈ α log(|f|/α) for very wrong predictions instead of |f|.

Each objective is an :class:`Objective`: calling it gives the mean F,
:meth:`Objective.per_sample` gives the vector (ℓ(f_i, y_i))_i and :meth:`Objective.derivative` the
vector (∂ℓ/∂f (f_i, y_i))_i, with σ the logistic function:

* ``logistic`` / ``bce``: ∂ℓ/∂f = σ(f) − y;
* ``hinge``: ∂ℓ/∂f = −ỹ 1{ỹ f < 1} (0 at the kink, as autograd's ReLU);
* ``truncated_logistic``: ∂ℓ/∂f = (σ(f) − y) / (1 + l/α), l the logistic loss. Constraint families
that need a loss (``loss_gap``, ``intersectional``) use ``per_sample`` so each loss has
ONE definition.

* ``auc_square``: the square surrogate of 1 − AUC (Yao, Lin & Yang, paper (6), f₀ of (10)),

      F(θ) = E[c₁(h(ξ) − h(ξ') − c₂)² | ζ = 1, ζ' = −1] = c₁[(m₊ − m₋ − c₂)² + Var₊ + Var₋]

  computed in O(n): :func:`auc_square_per_sample` returns ℓ_i whose mean is F on the given rows,
  ℓ_i = c₁[(m₊ − m₋ − c₂)² + (n/n₊)(h_i − m₊)² 1{y_i=1} + (n/n₋)(h_i − m₋)² 1{y_i=0}]
  (the class means are those of the same rows), named here with c₁ = c₂ = 1; the ``level_set`` / ``iqrc``
  solvers use the (c₁, c₂) of their ``auc_parity`` constraint for f₀.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F_
from torch import Tensor

PerSampleLoss = Callable[[Tensor, Tensor], Tensor]


def auc_square_per_sample(scores: Tensor, y: Tensor, c1: float = 1.0, c2: float = 1.0) -> Tensor:
    """ℓ_i with mean c₁[(m₊ − m₋ − c₂)² + Var₊ + Var₋]."""
    pos = (y > 0.5).to(scores.dtype)
    neg = 1.0 - pos
    n = scores.new_tensor(float(scores.numel()))
    npos, nneg = pos.sum().clamp_min(1.0), neg.sum().clamp_min(1.0)
    mp, mn = (pos * scores).sum() / npos, (neg * scores).sum() / nneg
    return c1 * ((mp - mn - c2) ** 2 + (n / npos) * pos * (scores - mp) ** 2 + (n / nneg) * neg * (scores - mn) ** 2)


class Objective:
    """F(scores, y) = mean_i ℓ(f_i, y_i); ``per_sample(scores, y)`` = (ℓ(f_i, y_i))_i."""

    def __init__(self, name: str, per_sample: PerSampleLoss, derivative: PerSampleLoss | None = None,
                 doc: str = "") -> None:
        self.name = name
        self._per_sample = per_sample
        self.closed_form_derivative = derivative is not None  # else derivative() raises
        self._derivative = derivative
        self.__doc__ = doc or per_sample.__doc__

    def per_sample(self, scores: Tensor, y: Tensor) -> Tensor:
        return self._per_sample(scores, y)

    def derivative(self, scores: Tensor, y: Tensor) -> Tensor:
        """(∂ℓ/∂f (f_i, y_i))_i."""
        if self._derivative is None:
            raise NotImplementedError(f"objective {self.name!r} has no closed-form derivative")
        return self._derivative(scores, y)

    def __call__(self, scores: Tensor, y: Tensor) -> Tensor:
        return self._per_sample(scores, y).mean()

    def __repr__(self) -> str:
        return f"Objective({self.name!r})"


def _like(y: Tensor, scores: Tensor) -> Tensor:
    """``y`` in the dtype of ``scores`` (no op when it already is)."""
    return y if y.dtype == scores.dtype else y.to(scores.dtype)


def _signed(y: Tensor) -> Tensor:
    return 2.0 * y - 1.0


def logistic_per_sample(scores: Tensor, y: Tensor) -> Tensor:
    """log(1 + exp(−ỹ f)) = −y log σ(f) − (1−y) log(1−σ(f)): :func:`bce_per_sample`'s kernel."""
    return bce_per_sample(scores, y)


def hinge_per_sample(scores: Tensor, y: Tensor) -> Tensor:
    """[1 − ỹ f]^+."""
    return F_.relu(1.0 - _signed(y) * scores)


def bce_per_sample(scores: Tensor, y: Tensor) -> Tensor:
    """−y log σ(f) − (1−y) log(1−σ(f))."""
    return torch.binary_cross_entropy_with_logits(scores, _like(y, scores), None, None, 0)  # 0: no reduction


TRUNCATION_ALPHA = 2.0


def truncated_logistic_per_sample(scores: Tensor, y: Tensor, alpha: float = TRUNCATION_ALPHA) -> Tensor:
    """φ_α(l) = α log(1 + l/α), l = log(1 + exp(−ỹ f)), α = 2 (IPC paper Sec. 5)."""
    return alpha * (logistic_per_sample(scores, y) / alpha).log1p()


def logistic_derivative(scores: Tensor, y: Tensor) -> Tensor:
    """σ(f) − y (of both ``logistic`` and ``bce``)."""
    return torch.sigmoid(scores) - _like(y, scores)


def hinge_derivative(scores: Tensor, y: Tensor) -> Tensor:
    """−ỹ 1{ỹ f < 1}."""
    signed = _signed(_like(y, scores))
    return torch.where(signed * scores < 1.0, -signed, torch.zeros_like(scores))


def truncated_logistic_derivative(scores: Tensor, y: Tensor, alpha: float = TRUNCATION_ALPHA) -> Tensor:
    """(σ(f) − y) / (1 + l/α)."""
    return logistic_derivative(scores, y) / (1.0 + logistic_per_sample(scores, y) / alpha)


logistic = Objective("logistic", logistic_per_sample, logistic_derivative)
hinge = Objective("hinge", hinge_per_sample, hinge_derivative)
bce = Objective("bce", bce_per_sample, logistic_derivative)
truncated_logistic = Objective("truncated_logistic", truncated_logistic_per_sample, truncated_logistic_derivative)

auc_square = Objective("auc_square", auc_square_per_sample)  # the AUC paper's f₀ (:mod:`solvers.objectives`)

OBJECTIVES: dict[str, Objective] = {o.name: o for o in (logistic, hinge, bce, truncated_logistic, auc_square)}


def get_objective(name: str | Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor], Tensor]:
    """The named :class:`Objective`, or a custom callable ``(scores, y) -> scalar`` unchanged."""
    if callable(name):
        return name
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(OBJECTIVES)}") from None


def per_sample_loss(name: str) -> PerSampleLoss:
    """ℓ(f_i, y_i) per sample for a named objective."""
    return get_objective(name).per_sample  # type: ignore[union-attr]
