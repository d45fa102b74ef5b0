"""AUC-based fairness (Yao, Lin & Yang, AISTATS 2023): exact threshold-free metrics
(:mod:`.metrics`), the square surrogate and its per-sample min–max form (:mod:`.surrogate`), the
``auc_parity`` constraint family (:mod:`.constraint`) and the ``auc_square`` objective (:mod:`.objective`).
The solvers are ``level_set`` / ``iqrc`` and the baselines in :mod:`solvers.algorithms`."""
from . import objective  # noqa: F401  (registers "auc_square")
from .constraint import AUCParity, AUCParityConfig, exact_gap
from .metrics import VARIANTS, all_variants, auc, auc_between, auc_fairness, components, fairness_gap
from .surrogate import level_values, per_sample_F_G, term_sets, term_values

__all__ = ["AUCParity", "AUCParityConfig", "VARIANTS", "all_variants", "auc", "auc_between", "auc_fairness",
           "components", "exact_gap", "fairness_gap", "level_values", "per_sample_F_G", "term_sets", "term_values"]
