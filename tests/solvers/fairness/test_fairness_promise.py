"""solvers.fairness.promise: certifiability before training (the predicted width of a zero-gap model's bound against
the real bound, and the rows it says are needed), and the promise sentence of each case."""
from __future__ import annotations

import numpy as np

from solvers.fairness.guarantee import guarantee_bounds
from solvers.fairness.promise import CERTIFIABLE_SHARE, certification, promise_sentence, zero_gap_width
from solvers.spec import ConstraintSpec


def _families(tol: float):
    return [ConstraintSpec(type="demographic_parity", tolerance=tol).build()]


def _rows(n: int, shares=(0.8, 0.2), base=(0.3, 0.2), seed: int = 0):
    rng = np.random.default_rng(seed)
    g = rng.choice(len(shares), n, p=shares)
    y = (rng.random(n) < np.asarray(base)[g]).astype(np.int64)
    return y, g


def test_the_predicted_width_is_the_real_bound_of_a_model_without_gap():
    """A validation split whose predictions select each group at one common rate (gap 0): the Seldonian upper bound
    (guarantee_bounds, Clopper–Pearson, two tests) is within 25 % of the predicted w₀."""
    y_tr, g_tr = _rows(20_000, base=(0.25, 0.25))
    n_val = 6000
    level = 1.0 - 0.05 / (2 * 2 * 1)
    w0 = zero_gap_width("demographic_parity", y_tr, g_tr, 2, n_val, level)
    y_val, g_val = _rows(n_val, base=(0.25, 0.25), seed=1)
    logits = np.full(n_val, -1.0)
    for k in range(2):   # exactly a quarter of each group selected: the validation gap is 0 (up to one row)
        rows = np.flatnonzero(g_val == k)
        logits[rows[: len(rows) // 4]] = 1.0
    bound = guarantee_bounds(_families(0.05), y_val, logits, g_val, ["a", "b"], confidence=0.95, n_tests=2)[0]
    assert 0.75 * w0 <= bound <= 1.25 * w0


def test_a_tolerance_below_the_zero_gap_width_is_not_certifiable_and_the_rows_needed_would_make_it_so():
    y, g = _rows(3000)
    families = _families(0.02)
    check = certification(families, [0.02], y, g, 2, validation_rows=1500, total_rows=5000, confidence=0.95,
                          max_tests=2)
    assert not check["certifiable"] and check["rows_needed"] > 5000
    assert check["zero_gap_width"][0] > CERTIFIABLE_SHARE * 0.02
    n = check["rows_needed"]   # the same table, n rows split alike: the training rows and the validation scale up
    bigger = certification(families, [0.02], y, g, 2, validation_rows=1500 * n / 5000, total_rows=n,
                           confidence=0.95, max_tests=2)
    assert bigger["certifiable"] and bigger["zero_gap_width"][0] <= CERTIFIABLE_SHARE * 0.02 + 1e-9
    loose = certification(families, [0.2], y, g, 2, validation_rows=1500, total_rows=5000, confidence=0.95,
                          max_tests=2)
    assert loose["certifiable"] and loose["rows_needed"] is None


def test_the_sentence_says_what_is_promised_and_what_is_not():
    dp = [("demographic_parity", 0.05)]
    met = promise_sentence(dp, {"confidence": 0.95, "met": True}, None)
    assert met["kind"] == "guarantee" and "With probability ≥ 95 %" in met["sentence"] and "≤ 0.05" in met["sentence"]
    rows = promise_sentence(dp, {"confidence": 0.95, "met": False, "rows_needed": 123456}, None)
    assert rows["kind"] == "not certified" and "123,456 rows" in rows["sentence"]
    margin = {"method": "group_thresholds", "met": True, "margin": {"met": True, "about": "population", "delta": 0.1}}
    estimate = promise_sentence(dp, None, margin)
    assert estimate["kind"] == "estimate" and "90 %" in estimate["sentence"] and "population" in estimate["sentence"]
    unmet = {**margin, "margin": {**margin["margin"], "met": False}}
    assert promise_sentence(dp, None, unmet)["kind"] == "none"
    assert promise_sentence(dp, None, None)["kind"] == "none"
