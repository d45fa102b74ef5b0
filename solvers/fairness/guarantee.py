r"""High-confidence fairness guarantee in the Seldonian sense (issue item 2): train on the train split,
accept a candidate only if a one-sided upper confidence bound of every constraint on the validation split
is ≤ its tolerance.

**The bound.** Let α = 1 − confidence, R = ``max_tests`` and m the number of constraints. For a candidate
model h the bound U_j(h) of constraint j is the one-sided upper bound of :mod:`.intervals` at level
1 − α/(R m): for a rate gap the Clopper–Pearson construction with a union bound over the 2C one-sided events
of its C defined cells (exact), for a loss / AUC gap the bootstrap quantile (asymptotic). So for a *fixed* h,
P(∃ j: Δ_j(h) > U_j(h)) ≤ α/R, Δ_j(h) the constraint's value on the data distribution.

**The loop.** Candidates h_1, h_2, ..., h_R: h_1 is the solver's model (exactly enforced on train, :mod:`.enforce`);
h_{r+1} continues h_r (warm start) with every training target tightened,

    τ_{r+1} = max(0, min(τ_r − ε/(2R), ε − w_r)),     τ_1 = ε,

w_r = (U_j^train(h_r) − v_j^train(h_r))·√(n_train/n_val) the bound's width predicted from the *training* split
only (the train bound's width rescaled to the validation size), then enforced exactly on train at τ_{r+1}. The
first candidate with U_j(h_r) ≤ ε_j for all j is returned. The sequence h_1..h_R that the loop would produce if
every test failed depends on the training data (and the split sizes) only, never on the validation rows, so by the
union bound over the R tests (for solvers whose output rule selects an iterate on the validation split,
``level_set`` and ``iqrc``, the candidates do see it and the statement is approximate):

    P(the returned model violates some constraint) ≤ Σ_r P(U(h_r) ≤ ε and Δ(h_r) > ε) ≤ R · α/R = α.

If no candidate passes within R tests or the time budget, the job still succeeds with
``guarantee = {"met": false, "best_bound", "message"}`` and the candidate with the smallest worst excess
U_j − ε_j; it is *not* presented as fair (its report shows the bounds and a warning).
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .enforce import enforce_exact
from .exact import exact_gaps, tolerances
from .intervals import upper_bounds


def guarantee_bounds(families: Sequence, y_val: np.ndarray, logits_val: np.ndarray, group_val: np.ndarray,
                     group_names: Sequence[str], confidence: float = 0.95, n_tests: int = 1,
                     seed: int = 0) -> np.ndarray:
    """(m,) one-sided upper bounds on the validation split, simultaneous over the constraints, at level
    1 − (1 − confidence)/n_tests (one of ``n_tests`` candidates tested). A candidate is accepted iff every
    bound ≤ its tolerance; NaN (undefined) never passes."""
    return upper_bounds(families, y_val, logits_val, group_val, group_names,
                        confidence=1.0 - (1.0 - confidence) / n_tests, seed=seed)


def _next_targets(tau: np.ndarray, eps: np.ndarray, width: np.ndarray, rounds: int) -> np.ndarray:
    return np.maximum(0.0, np.minimum(tau - eps / (2 * rounds), eps - np.nan_to_num(width, nan=0.0)))


def seldonian(model, continuation, confidence: float, max_tests: int, train: tuple, val: tuple,
              group_names: Sequence[str], scores: Callable[[Any, np.ndarray], np.ndarray], *, enforce: bool = True,
              seed: int = 0) -> tuple[Any, dict[str, Any] | None, dict[str, Any]]:
    """The loop of the module docstring. ``train`` = (X, y, group), ``val`` = (X, y, group);
    ``scores(model, X)`` the logits. Returns (model, enforcement record of the returned candidate, guarantee)."""
    families = continuation.families
    eps = tolerances(families)
    X_tr, y_tr, g_tr = train
    X_val, y_val, g_val = val
    level = 1.0 - (1.0 - confidence) / max_tests
    tau = eps.copy()
    candidates: list[dict[str, Any]] = []
    best = None  # (worst excess, model, enforcement, bounds)
    enforcement = None
    for r in range(max_tests):
        if r > 0:
            result = continuation.resolve(model, tau)
            if result is None or not all(torch.isfinite(p).all() for p in result.model.parameters()):
                break
            model = result.model
        if enforce:
            model, enforcement = enforce_exact(model, continuation, tau, X_tr, y_tr, g_tr, group_names,
                                               lambda m: scores(m, X_tr))
        bounds = guarantee_bounds(families, y_val, scores(model, X_val), g_val, group_names, confidence,
                                  max_tests, seed)
        excess = float(np.max(np.where(np.isfinite(bounds), bounds - eps, np.inf)))
        candidates.append({"targets": tau.tolist(), "bounds": [_num(b) for b in bounds]})
        if best is None or excess < best[0]:
            best = (excess, copy.deepcopy(model), enforcement, bounds)
        if excess <= 0:
            break
        train_logits = scores(model, X_tr)
        value = exact_gaps(families, y_tr, train_logits, g_tr, group_names)
        width = (upper_bounds(families, y_tr, train_logits, g_tr, group_names, confidence=level, seed=seed) - value)
        tau = _next_targets(tau, eps, width * np.sqrt(len(y_tr) / max(len(y_val), 1)), max_tests)
    excess, model, enforcement, bounds = best
    met = excess <= 0
    pct = f"{100 * confidence:g} %"
    if met:
        message = (f"guarantee met: with probability ≥ {pct} every constraint holds on the data distribution "
                   f"(one-sided bounds on the validation split ≤ tolerance, candidate {len(candidates)} of at most "
                   f"{max_tests} tested)")
    else:
        message = (f"guarantee NOT met: no candidate's {pct} upper bound on the validation split was ≤ the tolerance "
                   f"within {len(candidates)} test(s) and the time budget; the model returned has the smallest "
                   f"bound but carries no guarantee (a tolerance this tight may need more validation data)")
    guarantee = {"confidence": confidence, "met": bool(met), "best_bound": [_num(b) for b in bounds],
                 "tolerances": eps.tolist(), "test_level": level, "max_tests": max_tests, "tests": len(candidates),
                 "candidates": candidates, "message": message}
    return model, enforcement, guarantee


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
