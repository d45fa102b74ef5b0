"""HighsLP (solvers.fairness.highs_lp) against scipy.optimize.linprog(method="highs"): the same solution, bit for
bit, on the threshold LPs of the margin's search and on random programmes; and its failure on an infeasible one."""
import numpy as np
import pytest
from scipy import sparse
from scipy.optimize import linprog

from solvers.fairness.highs_lp import HighsLP
from solvers.fairness.threshold_lp import _band_rhs, band_tolerances, prepare, solve_thresholds


def _linprog_x(c, A_ub, b_ub, A_eq, b_eq, bounds):
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    assert res.status == 0
    return res.x


@pytest.mark.parametrize("seed,n_groups", [(0, 2), (1, 2), (2, 3), (3, 5)])
def test_the_threshold_lps_of_a_margin_search_are_linprogs_bit_for_bit(seed, n_groups):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2000, 8000))
    g = rng.integers(0, n_groups, n)
    y = (rng.random(n) < 0.2 + 0.1 * g).astype(int)
    s = rng.normal(size=n) + 1.5 * y + 0.2 * g
    prepared = prepare(s, y, g, n_groups, "accuracy", True)
    for families in ([("equalized_odds", 0.05)], [("demographic_parity", 0.03)],
                     [("demographic_parity", 0.1), ("equalized_odds", 0.08)]):
        for share in np.linspace(0.0, 0.9, 8):
            shrunk = [(name, eps * (1 - share)) for name, eps in families]
            bands = band_tolerances(shrunk)
            A_ub, A_eq, c, bounds, _ = prepared.lp(tuple(r for r, _ in bands))
            b_ub = _band_rhs(prepared.points, bands, n_groups)
            b_eq = np.ones(A_eq.shape[0])
            ours = prepared.highs(tuple(r for r, _ in bands)).solve(b_ub)
            np.testing.assert_array_equal(ours, _linprog_x(c, A_ub, b_ub, A_eq, b_eq, bounds))
    sol = solve_thresholds(s, y, g, n_groups, [("equalized_odds", 0.05)], prepared=prepared)   # what a job runs
    assert sol.status == "optimal" and sol.gaps["equalized_odds"] <= 0.05 + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_random_programmes_are_linprogs_bit_for_bit(seed):
    rng = np.random.default_rng(100 + seed)
    n, m_ub, m_eq = int(rng.integers(5, 60)), int(rng.integers(0, 30)), int(rng.integers(1, 4))
    c = rng.normal(size=n)
    A_ub = sparse.random(m_ub, n, density=0.3, random_state=seed, format="csr") if m_ub else None
    A_eq = sparse.csr_matrix(np.abs(rng.normal(size=(m_eq, n))))
    x0 = rng.random(n)                               # a feasible point: the right-hand sides are its values
    b_ub = None if A_ub is None else A_ub @ x0 + rng.random(m_ub)
    b_eq = A_eq @ x0
    bounds = np.column_stack([np.zeros(n), np.where(rng.random(n) < 0.5, np.inf, 2.0)])
    lp = HighsLP(c, A_ub, A_eq, b_eq, bounds)
    np.testing.assert_array_equal(lp.solve(b_ub), _linprog_x(c, A_ub, b_ub, A_eq, b_eq, bounds))
    if b_ub is not None:                             # the same programme again at other right-hand sides
        b2 = b_ub + rng.random(m_ub)
        np.testing.assert_array_equal(lp.solve(b2), _linprog_x(c, A_ub, b2, A_eq, b_eq, bounds))


def test_an_infeasible_programme_is_an_error_not_a_solution():
    lp = HighsLP(np.ones(2), sparse.csr_matrix([[1.0, 1.0]]), sparse.csr_matrix([[1.0, 1.0]]), np.ones(1),
                 np.column_stack([np.zeros(2), np.full(2, np.inf)]))
    with pytest.raises(RuntimeError, match="threshold LP"):
        lp.solve(np.array([0.5]))                    # x1 + x2 ≤ 0.5 and = 1
