"""Partial fairness on percentile intervals (He, Huang, Yao & Lin): exact metrics, the pSP / pDP
constraint families with their DC splits, and the App. B ``interval: "auto"`` rule.
The IDCA solver is :mod:`solvers.algorithms.idca`.

Names are imported on first use: :mod:`.metrics` and :mod:`.intervals` (NumPy only) never load torch."""
from __future__ import annotations

from .._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "intervals": ["Intervals", "validate_interval"],
    "metrics": ["kept_mask", "ks_distance", "partial_dp", "partial_equal_opportunity", "partial_equalized_odds",
                "partial_group_auc", "partial_report", "partial_sp"],
    "constraints": ["PartialDemographicParity", "PartialStatisticalParity"],
})
