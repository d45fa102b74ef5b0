"""Partial fairness on percentile intervals (He, Huang, Yao & Lin): exact metrics, the pSP / pDP
constraint families with their DC splits, and the App. B ``interval: "auto"`` rule.
The IDCA solver is :mod:`solvers.algorithms.idca`."""
from .intervals import Intervals, validate_interval
from .metrics import (kept_mask, ks_distance, partial_dp, partial_equal_opportunity, partial_equalized_odds,
                      partial_group_auc, partial_report, partial_sp)
from .constraints import PartialDemographicParity, PartialStatisticalParity  # registers the families

__all__ = ["Intervals", "PartialDemographicParity", "PartialStatisticalParity", "kept_mask", "ks_distance",
           "partial_dp", "partial_equal_opportunity", "partial_equalized_odds", "partial_group_auc",
           "partial_report", "partial_sp", "validate_interval"]
