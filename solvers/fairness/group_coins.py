r"""Groups too small for a threshold: a coin at the other groups' rate, where demographic parity's margin fails.

A threshold fitted on n_g rows of group g selects a share of the group's POPULATION that is off the fitted share by
about √(R (1 − R) / n_g) (:mod:`.threshold_margin`): ±0.033 for a group of 150 fitting rows at R = 0.2. With two such
groups the population's range of selection rates exceeds ε = 0.05 in about half of the samples whatever margin the
rule keeps: Adult by race (groups of 406 and 470 rows in 48,842), 20,000-row bootstrap samples, one threshold per
group on an oracle's scores (LightGBM boosted on the whole table) fitted to exact parity keeps ε in 54 % of 200
samples (``python -m bench.quality.attainable``, ``bench/quality/results/attainable.md``); thresholds keep it in
5/6 only at a common rate of 0.07, 0.8285 accurate against 0.8780.

A **coin** decides a row of group g by a draw of probability q whatever its score, so it selects exactly the share q
of the group's population in expectation: its rate has no sampling error. So when the margin's bound B stays above
δ at its largest share (:func:`~.threshold_margin.with_margin`), the smallest groups — fewest rows first, at most
:data:`MAX_COIN_SHARE` of the fitting rows in all — are decided by coins, one group more at a time, until the rule
fitted again with those groups' rates counted exact meets B ≤ δ. Each coin's q is the middle of the other groups'
solved rates, so the coins widen no range on the fitting rows (the gap there stays at most the solved one) and sit
where the population range is least likely to pass ε; the other groups keep their thresholds, and B is that of
the rule with its coins. Cost: inside a coin group accuracy falls to q b_g + (1 − q)(1 − b_g) (b_g its share of
positives), a small cost overall because the groups are small; on the oracle above coins for the two smallest
groups (1.8 % of the rows) keep ε in 83 % of samples at 0.8752, for three (4.9 %) 90 % at 0.8681. Demographic parity
only: a coin's TPR equals its FPR, so under equal opportunity or equalized odds it would pin every other group's
rates near the diagonal.

**The stored rule.** A coin is group g's randomised rule of two components, thresholds −C and +C with weights q and
1 − q (f' = f − t: every row of the component −C is selected, none of +C), drawn as any randomised rule is
(:class:`~solvers.models.thresholded.ThresholdNet`'s draw, its key chosen to realise the fitted rates on the fitting
rows, :mod:`.mixture_draw`): rows with the same features share a draw. C = 2 max |f| + 1 over the fitting rows'
scores (those the rule was fitted to and, under cross-fitting, the stored refit's own), so a new row follows its
coin unless its score exceeds C in size (then its sign), and a coin row's shifted score stays within a few times the
base scores' scale (a loss computed on f' stays finite).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from .threshold_lp import ThresholdSolution
from .threshold_margin import MarginRecord, violation_bound, with_margin

#: coin groups hold at most this share of the fitting rows together (beyond it the margin is reported unmet)
MAX_COIN_SHARE = 0.1


def coin_shift(scores: np.ndarray) -> float:
    """C of the module docstring: 2 max |f| + 1 over the fitting rows' scores."""
    return 2.0 * float(np.max(np.abs(scores), initial=0.0)) + 1.0


def tossed(solution: ThresholdSolution, coins: Sequence[int], shift: float) -> ThresholdSolution:
    """``solution`` with each group of ``coins`` decided by a coin at q, the middle of the other groups' solved
    selection rates (so the coins widen no range of rates on the fitting rows): thresholds (−``shift``, +``shift``)
    with weights (q, 1 − q); a randomised rule (the other groups' components unchanged)."""
    K, M = solution.thresholds.shape
    thresholds, weights = np.zeros((K, max(M, 2))), np.zeros((K, max(M, 2)))
    thresholds[:, :M], weights[:, :M] = solution.thresholds, solution.weights
    coins = np.asarray(coins, dtype=np.int64)
    sr = solution.rates["sr"].copy()
    others = np.isfinite(sr) & ~np.isin(np.arange(K), coins)
    middle = (sr[others].max() + sr[others].min()) / 2 if others.any() else np.nanmean(np.r_[sr, 0.0])
    q = np.full(len(coins), float(np.clip(middle, 0.0, 1.0)))
    sr[coins] = q
    thresholds[coins], weights[coins] = 0.0, 0.0
    thresholds[coins, 0], weights[coins, 0] = np.where(q > 0.0, -shift, shift), np.where(q > 0.0, q, 1.0)
    thresholds[coins, 1], weights[coins, 1] = shift, np.where(q > 0.0, 1.0 - q, 0.0)   # a used component first
    return dataclasses.replace(solution, thresholds=thresholds, weights=weights, randomized=True,
                               rates={**solution.rates, "sr": sr},
                               info={**solution.info, "coins": dict(zip(coins.tolist(), q.tolist()))})


def with_coins(solve: Callable[[list], ThresholdSolution], families: Sequence[tuple[str, float]],
               counts: dict[str, np.ndarray], delta: float, unseen_rows: float, max_share: float,
               shift: float) -> tuple[ThresholdSolution, MarginRecord] | None:
    """The rule of :func:`~.threshold_margin.with_margin` with the fewest coin groups (smallest first) whose bound
    B ≤ ``delta`` when their rates are exact, their thresholds replaced by coins (:func:`tossed`); None when the
    families are not demographic parity alone, the margin is not about the population (a coin's rate is exact in
    expectation there only), or no coin set within :data:`MAX_COIN_SHARE` of the rows meets it."""
    if not families or any(name != "demographic_parity" for name, _ in families) or not np.isinf(unseen_rows):
        return None
    rows = np.asarray(counts["sr"], dtype=np.float64)
    order = np.argsort(rows, kind="stable")
    for c in range(1, len(rows)):
        coins = order[:c]
        if rows[coins].sum() > MAX_COIN_SHARE * rows.sum():
            return None
        exact = {**counts, "sr": np.where(np.isin(np.arange(len(rows)), coins), np.inf, rows)}
        solution, record = with_margin(solve, families, exact, delta, unseen_rows, max_share)
        if not record.met:
            continue
        solution = tossed(solution, coins, shift)
        record.bound = violation_bound(solution.rates, exact, families, unseen_rows)   # at the coins' rates
        if record.bound <= delta:
            return solution, record
    return None
