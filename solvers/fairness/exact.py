r"""The exact (indicator-based, non-surrogate) value of each constraint family on one split,
on the same scale as the family's tolerance ε: the user's constraint is kept iff value ≤ ε.

One value per family (the maximum over the family's rows), from the definitions already used for
evaluation — :mod:`solvers.metrics.classification`, :mod:`solvers.metrics.auc`, :mod:`solvers.metrics.partial` — never a
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

from typing import Any, Callable, Sequence

import numpy as np

from ..data.membership import Membership
from ..metrics.classification import group_fairness, loss_gap, minority_rate, rate_deviation
from ..data.spec import OVERLAPPING_CONSTRAINTS

_RATE_FAMILIES = ("demographic_parity", "equal_opportunity", "equalized_odds")


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _loss_gap_value(family, y, logits, group, group_names) -> float:
    cfg = family.config
    out = loss_gap(y, logits, group, group_names, cfg.loss, cfg.min_group_fraction, "gap")
    if getattr(cfg, "mode", "one_sided") == "one_sided":
        return _float(out["gap"])
    values = np.asarray([v for v in out["gap_by_group"].values() if v is not None], dtype=float)
    return float(values.max() - values.min()) if values.size else float("nan")


def _minority_value(family, y, logits, group, group_names) -> float:
    pred = (np.asarray(logits) > 0).astype(int)
    minority = family.minority if family.bound else family.config.minority
    out = minority_rate(pred, group, list(group_names), minority)
    share = out["minority_rate"]
    positive_rate = float(pred.mean()) if pred.size else 0.0
    return 0.0 if share is None else float((family.config.c - share) * positive_rate)


def _auc_value(family, y, logits, group, group_names) -> float:
    from ..metrics.auc import fairness_gap, protected_index

    protected = np.asarray(group) == protected_index(list(group_names), family.config.protected)
    return _float(fairness_gap(np.asarray(y, dtype=float), np.asarray(logits, dtype=float), protected,
                               family.config.variant))


def _partial_value(family, y, logits, group, group_names) -> float:
    from ..metrics.partial import partial_dp, partial_sp

    k, interval = len(group_names), family.resolved_interval
    if family.metric_key == "psp":
        return _float(partial_sp(logits, group, interval, k, group_names)["value"])
    return _float(partial_dp(logits, group, interval, family.config.threshold, k, group_names)["value"])


def _own_exact_value(family, y, logits, group, group_names) -> float:
    return _float((family.exact_metrics(y, logits, group, list(group_names)) or {}).get(family.name))


_VALUE: dict[str, Callable[..., float]] = {
    "loss_gap": _loss_gap_value,
    "intersectional": _loss_gap_value,
    "minority_rate": _minority_value,
    "auc_parity": _auc_value,
    "partial_statistical_parity": _partial_value,
    "partial_demographic_parity": _partial_value,
}


def exact_gaps(families: Sequence, y: np.ndarray, logits: np.ndarray, group: np.ndarray | None,
               group_names: Sequence[str], membership=None) -> np.ndarray:
    """(len(families),) float64: each family's exact value on this split (see module docstring),
    comparable to ``family.tolerance``. ``logits`` are the raw scores f (ŷ = 1{f > 0}).

    ``group`` (or ``membership``) a :class:`solvers.data.membership.Membership`: groups that overlap (module
    docstring)."""
    y = np.asarray(y).astype(int)
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    names = list(group_names)
    out = np.full(len(families), np.nan)
    group = membership if membership is not None else group
    if isinstance(group, Membership):
        for family in families:
            if family.name not in OVERLAPPING_CONSTRAINTS:
                raise ValueError(f"{family.name!r}: no exact metric on overlapping groups")
    else:
        group = np.asarray(group).astype(int)
    rates = None
    for j, family in enumerate(families):  # loop over the spec's few constraints, each vectorised
        if getattr(family.config, "reference", "groups") == "overall":
            pred = (logits > 0).astype(int)
            out[j] = _float(rate_deviation(y, pred, group, names, family.name)[family.name])
        elif family.name in _RATE_FAMILIES:
            if rates is None:
                rates = group_fairness(y, (logits > 0).astype(int), group, names)
            out[j] = _float(rates[family.name])
        else:
            out[j] = _VALUE.get(family.name, _own_exact_value)(family, y, logits, group, names)
    return out


def tolerances(families: Sequence) -> np.ndarray:
    """(len(families),) the families' tolerances ε."""
    return np.asarray([float(f.tolerance) for f in families], dtype=np.float64)


def kept(values: np.ndarray, families: Sequence) -> np.ndarray:
    """Boolean per family: exact value ≤ tolerance (NaN, undefined, is never kept)."""
    return np.asarray(values, dtype=np.float64) <= tolerances(families)
