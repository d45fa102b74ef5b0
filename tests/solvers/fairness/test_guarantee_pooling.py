"""solvers.fairness.guarantee, an unverifiable tolerance: the exact correction fitted on train ∪ validation
(``pooled``) leaves a smaller POPULATION gap than the one fitted on train alone.

Planted disparity with a known population: group g has x ~ N(μ_g, 1) (μ = −0.5, +0.5: the unconstrained rule
1{x > 0} has population DP Φ(0.5) − Φ(−0.5) ≈ 0.38), labels y ~ Bernoulli(σ(2x)), and the model is the linear
score x with the group one-hot among the features, so the threshold step of :mod:`solvers.fairness.enforce`
returns the rule 1{x + b_g > 0} whose population rates are exactly Φ(μ_g + b_g). The continuation's deadline has
passed (no surrogate solve), so each run's candidate is the threshold step's output on the rows it is fitted on.
Fitted on n rows per group, the corrected rates are off by the sampling error of those rows (about
√(2 · p(1 − p)/n)); with as many validation rows as training rows the pooled correction's root mean square
population gap is about √½ of the train-only one's."""
import time

import numpy as np
import torch
from scipy.stats import norm

from solvers.api import predict_scores
from solvers.fairness.continuation import Continuation
from solvers.fairness.guarantee import seldonian
from solvers.models import linear
from solvers.spec import ConstraintSpec

NAMES = ["a", "b"]
MU = np.array([-0.5, 0.5])
PER_GROUP = 600   # rows per group in train and in validation: DP ≤ 0.01 is unverifiable at this size
EPS = 0.01
REPS = 60


def _rows(rng, n):
    group = np.repeat(np.arange(2), n)
    x = MU[group] + rng.standard_normal(2 * n)
    y = (rng.random(2 * n) < 1.0 / (1.0 + np.exp(-2.0 * x))).astype(int)
    return np.column_stack([x, group == 0, group == 1]).astype(np.float32), y, group


def _model():
    model = linear(3)
    with torch.no_grad():
        model.net.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]]))
        model.net.bias.zero_()
    return model


def _scores(model, X):
    return predict_scores(model, X, torch.device("cpu"))


def _population_gap(model) -> float:
    """|Φ(μ_a + b_a) − Φ(μ_b + b_b)| of the returned linear rule f = w·[x, 1{a}, 1{b}] + w₀ (w_x > 0)."""
    w = model.net.weight.detach().double().numpy().reshape(-1)
    w0 = float(model.net.bias.detach().double())
    assert w[0] > 0  # still the score x, shifted per group
    offsets = (w[1:] + w0) / w[0]
    rates = norm.cdf(MU + offsets)
    return float(abs(rates[0] - rates[1]))


def test_the_pooled_correction_lowers_the_population_gap_of_an_unverifiable_tolerance():
    families = [ConstraintSpec(type="demographic_parity", tolerance=EPS).build()]
    expired = Continuation(families=families, make_problem=lambda f: f, solve=None, max_iterations=10,
                           deadline=time.monotonic() - 1.0)
    gaps = {"train": [], "train+validation": []}
    rng = np.random.default_rng(3)
    for _ in range(REPS):
        train, val = _rows(rng, PER_GROUP), _rows(rng, PER_GROUP)
        pooled = tuple(np.concatenate([a, b]) for a, b in zip(train, val))
        for rows in (None, pooled):
            model, enforcement, g = seldonian(_model(), expired, 0.95, 2, train, val, NAMES, _scores, pooled=rows)
            assert not g["met"] and not g["verifiable"] and g["tests"] == 0 and enforcement["met"]
            gaps[g["aim"]["fitted_on"]].append(_population_gap(model))
        assert "not out of sample" in g["message"]  # the last run's (pooled) bound is in sample, and said so
    rms = {way: float(np.sqrt(np.mean(np.square(v)))) for way, v in gaps.items()}
    assert len(gaps["train"]) == len(gaps["train+validation"]) == REPS
    # the unconstrained rule's population gap is 0.38: both corrections remove nearly all of it ...
    assert rms["train"] < 0.05
    # ... and the pooled one leaves about √½ of the train-only one's sampling error (0.9: room for the 60 reps)
    assert rms["train+validation"] < 0.9 * rms["train"]
