r"""FairGBM (Cruz et al., ICLR 2023): gradient boosting under fairness constraints, one round per iteration.

Problem: min_f F(f) = (1/N) Σ_i log(1 + e^{−ỹ_i f(x_i)})  s.t.  c_j(f) ≤ 0, with c the exact group-rate
constraints of :mod:`solvers.models.gbdt.proxy_rates` (each group's rate against the worst group's: demographic parity,
FNR parity = equal opportunity, and FPR + FNR parity = equalized odds, any number of groups), c̃ their
cross-entropy proxies (that module states the proxies, their derivatives and where they depart from FairGBM's
implementation, with the measurements behind each choice).

Proxy-Lagrangian (the paper's, after Cotter et al. 2019): the model player descends

    L̃(f, λ) = F(f) + Σ_j λ_j c̃_j(f),   c̃ the cross-entropy proxies of the rates,

the multiplier player ascends on the EXACT constraints. Round k (the paper's training loop: descent, then ascent):

1. g_i = N ∂L̃/∂f_i (f_k, λ_k) = (σ(f_i) − y_i) + N Σ_j λ_j ∂c̃_j/∂f_i,
   h_i = σ(f_i)(1 − σ(f_i)) + max(0, N Σ_j λ_j ∂²c̃_j/∂f_i²)   (``hessian="lagrangian"``, the default: the
   diagonal Hessian of L̃, ≥ 0 anyway with the default convex proxies; ``"loss"``: the first term alone, as
   FairGBM's implementation, which adds no constraint Hessian);
2. one LightGBM tree h_k fitted to (g, h) through the custom objective (``Booster.update(fobj=...)``):
   f_{k+1} = f_k + η h_k (η the model's ``learning_rate``); the first round starts from the log-odds of the
   base rate, as LightGBM's binary objective does (it is added to the first tree);
3. λ_{k+1} = max(0, λ_k + η_λ / (G_r − 1) · c(f_{k+1}))  (projected ascent on the exact violations, one λ per rate
   kind r and ordered pair of groups; G_r the groups with rows in the kind's rows; λ_0 = ``init_multipliers``).

Scale: the tree's gradient is N ∇L̃, so the loss part is LightGBM's own per-row binary gradient and λ weighs the
MEAN loss: λ_j = 1 trades one unit of mean log-loss for one unit of rate gap. FairGBM's implementation adds the
proxy gradient λ_j ∂r̃/∂f_i (a 1/n_g factor) to the per-row loss gradient, which puts its λ on the scale of the
summed loss (N times ours). We keep FairGBM's default step 0.1 (the paper tunes it per data set): on the mean scale
it is large enough to move the rates within the 200 default rounds (figures in docs/architecture.md, "Measured
choices").

Many groups (a few large groups and some of about 1 % of the rows; five planted groups of 45 / 25 / 15 / 10 / 5 %
in ``tests/solvers/algorithms/test_fair_boosting.unequal_groups``). FairGBM's implementation (loss Hessian, the step
η_λ on every pair, the last iterate) can diverge there (figures in docs/architecture.md, "Measured choices"). Three
departures, each optional (``hessian="loss"``, ``output="last"``; ``multiplier_learning_rate`` × (G − 1) restores
the per-pair step):

* the Hessian: a row of group g carries the proxy gradient N Λ_g φ'/n_g, about 120 Λ_g for Adult's smallest race
  against 1.2 Λ_g for its largest, while σ(f)(1 − σ(f)) does not grow with it, so the leaf's Newton step
  −Σg/Σh flips a small group's whole rate in one round and the multipliers chase the swings. With the proxies'
  Hessian the same N Λ_g/n_g factor enters h and the step near the threshold stays O(1): alone, it removes the
  divergence;
* the ascent step: with pairs, a group's weight Λ_g = Σ_b λ_{(g,b)} sums G_r − 1 multipliers, so a fixed η_λ
  makes it grow up to G_r − 1 times faster than the paper's single λ_g; sharing the step keeps the group's
  growth within the paper's (Σ_a c_{(a,b)} / (G_r − 1) ≤ c_b = max_a c_{(a,b)}); two groups: unchanged.
  (FairGBM's implementation, one λ_b per group against the group of largest proxy rate, weighs that group's rows
  by (G − 1) Σ_b λ_b, a factor G − 1 beyond the paper's gradient; we do not copy it.) It keeps the output's exact
  gap bounded on the strong planted groups;
* the output rule: the proxy game's guarantee holds for a randomised mixture of the iterates (Cotter et al.
  2019); FairGBM returns the final ensemble. Rows that the trees move together (a leaf of a small group) flip
  that group's exact rate in steps, and the last iterate can cycle between a gap near ε and one far above it.
  ``output="best"`` keeps the ensemble's trees up to the best round of the second half of the ``n_estimators`` rounds on the training rows: exactly feasible with the least
  F, else the least max exact violation (Cotter et al.'s "best iterate"; boosting's iterates are prefixes of one
  ensemble, so it is a truncation). The first half is the game's transient, whose early, near-constant iterates
  are trivially feasible; a solve stopped before the second half keeps its last round.

Each round's record: F and the constraint families' own surrogate rows G (as for every solver), and in ``duals``,
per rate kind and group b (:meth:`ProxyRates.names` order), the paper's per-group values: ``lambda`` Σ_a λ_{(a,b)},
``constraint_exact`` max_a c_{(a,b)}(f_{k+1}) and ``constraint_proxy`` max_a c̃_{(a,b)}(f_{k+1}); the output round's
record is the one at the model's tree count (a fresh solve). Cancel, time limit and checkpoints act between rounds
(:mod:`.boosting`); λ and the output candidate are tensors, so a checkpoint carries them.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.special import expit

from ..models.gbdt.proxy_rates import ProxyRates
from ..formats.lightgbm_text import load_booster
from ..problem import Evaluation
from .base import ALGORITHMS
from .boosting import Boosting


@ALGORITHMS.implements("fair_boosting")
class FairBoosting(Boosting):
    objective = None  # LightGBM's custom objective: :meth:`gradients`

    def _params(self):
        return {**super()._params(), "max_delta_step": self.config.max_delta_step}

    def start(self, current: Evaluation) -> None:
        problem = self.problem
        self.rates = ProxyRates.build(problem.constraints, problem.y.cpu().numpy(), problem.group.cpu().numpy(),
                                      len(problem.group_names), self.config.proxy_margin, self.config.proxy)
        self.multipliers = torch.full((self.rates.size,), float(self.config.init_multipliers), dtype=torch.float64)
        self.steps = self.config.multiplier_learning_rate * self.rates.per_pair_share()  # η_λ / (G_r − 1) per pair
        # the output rule's candidate: (trees, max exact violation, F) of the best round so far; trees −1 = none
        self.best = torch.tensor([-1.0, np.inf, np.inf], dtype=torch.float64)

    def gradients(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g, h) = N ∇ and the trees' Hessian of L̃(·, λ_k) at the training scores (the module docstring)."""
        p = expit(scores)
        n = len(scores)
        grad_c, hess_c = self.rates.derivatives(scores, self.multipliers.numpy())
        grad = (p - self.problem.y.double().cpu().numpy()) + n * grad_c
        hess = p * (1.0 - p)
        if self.config.hessian == "lagrangian":
            hess = hess + np.maximum(n * hess_c, 0.0)
        return grad, hess

    def step(self, k: int, current: Evaluation):
        evaluation, _ = super().step(k, current)
        f = self.trainer.scores
        violations = self.rates.exact_pairs(f)
        self.multipliers = torch.clamp(self.multipliers + torch.from_numpy(self.steps * violations), min=0.0)
        self._last = (self.rates.exact(f), self.rates.proxy_values(f))
        if 2 * self.rounds > self.model.spec.n_estimators:  # candidates: the second half of the rounds
            self._consider(max(0.0, float(violations.max(initial=0.0))), float(evaluation.objective))
        return evaluation, self.duals()

    def _consider(self, violation: float, objective: float) -> None:
        """Keep this round as the output candidate when it ranks first: feasible (no exact violation on the
        training rows) with the least F, else the least max violation (the round's trees: the model's count)."""
        rank = lambda v, f: (0.0, f) if v <= 0 else (1.0, v)  # noqa: E731
        _, best_violation, best_objective = self.best.tolist()
        if rank(violation, objective) < rank(best_violation, best_objective):
            self.best = torch.tensor([float(self.model.num_trees), violation, objective], dtype=torch.float64)

    def finish(self) -> Evaluation | None:
        """The output rule (module docstring): ``output="best"`` keeps the first trees up to the best round."""
        trees = int(self.best[0])
        if self.config.output != "best" or trees < 0 or trees >= self.model.num_trees:
            return None
        text = self.model.booster.model_to_string(num_iteration=trees)
        self.model.booster = load_booster(text.encode(), self.model.n_features)
        scores = np.asarray(self.model.booster.predict(self.problem.X.cpu().numpy(), raw_score=True,
                                                       num_threads=self._params()["num_threads"]), dtype=float)
        self._last = (self.rates.exact(scores), self.rates.proxy_values(scores))
        return self.evaluate_scores(scores)

    def duals(self) -> dict[str, torch.Tensor] | None:
        exact, proxy = getattr(self, "_last", (None, None))
        out = {"lambda": torch.from_numpy(self.rates.per_group(self.multipliers.numpy()))}
        if exact is not None:
            out.update(constraint_exact=torch.from_numpy(exact), constraint_proxy=torch.from_numpy(proxy))
        return out
