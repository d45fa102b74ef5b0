r"""SSL-ALM and ALM (Algorithm 2 of Kliachkin, Lepšová, Bareilles, Mareček, "Benchmarking
Stochastic Approximation Algorithms for Fairness-Constrained Training of Deep Neural
Networks"; the method of Huang, Zhang & Alacaoglu 2025, cited there as "JakubReview").

The inequalities G(θ) ≤ 0 become equalities with slacks (Sec. 3.3):

    c(x) = G(θ) + s = 0,   x = (θ, s) ∈ 𝒳 = Θ × R^m_{≥0}.

Augmented Lagrangian and its proximal (smoothed) version (Sec. 3.3):

    L_ρ(x, y)      = F(θ) + yᵀc(x) + (ρ/2)‖c(x)‖²
    K_{ρ,μ}(x,y,z) = L_ρ(x, y) + (μ/2)‖x − z‖²

Stochastic gradient of K (eq. 10), ξ an objective batch, ζ1, ζ2 independent constraint batches:

    𝒢(x, y, z; ξ, ζ1, ζ2) = ∇f(x, ξ) + ∇c(x, ζ1)ᵀy + ρ∇c(x, ζ1)ᵀc(x, ζ2) + μ(x − z)

Iteration k (Algorithm 2, eq. 11):

    y_{k+1} = y_k + η c(x_k, ζ1);      if ‖y_{k+1}‖ ≥ M_y:  y_{k+1} = 0     (dual reset)
    x_{k+1} = proj_𝒳(x_k − τ 𝒢(x_k, y_{k+1}, z_k; ξ, ζ1, ζ2))
    z_{k+1} = z_k + β(x_k − z_k)

ALM is the same iteration with μ = 0 (Sec. 4, "smoothing term removed"); z is then unused.

Choices the paper leaves open (documented here):

* Defaults: the paper's experiment section (Sec. 4, "Algorithms and parameters"): μ = 2, ρ = 1,
  τ = 0.01, η = 0.05, β = 0.5, M_y = 10 (ALM: identical with μ = 0).
* Slack initialisation s_0 = 0, y_0 = 0, z_0 = x_0 (public code of the paper). The slack
  enters c(x) = G(θ) + s, so the dual step is y += η (G(θ_k; ζ1) + s_k) and the s-block of 𝒢 is
  y_{k+1} + ρ(G(θ_k; ζ2) + s_k) + μ(s_k − z^s_k); proj_𝒳 clamps s at 0 and applies Π_Θ
  (``problem.project_``) to θ.
* z update uses x_k (the paper's formula), not x_{k+1}.
* Batches: ξ = ``batch_size`` samples drawn uniformly (epoch permutation); ζ1 and ζ2 are two
  independent constraint batches of ``constraint_batch`` samples per group (``sampler.balanced``;
  "we sample an equal number of data points for every subgroup", Sec. 4), drawn in blocks of
  ``ZETA_BLOCK`` pairs at once (the same distribution; fewer calls). F on ξ and G on ζ1 and ζ2 come
  from ONE forward over the three batches. The paper gives no batch
  size (the public code uses 8, and 8 per group for constraints); ``batch_size=None`` (default) is the
  full-batch deterministic method, where ζ1 = ζ2 = ξ = the training set and one forward suffices.
* Gradients: for the library's linear / MLP models 𝒢_θ = ∇f + ∇c(ζ1)ᵀw is taken in score space
  (:mod:`.score_space`: closed-form ∂/∂scores, hand-written backward of the network, no autograd
  graph); other models, objectives or constraint parameters use autograd on the same quantities.
* The evaluation returned for logging (objective on ξ, constraints on ζ1, at θ_{k+1}) is the one
  the next iteration uses, so logging costs no extra forward.
* Output: the last iterate (the paper's public code takes one extra full-batch step after its loop;
  we do not).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..catalog.stochastic import StochasticConstraintsConfig
from ..constraints import FairnessData
from ..constraints.cells import CellIndex
from ..objectives import Objective
from ..problem import Evaluation, Problem
from .base import ALGORITHMS, Algorithm, project
from .score_space import ScoreSpace, ScoreSpaceAlgorithm, SpaceEvaluation, constraint_values, weighted_gradient


@dataclass
class PairedEvaluation(SpaceEvaluation):
    """An :class:`Evaluation` (F on ξ, G on ζ1, with graph or a score space) plus G on an independent batch ζ2
    drawn with it (no graph), all from ONE forward pass. ``second`` is None when the driver built the evaluation itself
    (a resumed run): the step then draws ζ2 on its own."""

    second: Tensor | None = None


class BalancedConstraintBatches:
    """Mixin: objective on a uniform batch ξ, constraints on a per-group balanced batch ζ.

    Every sub-batch of one iteration goes through the model in ONE forward pass over the concatenated
    indices (the model is a per-sample function f_θ(x_i), so slicing its scores is the same as separate
    passes), and the balanced batches' group structure (``per_group`` samples of every non-empty group, in
    group order) is built once, not per batch.

    The balanced batches are drawn :attr:`BLOCK` at a time (:meth:`next_balanced`: one ``rand`` call, consumed
    in order): the same law as one draw per batch, and the same values as long as no uniform batch opens an
    epoch in between (the shared generator's ``randperm``); the block and its position are algorithm state, so a
    checkpoint resumes it."""

    problem: object
    config: StochasticConstraintsConfig
    #: balanced batches drawn at once (capped at 2^16 indices a block)
    BLOCK = 128
    balanced_block: Tensor = torch.empty(0, 0, dtype=torch.long)   # drawn on first use
    balanced_pos: int = 0

    @property
    def full_batch(self) -> bool:
        size = self.config.batch_size
        return (size is None or size >= self.problem.n_samples) and self.config.constraint_batch is None

    @property
    def per_group(self) -> int:
        return self.config.constraint_batch or self.config.batch_size or self.problem.n_samples

    @property
    def n_nonempty_groups(self) -> int:
        return self._balanced_layout()["groups"].numel()

    def constraint_idx(self) -> Tensor | None:
        """Indices of a fresh constraint batch (:meth:`next_balanced`), None when full batch."""
        return None if self.full_batch else self.next_balanced(1)[0]

    def next_balanced(self, count: int) -> Tensor:
        """The next ``count`` balanced batches as a (count, K·per_group) view of the current block (a new block of
        :meth:`balanced_batches`, a multiple of ``count``, when this one has fewer left)."""
        pos = self.balanced_pos
        if pos + count > self.balanced_block.shape[0]:
            size = self.per_group * self.n_nonempty_groups
            self.balanced_block = self.balanced_batches(count * max(1, min(self.BLOCK, 2 ** 16 // size) // count))
            pos = 0
        self.balanced_pos = pos + count
        return self.balanced_block[pos:pos + count]

    def balanced_batches(self, count: int, per_group: int | None = None) -> Tensor:
        """``count`` consecutive balanced draws of ``per_group`` samples per non-empty group, (count, K·per_group)
        (:meth:`~solvers.data.batching.BatchSampler.balanced_many`)."""
        return self.sampler.balanced_many(count, per_group or self.per_group)

    def _balanced_layout(self) -> dict:
        layout = getattr(self, "_layout_cache", None)
        if layout is None:   # the non-empty groups and, per batch size, the cells of a balanced batch
            layout = {"groups": self.sampler.nonempty_groups, "cells": {}}
            self._layout_cache = layout  # (recomputed identically after a restore)
        return layout

    def balanced_data(self, idx: Tensor, y: Tensor | None = None) -> FairnessData:
        """:meth:`FairnessData.subset` for a balanced batch ``idx``, reusing its fixed by-group cells (``y``: its
        labels when the caller gathered them already)."""
        layout = self._balanced_layout()
        per_group = idx.numel() // layout["groups"].numel()
        cells = layout["cells"].get(per_group)
        if cells is None:
            group = layout["groups"].repeat_interleave(per_group)
            cells = (group, CellIndex.build(group, self.problem.data.n_groups))
            layout["cells"][per_group] = cells
        group, by_group = cells
        y = self.problem.y.index_select(0, idx) if y is None else y
        return FairnessData(y=y, group=group, n_groups=by_group.n_cells, by_group=by_group)

    def fused_evaluate(self, obj_idx: Tensor, con_idx: list[Tensor], with_graph: int) -> tuple[Tensor, Tensor,
                                                                                             list[Tensor]]:
        """One forward over ξ = ``obj_idx`` and the balanced batches ``con_idx``; returns (scores on ξ, F on ξ,
        [G on each constraint batch]); the first ``with_graph`` constraint estimates carry the graph, the
        others are computed without (one forward over every row measured cheaper than a second, graph-free
        forward for the rows that need no gradient)."""
        problem = self.problem
        if not isinstance(problem, Problem):  # a duck-typed problem offers only evaluate(model, idx)
            a = problem.evaluate(self.model, obj_idx)
            with torch.no_grad():
                rest = [problem.evaluate(self.model, idx).constraints for idx in con_idx[with_graph:]]
            return a.scores, a.objective, [problem.evaluate(self.model, idx).constraints
                                           for idx in con_idx[:with_graph]] + rest
        b = obj_idx.numel()
        scores = self.model(problem.X[torch.cat([obj_idx, *con_idx])])
        objective = problem.objective(scores[:b], problem.y[obj_idx])
        values, offset = [], b
        for j, idx in enumerate(con_idx):
            part = scores[offset:offset + idx.numel()]
            offset += idx.numel()
            if j < with_graph:
                values.append(problem.constraint_values_on(part, self.balanced_data(idx)))
            else:
                with torch.no_grad():
                    values.append(problem.constraint_values_on(part.detach(), self.balanced_data(idx)))
        return scores[:b], objective, values

    def split_evaluate(self, obj_idx: Tensor | None, con_idx: Tensor | None) -> Evaluation:
        """F on ``obj_idx`` and G on the balanced batch ``con_idx`` (one forward)."""
        if obj_idx is None and con_idx is None:
            return self.problem.evaluate(self.model, None)
        if obj_idx is None:  # objective on the whole set, constraints on a balanced batch
            obj_idx = torch.arange(self.problem.n_samples, device=self.problem.device)
        scores, objective, (constraints,) = self.fused_evaluate(obj_idx, [con_idx], 1)
        return Evaluation(scores, objective, constraints)

    def evaluate(self) -> Evaluation:
        if self.full_batch:
            return self.problem.evaluate(self.model, None)
        return self.split_evaluate(self.batch(), self.next_balanced(1)[0])

    def space_evaluate(self, obj_idx: Tensor, zeta1: Tensor, zeta2: Tensor | None = None) -> PairedEvaluation:
        """:meth:`fused_evaluate` in score space: one forward over ξ, ζ1 (and ζ2) through ``self.net`` (no graph
        under the driver) and the score space of (F on ξ, G on ζ1) for :func:`weighted_gradient`; G on ζ2 as
        ``second`` (None without ζ2)."""
        problem, b, n1 = self.problem, obj_idx.numel(), zeta1.numel()
        rows = torch.cat([obj_idx, zeta1] if zeta2 is None else [obj_idx, zeta1, zeta2])
        labels = problem.y.index_select(0, rows)            # every row's label at once (views below)
        y, d1 = labels[:b], self.balanced_data(zeta1, labels[b:b + n1])
        scores, tape = self.net.forward(problem.X.index_select(0, rows))
        part1, part2 = scores[b:b + n1], None if zeta2 is None else scores[b + n1:]
        d2 = None if zeta2 is None else self.balanced_data(zeta2, labels[b + n1:])
        if isinstance(problem.objective, Objective):  # ℓ once over every row, shared with a family whose loss is ℓ
            losses = problem.objective.per_sample(scores, labels)
            objective = losses[:b].mean()
            d1.share_losses(problem.objective, part1, losses[b:b + n1])
            if d2 is not None:
                d2.share_losses(problem.objective, part2, losses[b + n1:])
        else:
            objective = problem.objective(scores[:b], y)
        c1 = constraint_values(problem, part1, d1)
        c2 = None if d2 is None else constraint_values(problem, part2, d2)
        space = ScoreSpace(problem, self.net, tape, scores, b, y, b, d1, labels=labels)
        return PairedEvaluation(scores[:b], objective, c1, space=space, second=c2)

    def space_constraints(self, idx: Tensor) -> SpaceEvaluation:
        """G on the balanced batch ``idx`` alone (one forward, no objective) with its score space: the
        evaluation of a fresh constraint batch (SSw's ζ'). ``objective`` is not computed (a 0 placeholder)."""
        data = self.balanced_data(idx)
        scores, tape = self.net.forward(self.problem.X.index_select(0, idx))
        constraints = constraint_values(self.problem, scores, data)
        space = ScoreSpace(self.problem, self.net, tape, scores, 0, data.y, 0, data, labels=data.y)
        return SpaceEvaluation(scores, scores.new_zeros(()), constraints, space=space)


    def constraint_samples(self) -> int:
        return self.n_nonempty_groups * self.per_group


@ALGORITHMS.implements("ssl_alm")
class SSLALM(BalancedConstraintBatches, ScoreSpaceAlgorithm, Algorithm):
    _samples: int | None = None

    @property
    def mu(self) -> float:
        """μ (0 for ALM, whose config has no μ: read once, a missing pydantic field is an exception each time)."""
        mu = self.__dict__.get("_mu")
        if mu is None:
            mu = self._mu = float(getattr(self.config, "mu", 0.0))
        return mu

    def start(self, current: Evaluation) -> None:
        g0 = current.constraints.detach()
        self.s = torch.zeros_like(g0)              # slack s_0 = 0
        self.y = torch.zeros_like(g0)              # y_0 = 0
        if self.mu > 0:                            # z_0 = x_0
            self.z = [p.detach().clone() for p in self.params]
            self.z_s = self.s.clone()

    def evaluate(self) -> Evaluation:
        """F on ξ and G on ζ1 (with graph, or with a score space) and G on ζ2 (no graph), drawn in the order
        ξ, ζ1, ζ2 (the order of a separate ζ2 draw in the step), from one forward pass."""
        if self.full_batch:
            return ScoreSpaceAlgorithm.evaluate(self)
        obj_idx = self.batch()
        if obj_idx is None:
            obj_idx = torch.arange(self.problem.n_samples, device=self.problem.device)
        zeta = self.next_zeta()
        if self.net is not None:
            return self.space_evaluate(obj_idx, zeta[0], zeta[1])
        scores, objective, (c1, c2) = self.fused_evaluate(obj_idx, [zeta[0], zeta[1]], 1)
        return PairedEvaluation(scores, objective, c1, second=c2)

    def next_zeta(self) -> Tensor:
        """The next pair (ζ1, ζ2) as a (2, K·per_group) tensor (:meth:`next_balanced`)."""
        return self.next_balanced(2)

    def step(self, k: int, current: Evaluation):
        c = self.config
        mu, s = self.mu, self.s
        c1 = current.constraints                    # G(θ_k; ζ1)
        # (11) y_{k+1} = y_k + η c(x_k, ζ1), reset to 0 when ‖y_{k+1}‖ ≥ M_y (no host sync)
        y = torch.add(self.y, c1.detach() + s, alpha=c.eta)
        y = torch.where(torch.linalg.vector_norm(y) < c.M_y, y, 0.0)
        # c(x_k, ζ2) on an independent constraint batch (the same full set when full batch)
        if self.full_batch:
            c2 = c1.detach()
        else:
            c2 = getattr(current, "second", None)
            if c2 is None:  # an evaluation the driver made (resume): draw ζ2 now
                idx = self.next_balanced(1)[0]
                with torch.no_grad():
                    c2 = self.problem.evaluate(self.model, idx).constraints
        w = torch.add(y, c2 + s, alpha=c.rho)                    # 𝒢_θ = ∇f + ∇c(ζ1)ᵀ w (+ μ(θ − z)),  𝒢_s = w (+ μ(s − z_s))
        grads = weighted_gradient(current, self.params, 1.0, w)
        x = [*self.params, s]                       # x = (θ, s): one fused update of both blocks
        grads.append(w)
        with torch.no_grad():
            if mu > 0:
                z = [*self.z, self.z_s]
                torch._foreach_add_(grads, torch._foreach_sub(x, z), alpha=mu)
                torch._foreach_lerp_(z, x, c.beta)  # z_{k+1} = z_k + β(x_k − z_k)   (x_k: before the step)
            # x_{k+1} = proj_𝒳(x_k − τ𝒢)
            torch._foreach_add_(x, grads, alpha=-c.tau)
            s.clamp_min_(0.0)
        project(self.problem, self.params)
        self.y = y
        nxt = self.evaluate()
        return nxt, {"y": y, "slack": s}

    def samples_per_step(self) -> int:
        if self._samples is None:  # constant: ξ plus ζ1 and ζ2
            self._samples = self.problem.n_samples if self.full_batch else \
                super().samples_per_step() + 2 * self.constraint_samples()
        return self._samples


@ALGORITHMS.implements("alm")
class ALM(SSLALM):
    """SSL-ALM with μ = 0 (the same implementation; z is never formed)."""

