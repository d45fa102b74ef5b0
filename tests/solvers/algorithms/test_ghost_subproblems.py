"""Stochastic Ghost's exact subproblem solutions for m ≤ 2 rows against the general solvers
(HiGHS for the κ-LP, SLSQP on the QP's dual) on random instances, plus the KKT conditions."""
from __future__ import annotations

import numpy as np
import pytest

from solvers.algorithms.ghost import (_qp_active_set, _qp_dual_slsqp, kappa_lp_closed_form, kappa_lp_highs,
                                      solve_direction_qp)


def _instance(rng, m, n, shift):
    A = rng.normal(size=(m, n)) * rng.choice([0.01, 1.0, 5.0])
    A[:, rng.random(n) < 0.2] = 0.0  # zero columns: kinks at u_j = 0 and v_j = 0
    return rng.normal(size=m) + shift, A


@pytest.mark.parametrize("m", [1, 2])
def test_kappa_lp_closed_form_matches_highs(m):
    rng = np.random.default_rng(m)
    for trial in range(60):
        n = int(rng.integers(1, 40))
        c, A = _instance(rng, m, n, rng.choice([-1.0, 0.5, 3.0]))
        rho = float(rng.choice([0.05, 0.8, 2.0]))
        exact, ref = kappa_lp_closed_form(c, A, rho), kappa_lp_highs(c, A, rho)
        assert exact == pytest.approx(ref, abs=1e-7, rel=1e-7), (trial, exact, ref)


def test_kappa_lp_closed_form_two_sided_rows():
    # the benchmark's two-sided loss gap: a_2 = −a_1, c_2 = −c_1 − 2δ
    rng = np.random.default_rng(7)
    for _ in range(30):
        a = rng.normal(size=50) * 0.01
        c1 = float(rng.normal()) * 0.05
        c, A = np.array([c1, -c1 - 0.01]), np.stack([a, -a])
        assert kappa_lp_closed_form(c, A, 0.8) == pytest.approx(kappa_lp_highs(c, A, 0.8), abs=1e-9)


@pytest.mark.parametrize("m", [1, 2])
def test_qp_active_set_matches_slsqp_dual_and_kkt(m):
    rng = np.random.default_rng(10 + m)
    solved = 0
    for _ in range(80):
        n = int(rng.integers(2, 30))
        c, A = _instance(rng, m, n, 0.5)
        g = rng.normal(size=n) * rng.choice([0.1, 1.0, 4.0])
        tau, beta, kap = 1.0, float(rng.choice([0.5, 10.0])), 0.1
        h = kap - c
        exact = _qp_active_set(g, A, h, tau, beta)
        if exact is None:  # the box is active at the solution: SLSQP's case
            continue
        solved += 1
        d, lam = exact
        ref_d, _ = _qp_dual_slsqp(g, A, h, tau, beta)
        np.testing.assert_allclose(d, ref_d, atol=1e-6)
        r = A @ d - h
        assert r.max() <= 1e-9 and (lam >= 0).all() and np.abs(lam * r).max() < 1e-8
        np.testing.assert_allclose(tau * d + g + A.T @ lam, 0.0, atol=1e-9)  # stationarity, box inactive
        assert np.abs(d).max() < beta
        d2, lam2 = solve_direction_qp(g, c, A, kap, tau, beta)  # the dispatcher returns the same point
        np.testing.assert_allclose(d2, d, atol=1e-12)
    assert solved > 20


def test_qp_parallel_rows_two_sided():
    # a_2 = −a_1: the pair block is singular, one row is active at a time
    rng = np.random.default_rng(3)
    a, g = rng.normal(size=20), rng.normal(size=20)
    c = np.array([0.3, -0.3 - 0.01])
    A = np.stack([a, -a])
    d, lam = solve_direction_qp(g, c, A, 0.0, 1.0, 10.0)
    ref_d, _ = _qp_dual_slsqp(g, A, 0.0 - c, 1.0, 10.0)
    np.testing.assert_allclose(d, ref_d, atol=1e-6)
    assert (c + A @ d).max() <= 1e-9
