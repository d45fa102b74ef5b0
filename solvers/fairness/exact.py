r"""The exact (indicator-based, non-surrogate) value of each constraint family on one split,
on the same scale as the family's tolerance ε: the user's constraint is kept iff value ≤ ε.

One value per family (the maximum over the family's rows): the family's own
:meth:`~solvers.constraints.base.ConstraintFamily.exact_value` (the rate spreads share one pass of the group
rates), from the definitions already used for evaluation — :mod:`solvers.metrics.classification`, :mod:`solvers.metrics.auc`, :mod:`solvers.metrics.partial` — never a
second definition. With ŷ_i = 1{f_i > 0}:

* ``demographic_parity`` / ``equal_opportunity`` / ``equalized_odds``: max − min over groups of the
  selection rate / TPR / max(TPR gap, FPR gap) (:func:`solvers.metrics.classification.group_fairness`); DP / EOpp with
  ``reference="overall"``: max_g |r_g − r| against the overall rate (:func:`solvers.metrics.classification.rate_deviation`);
* ``loss_gap``: one-sided max_g (L_g − L), two-sided max_{a,b} (L_a − L_b) = max_g L_g − min_g L_g,
  over the groups above ``min_group_fraction`` (:func:`solvers.metrics.classification.loss_gap`); ``intersectional``
  the same with its loss (hinge) and size filter;
* ``minority_rate``: c·P/n − P_min/n with P (P_min) the positive predictions overall (of the minority)
  — the family's row G + ε with σ replaced by the indicator (:func:`solvers.metrics.classification.minority_rate`);
* ``auc_parity``: |AUĈ(G1,G1') − AUĈ(G2,G2')| of the family's variant, protected group vs the rest
  (:func:`solvers.metrics.auc.fairness_gap`, no bootstrap);
* ``partial_statistical_parity`` / ``partial_demographic_parity``: exact pSP / pDP on the family's resolved
  interval (:func:`solvers.metrics.partial.partial_sp` / ``partial_dp``, the values of its ``exact_metrics``);
* any other family: the value its ``exact_metrics`` reports under its type name.

Overlapping groups: ``group`` a :class:`~solvers.data.membership.Membership` (or the ``membership`` argument);
the families of :data:`solvers.data.spec.OVERLAPPING_CONSTRAINTS` (one-sided loss gaps, DP, EOpp) are then taken
over its pairs, any other family raises ValueError.

A value that is undefined on the split (e.g. a TPR gap with no positive labels) is NaN, which no
tolerance keeps (``nan <= ε`` is False). Cost: one pass of the shared group rates per call plus one
vectorised metric per other family; no loop over samples or groups.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..data.membership import Membership
from ..metrics.classification import group_fairness
from ..data.spec import OVERLAPPING_CONSTRAINTS

_RATE_FAMILIES = ("demographic_parity", "equal_opportunity", "equalized_odds")


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def exact_gaps(families: Sequence, y: np.ndarray, logits: np.ndarray, group: np.ndarray | None,
               group_names: Sequence[str], membership=None) -> np.ndarray:
    """(len(families),) float64: each family's exact value on this split (see module docstring),
    comparable to ``family.tolerance``. ``logits`` are the raw scores f (ŷ = 1{f > 0}).

    ``group`` (or ``membership``) a :class:`solvers.data.membership.Membership`: groups that overlap (module
    docstring)."""
    y = np.asarray(y).astype(np.int64, copy=False)
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    names = list(group_names)
    out = np.full(len(families), np.nan)
    group = membership if membership is not None else group
    if isinstance(group, Membership):
        for family in families:
            if family.name not in OVERLAPPING_CONSTRAINTS:
                raise ValueError(f"{family.name!r}: no exact metric on overlapping groups")
    else:
        group = np.asarray(group).astype(np.int64, copy=False)
    rates = None
    for j, family in enumerate(families):  # loop over the spec's few constraints, each vectorised
        if family.name in _RATE_FAMILIES and getattr(family.config, "reference", "groups") != "overall":
            if rates is None:  # one pass of the group rates serves every rate spread
                rates = group_fairness(y, (logits > 0).astype(int), group, names)
            out[j] = _float(rates[family.name])
        else:
            out[j] = family.exact_value(y, logits, group, names)
    return out


def tolerances(families: Sequence) -> np.ndarray:
    """(len(families),) the families' tolerances ε."""
    return np.asarray([float(f.tolerance) for f in families], dtype=np.float64)


def kept(values: np.ndarray, families: Sequence) -> np.ndarray:
    """Boolean per family: exact value ≤ tolerance (NaN, undefined, is never kept)."""
    return np.asarray(values, dtype=np.float64) <= tolerances(families)
