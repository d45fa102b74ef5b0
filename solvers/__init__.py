"""FairSolve solvers: fairness-constrained learning in pure PyTorch.

    from solvers import solve, run, ProblemSpec

Layers (one concept per module): ``spec`` (pydantic job spec) → ``encoding`` /
``splitting`` (table → tensors) → ``problem`` (tensors, model, objective F,
constraint families G) → ``algorithms`` (ERM, penalty, PLADA; one shared driver
loop reporting to an ``observer``) → ``metrics`` (exact fairness metrics).
"""
from .algorithms import ALGORITHMS, Algorithm, AlgorithmConfig, SolveResult
from .api import Prepared, RunOutput, SolverDiverged, list_constraints, list_solvers, prepare, run, solve
from .constraints import CONSTRAINTS, ConstraintFamily
from .device import resolve_device
from .encoding import TableEncoder, build_groups, encode_labels
from .metrics import classification_metrics, group_fairness
from .observer import IterationRecord, Observer, RecordingObserver
from .problem import Problem
from .spec import (ConstraintSpec, GroupRule, ModelSpec, ProblemSpec, SolverSpec, SpecError, SplitSpec,
                   check_spec_against_table)
from .splitting import split_indices

__all__ = [
    "ALGORITHMS", "Algorithm", "AlgorithmConfig", "CONSTRAINTS", "ConstraintFamily", "ConstraintSpec",
    "GroupRule", "IterationRecord", "ModelSpec", "Observer", "Problem", "ProblemSpec", "RecordingObserver",
    "Prepared", "RunOutput", "SolveResult", "SolverDiverged", "SolverSpec", "SpecError", "SplitSpec", "TableEncoder", "build_groups",
    "check_spec_against_table", "classification_metrics", "encode_labels", "group_fairness", "list_constraints",
    "list_solvers", "prepare", "resolve_device", "run", "solve", "split_indices",
]
