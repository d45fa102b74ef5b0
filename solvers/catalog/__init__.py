"""The catalog of solvers and constraint types, importable without torch.

Each module declares, for one paper, its solvers' and constraint types' names, aliases,
paper metadata and pydantic ``Config`` (defaults from the paper); the implementations
(:mod:`solvers.algorithms`, :mod:`solvers.constraints`, ...) attach themselves with
``@ALGORITHMS.implements(name)`` and are imported only when a solve needs them. The API
validates job specs and lists the catalog from here alone.
"""
from . import (constraints, plada, switching, partial, auc, stochastic, reductions, fairgbm, postprocess, auto)  # noqa: F401,E402  (declare, in this order)
from .base import (ALGORITHMS, CONSTRAINTS, AlgorithmConfig, ConstraintConfig, Surrogate, describe_constraint,
                   describe_solver, list_constraints, list_solvers)

__all__ = ["ALGORITHMS", "CONSTRAINTS", "AlgorithmConfig", "ConstraintConfig", "Surrogate", "describe_constraint",
           "describe_solver", "list_constraints", "list_solvers"]
