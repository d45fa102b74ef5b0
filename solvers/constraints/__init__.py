"""Constraint families: each module implements one constraint type declared in :mod:`solvers.catalog`
(``@CONSTRAINTS.implements(name)``); the catalog imports it when the type is asked for."""
from .base import CONSTRAINTS, ConstraintConfig, ConstraintFamily, FairnessData, indicator_surrogate

__all__ = ["CONSTRAINTS", "ConstraintConfig", "ConstraintFamily", "FairnessData", "indicator_surrogate"]
