"""solvers.fairness.promise: certifiability before training (the predicted width of a zero-gap model's bound against
the real bound, and the rows it says are needed), and the promise sentence of each case."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.fairness.guarantee import guarantee_bounds
from solvers.fairness.promise import (CERTIFIABLE_SHARE, SAFETY_SHARES, certification, level_z, promise_sentence,
                                     safety_share, shortfall, zero_gap_sd)
from solvers.data.spec import ConstraintSpec


def _families(tol: float):
    return [ConstraintSpec(type="demographic_parity", tolerance=tol).build()]


def _rows(n: int, shares=(0.8, 0.2), base=(0.3, 0.2), seed: int = 0):
    rng = np.random.default_rng(seed)
    g = rng.choice(len(shares), n, p=shares)
    y = (rng.random(n) < np.asarray(base)[g]).astype(np.int64)
    return y, g


def test_the_predicted_width_is_the_real_bound_of_a_model_without_gap():
    """A validation split whose predictions select each group at one common rate (gap 0): the Seldonian upper bound
    (guarantee_bounds, the joint bound, one test) is within 25 % of the predicted w₀ = z σ_s."""
    y_tr, g_tr = _rows(20_000, base=(0.25, 0.25))
    n_val = 6000
    w0 = level_z(0.95, 1, 1) * zero_gap_sd("demographic_parity", y_tr, g_tr, 2, n_val)
    y_val, g_val = _rows(n_val, base=(0.25, 0.25), seed=1)
    logits = np.full(n_val, -1.0)
    for k in range(2):   # exactly a quarter of each group selected: the validation gap is 0 (up to one row)
        rows = np.flatnonzero(g_val == k)
        logits[rows[: len(rows) // 4]] = 1.0
    bound = guarantee_bounds(_families(0.05), y_val, logits, g_val, ["a", "b"], confidence=0.95, n_tests=1)[0]
    assert 0.75 * w0 <= bound <= 1.25 * w0


def test_a_tolerance_below_the_shortfall_is_not_certifiable_and_the_rows_needed_would_make_it_so():
    y, g = _rows(3000)
    families = _families(0.02)
    check = certification(families, [0.02], y, g, 2, validation_rows=1500, total_rows=5000, confidence=0.95,
                          max_tests=1, candidate_rows=1500)
    assert not check["certifiable"] and check["rows_needed"] > 5000
    assert check["shortfall"][0] > CERTIFIABLE_SHARE * 0.02 and check["shortfall"][0] > check["zero_gap_width"][0]
    n = check["rows_needed"]   # the same table, n rows split alike: the candidate and the safety rows scale up
    bigger = certification(families, [0.02], y, g, 2, validation_rows=1500 * n / 5000, total_rows=n,
                           confidence=0.95, max_tests=1, candidate_rows=1500 * n / 5000)
    assert bigger["certifiable"] and bigger["shortfall"][0] <= CERTIFIABLE_SHARE * 0.02 + 1e-9
    loose = certification(families, [0.2], y, g, 2, validation_rows=1500, total_rows=5000, confidence=0.95,
                          max_tests=1, candidate_rows=1500)
    assert loose["certifiable"] and loose["rows_needed"] is None


def test_the_safety_share_grows_for_small_groups_and_tight_tolerances_and_shrinks_with_rows():
    z = level_z(0.95, 1, 1)
    y, g = _rows(20_000, shares=(0.67, 0.33), base=(0.31, 0.11))
    sd = zero_gap_sd("demographic_parity", y, g, 2, 18_000)
    loose = safety_share([sd], [0.05], z, 0.33)
    tight = safety_share([sd], [0.02], z, 0.33)
    many = safety_share([sd / np.sqrt(50)], [0.05], z, 0.33)     # 50 times the rows
    y_small, g_small = _rows(20_000, shares=(0.95, 0.05), base=(0.31, 0.11))
    small = safety_share([zero_gap_sd("demographic_parity", y_small, g_small, 2, 18_000)], [0.05], z, 0.33)
    assert many < loose <= tight and loose <= small
    assert SAFETY_SHARES[0] <= many and tight <= SAFETY_SHARES[-1]
    assert safety_share([None], [0.05], z, 0.3) == 0.3          # no closed form: the spec's share


@pytest.mark.parametrize("groups,rates,eps", [((2000, 4000), (0.15, 0.20), 0.05), ((300, 2700), (0.4, 0.4), 0.15)])
def test_a_candidate_aimed_at_the_tolerance_minus_the_shortfall_passes_the_test_about_pass_target_of_the_time(
        groups, rates, eps):
    """Simulation of the loop's aim: a rule fitted to gap τ = ε − s on c candidate rows has the population gap
    τ − e_c (e_c the candidate rows' sampling error of the gap); the safety split of v rows is drawn from it and
    tested with the joint bound. The pass rate is PASS_TARGET up to the normal approximation (≥ 0.85), and a
    candidate aimed at ε − w (the bound's width alone) passes only about half the time."""
    from solvers.fairness.confidence import rate_gap_upper_joint

    rng = np.random.default_rng(3)
    v = np.asarray(groups, dtype=np.int64)             # safety rows per group; as many candidate rows
    p = np.asarray(rates)
    z = level_z(0.95, 1, 1)
    sd = float(np.sqrt((p * (1 - p) / v).sum()))
    draws = 2000
    passes = {}
    for name, aim in (("shortfall", eps - shortfall(sd, v.sum(), v.sum(), z)), ("width", eps - z * sd)):
        ok = 0
        for _ in range(draws):   # a simulation of the test, not a hot path
            e_c = rng.normal(0.0, sd)                 # the candidate rows' error of the fitted gap
            gap = max(aim - e_c, 0.0)                 # the rule's population gap
            truth = np.array([[p[0] + gap, p[0]]])
            hits = rng.binomial(v[None, :], truth)
            ok += rate_gap_upper_joint(hits, v[None, :], 0.05) <= eps
        passes[name] = ok / draws
    assert passes["shortfall"] >= 0.85
    assert 0.3 <= passes["width"] <= 0.7


def test_the_sentence_says_what_is_promised_and_what_is_not():
    dp = [("demographic_parity", 0.05)]
    met = promise_sentence(dp, {"confidence": 0.95, "met": True}, None)
    assert met["kind"] == "guarantee" and "With probability ≥ 95 %" in met["sentence"] and "≤ 0.05" in met["sentence"]
    rows = promise_sentence(dp, {"confidence": 0.95, "met": False, "rows_needed": 123456}, None)
    assert rows["kind"] == "not certified" and "123,456 rows" in rows["sentence"]
    margin = {"method": "group_thresholds", "met": True, "margin": {"met": True, "about": "population", "delta": 0.1}}
    estimate = promise_sentence(dp, None, margin)
    assert estimate["kind"] == "estimate" and "90 %" in estimate["sentence"] and "population" in estimate["sentence"]
    assert "about 90 %" in estimate["sentence"] and "≥" not in estimate["sentence"].split("≤")[0]   # not a bound
    unmet = {**margin, "margin": {**margin["margin"], "met": False, "bound": 0.437,
                                  "tolerances": {"demographic_parity": 0.005}}}
    kept_not = promise_sentence(dp, None, unmet)
    assert kept_not["kind"] == "not kept" and "44 %" in kept_not["sentence"] and "≤ 0.005" in kept_not["sentence"]
    assert "up to" not in kept_not["sentence"] and "sampling error alone" in kept_not["sentence"]   # not a bound
    assert promise_sentence(dp, None, {"method": "group_thresholds", "margin": None})["kind"] == "none"
    assert promise_sentence(dp, None, None)["kind"] == "none"
