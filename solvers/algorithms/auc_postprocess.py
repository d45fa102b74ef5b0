r"""Post-processing baseline (Kallus & Zhou 2019, "xAUC"), as in Yao, Lin & Yang (2023, App. E.2):
train an unconstrained AUC model h (SGD on the square surrogate ``auc_square``), then replace the
scores of the protected group by ω₁h + ω₂ (γ = −1 unchanged) with (ω₁, ω₂) on the grid
ω₁ ∈ {0, 0.05, …, 5}, ω₂ ∈ {−3, −2.9, …, 3} chosen as the feasible point (exact gap ≤ κ) of best AUC on the
validation split (the training set when none; smallest gap when none is feasible). The paper applies it to
Ex. 1 and Ex. 2 only (Ex. 3's tuning "requires true labels"); other variants are allowed here.

The shifted model needs γ at prediction time: it is read from the feature column that equals the
protected-group indicator on the training data (the one-hot of the sensitive column, present when the
sensitive column is a model input — the default). If no such column exists the solve fails with a clear
error. The returned model's ``net`` becomes a :class:`~solvers.models.thresholded.GroupShift` around the trained network.

Reloading: the post-processed state_dict has the keys ``net.base.*`` (the trained network), ``net.omega``
(ω₁, ω₂) and ``net.column`` (the indicator feature), so it does NOT load strictly into a bare
``problem.make_model()``; :func:`~solvers.models.thresholded.restore_model` (``restore_model(problem.make_model(), state)``) rebuilds the
shifted model and loads every other solver's state unchanged.
"""
from __future__ import annotations

import numpy as np
import torch

from ..constraints.auc_parity import AUCParity
from ..objectives import auc_square_per_sample
from ..models.thresholded import GroupShift
from .base import ALGORITHMS, Algorithm, gradient

OMEGA1 = np.round(np.arange(0.0, 5.0 + 1e-9, 0.05), 2)
OMEGA2 = np.round(np.arange(-3.0, 3.0 + 1e-9, 0.1), 1)


def _wins(a: np.ndarray, b_sorted: np.ndarray, shifts: np.ndarray, scale: float) -> np.ndarray:
    """Σ_i Σ_j 1[scale·a_i + s > b_j] + ½·1[=] for every shift s (vector over ``shifts``); ``b_sorted`` sorted.
    O(|shifts| |a| log |b|) by ``searchsorted``; the shifted values are formed as ``scale*a + s`` — the same
    floating-point operations as the post-processed scores, so ties are those of the scores themselves."""
    if a.size == 0 or b_sorted.size == 0:
        return np.zeros(len(shifts))
    q = (scale * a)[None, :] + shifts[:, None]
    lt = np.searchsorted(b_sorted, q, side="left").sum(1)
    le = np.searchsorted(b_sorted, q, side="right").sum(1)
    return lt + 0.5 * (le - lt)


def _shifted_auc(h, prot, in_g, in_gp, w1, shifts) -> np.ndarray | None:
    """AUĈ(G, G') (ties ½, self-pairs excluded, as :func:`solvers.metrics.auc.auc_between`) of the scores
    ω₁h + s on the protected rows and h elsewhere, for every s in ``shifts``; None when no pair exists.

    Pairs inside one group keep their order when ω₁ > 0 (all ties when ω₁ = 0); only cross-group pairs
    depend on the shift: (protected i, other j) wins when ω₁h_i + s > h_j, (other i, protected j) when
    −(ω₁h_j + s) > −h_i (negation is exact in floating point)."""
    ga, gb, gpa, gpb = in_g & prot, in_g & ~prot, in_gp & prot, in_gp & ~prot
    both = int(np.count_nonzero(in_g & in_gp))
    pairs = int(in_g.sum()) * int(in_gp.sum()) - both
    if pairs <= 0:
        return None
    zero = np.zeros(1)
    within_a = (_wins(h[ga], np.sort(h[gpa]), zero, 1.0)[0] if w1 > 0
                else 0.5 * np.count_nonzero(ga) * np.count_nonzero(gpa))
    within_b = _wins(h[gb], np.sort(h[gpb]), zero, 1.0)[0]
    cross = _wins(h[ga], np.sort(h[gpb]), shifts, w1) + _wins(-h[gpa], np.sort(-h[gb]), -shifts, w1)
    return (within_a + within_b + cross - 0.5 * both) / pairs


def shift_table(y, h, protected, variant) -> tuple[np.ndarray, np.ndarray]:
    """Exact (AUĈ(D+, D−), fairness gap) of the post-processed scores on the whole (ω₁, ω₂) grid, arrays of
    shape (|ω₁|, |ω₂|) (NaN where undefined). Vectorised over ω₂: O(|ω₁| |ω₂| n log n) in ``searchsorted``
    calls instead of one sort per grid point."""
    from ..metrics.auc import GROUP_SETS, set_mask

    y, h = np.asarray(y), np.asarray(h, dtype=np.float64)
    prot = np.asarray(protected, dtype=bool)
    pos = y > 0.5
    g1, g1p, g2, g2p = GROUP_SETS[variant]
    sets = [(set_mask(y, prot, g1), set_mask(y, prot, g1p))]
    if g2 is not None:
        sets.append((set_mask(y, prot, g2), set_mask(y, prot, g2p)))
    nan = np.full(len(OMEGA2), np.nan)
    auc_t, gap_t = [], []
    for w1 in OMEGA1:              # 101 rows; each row is vectorised over the 61 values of ω₂ and the samples
        a = _shifted_auc(h, prot, pos, ~pos, w1, OMEGA2)
        firsts = [_shifted_auc(h, prot, g, gp, w1, OMEGA2) for g, gp in sets]
        auc_t.append(nan if a is None else a)
        if any(f is None for f in firsts):
            gap_t.append(nan)
        else:
            gap_t.append(np.abs(firsts[0] - (firsts[1] if len(firsts) > 1 else 0.5)))
    return np.vstack(auc_t), np.vstack(gap_t)


def choose_shift(auc_t: np.ndarray, gap_t: np.ndarray, kappa: float) -> tuple[float, float, float, float]:
    """(ω₁, ω₂, AUC, gap) of the grid point feasible (gap ≤ κ) with the best AUC (first in grid order on ties),
    else of the smallest gap."""
    ok = np.isfinite(auc_t) & np.isfinite(gap_t)
    feasible = ok & (gap_t <= kappa)
    if feasible.any():
        i, j = np.unravel_index(np.argmax(np.where(feasible, auc_t, -np.inf)), auc_t.shape)
    else:
        i, j = np.unravel_index(np.argmin(np.where(ok, gap_t, np.inf)), auc_t.shape)
    return float(OMEGA1[i]), float(OMEGA2[j]), float(auc_t[i, j]), float(gap_t[i, j])


def best_shift(y, h, protected, variant, kappa) -> tuple[float, float, float, float]:
    """Grid search: (ω₁, ω₂, AUC, gap) feasible with best AUC, else smallest gap (:func:`shift_table`)."""
    return choose_shift(*shift_table(y, h, protected, variant), kappa)


@ALGORITHMS.implements("auc_postprocess")
class AUCPostprocess(Algorithm):
    def start(self, current) -> None:
        fams = [f for f in self.problem.constraints if isinstance(f, AUCParity)]
        if len(fams) != 1:
            raise ValueError("auc_postprocess needs exactly one 'auc_parity' constraint")
        self.family = fams[0]
        k = self.family.protected_index()
        indicator = (self.problem.group == k).float()
        match = (self.problem.X == indicator[:, None]).all(0).nonzero().flatten()
        if match.numel() == 0:
            raise ValueError("auc_postprocess needs the protected-group indicator among the features "
                             "(include the sensitive column in the model's features)")
        self.column = int(match[0])
        if isinstance(self.model.net, GroupShift):   # warm start from a post-processed model: its network
            self.model.net = self.model.net.base

    def step(self, k, current):
        p, c = self.problem, self.config
        idx = self.batch()
        X, y = (p.X, p.y) if idx is None else (p.X[idx], p.y[idx])
        h = self.model(X)
        f = self.family.config
        grads = gradient(auc_square_per_sample(h, y, f.c1, f.c2).mean(), self.params)
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-c.lr)
            p.project_(self.params)
        return p.evaluate(self.model, idx), None

    def finish(self):
        data = self.validation or self.problem
        with torch.no_grad():
            h = self.model(data.X).double().cpu().numpy()
        y = data.y.cpu().numpy()
        prot = data.group.cpu().numpy() == self.family.protected_index()
        w1, w2, a, g = best_shift(y, h, prot, self.family.config.variant, self.family.tolerance)
        self.shift = {"omega1": w1, "omega2": w2, "selection_auc": a, "selection_gap": g}
        self.model.net = GroupShift(self.model.net, self.column, w1, w2)
        with torch.no_grad():
            return self.problem.evaluate(self.model)
