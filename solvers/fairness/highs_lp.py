"""The threshold LP's HiGHS solves without ``scipy.optimize.linprog``'s per-call assembly.

The safety margin's search (:mod:`.threshold_margin`) solves one threshold LP (:mod:`.threshold_lp`) about 57 times
a job for equalized odds, each time with another right-hand side b_ub only. ``linprog(method="highs")`` checks and
copies its inputs on every call, stacks [A_ub; A_eq] into one CSC matrix and replaces the infinities — 1.6 ms of
a call's 2.9 ms on these programmes of a few hundred columns (COMPAS, equalized odds; 0.5 ms of it in HiGHS).
:class:`HighsLP` does that assembly once, exactly as ``scipy.optimize._linprog_highs`` does it (the same COO
copies, the same ``vstack`` and CSC conversion, the same option values), and hands HiGHS the same arrays on every
solve, so HiGHS takes the same path to the same vertex:
``tests/solvers/fairness/test_highs_lp.py`` checks the solutions bit for bit against ``linprog``'s on threshold
LPs and random ones (a SciPy upgrade that changes the assembly fails there, not silently). It calls SciPy's own
wrapper of its bundled HiGHS (``_highs_wrapper``), a private name of the pinned SciPy.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse


class HighsLP:
    """min c·x s.t. A_ub x ≤ b_ub, A_eq x = b_eq, ``bounds`` (n, 2) — solved for any b_ub by :meth:`solve`."""

    def __init__(self, c: np.ndarray, A_ub, A_eq, b_eq: np.ndarray, bounds: np.ndarray) -> None:
        from scipy.optimize._linprog_highs import HighsDebugLevel, ObjSense, _replace_inf, s_c
        from scipy.sparse import csc_array

        n = len(c)
        self.c = np.array(c, dtype=np.float64, copy=True).reshape(-1)
        ub = sparse.coo_array((0, n) if A_ub is None else A_ub, dtype=float, copy=True)
        eq = sparse.coo_array(A_eq, dtype=float, copy=True)
        A = csc_array(sparse.vstack((ub, eq)))
        self.indptr, self.indices, self.data = A.indptr, A.indices, A.data
        self.n_ub = ub.shape[0]
        self.b_eq = np.array(b_eq, dtype=np.float64, copy=True).reshape(-1)
        lb, upper = np.array(bounds, dtype=np.float64, copy=True).T.copy()
        self.lb, self.ub = _replace_inf(lb), _replace_inf(upper)
        self.lhs = _replace_inf(np.concatenate((np.full(self.n_ub, -np.inf), self.b_eq)))
        self.integrality = np.empty(0).astype(np.uint8)
        self.options = {   # linprog(method="highs")'s, every other option at its default (None)
            "presolve": True, "sense": ObjSense.kMinimize, "solver": None, "time_limit": None,
            "highs_debug_level": HighsDebugLevel.kHighsDebugLevelNone, "dual_feasibility_tolerance": None,
            "ipm_optimality_tolerance": None, "log_to_console": False, "mip_max_nodes": None, "output_flag": False,
            "primal_feasibility_tolerance": None, "simplex_dual_edge_weight_strategy": None,
            "simplex_strategy": s_c.SimplexStrategy.kSimplexStrategyDual, "ipm_iteration_limit": None,
            "simplex_iteration_limit": None, "mip_rel_gap": None}

    def solve(self, b_ub: np.ndarray | None) -> np.ndarray:
        """x at the optimum for this b_ub (None: no inequality rows); RuntimeError unless HiGHS proves it optimal."""
        from scipy.optimize._linprog_highs import HighsModelStatus, _highs_wrapper, _replace_inf

        b = np.zeros(0) if b_ub is None else np.array(b_ub, dtype=np.float64, copy=True).reshape(-1)
        rhs = _replace_inf(np.concatenate((b, self.b_eq)))
        res = _highs_wrapper(self.c, self.indptr, self.indices, self.data, self.lhs.copy(), rhs, self.lb.copy(),
                             self.ub.copy(), self.integrality, dict(self.options))
        if res.get("status") != HighsModelStatus.kOptimal or res.get("x") is None:
            raise RuntimeError(f"threshold LP: HiGHS status {res.get('status')}: {res.get('message')}")
        return np.asarray(res["x"])
