r"""Confidence intervals and one-sided upper confidence bounds of the exact constraint values
(:mod:`solvers.fairness.exact`) on one split, treating its rows as an i.i.d. sample.

**Rate gaps** (``demographic_parity``, ``equal_opportunity``, ``equalized_odds``): the value is
Δ = max_r (max_c p_{r,c} − min_c p_{r,c}) over rows r (DP: selection rates; EOpp: TPRs; EOdds: the TPR row
and the FPR row) of cell rates p_c = x_c / n_c (x_c positive predictions among the n_c samples of cell c).
Exact one-sided binomial (Clopper–Pearson) bounds at error a:  l_c(a) = B⁻¹(a; x_c, n_c − x_c + 1),
u_c(a) = B⁻¹(1 − a; x_c + 1, n_c − x_c), so P(p_c < l_c(a)) ≤ a and P(p_c > u_c(a)) ≤ a.

* *Upper bound* U = max(0, max_r max_{a ≠ b} (u_a(α/2) − l_b(α/2))). The true Δ is attained by a fixed
  (unknown, not data-dependent) row r* and cells c⁺ (its max), c⁻ (its min), c⁺ ≠ c⁻ when Δ > 0;
  Δ > U implies p_{c⁺} > u_{c⁺} or p_{c⁻} < l_{c⁻}, so by the union bound over these two events
  P(Δ > U) ≤ α — no division by the number of cells is needed. The pair a ≠ b is what makes it the tightest
  bound of this construction: max_c u_c − min_c l_c (the same cell allowed twice) is valid too, but where one cell
  (typically the smallest group) has both the highest u and the lowest l it adds that cell's whole interval
  instead of half of two (two groups of 4,800 and 1,200 rows at rate 0.25, α = 0.025: 0.057 against 0.043).
* *Joint upper bound* (:func:`rate_gap_upper_joint`, what the guarantee's test uses): the same fixed pair
  (c⁺, c⁻), but one event about the DIFFERENCE p_{c⁺} − p_{c⁻} instead of two about its ends: the MOVER limit
  (Newcombe 1998; Zou & Donner 2008) of a difference of two independent binomial proportions built from the
  one-sided Clopper–Pearson limits at α (not α/2),
  U_J = max(0, max_r max_{a ≠ b} (p̂_a − p̂_b + √((u_a(α) − p̂_a)² + (p̂_b − l_b(α))²))).
  Since U_J ≥ the pair (c⁺, c⁻)'s own limit, P(Δ > U_J) ≤ P(p_{c⁺} − p_{c⁻} > its MOVER limit) ≈ α, again with
  no union over cells; given the cells' sizes their hit counts are independent binomials. Its width is about
  z_α √(σ_a² + σ_b²) against z_{α/2} (σ_a + σ_b) for the two-event bound: 0.017 against 0.032 for groups of 2,000
  and 4,000 rows at rates 0.11 and 0.31, α = 0.05. MOVER is asymptotic, not exact; with Clopper–Pearson limits
  its coverage is ≥ 1 − α up to simulation error in every case of the unit test (20 to 5,000 rows a cell, rates
  0 to 0.9, gaps 0 to 0.2; ``tests/solvers/fairness/test_fairness_intervals.py``), and nominal for large cells.
* *Lower bound* L = max(0, max_r max_{a ≠ b} (l_a(α/(2C)) − u_b(α/(2C)))) over the C defined cells: the cells
  attaining the empirical max/min are data-dependent, so all 2C events are taken in the union bound:
  P(Δ < L) ≤ α.
* The two-sided CI at 1 − α is [L at α/2, U at α/2] (exact, conservative: no normal approximation):
  :func:`rate_gap_ci`, which an audit's rate gaps (:mod:`app.audits.metrics`) take from their cell counts too.

**Loss gaps, AUC gaps, minority rate** (and, by a plain replicate loop, any other family): percentile
bootstrap over the split's rows — B resamples drawn as a (B, n) index matrix (in chunks), the statistic
evaluated for all replicates at once: per-replicate group sums by one bincount into B·K bins (loss gaps),
gathered means (minority rate), or, for AUC, multiplicity-weighted cumulative counts along the score order. CI = [q_{α/2}, q_{1−α/2}], upper bound = q_{1−α} of
the replicate values (asymptotic, not exact).

**Overlapping groups** (``group`` a :class:`~solvers.data.membership.Membership`) and the rate families against the
overall rate (``reference="overall"``): percentile bootstrap as above; a replicate's group sums are Wᵀ-weighted
membership sums (W the (b, n) row multiplicities, sums = (W ∘ v) M through the sparse M), its statistic the
exact value's definition (:func:`~solvers.metrics.classification.rate_deviation`, the spread, the loss gap) on them.

**Simultaneous upper bounds** (:func:`constraint_bounds`' ``upper``): with m constraints, each family's upper
bound is taken at level 1 − α/m, so that by the union bound *all m* bounds hold together with probability
≥ 1 − α (for the rate families exactly, for the bootstrap ones up to the bootstrap's approximation).
The two-sided ``ci`` is per constraint at level 1 − α.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..data.membership import Membership
from ..metrics.bootstrap import Resamples
from .exact import exact_gaps

DEFAULT_BOOT = 1000
FALLBACK_BOOT = 200  # replicates of the families without a vectorised statistic (one exact metric per replicate)
_CHUNK_ENTRIES = 1_000_000  # replicate × row entries per bootstrap chunk


@dataclass(frozen=True)
class Bound:
    """One constraint on one split: its exact value, two-sided CI and one-sided simultaneous upper bound."""

    value: float
    lo: float
    hi: float
    upper: float
    method: str  # "clopper_pearson" | "bootstrap"

    def as_dict(self, tolerance: float) -> dict:
        """``{value, ci: [lo, hi], kept}`` (JSON-ready; NaN as None)."""
        return {"value": _json(self.value), "ci": [_json(self.lo), _json(self.hi)],
                "kept": bool(self.value <= tolerance)}


def _json(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


# ---------------------------------------------------------------------------------------- Clopper–Pearson
def clopper_pearson(hits: np.ndarray, n: np.ndarray, alpha: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact one-sided binomial bounds (l, u) each at error ``alpha/2`` (so [l, u] is the two-sided interval at
    level 1 − α), elementwise; NaN where n = 0. The beta quantile B⁻¹(q; a, b) is ``scipy.special.betaincinv(a, b,
    q)`` (the function ``scipy.stats.beta.ppf`` evaluates), imported on first use: importing this module loads no
    scipy, and the API's job report, which computes these bounds for its rate gaps, loads only scipy.special."""
    from scipy.special import betaincinv

    hits, n = np.asarray(hits, dtype=float), np.asarray(n, dtype=float)
    half = np.asarray(alpha, dtype=float) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(hits > 0, betaincinv(hits, n - hits + 1, half), 0.0)
        hi = np.where(hits < n, betaincinv(hits + 1, n - hits, 1 - half), 1.0)
    empty = n <= 0
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def _rate_cells(name: str, y: np.ndarray, pred: np.ndarray, group: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(hits, counts) of shape (rows, k): DP one row of selection rates, EOpp one row of TPRs,
    EOdds the TPR row and the FPR row."""
    if name == "demographic_parity":
        cell, rows, mask = group, 1, np.ones(len(group), dtype=bool)
    elif name == "equal_opportunity":
        cell, rows, mask = group, 1, y == 1
    else:  # equalized_odds: row 0 = TPR (y = 1), row 1 = FPR (y = 0)
        cell, rows, mask = (1 - y) * k + group, 2, np.ones(len(group), dtype=bool)
    counts = np.bincount(cell[mask], minlength=rows * k).reshape(rows, k)
    hits = np.bincount(cell[mask], weights=pred[mask].astype(float), minlength=rows * k).reshape(rows, k)
    return hits, counts


def _row_spread(lo: np.ndarray, hi: np.ndarray, defined: np.ndarray) -> np.ndarray:
    """Per row with a defined cell: max_{a ≠ b} hi_a − lo_b over its defined cells (0 with a single cell): the
    largest hi against the smallest lo of another cell (module docstring)."""
    used = defined.any(1)
    his, los = np.where(defined, hi, -np.inf), np.where(defined, lo, np.inf)
    top, bottom = his.argmax(1), los.argmin(1)
    rows = np.arange(len(his))
    second_hi = np.sort(his, axis=1)[:, -2] if his.shape[1] > 1 else np.full(len(his), -np.inf)
    second_lo = np.sort(los, axis=1)[:, 1] if los.shape[1] > 1 else np.full(len(los), np.inf)
    apart = his[rows, top] - los[rows, bottom]
    same = np.maximum(his[rows, top] - second_lo, second_hi - los[rows, bottom])   # the best pair of two cells
    spread = np.where(top != bottom, apart, same)
    return np.where(defined.sum(1) > 1, spread, 0.0)[used]


def rate_gap_upper(hits: np.ndarray, counts: np.ndarray, alpha: float) -> float:
    """U with P(Δ > U) ≤ α (module docstring: two one-sided events at α/2 each); NaN with no defined cell."""
    defined = counts > 0
    if not defined.any():
        return float("nan")
    lo, hi = clopper_pearson(hits, counts, alpha)   # one-sided bounds at α/2 each
    return float(_row_spread(lo, hi, defined).max())


def rate_gap_upper_joint(hits: np.ndarray, counts: np.ndarray, alpha: float) -> float:
    r"""U_J with P(Δ > U_J) ≤ α up to the MOVER approximation (module docstring, joint bound): per row, the largest
    over ordered pairs a ≠ b of p̂_a − p̂_b + √((u_a − p̂_a)² + (p̂_b − l_b)²), u / l the one-sided Clopper–Pearson
    bounds at α; NaN with no defined cell, 0 with a single one."""
    defined = counts > 0
    if not defined.any():
        return float("nan")
    lo, hi = clopper_pearson(hits, counts, 2.0 * alpha)   # each one-sided at α
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(defined, hits / np.maximum(counts, 1), np.nan)
    up, down = (hi - rate) ** 2, (rate - lo) ** 2                      # (rows, K)
    pair = (rate[:, :, None] - rate[:, None, :]) + np.sqrt(up[:, :, None] + down[:, None, :])   # [r, a, b]
    k = counts.shape[1]
    ok = defined[:, :, None] & defined[:, None, :] & ~np.eye(k, dtype=bool)[None]
    used = defined.sum(1) > 1
    if not used.any():
        return 0.0
    return float(max(0.0, np.where(ok, pair, -np.inf)[used].max()))


def rate_gap_lower(hits: np.ndarray, counts: np.ndarray, alpha: float) -> float:
    """L with P(Δ < L) ≤ α (module docstring: union over the 2C one-sided events); NaN with no defined cell."""
    defined = counts > 0
    if not defined.any():
        return float("nan")
    lo, hi = clopper_pearson(hits, counts, alpha / defined.sum())
    return float(max(0.0, _row_spread(hi, lo, defined).max()))  # max_c l_c − min_c u_c per row


def rate_gap_ci(hits: np.ndarray, counts: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided CI [L, U] at level ``confidence`` of the rate gap of the cells (hits, counts), each
    (rows, K) as :func:`_rate_cells` builds them: L and U each at error α/2 (module docstring); NaN with no
    defined cell. The job's fairness report and an audit's rate gaps (:mod:`app.audits.metrics`) both use it."""
    alpha = 1.0 - confidence
    return rate_gap_lower(hits, counts, alpha / 2), rate_gap_upper(hits, counts, alpha / 2)


# ---------------------------------------------------------------------------------------------- bootstrap
def _per_replicate_sums(idx: np.ndarray, values: np.ndarray, group, k: int) -> np.ndarray:
    """(b, k) Σ over each replicate's drawn rows of ``values`` by group: one bincount into b·k bins (overlapping
    groups: the multiplicity-weighted values times the sparse membership, (W ∘ v) M)."""
    b = len(idx)
    if isinstance(group, Membership):
        return np.asarray((group.csr().T @ (_weights(idx, len(values)) * values).T).T)
    cells = (group[idx] + k * np.arange(b)[:, None]).ravel()
    return np.bincount(cells, weights=values[idx].ravel(), minlength=b * k).reshape(b, k)


def _loss_gap_statistic(family, y, logits, group, group_names) -> Callable[[np.ndarray], np.ndarray]:
    """idx ↦ per-replicate exact loss gap (one-/two-sided, groups kept by the split's size filter)."""
    import torch

    from ..objectives import per_sample_loss

    cfg = family.config
    with torch.no_grad():
        losses = per_sample_loss(cfg.loss)(torch.as_tensor(logits), torch.as_tensor(y, dtype=torch.float64)).numpy()
    k = len(group_names)
    sizes = _per_replicate_sums(np.arange(len(y))[None, :], np.ones(len(y)), group, k)[0]
    keep = (sizes > 0) & (sizes > cfg.min_group_fraction * len(y))
    one_sided = getattr(cfg, "mode", "one_sided") == "one_sided"
    ones = np.ones(len(y))

    def statistic(idx: np.ndarray) -> np.ndarray:
        n_g = _per_replicate_sums(idx, ones, group, k)
        sums = _per_replicate_sums(idx, losses, group, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            group_loss = np.where(n_g > 0, sums / n_g, np.nan)[:, keep]
            if one_sided:
                return np.nanmax(group_loss - losses[idx].mean(1)[:, None], axis=1)  # L over the drawn rows
            return np.nanmax(group_loss, axis=1) - np.nanmin(group_loss, axis=1)

    return statistic


def _rate_statistic(family, y, logits, group, group_names) -> Callable[[np.ndarray], np.ndarray]:
    """idx ↦ per-replicate exact DP / EOpp value: the spread of the group rates or, with ``reference="overall"``,
    max_g |r_g − r| (the definitions of :mod:`solvers.metrics.classification`), rates over the drawn rows (EOpp: their
    positives)."""
    pred = (logits > 0).astype(float)
    mask = np.ones(len(y)) if family.name == "demographic_parity" else (y == 1).astype(float)
    k = len(group_names)
    overall = getattr(family.config, "reference", "groups") == "overall"

    def statistic(idx: np.ndarray) -> np.ndarray:
        n_g = _per_replicate_sums(idx, mask, group, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = np.where(n_g > 0, _per_replicate_sums(idx, pred * mask, group, k) / n_g, np.nan)
            if overall:
                r = (pred * mask)[idx].sum(1) / mask[idx].sum(1)
                return np.nanmax(np.abs(rates - r[:, None]), axis=1)
            return np.nanmax(rates, axis=1) - np.nanmin(rates, axis=1)

    return statistic


def _minority_statistic(family, y, logits, group, group_names) -> Callable[[np.ndarray], np.ndarray]:
    """idx ↦ c·P/n − P_min/n on each replicate (the mean of z_i = ŷ_i (c − 1{g_i = min}))."""
    counts = np.bincount(group, minlength=len(group_names))
    if family.bound:
        minority = group_names.index(family.minority)
    elif family.config.minority is not None:
        minority = group_names.index(family.config.minority)
    else:
        minority = int(np.argmin(np.where(counts > 0, counts, np.iinfo(np.int64).max)))
    z = (logits > 0) * (family.config.c - (group == minority))
    return lambda idx: z[idx].mean(1)


def _weights(idx: np.ndarray, n: int) -> np.ndarray:
    """(b, n) multiplicities of the rows in each replicate."""
    b = len(idx)
    return np.bincount((idx + (n * np.arange(b))[:, None]).ravel(), minlength=b * n).reshape(b, n).astype(float)


def weighted_auc(w: np.ndarray, scores: np.ndarray, in_g: np.ndarray, in_gp: np.ndarray) -> np.ndarray:
    """AUĈ(G, G') (ties ½, self-pairs excluded, as :func:`solvers.metrics.auc.auc_between`) of every
    replicate, row i counted w_{b,i} times: one sort, cumulative weighted counts of G' below each tie block."""
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    block = np.concatenate([[0], np.cumsum(s[1:] != s[:-1])])
    ends = np.append(np.flatnonzero(s[1:] != s[:-1]), len(s) - 1)
    ws, g, gp = w[:, order], in_g[order].astype(float), in_gp[order].astype(float)
    cum = np.cumsum(ws * gp, axis=1)
    block_end = cum[:, ends]
    block_start = np.concatenate([np.zeros((len(w), 1)), block_end[:, :-1]], axis=1)
    less, tied = block_start[:, block], (block_end - block_start)[:, block]
    both = g * gp
    wins = (ws * g * (less + 0.5 * tied)).sum(1) - 0.5 * (ws @ both)
    pairs = (ws @ g) * (ws @ gp) - ws @ both
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, wins / pairs, np.nan)


def _auc_statistic(family, y, logits, group, group_names) -> Callable[[np.ndarray], np.ndarray]:
    """idx ↦ |AUĈ(G1,G1') − AUĈ(G2,G2')| of the family's variant on each replicate."""
    from ..metrics.auc import GROUP_SETS, protected_index, set_mask

    protected = group == protected_index(list(group_names), family.config.protected)
    g1, g1p, g2, g2p = GROUP_SETS[family.config.variant]

    def statistic(idx: np.ndarray) -> np.ndarray:
        w = _weights(idx, len(y))
        first = weighted_auc(w, logits, set_mask(y, protected, g1), set_mask(y, protected, g1p))
        second = 0.5 if g2 is None else weighted_auc(w, logits, set_mask(y, protected, g2),
                                                     set_mask(y, protected, g2p))
        return np.abs(first - second)

    return statistic


def _replicate_statistic(family, y, logits, group, group_names) -> Callable[[np.ndarray], np.ndarray]:
    """Any other family (partial fairness): :func:`exact_gaps` on each replicate's rows (a loop over the
    replicates, at most ``FALLBACK_BOOT`` of them: :func:`bootstrap_values`)."""
    def statistic(idx: np.ndarray) -> np.ndarray:
        return np.asarray([exact_gaps([family], y[r], logits[r], group[r], group_names)[0] for r in idx])

    return statistic


_BOOTSTRAP = {"loss_gap": _loss_gap_statistic, "intersectional": _loss_gap_statistic,
              "minority_rate": _minority_statistic, "auc_parity": _auc_statistic}
RATE_FAMILIES = ("demographic_parity", "equal_opportunity", "equalized_odds")
_GROUP_RATE_FAMILIES = ("demographic_parity", "equal_opportunity")  # bootstrapped on overlapping groups / per group


def _exact_cp(family, group) -> bool:
    """Whether the family's bounds are the exact Clopper–Pearson ones: a rate spread over a partition."""
    return (family.name in RATE_FAMILIES and not isinstance(group, Membership)
            and getattr(family.config, "reference", "groups") == "groups")


def bootstrap_statistic(family, y, logits, group, group_names) -> Callable[[np.ndarray], np.ndarray]:
    """The family's exact value as a function of (b, n) resample row indices (``arange(n)`` = the split)."""
    make = _rate_statistic if family.name in _GROUP_RATE_FAMILIES else _BOOTSTRAP.get(family.name, _replicate_statistic)
    return make(family, y, logits, group, list(group_names))


def bootstrap_values(family, y, logits, group, group_names, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> np.ndarray:
    """The family's exact value on ``n_boot`` row resamples of the split."""
    statistic = bootstrap_statistic(family, y, logits, group, group_names)
    if family.name not in _BOOTSTRAP and family.name not in _GROUP_RATE_FAMILIES:
        n_boot = min(n_boot, FALLBACK_BOOT)
    return np.concatenate([statistic(idx) for idx in Resamples(len(y), n_boot, seed).blocks(_CHUNK_ENTRIES)])


# -------------------------------------------------------------------------------------------- per family
def constraint_bounds(families: Sequence, y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                      group_names: Sequence[str], *, confidence: float = 0.95, n_boot: int = DEFAULT_BOOT,
                      seed: int = 0, joint: bool = False) -> list[Bound]:
    """One :class:`Bound` per family: exact value, two-sided CI at ``confidence`` (per constraint) and
    one-sided upper bound simultaneous over the m families (each at 1 − (1 − confidence)/m); ``joint``: the rate
    families' upper bound is :func:`rate_gap_upper_joint` (method ``"mover_clopper_pearson"``)."""
    y = np.asarray(y).astype(int)
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    group = group if isinstance(group, Membership) else np.asarray(group).astype(int)
    names = list(group_names)
    values = exact_gaps(families, y, logits, group, names)
    alpha = 1.0 - confidence
    m = max(len(families), 1)
    out = []
    for j, family in enumerate(families):  # the spec's few constraints; each bound is vectorised
        if len(y) == 0:
            out.append(Bound(np.nan, np.nan, np.nan, np.nan, "none"))
        elif _exact_cp(family, group):
            hits, counts = _rate_cells(family.name, y, (logits > 0).astype(int), group, len(names))
            lo, hi = rate_gap_ci(hits, counts, confidence)
            upper = (rate_gap_upper_joint if joint else rate_gap_upper)(hits, counts, alpha / m)
            out.append(Bound(values[j], lo, hi, upper, "mover_clopper_pearson" if joint else "clopper_pearson"))
        else:
            reps = bootstrap_values(family, y, logits, group, names, n_boot, seed)
            reps = reps[np.isfinite(reps)]
            if reps.size == 0:
                out.append(Bound(values[j], np.nan, np.nan, np.nan, "bootstrap"))
                continue
            lo, hi, upper = np.quantile(reps, [alpha / 2, 1 - alpha / 2, 1 - alpha / m])
            out.append(Bound(values[j], float(lo), float(hi), float(upper), "bootstrap"))
    return out


def upper_bounds(families: Sequence, y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                 group_names: Sequence[str], *, confidence: float = 0.95, n_boot: int = DEFAULT_BOOT,
                 seed: int = 0, joint: bool = False) -> np.ndarray:
    """(m,) one-sided upper confidence bounds holding simultaneously with probability ≥ ``confidence``
    (union bound over the constraints and, inside a rate constraint, over its cells; ``joint``: the rate
    families' joint bound, :func:`rate_gap_upper_joint`)."""
    return np.asarray([b.upper for b in constraint_bounds(families, y, logits, group, group_names,
                                                          confidence=confidence, n_boot=n_boot, seed=seed,
                                                          joint=joint)])
