r"""FairGBM (Cruz et al., ICLR 2023): gradient boosting under fairness constraints, one round per iteration.

Problem: min_f F(f) = (1/N) Σ_i log(1 + e^{−ỹ_i f(x_i)})  s.t.  c_j(f) ≤ 0, with c the exact group-rate
constraints of :mod:`solvers.gbdt.proxy_rates` (each group's rate against the worst group's: demographic parity,
FNR parity = equal opportunity, and FPR + FNR parity = equalized odds, any number of groups), c̃ their
cross-entropy proxies (that module states the proxies, their derivatives and where they depart from FairGBM's
implementation, with the measurements behind each choice).

Proxy-Lagrangian (the paper's, after Cotter et al. 2019): the model player descends

    L̃(f, λ) = F(f) + Σ_j λ_j c̃_j(f),   c̃ the cross-entropy proxies of the rates,

the multiplier player ascends on the EXACT constraints. Round k (the paper's training loop: descent, then ascent):

1. g_i = N ∂L̃/∂f_i (f_k, λ_k) = (σ(f_i) − y_i) + N Σ_j λ_j ∂c̃_j/∂f_i,  h_i = σ(f_i)(1 − σ(f_i))
   (``hessian="loss"``: FairGBM's implementation adds no constraint Hessian; ``"lagrangian"`` adds
   N Σ_j λ_j ∂²c̃_j/∂f_i², clipped at 0 from below; with the default convex proxies it is ≥ 0 anyway);
2. one LightGBM tree h_k fitted to (g, h) through the custom objective (``Booster.update(fobj=...)``):
   f_{k+1} = f_k + η h_k (η the model's ``learning_rate``); the first round starts from the log-odds of the
   base rate, as LightGBM's binary objective does (it is added to the first tree);
3. λ_{k+1} = max(0, λ_k + η_λ c(f_{k+1}))  (projected ascent on the exact violations, one λ per rate kind and
   ordered pair of groups; λ_0 = ``init_multipliers``).

Scale: the tree's gradient is N ∇L̃, so the loss part is LightGBM's own per-row binary gradient and λ weighs the
MEAN loss: λ_j = 1 trades one unit of mean log-loss for one unit of rate gap. FairGBM's implementation adds the
proxy gradient λ_j ∂r̃/∂f_i (a 1/n_g factor) to the per-row loss gradient, which puts its λ on the scale of the
summed loss (N times ours). We keep FairGBM's default step 0.1 (the paper tunes it per data set): on the mean scale
it is large enough to move the rates within the 200 default rounds (Adult, sex, DP ≤ 0.02: train gap 0.021 after
200 rounds; 1.0 gives 0.021 too and swings more on ``planted_table``). Output rule: the last iterate (FairGBM
returns the final ensemble).

Each round's record: F and the constraint families' own surrogate rows G (as for every solver), and in ``duals``,
per rate kind and group b (:meth:`ProxyRates.names` order), the paper's per-group values: ``lambda`` Σ_a λ_{(a,b)},
``constraint_exact`` max_a c_{(a,b)}(f_{k+1}) and ``constraint_proxy`` max_a c̃_{(a,b)}(f_{k+1}). Cancel, time
limit and checkpoints act between rounds (:mod:`.boosting`); λ is a tensor, so a checkpoint carries it.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.special import expit

from ..gbdt.proxy_rates import ProxyRates
from ..lightgbm_text import load_booster
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
        self.labels = problem.y.double().cpu().numpy()
        self.steps = self.config.multiplier_learning_rate * self.rates.per_pair_share()  # η_λ / (G_r − 1) per pair
        # the output rule's candidate: (trees, max exact violation, F) of the best round so far; trees −1 = none
        self.best = torch.tensor([-1.0, np.inf, np.inf], dtype=torch.float64)

    def gradients(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g, h) = N ∇ and the trees' Hessian of L̃(·, λ_k) at the training scores (the module docstring)."""
        p = expit(scores)
        n = len(scores)
        grad_c, hess_c = self.rates.derivatives(scores, self.multipliers.numpy())
        grad = (p - self.labels) + n * grad_c
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
