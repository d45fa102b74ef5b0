r"""The regularisation (penalty) baseline of He, Huang, Yao & Lin, App. G.4, for partial
statistical parity (problem (114)) and partial demographic parity (problem (119)):

    (114)  min_{w, θ} f0(w) + (2λ/(β − α)) max_{p∈Î} max_k |(1/n_k) Σ_i σ(h_w(ξ_i^k) − θ_p) − p|,
    (119)  min_w     f0(w) + λ max_{k≠k'} |φ_k(S_k) − φ_{k'}(S_{k'})|,   φ_k(S) = [min{S,β} − min{S,α}]/(β − α),

solved by plain subgradient descent (G.4.2): w ← w − η (f0' + penalty'), the last iterate reported.

Both penalties are the κ = 0 rows of the constraint families: for each ``partial_*`` family of the
problem a twin with tolerance 0 (same interval, grid size, surrogate, threshold) is built, and

* pSP: its rows are L_q − S_{q,k} and S_{q,k} − U_q with L = U = p at κ = 0, so max(rows) =
  max_{p,k} |S_{p,k} − p|, scaled by 2/|I_k| (= 2/(β − α)); the twin's own θ_p (grid
  p_j = α + j(β − α)/|Î|, j = 0..|Î|−1, ⊂ [α, β) as (114) asks) are optimised with w;
* pDP: its rows are φ_k(S_k) − φ_{k'}(S_{k'}) over ordered pairs, so max(rows) = the |·| of (119).

The κ of the problem's constraints is ignored by the penalty (it still drives the reported
constraint values); the trade-off is set by λ (``lam``). Defaults from the paper: λ grid
(a9a pSP {0.2, 0.3, 0.37, 1}, pDP {0.13, 0.17, 0.2, 0.23, 1}) — ``lam`` = 0.3; step η chosen in
{5e-4, 1e-3, 2e-3, 5e-3} by validation accuracy after 10⁴ iterations — ``lr`` = 1e-3; iterations
T·K (the IDCA budget) = the run's ``max_iterations``. Full batch; the linear model uses the
score-space fast path of :mod:`solvers.algorithms.linear_scores` when applicable.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm, gradient
from .linear_scores import LinearScores


def penalty_twins(problem) -> list:
    """κ = 0 copies of the problem's partial families, bound to the same groups and interval."""
    from ..constraints.partial import PartialDemographicParity, PartialStatisticalParity

    twins = []
    for family in problem.constraints:
        if not isinstance(family, (PartialStatisticalParity, PartialDemographicParity)):
            raise ValueError(f"partial_regularized: constraint {family.name!r} is not a partial-fairness family")
        twin = type(family)(0.0, family.config.model_copy(update={"interval": family.resolved_interval}))
        twin.bind(family.group_names, family.group_counts)
        twins.append(twin)
    return twins


def penalty(twins, scores: Tensor, data) -> Tensor:
    """Σ over families of the (114)/(119) penalty term divided by λ."""
    from ..constraints.partial import PartialStatisticalParity

    total = scores.new_zeros(())
    for twin in twins:
        rows = twin.surrogate(scores, data)
        if isinstance(twin, PartialStatisticalParity):
            width = float(twin.intervals.width.mean())
            total = total + 2.0 / width * rows.max()
        else:
            total = total + rows.max()
    return total


@ALGORITHMS.implements("partial_regularized")
class PartialRegularized(Algorithm):
    def start(self, current: Evaluation) -> None:
        self.twins = penalty_twins(self.problem)
        self.params = self.params + [p for t in self.twins for p in t.init_parameters(self.problem.device)]
        self.fast = None
        if (self.config.fast_linear and self.config.batch_size is None
                and LinearScores.applicable(self.model, getattr(self.problem, "model_type", ""))):
            self.fast = LinearScores(self.model, self.problem)

    def step(self, k: int, current: Evaluation):
        problem = self.problem
        if self.fast is not None:
            scores, y, data = self.fast.scores(), self.fast.y, self.fast.data
        else:
            idx = self.batch()
            X = problem.X if idx is None else problem.X[idx]
            y = problem.y if idx is None else problem.y[idx]
            data = problem.data if idx is None else problem.data.subset(idx)
            scores = self.model(X)
        loss = problem.objective(scores, y) + self.config.lam * penalty(self.twins, scores, data)
        grads = gradient(loss, self.params)
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-self.config.lr)
            problem.project_(self.params)
            if self.fast is None:
                return problem.evaluate(self.model), None
            h = self.fast.scores()  # the new iterate, in the fast path's sample order (sums only)
            return Evaluation(h, problem.objective(h, self.fast.y), problem.constraint_values_on(h, self.fast.data)), None
