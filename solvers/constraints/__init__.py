"""Constraint families (every module of this folder registers itself)."""
from ..registry import import_submodules
from .base import CONSTRAINTS, ConstraintConfig, ConstraintFamily, FairnessData, indicator_surrogate

import_submodules(__name__, __path__)

__all__ = ["CONSTRAINTS", "ConstraintConfig", "ConstraintFamily", "FairnessData", "indicator_surrogate"]
