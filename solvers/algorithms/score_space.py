r"""Gradients ∇θ [α F(θ) + wᵀ G(θ)] by the chain rule through the scores, without autograd.

F and G of a mini-batch depend on θ only through the scores s = f_θ(x) of one forward pass, so

    ∇θ [α F + wᵀ G] = J_θ(s)ᵀ u,   u = α ∂F/∂s + ∂(wᵀG)/∂s ∈ R^n,

where ∂F/∂s_i = ℓ'(s_i, y_i)/b on the b objective rows (:meth:`solvers.objectives.Objective.derivative`),
∂(wᵀG)/∂s is each constraint family's :meth:`~solvers.constraints.ConstraintFamily.vjp` on the constraint
rows, and J_θ(s)ᵀ u is :meth:`solvers.models.score_net.ScoreNet.pullback`. Every algorithm whose update needs
only such gradients (ALM / SSL-ALM: α = 1, w = y + ρ c; the switching rule: α = 1, w = 0 or α = 0,
w = e_{j*}) evaluates with :func:`score_evaluation` (:class:`ScoreSpaceAlgorithm`) and differentiates with
:func:`weighted_gradient`; an evaluation without a score space (custom model or objective, auxiliary
constraint parameters, a resumed run's first point) falls back to autograd on its graph.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..constraints import FairnessData
from ..objectives import Objective
from ..problem import Evaluation, Problem
from ..models.score_net import ScoreNet
from ..data.sparse_rows import SparseRows, sparse_rows
from .base import gradient


@dataclass
class ScoreSpace:
    """How an evaluation's F and G depend on the scores of one forward pass: F on rows ``[0, b)`` with
    labels ``y``, G on rows ``[start, start + len(data.y))`` with group structure ``data``."""

    problem: Problem
    net: ScoreNet
    tape: list[Tensor]
    scores: Tensor
    b: int
    y: Tensor
    start: int
    data: FairnessData
    rows: SparseRows | None = None  # CSR copies of the forward's X (full batch, linear net): :mod:`solvers.data.sparse_rows`
    labels: Tensor | None = None  # the labels of EVERY row of the forward pass (for :meth:`shared_derivative`)

    def score_gradient(self, alpha: float, w: Tensor | None) -> Tensor:
        """u = α ∂F/∂s + ∂(wᵀG)/∂s over every row of the forward pass (0 on rows neither depends on)."""
        problem, s, b, start = self.problem, self.scores, self.b, self.start
        stop = start + self.data.y.numel()
        if self.labels is not None and b <= start:
            u = self.shared_derivative(alpha, w, stop)
            if u is not None:
                return u
        du_f = problem.objective.derivative(s[:b], self.y) * (alpha / b) if alpha != 0.0 else None
        du_g = None
        families = problem.constraints
        if w is not None and len(families) == 1:
            du_g = families[0].vjp(s if stop - start == s.numel() else s[start:stop], self.data, w)
        elif w is not None:
            part, offset = s[start:stop], 0
            for family in families:
                m = len(family.names)
                vjp = family.vjp(part, self.data, w[offset:offset + m])
                du_g, offset = vjp if du_g is None else du_g + vjp, offset + m
        if start == 0 and stop == b == s.numel():  # F and G on the same rows
            return du_g if du_f is None else du_f if du_g is None else du_f + du_g
        if b == 0 and start == 0 and stop == s.numel() and du_g is not None:  # G alone, on every row
            return du_g
        pieces = [s.new_zeros(b) if du_f is None else du_f, s.new_zeros(start - b),
                  s.new_zeros(stop - start) if du_g is None else du_g, s.new_zeros(s.numel() - stop)]
        return torch.cat([piece for piece in pieces if piece.numel()])

    def shared_derivative(self, alpha: float, w: Tensor | None, stop: int) -> Tensor | None:
        """u when F's rows [0, b) and G's rows [start, stop) are disjoint and G is one family whose loss is the
        objective ℓ with a closed-form ℓ' (``loss_gap`` under the same loss; or no G term, w None): then

            u_i = ℓ'(s_i, y_i) a_i,   a = (α/b on F's rows, the family's score weights on G's rows, 0 elsewhere)

        (:meth:`LossGap.score_weights`): ONE ℓ' over every row and one product instead of a derivative, a VJP and
        zero blocks per part. The same values as the general path. None when it does not apply."""
        problem, s, b, start = self.problem, self.scores, self.b, self.start
        objective = problem.objective
        pieces = [_filled(b, alpha / b if alpha != 0.0 else 0.0, s)] if b else []
        if start > b:
            pieces.append(_filled(start - b, 0.0, s))
        if stop > start:
            if w is None:
                pieces.append(_filled(stop - start, 0.0, s))
            else:
                families = problem.constraints
                weights = getattr(families[0], "score_weights", None) if len(families) == 1 else None
                if weights is None or families[0].loss is not objective:
                    return None
                pieces.append(weights(s if stop - start == s.numel() else s[start:stop], self.data, w))
        if s.numel() > stop:
            pieces.append(_filled(s.numel() - stop, 0.0, s))
        return objective.derivative(s, self.labels) * (torch.cat(pieces) if len(pieces) > 1 else pieces[0])

    def gradient(self, alpha: float, w: Tensor | None) -> list[Tensor]:
        """∇θ [α F + wᵀ G]."""
        return self.net.pullback(self.tape, self.score_gradient(alpha, w), self.rows)


_FILLED: dict = {}


def _filled(n: int, value: float, like: Tensor) -> Tensor:
    """A cached, read-only vector of ``n`` entries equal to ``value`` in ``like``'s dtype and device (the constant
    blocks of :meth:`ScoreSpace.shared_derivative`; never written)."""
    key = (n, value, like.dtype, like.device)
    hit = _FILLED.get(key)
    if hit is None:
        if len(_FILLED) > 256:
            _FILLED.clear()
        hit = _FILLED[key] = torch.full((n,), value, dtype=like.dtype, device=like.device)
    return hit


@dataclass
class SpaceEvaluation(Evaluation):
    """An :class:`Evaluation` computed without graph, with the :class:`ScoreSpace` that differentiates it."""

    space: ScoreSpace | None = None


def score_space_net(algorithm) -> ScoreNet | None:
    """The algorithm's model as a :class:`ScoreNet` when its gradients can be taken in score space: a library
    linear/MLP model, a :class:`Problem` whose objective has a closed-form derivative, and no auxiliary
    (constraint-family) parameters. None otherwise."""
    problem = algorithm.problem
    net = ScoreNet.of(algorithm.model)
    if (net is None or not isinstance(problem, Problem) or not getattr(problem.objective, "closed_form_derivative", False)
            or len(algorithm.params) != len(net.params)):
        return None
    return net


def constraint_values(problem: Problem, scores: Tensor, data: FairnessData) -> Tensor:
    """G on ``scores`` (:meth:`Problem.constraint_values_on`, without its concatenation for one family)."""
    families = problem.constraints
    return families[0].surrogate(scores, data) if len(families) == 1 else problem.constraint_values_on(scores, data)


def score_evaluation(problem: Problem, net: ScoreNet, idx: Tensor | None,
                     data: FairnessData | None = None) -> SpaceEvaluation:
    """:meth:`Problem.evaluate` (F and G on the samples ``idx``, all when None) with a score space; ``data``:
    the batch's group structure when the caller has it (:meth:`FairnessData.run`)."""
    rows = None
    if idx is None:  # the full batch: a linear net's products read the non-zeros of X only, when X is sparse
        X, data = problem.X, problem.data
        rows = sparse_rows(problem) if net.linear else None
    else:
        X, data = problem.X.index_select(0, idx), problem.data.subset(idx) if data is None else data
    y = data.y
    scores, tape = net.forward(X, rows)
    if isinstance(problem.objective, Objective):  # ℓ(f_i, y_i) once, shared with a family whose loss is ℓ
        losses = problem.objective.per_sample(scores, y)
        if idx is not None:  # (a batch's own structure; the shared full-set one keeps no memo)
            data.share_losses(problem.objective, scores, losses)
        objective = losses.mean()
    else:
        objective = problem.objective(scores, y)
    constraints = constraint_values(problem, scores, data)
    space = ScoreSpace(problem, net, tape, scores, scores.numel(), y, 0, data, rows)
    return SpaceEvaluation(scores, objective, constraints, space=space)


class ScoreSpaceAlgorithm:
    """Mixin of an :class:`~solvers.algorithms.base.Algorithm` whose updates use :func:`weighted_gradient`
    only: its evaluations carry a score space whenever :func:`score_space_net` allows one (``self.net``)."""

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        self.net = score_space_net(self)
        self.needs_autograd = self.net is None

    def evaluate(self) -> Evaluation:
        if self.net is None:
            return super().evaluate()
        size, problem = self.config.batch_size, self.problem
        if size is None or size >= problem.n_samples:
            self.last_batch = None
            return score_evaluation(problem, self.net, None)
        self.last_batch, order, start, stop = self.sampler.uniform_run(size)  # as self.batch()
        data = None if order is None else problem.data.run(order, start, stop)
        return score_evaluation(problem, self.net, self.last_batch, data)


def weighted_gradient(current: Evaluation, params: list[Tensor], alpha: float, w: Tensor | None) -> list[Tensor]:
    """∇θ [α F + wᵀ G] at ``current``: in score space when it carries one, else autograd on its graph."""
    space = getattr(current, "space", None)
    if space is not None:
        return space.gradient(alpha, w)
    with torch.enable_grad():  # the evaluation's graph (a resumed run's first point, under a no-grad driver)
        loss = alpha * current.objective if w is None else alpha * current.objective + (w * current.constraints).sum()
        return gradient(loss, params)
