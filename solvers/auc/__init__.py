"""AUC-based fairness (Yao, Lin & Yang, AISTATS 2023): exact threshold-free metrics
(:mod:`.metrics`), the square surrogate and its per-sample min–max form (:mod:`.surrogate`), the
``auc_parity`` constraint family (:mod:`.constraint`) and the ``auc_square`` objective (:mod:`.objective`).
The solvers are ``level_set`` / ``iqrc`` and the baselines in :mod:`solvers.algorithms`.

Names are imported on first use: :mod:`.metrics` (NumPy only) never loads torch."""
from __future__ import annotations

from .._lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "constraint": ["AUCParity", "exact_gap"],
    "metrics": ["VARIANTS", "all_variants", "auc", "auc_between", "auc_fairness", "components", "fairness_gap"],
    "surrogate": ["level_values", "per_sample_F_G", "term_sets", "term_values"],
})
