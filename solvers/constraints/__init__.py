"""Constraint families (every module of this folder registers itself)."""
from ..registry import import_submodules
from .base import CONSTRAINTS, ConstraintConfig, ConstraintFamily, FairnessData, indicator_surrogate

import_submodules(__name__, __path__)
from ..partial import constraints as _partial  # noqa: E402,F401  (registers the partial-fairness families)
from .. import auc as _auc  # noqa: E402,F401  (registers auc_parity and the auc_square objective)

__all__ = ["CONSTRAINTS", "ConstraintConfig", "ConstraintFamily", "FairnessData", "indicator_surrogate"]
