"""Algorithms (every module of this folder registers itself in ``ALGORITHMS``)."""
from ..registry import import_submodules
from .base import ALGORITHMS, Algorithm, AlgorithmConfig, SolveResult, describe
from .driver import run_algorithm

import_submodules(__name__, __path__)

__all__ = ["ALGORITHMS", "Algorithm", "AlgorithmConfig", "SolveResult", "describe", "run_algorithm"]
