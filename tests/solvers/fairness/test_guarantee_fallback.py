"""solvers.fairness.guarantee, an unverifiable tolerance under ``when_unverifiable="tightest"``: the fallback to
aiming at ε when the tightest aim gives a near-trivial model or costs more than MODEST_COST train accuracy.

Each case calls :func:`seldonian` on generated rows where the branch is forced by the data: a perfect linear
score x (positives x ∈ (1, 2), negatives x ∈ (−2, −1)) with the group one-hot among the features, so the exact
threshold step of :mod:`solvers.fairness.enforce` moves the groups' rates into a band, and the rows' base rates
fix what each band costs. The continuation's deadline has passed (no time left), so no surrogate solve runs and
each candidate is the threshold step's deterministic output. A validation split of 10 rows makes every
tolerance here unverifiable (the bound's predicted width exceeds it)."""
import time

import numpy as np
import pytest
import torch

from solvers.api import predict_scores
from solvers.fairness.continuation import Continuation
from solvers.fairness.exact import exact_gaps
from solvers.fairness.guarantee import MODEST_COST, TIGHTEST_ROWS, seldonian
from solvers.fairness.report import split_trivial_reasons
from solvers.models import linear
from solvers.spec import ConstraintSpec

NAMES = ["a", "b"]
VAL = 5  # validation rows per group: every tolerance here is unverifiable


def _rows(sizes, positives, seed):
    """(X, y, group): group g has sizes[g] rows, positives[g] of them labelled 1; X = [x, 1{a}, 1{b}]."""
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(2), sizes)
    y = np.concatenate([np.arange(n) < p for n, p in zip(sizes, positives)]).astype(int)
    x = (2 * y - 1) * (1.0 + rng.random(len(y)))  # distinct scores, perfectly separating
    X = np.column_stack([x, group == 0, group == 1]).astype(np.float32)
    return X, y, group


def _perfect_model():
    model = linear(3)
    with torch.no_grad():
        model.net.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]]))
    return model


def _scores(model, X):
    return predict_scores(model, X, torch.device("cpu"))


def _accuracy(model, X, y):
    return float(np.mean((_scores(model, X) > 0) == (y == 1)))


def _guarantee(eps, sizes, positives):
    families = [ConstraintSpec(type="demographic_parity", tolerance=eps).build()]

    def no_solve(*_):
        raise AssertionError("no time is left: the continuation must not solve")

    expired = Continuation(families=families, make_problem=lambda f: f, solve=no_solve, max_iterations=10,
                           deadline=time.monotonic() - 1.0)
    train = _rows(sizes, positives, seed=0)
    val = _rows([VAL, VAL], [positives[0] * VAL // sizes[0], positives[1] * VAL // sizes[1]], seed=1)
    start_accuracy = _accuracy(_perfect_model(), *train[:2])
    model, enforcement, g = seldonian(_perfect_model(), expired, 0.95, 3, train, val, NAMES, _scores,
                                      when_unverifiable="tightest")
    assert not g["met"] and not g["verifiable"] and g["tests"] == 0
    assert g["predicted_width"][0] >= eps  # unverifiable by the data, not by assumption
    return model, enforcement, g, train, families, start_accuracy


def _train_model(candidate_targets, sizes, positives, eps):
    """The candidate the loop builds for one target: the perfect model, threshold-enforced on train."""
    from solvers.fairness.enforce import enforce_exact

    families = [ConstraintSpec(type="demographic_parity", tolerance=eps).build()]
    expired = Continuation(families=families, make_problem=lambda f: f, solve=None, max_iterations=10,
                           deadline=time.monotonic() - 1.0)
    X, y, group = _rows(sizes, positives, seed=0)
    model, _ = enforce_exact(_perfect_model(), expired, candidate_targets, X, y, group, NAMES,
                             lambda m: _scores(m, X))
    return model


def test_a_tightest_aim_that_costs_train_accuracy_falls_back_to_the_tolerance():
    """Base rates 0.8 / 0.2 (train DP 0.6 of the perfect model), ε = 0.2: the tightest band (2 / 1000 rows)
    costs about 0.6 / 2 of train accuracy, the band at ε about 0.4 / 2, so the tightest aim is about 0.1 less
    accurate than the model aimed at ε: aimed at ε, and the reason and message say why."""
    eps, sizes, positives = 0.2, [1000, 1000], [800, 200]
    model, enforcement, g, (X, y, group), families, start = _guarantee(eps, sizes, positives)
    tight = TIGHTEST_ROWS / 1000
    assert [c["targets"] for c in g["candidates"]] == [[pytest.approx(tight)], [pytest.approx(eps)]]
    assert not any(c["near_trivial"] for c in g["candidates"])
    tight_accuracy = _accuracy(_train_model([tight], sizes, positives, eps), X, y)
    cost = _accuracy(model, X, y) - tight_accuracy
    assert start - tight_accuracy > MODEST_COST and cost > MODEST_COST  # the branch is forced by the data
    assert g["aim"]["targets"] == [pytest.approx(eps)]
    assert g["aim"]["reason"] == f"unverifiable: tolerance (the tightest aim {tight:.3f} was {cost:.3f} less " \
                                 "accurate on train)"
    assert (f"so the model was aimed at the tolerance ({eps:.3f}): the tightest aim {tight:.3f} was {cost:.3f} less "
            "accurate on train") in g["message"]
    # the model returned is the one aimed at ε: its exact train gap within ε, well above the tightest aim
    gap = exact_gaps(families, y, _scores(model, X), group, NAMES)[0]
    assert tight < gap <= eps and enforcement["met"] and enforcement["targets"] == [pytest.approx(eps)]


def test_a_tightest_aim_at_a_modest_cost_is_kept():
    """The same rows at ε = 0.03: the tightest aim is far less accurate than the solver's model (a second
    candidate is built), but within MODEST_COST of the model aimed at ε, so the tightest one is returned."""
    eps, sizes, positives = 0.03, [1000, 1000], [800, 200]
    model, enforcement, g, (X, y, group), families, start = _guarantee(eps, sizes, positives)
    tight = TIGHTEST_ROWS / 1000
    assert len(g["candidates"]) == 2 and g["candidates"][1]["targets"] == [pytest.approx(eps)]
    loose_accuracy = _accuracy(_train_model([eps], sizes, positives, eps), X, y)
    accuracy = _accuracy(model, X, y)
    assert start - accuracy > MODEST_COST and 0 < loose_accuracy - accuracy <= MODEST_COST
    assert g["aim"] == {"targets": [pytest.approx(tight)], "reason": "unverifiable: tightest", "fitted_on": "train"}
    assert "the smallest exact train gap the training split resolves (0.002)" in g["message"]
    assert exact_gaps(families, y, _scores(model, X), group, NAMES)[0] <= tight
    assert enforcement["targets"] == [pytest.approx(tight)]


def test_a_near_trivial_tightest_aim_falls_back_to_the_tolerance():
    """Group a: 400 rows, 380 positive; group b: 1600 rows, 20 positive (rate 0.0125). The tightest band
    (2 / 400 rows) is cheapest at group b's own rate, which leaves group a about 7 positive predictions: balanced
    accuracy about 0.53, near-trivial. The band at ε = 0.3 is not, so the model aimed at ε is returned."""
    eps, sizes, positives = 0.3, [400, 1600], [380, 20]
    model, enforcement, g, (X, y, group), families, start = _guarantee(eps, sizes, positives)
    tight = TIGHTEST_ROWS / 400
    first, second = g["candidates"]
    assert first["targets"] == [pytest.approx(tight)] and any("balanced accuracy" in r for r in first["near_trivial"])
    assert second["targets"] == [pytest.approx(eps)] and not second["near_trivial"]
    assert g["aim"] == {"targets": [pytest.approx(eps)], "fitted_on": "train",
                        "reason": f"unverifiable: tolerance (the tightest aim {tight:.3f} was near-trivial)"}
    assert (f"so the model was aimed at the tolerance ({eps:.3f}): the tightest aim {tight:.3f} was "
            "near-trivial") in g["message"]
    assert "1 near-trivial candidate(s) were not accepted" in g["message"]
    assert not split_trivial_reasons(y, _scores(model, X), group, NAMES)
    gap = exact_gaps(families, y, _scores(model, X), group, NAMES)[0]
    assert tight < gap <= eps and enforcement["targets"] == [pytest.approx(eps)]
