r"""The reductions approach to fair classification (Agarwal, Beygelzimer, Dudík, Langford & Wallach, ICML 2018)
through fairlearn's ExponentiatedGradient and GridSearch (used, not re-implemented).

**Problem.** Over randomised classifiers Q ∈ Δ(H),

    min_Q err(Q)   s.t.   M μ(Q) ≤ c,

with μ(Q) the vector of conditional moments (demographic parity: μ_a(Q) = E[h(X) | A = a] and
μ_*(Q) = E[h(X)]; equal opportunity: the same on Y = 1; equalized odds: on Y = 1 and on Y = 0) and the
rows of M μ ≤ c the constraints ±(μ_a − μ_*) ≤ c (fairlearn's ``difference_bound`` c, one pair per group:
more than two groups are handled as they are). fairlearn bounds each group's distance to the overall rate;
the spec's tolerance ε bounds the spread max_a μ_a − min_a μ_a. With two groups of shares p_a, p_b of the
rate's rows, μ_a − μ_* = p_b (μ_a − μ_b), so the two constraint sets are the same when c = ε · max(p_a, p_b)
(:func:`difference_bound`; equalized odds: the least over its two rates); with more groups no c gives the
same set and c = ε/2 is the largest that implies it (the spread is at most 2c). ``difference_bound`` in the
config overrides it (c = ε is fairlearn's own reading of a tolerance). With ``exact_enforcement`` (the spec's
default) the job tightens ε further while the exact train spread of the returned classifier exceeds ε,
rerunning the reduction (:mod:`solvers.fairness.enforce`).

**The Lagrangian game.** L(Q, λ) = err(Q) + λᵀ(M μ(Q) − c), λ ∈ R₊^{|K|}, ‖λ‖₁ ≤ B = 1/eps. The λ-player runs
exponentiated gradient: θ_{t+1} = θ_t + η (M μ(h_t) − c), λ_{t+1,k} = B e^{θ_k} / (1 + Σ_j e^{θ_j}); the
Q-player best-responds with h_t = argmin_h L(h, λ_t), which is a **cost-sensitive classification** — one
oracle call: since L(h, λ) = Σ_i [c_i^1 h(X_i) + c_i^0 (1 − h(X_i))] + const, the oracle fits our model type
to the relabelled rows Y_i' = 1{c_i^0 > c_i^1} with weights |c_i^0 − c_i^1| (fairlearn's ``signed_weights``).
The run stops when the duality gap of (Q̂_t, λ̂_t) (averages over the iterations, or the linear programme's
saddle point over the classifiers found so far) is below ν, after at least 5 iterations, or after ``max_iter``.
The output is the **randomised classifier Q̂ = Σ_k w_k h_k** of the best gap; for a ν-approximate saddle
point, Theorem 1 gives err(Q̂) ≤ err(Q) + 2ν for every feasible Q and M μ(Q̂) ≤ c + (1 + 2ν)/B (tested on a
small problem). ``eps`` defaults to the tolerance ε (B = 1/ε). GridSearch (§3.4) instead best-responds to each
λ on a grid and returns the single h of least (1 − w)·err + w·max violation.

**FairSolve's wrapping.** The oracle is our model type on the encoder's features: ``linear`` = scikit-learn's
LogisticRegression (C and max_iter from the config), ``gbdt`` = LightGBM's LGBMClassifier with the gbdt model
spec's hyper-parameters, seeded and deterministic (:func:`solvers.models.gbdt.lightgbm_params`); fairlearn's own
defaults for every parameter of the reduction.
Each oracle call is one iteration of the trajectory, recorded while fairlearn runs (:mod:`solvers.algorithms.oracle_stream`:
fairlearn has no callback, so it runs on a thread and reports through its estimator and moment): the model is
the call's classifier h_t alone (the algorithm replaces its model, :class:`~solvers.models.randomized.RandomizedModel`),
F and G are the problem's objective and constraint rows at its score, the duals
are the λ it responded to. The last iteration is the returned Q (:mod:`solvers.models.randomized`: score
logit(Σ_k w_k 1{h_k(x) = 1}), prediction 1{p_Q > ½}; with ``decision="draw"`` one seeded draw per row). Stopped before fairlearn finished (cancel, time limit,
``max_iterations``), the model is the last call's h_t: fairlearn's Q exists only at the end of its fit.

Checkpoints: fairlearn's state lives in its fit's locals and cannot be captured, but its fit is deterministic
(the oracle's lbfgs included), so a checkpoint holds the number of oracle calls the trajectory has
(``oracle_calls``) and a resumed run reruns the fit, passes over that many calls without recording them, and
continues the trajectory where it stopped, with the same result as the uninterrupted run.
"""
from __future__ import annotations

import numpy as np
import torch

from .oracle_stream import OracleEstimator, OracleStream, probed
from ..problem import Evaluation
from ..models.randomized import RandomizedModel, draw_vector, linear_and_trees
from .base import ALGORITHMS, Algorithm

#: FairSolve constraint type -> fairlearn moment class name (fairlearn.reductions)
MOMENTS = {"demographic_parity": "DemographicParity", "equal_opportunity": "TruePositiveRateParity",
           "equalized_odds": "EqualizedOdds"}
FAIRLEARN_EPS = 0.01   # ExponentiatedGradient's default eps, used when the tolerance is 0


def difference_bound(kind: str, tolerance: float, y: np.ndarray, group: np.ndarray) -> float:
    """fairlearn's c for the spread tolerance ε (module docstring): ε · min_e max_g p_{g|e} over the rate's events
    e (DP: all rows; equal opportunity: y = 1; equalized odds: y = 1 and y = 0) when each event has two groups,
    else ε/2."""
    events = {"demographic_parity": [np.ones(len(y), dtype=bool)], "equal_opportunity": [y == 1],
              "equalized_odds": [y == 1, y == 0]}[kind]
    shares = []
    for rows in events:
        counts = np.bincount(group[rows], minlength=int(group.max()) + 1)
        counts = counts[counts > 0]
        if len(counts) > 2:
            return tolerance / 2
        if len(counts) == 2:   # (one group alone: no constraint)
            shares.append(counts.max() / counts.sum())
    return tolerance * float(min(shares, default=1.0))


def _binary(classifier) -> None:
    if list(classifier.classes_) != [0, 1]:
        raise ValueError(f"the oracle's classes are {list(classifier.classes_)}, not [0, 1]")


def component(classifier, n_features: int) -> tuple[str, object]:
    """One h_k of Q for :func:`~solvers.models.randomized.linear_and_trees`: ``("linear", (w, b))`` with
    h(x) = 1{wᵀx + b > 0} (LogisticRegression; fairlearn's constant DummyClassifier: w = 0, b = ±1) or
    ``("tree", GBDTModel)`` with h(x) = 1{F(x) > 0} (LGBMClassifier's booster)."""
    classifier = getattr(classifier, "estimator_", classifier)   # an OracleEstimator holds the fitted one
    if hasattr(classifier, "coef_"):
        _binary(classifier)
        return "linear", (np.asarray(classifier.coef_, dtype=np.float64).reshape(-1), float(classifier.intercept_[0]))
    if hasattr(classifier, "booster_"):
        from ..models.gbdt import gbdt

        _binary(classifier)
        tree = gbdt(n_features)
        tree.booster = classifier.booster_
        return "tree", tree
    return "linear", (np.zeros(n_features), 1.0 if int(classifier.constant) == 1 else -1.0)


def fairlearn_output(fitter) -> tuple[list, np.ndarray]:
    """(classifiers h_k, weights w_k) of a fitted ExponentiatedGradient (``predictors_``, ``weights_``) or
    GridSearch (its ``best_idx_`` predictor, weight 1)."""
    if hasattr(fitter, "weights_"):
        index = list(fitter.predictors_.index)
        return [fitter.predictors_[i] for i in index], fitter.weights_.reindex(index).to_numpy(dtype=np.float64)
    return [fitter.predictors_[fitter.best_idx_]], np.ones(1)


def randomized(classifiers, weights, n_features: int, draw=None) -> RandomizedModel:
    """Q = Σ_k w_k h_k over the classifiers of weight w_k > 0 (``draw``: r of ``decision="draw"``)."""
    kept = [(c, w) for c, w in zip(classifiers, weights) if w > 0]
    return linear_and_trees([component(c, n_features) for c, _ in kept], np.array([w for _, w in kept]), n_features,
                            draw)


@ALGORITHMS.implements("reductions")
class Reductions(Algorithm):
    needs_autograd = False

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        self.seed = seed

    def start(self, current: Evaluation) -> None:
        problem = self.problem
        if len(problem.constraints) != 1 or problem.constraints[0].name not in MOMENTS:
            raise ValueError(f"reductions takes exactly one constraint of type {', '.join(MOMENTS)}")
        self.spec_model = problem.make_model()   # the spec's model: its type's hyper-parameters
        if getattr(self.spec_model, "ball", None) is not None:
            raise ValueError("reductions fits scikit-learn's LogisticRegression, which has no ball constraint: "
                             "remove model.ball")
        self.stream = OracleStream()
        self.stream.start(self.fitter(), problem.X.cpu().numpy(), problem.y.cpu().numpy().astype(np.int64),
                          sensitive_features=problem.group.cpu().numpy())
        self.params = []
        self.oracle_calls = 0   # recorded so far (a checkpoint's count: a resumed run passes over as many)
        self.model = RandomizedModel(problem.n_features).to(problem.device)

    def fitter(self):
        """fairlearn's ExponentiatedGradient or GridSearch over :meth:`estimator`, reporting to ``self.stream``."""
        import fairlearn.reductions as reductions

        config, family = self.config, self.problem.constraints[0]
        bound = config.difference_bound
        if bound is None:
            bound = difference_bound(family.name, family.tolerance, self.problem.y.cpu().numpy(),
                                     self.problem.group.cpu().numpy())
        moment = probed(getattr(reductions, MOMENTS[family.name]), self.stream, difference_bound=bound)
        oracle = OracleEstimator(self.estimator(), self.stream)
        if config.method == "grid_search":
            return reductions.GridSearch(oracle, moment, constraint_weight=config.constraint_weight,
                                         grid_size=config.grid_size, grid_limit=config.grid_limit)
        eps = config.eps or (family.tolerance if family.tolerance > 0 else FAIRLEARN_EPS)
        return reductions.ExponentiatedGradient(oracle, moment, eps=eps, max_iter=config.max_iter, nu=config.nu,
                                                eta0=config.eta0, run_linprog_step=config.run_linprog_step)

    def estimator(self):
        """The oracle: the spec's model type as a scikit-learn classifier. ``linear``: LogisticRegression (C and
        max_iter from the config); ``gbdt``: LightGBM's LGBMClassifier with the gbdt model spec's
        hyper-parameters (:func:`~solvers.models.gbdt.lightgbm_params`, seeded, deterministic)."""
        if self.problem.model_type == "gbdt":
            from lightgbm import LGBMClassifier

            from ..models.gbdt import lightgbm_params

            spec = self.spec_model.spec
            return LGBMClassifier(n_estimators=spec.n_estimators, **lightgbm_params(spec, self.seed))
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.config.C, max_iter=self.config.estimator_max_iter)

    def step(self, k: int, current: Evaluation):
        while self.stream.taken < self.oracle_calls:   # resumed: the calls before the checkpoint, again
            self.stream.next()
        kind, payload, lambda_vec = self.stream.next()
        if kind == "error":
            raise payload
        duals = None
        d = self.problem.n_features
        draw = draw_vector(d, self.seed) if self.config.decision == "draw" else None
        if kind == "oracle":
            self.oracle_calls += 1
            model = randomized([payload], [1.0], d, draw)
            self._keep_training_scores(model, self.stream.scores_of(payload))
            duals = {"lambda": torch.tensor(np.asarray(lambda_vec, dtype=np.float64), device=self.problem.device)}
        else:   # "done": fairlearn's Q
            self.fitted = payload
            model = randomized(*fairlearn_output(payload), d, draw)
            self.converged = True
        self.model = model.to(self.problem.device)
        return self.problem.evaluate(self.model), duals

    def _keep_training_scores(self, model: RandomizedModel, scores: tuple | None) -> None:
        """A LightGBM h_t's raw scores on the training rows, computed once on fairlearn's thread (its own predictions
        of them come from the same pass, :class:`~solvers.algorithms.oracle_stream.OracleEstimator`), answer the trajectory's
        evaluation of h_t there (:meth:`~solvers.models.gbdt.GBDTModel.keep_scores`) when fairlearn's rows are ours."""
        if scores is None or len(model.trees) != 1:
            return
        from ..models.gbdt.tree_scores import KeptScores

        rows, raw = scores
        X = self.problem.X.cpu().numpy()
        if np.shape(rows) != X.shape or not np.array_equal(np.asarray(rows), X, equal_nan=True):
            return
        tree = model.trees[0]
        tree.keep_scores(KeptScores(X).start_from(raw, tree.num_trees))

    def finish(self) -> Evaluation | None:
        if not self.converged:   # stopped by the driver: end fairlearn's fit; the model stays the last h_t
            self.stream.stop()
        return None

    def samples_per_step(self) -> int:
        return self.problem.n_samples
