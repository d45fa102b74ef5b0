r"""The reductions approach to fair classification (Agarwal, Beygelzimer, Dudík, Langford & Wallach, ICML 2018)
through fairlearn's ExponentiatedGradient and GridSearch (used, not re-implemented).

**Problem.** Over randomised classifiers Q ∈ Δ(H),

    min_Q err(Q)   s.t.   M μ(Q) ≤ c,

with μ(Q) the vector of conditional moments (demographic parity: μ_a(Q) = E[h(X) | A = a] and
μ_*(Q) = E[h(X)]; equal opportunity: the same on Y = 1; equalized odds: on Y = 1 and on Y = 0) and the
rows of M μ ≤ c the constraints ±(μ_a − μ_*) ≤ c (fairlearn's ``difference_bound`` c, one pair per group:
more than two groups are handled as they are). c is the spec's tolerance ε. NB: fairlearn bounds each
group's distance to the overall rate; FairSolve's exact metric is the spread max_a μ_a − min_a μ_a (≤ 2c).
With ``exact_enforcement`` (the spec's default) the job then tightens c while the exact train spread
exceeds ε, rerunning the reduction (:mod:`solvers.fairness.enforce`).

**The Lagrangian game.** L(Q, λ) = err(Q) + λᵀ(M μ(Q) − c), λ ∈ R₊^{|K|}, ‖λ‖₁ ≤ B = 1/eps. The λ-player runs
exponentiated gradient: θ_{t+1} = θ_t + η (M μ(h_t) − c), λ_{t+1,k} = B e^{θ_k} / (1 + Σ_j e^{θ_j}); the
Q-player best-responds with h_t = argmin_h L(h, λ_t), which is a **cost-sensitive classification** — one
oracle call: since L(h, λ) = Σ_i [c_i^1 h(X_i) + c_i^0 (1 − h(X_i))] + const, the oracle fits our model type
to the relabelled rows Y_i' = 1{c_i^0 > c_i^1} with weights |c_i^0 − c_i^1| (fairlearn's ``signed_weights``).
The run stops when the duality gap of (Q̂_t, λ̂_t) (averages over the iterations, or the linear programme's
saddle point over the classifiers found so far) is below ν, after at least 5 iterations, or after ``max_iter``.
The output is the **randomised classifier Q̂ = Σ_k w_k h_k** of the best gap; for a ν-approximate saddle point,
Theorem 1 gives err(Q̂) ≤ err(Q) + 2ν for every feasible Q and M μ(Q̂) ≤ c + (1 + 2ν)/B. GridSearch (§3.4) instead best-responds to each λ on a grid and returns the single
h of least (1 − w)·err + w·max violation.

**FairSolve's wrapping.** The oracle is our model type: ``linear`` = scikit-learn's LogisticRegression on the
encoder's features (C and max_iter from the config; fairlearn's own defaults for every other parameter).
Each oracle call is one iteration of the trajectory, recorded while fairlearn runs (:mod:`solvers.oracle_stream`:
fairlearn has no callback, so it runs on a thread and reports through its estimator and moment): the model is
the call's classifier h_t alone, F and G are the problem's objective and constraint rows at its score, the duals
are the λ it responded to. The last iteration is the returned Q (:mod:`solvers.randomized`: score
logit(Σ_k w_k 1{h_k(x) = 1}), prediction 1{p_Q > ½}). Stopped before fairlearn finished (cancel, time limit,
``max_iterations``), the model is the last call's h_t: fairlearn's Q exists only at the end of its fit.

Checkpoints: fairlearn's state lives in its fit's locals and cannot be captured, but its fit is deterministic
(the oracle's lbfgs included), so a checkpoint holds the number of oracle calls the trajectory has
(``oracle_calls``) and a resumed run reruns the fit, passes over that many calls without recording them, and
continues the trajectory where it stopped, with the same result as the uninterrupted run.
"""
from __future__ import annotations

import numpy as np
import torch

from ..oracle_stream import OracleEstimator, OracleStream, probed
from ..problem import Evaluation
from ..randomized import RandomizedClassifier
from .base import ALGORITHMS, Algorithm

#: FairSolve constraint type -> fairlearn moment class name (fairlearn.reductions)
MOMENTS = {"demographic_parity": "DemographicParity", "equal_opportunity": "TruePositiveRateParity",
           "equalized_odds": "EqualizedOdds"}
FAIRLEARN_EPS = 0.01   # ExponentiatedGradient's default eps, used when the tolerance is 0


def linear_parts(classifier) -> tuple[np.ndarray | None, float]:
    """(w, b) with classifier.predict(x) = 1{wᵀx + b > 0}; w None for a constant classifier (fairlearn's
    DummyClassifier: b = +1 for the constant 1, −1 for 0)."""
    classifier = getattr(classifier, "estimator_", classifier)   # an OracleEstimator holds the fitted one
    if hasattr(classifier, "coef_"):
        if list(classifier.classes_) != [0, 1]:
            raise ValueError(f"the oracle's classes are {list(classifier.classes_)}, not [0, 1]")
        return np.asarray(classifier.coef_, dtype=np.float64).reshape(-1), float(classifier.intercept_[0])
    return None, 1.0 if int(classifier.constant) == 1 else -1.0


def randomized_linear(classifiers, weights, n_features: int) -> RandomizedClassifier:
    """Q = Σ_k w_k h_k over the classifiers with w_k > 0."""
    keep = [(c, float(w)) for c, w in zip(classifiers, weights) if w > 0]
    parts = [linear_parts(c) for c, _ in keep]
    coefs = np.stack([np.zeros(n_features) if w is None else w for w, _ in parts])
    return RandomizedClassifier.of_linear(coefs, np.array([b for _, b in parts]), np.array([w for _, w in keep]))


def fairlearn_output(fitter) -> tuple[list, np.ndarray]:
    """(classifiers h_k, weights w_k) of a fitted ExponentiatedGradient (``predictors_``, ``weights_``) or
    GridSearch (its ``best_idx_`` predictor, weight 1)."""
    if hasattr(fitter, "weights_"):
        index = list(fitter.predictors_.index)
        return [fitter.predictors_[i] for i in index], fitter.weights_.reindex(index).to_numpy(dtype=np.float64)
    return [fitter.predictors_[fitter.best_idx_]], np.ones(1)


@ALGORITHMS.implements("reductions")
class Reductions(Algorithm):
    needs_autograd = False

    def start(self, current: Evaluation) -> None:
        problem, config = self.problem, self.config
        if len(problem.constraints) != 1 or problem.constraints[0].name not in MOMENTS:
            raise ValueError(f"reductions takes exactly one constraint of type {', '.join(MOMENTS)}")
        if getattr(self.model, "ball", None) is not None:
            raise ValueError("reductions fits scikit-learn's LogisticRegression, which has no ball constraint: "
                             "remove model.ball")
        self.stream = OracleStream()
        self.stream.start(self.fitter(), problem.X.cpu().numpy(), problem.y.cpu().numpy().astype(np.int64),
                          sensitive_features=problem.group.cpu().numpy())
        self.params = []
        self.oracle_calls = 0   # recorded so far (a checkpoint's count: a resumed run passes over as many)
        self.model.net = RandomizedClassifier.empty(0, problem.n_features).to(problem.device)

    def fitter(self):
        """fairlearn's ExponentiatedGradient or GridSearch over :meth:`estimator`, reporting to ``self.stream``."""
        import fairlearn.reductions as reductions

        config, family = self.config, self.problem.constraints[0]
        moment = probed(getattr(reductions, MOMENTS[family.name]), self.stream, difference_bound=family.tolerance)
        oracle = OracleEstimator(self.estimator(), self.stream)
        if config.method == "grid_search":
            return reductions.GridSearch(oracle, moment, constraint_weight=config.constraint_weight,
                                         grid_size=config.grid_size, grid_limit=config.grid_limit)
        eps = config.eps or (family.tolerance if family.tolerance > 0 else FAIRLEARN_EPS)
        return reductions.ExponentiatedGradient(oracle, moment, eps=eps, max_iter=config.max_iter, nu=config.nu,
                                                eta0=config.eta0, run_linprog_step=config.run_linprog_step)

    def estimator(self):
        """The oracle's model: the spec's model type as a scikit-learn classifier."""
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.config.C, max_iter=self.config.estimator_max_iter)

    def step(self, k: int, current: Evaluation):
        while self.stream.taken < self.oracle_calls:   # resumed: the calls before the checkpoint, again
            self.stream.next()
        kind, payload, lambda_vec = self.stream.next()
        if kind == "error":
            raise payload
        duals = None
        if kind == "oracle":
            self.oracle_calls += 1
            net = randomized_linear([payload], [1.0], self.problem.n_features)
            duals = {"lambda": torch.tensor(np.asarray(lambda_vec, dtype=np.float64))}
        else:   # "done": fairlearn's Q
            self.fitted = payload
            net = randomized_linear(*fairlearn_output(payload), self.problem.n_features)
            self.converged = True
        self.model.net = net.to(self.problem.device)
        return self.problem.evaluate(self.model), duals

    def finish(self) -> Evaluation | None:
        if not self.converged:   # stopped by the driver: end fairlearn's fit; the model stays the last h_t
            self.stream.stop()
        return None

    def samples_per_step(self) -> int:
        return self.problem.n_samples
