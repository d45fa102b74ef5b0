"""Algorithms: each module implements one solver declared in :mod:`solvers.catalog`
(``@ALGORITHMS.implements(name)``); the catalog imports it when the solver is asked for."""
from .base import ALGORITHMS, Algorithm, AlgorithmConfig, SolveResult
from .driver import run_algorithm

__all__ = ["ALGORITHMS", "Algorithm", "AlgorithmConfig", "SolveResult", "run_algorithm"]
