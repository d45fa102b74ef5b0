r"""The base model ``group_thresholds`` boosts for itself: LightGBM with fewer, smaller trees on half the features.

Post-processing by group thresholds is optimal for demographic parity / equal opportunity when its scores rank the
rows of each group as P(y = 1 | x, g) does (Hardt et al. 2016, Thm 4.3 for the Bayes score), so its accuracy at the
tolerance is the base model's ranking quality within each group. LightGBM's defaults (200 trees of 31 leaves on
every feature, learning rate 0.1) overfit the tables of ``bench/quality/frontier.py``; :data:`TUNED` grows 100 trees of 15
leaves, each on a seeded half of the features (``colsample_bytree``; LightGBM draws it from the seed, so the trees
stay deterministic), at the same learning rate: about half of the default fit's time, and more accurate after the
thresholds on every table measured.

Measured with ``python -m bench.quality.gbdt_defaults`` (``bench/quality/results/gbdt_defaults.md``; each job through
``solvers.run``, DP ≤ 0.02, thresholds on the validation split with the margin δ = 0.1; mean test accuracy over
seeds 0–4; time: CPU of the job over one plain LightGBM fit of the train split with the defaults, same cell, loaded
machine):

    ==========  ==================  ==================  ==========================
    table       LightGBM defaults   tuned base          CPU / LightGBM fit
    ==========  ==================  ==================  ==========================
    Adult sex   0.8502              0.8548              3.35 → 2.00
    COMPAS      0.6451              0.6678              3.83 → 2.07
    bank age    0.8963              0.8994              2.84 → 1.75
    ==========  ==================  ==================  ==========================

The values were chosen on seeds 0–4 among variants of ``num_leaves`` (7, 15, 31, 63), ``n_estimators`` (100 to
400), ``learning_rate`` (0.05, 0.1), ``min_child_samples`` (20, 50, 100), ``reg_lambda``, ``colsample_bytree``
(0.3, 0.5, 1) and ``max_bin``, scored by LightGBM fits outside the job path; seeds 5–14, other splits of the same
tables, check the choice (the report's second part: 0.8503 → 0.8529, 0.6423 → 0.6610, 0.8977 → 0.8996, at
CPU ratios 3.48 → 2.17, 3.81 → 2.06, 2.87 → 1.79). The test DP is that of the thresholds (what the margin
allows), not of the base: it is not lower with the tuned base (Adult 0.0154 → 0.0183, COMPAS 0.042 → 0.037, bank
0.011 → 0.015 over seeds 0–4).

Only the fields still at the model spec's own defaults (LightGBM's) are replaced, in a copy of the spec
(:func:`tuned_spec`): a model spec that sets ``num_leaves``, ``colsample_bytree`` or ``n_estimators`` to anything
else keeps it. A job stores its spec with every default written out, so a field set to exactly LightGBM's default
reads as unset; ``group_thresholds``' ``base_model: "spec"`` boosts the spec's hyper-parameters as they are.
"""
from __future__ import annotations

from typing import Any

#: field -> value of the tuned base; replaces the model spec's value when that is the spec's default
TUNED: dict[str, Any] = {"n_estimators": 100, "num_leaves": 15, "colsample_bytree": 0.5}


def tuned_spec(spec: Any) -> tuple[Any, dict[str, Any]]:
    """(a copy of the gbdt ModelSpec ``spec`` with :data:`TUNED`'s values where it holds its defaults, the fields
    replaced ({} when none: ``spec`` itself is returned))."""
    defaults = type(spec).model_fields
    replaced = {name: value for name, value in TUNED.items() if getattr(spec, name) == defaults[name].default}
    return (spec.model_copy(update=replaced) if replaced else spec), replaced
