"""FairSolve solvers: fairness-constrained learning in pure PyTorch.

    from solvers import solve, run, ProblemSpec

Layers (one home per concept): ``catalog`` (solver and constraint names, paper metadata and
pydantic Configs; no torch) → ``data`` (the pydantic job spec, table → tensors: encoding, splitting,
groups) → ``problem`` (tensors, ``models``, ``objectives`` F, ``constraints`` G) → ``algorithms`` (one
shared driver loop reporting to an ``observer``) → ``fairness`` (keeping the promise on the exact
``metrics``); ``pipeline`` runs them in order (:func:`run`), ``formats`` holds what is written to disk.

The names below are imported on first use (PEP 562), so ``from solvers import ProblemSpec``
or ``solvers.catalog`` never loads torch: the API process validates specs without it.
"""
from __future__ import annotations

from .lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "catalog": ["ALGORITHMS", "CONSTRAINTS", "list_constraints", "list_solvers"],
    "algorithms": ["Algorithm", "AlgorithmConfig", "SolveResult"],
    "pipeline": ["Prepared", "RunOutput", "SolverDiverged", "prepare", "run", "solve"],
    "constraints": ["ConstraintFamily"],
    "device": ["resolve_device"],
    "data.encoding": ["TableEncoder", "build_groups", "encode_labels"],
    "data.membership": ["Membership", "overlapping_membership"],
    "metrics.classification": ["classification_metrics", "group_fairness"],
    "observer": ["IterationRecord", "Observer", "RecordingObserver", "StoppedInSetup"],
    "problem": ["Problem"],
    "data.spec": ["ConstraintSpec", "GroupRule", "GuaranteeSpec", "ModelSpec", "OverlappingGroups", "ProblemSpec", "SolverSpec",
             "SpecError", "SplitSpec",
             ],
    "data.table_check": ["check_spec_against_table"],
    "data.splitting": ["split_indices"],
})
