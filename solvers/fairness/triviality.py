"""When a model is near-trivial: the thresholds shared by the job's warnings (:mod:`.report`), ``auto``'s checks
of its candidates (:mod:`solvers.auto`) and exact enforcement's guard on its rounds (:mod:`.enforce`).

With ŷ = 1{f > 0}: *near-constant* when some group present on the rows has a predicted-positive rate below
:data:`MIN_GROUP_RATE` or above 1 − it (a constant model meets every rate-parity constraint exactly, so a fairness
step can reach it and look successful); *weak* when the balanced accuracy (TPR + TNR) / 2 is below
:data:`MIN_BALANCED_ACCURACY`.
"""
from __future__ import annotations

import numpy as np

from ..data.membership import Membership
from ..metrics.classification import group_rates

#: a model whose balanced accuracy is below this is near-trivial (the job's warning threshold)
MIN_BALANCED_ACCURACY = 0.55
#: a model predicting positive for less than this share of some group (or more than 1 − it) is near-constant
MIN_GROUP_RATE = 0.01


def triviality(y: np.ndarray, logits: np.ndarray, group, n_groups: int) -> str | None:
    """"near_constant" when a group's predicted-positive rate is outside [:data:`MIN_GROUP_RATE`,
    1 − :data:`MIN_GROUP_RATE`] (groups present on the rows), "weak" when the balanced accuracy is below
    :data:`MIN_BALANCED_ACCURACY`, else None. Overlapping groups (``group`` a Membership: many small groups, e.g.
    591 of about 20 rows on Communities & Crime, where a rate of 0 is no sign of a constant model): the rate of
    all rows instead. Vectorised (one pass of the group rates)."""
    pred = logits > 0
    if isinstance(group, Membership):
        rates = np.asarray([pred.mean()]) if pred.size else np.zeros(0)
    else:
        rates, counts = group_rates(pred, group, n_groups)
        rates = rates[counts > 0]
    positives = y == 1
    tpr = pred[positives].mean() if positives.any() else 1.0
    tnr = (~pred[~positives]).mean() if (~positives).any() else 1.0
    balanced = (tpr + tnr) / 2.0
    if (rates < MIN_GROUP_RATE).any() or (rates > 1 - MIN_GROUP_RATE).any():
        return "near_constant"
    return "weak" if balanced < MIN_BALANCED_ACCURACY else None
