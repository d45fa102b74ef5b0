r"""The base model ``group_thresholds`` boosts for itself: LightGBM with fewer, smaller trees on half the features.

Post-processing by group thresholds is optimal for demographic parity / equal opportunity when its scores rank the
rows of each group as P(y = 1 | x, g) does (Hardt et al. 2016, Thm 4.3 for the Bayes score), so its accuracy at the
tolerance is the base model's ranking quality within each group. LightGBM's defaults (200 trees of 31 leaves on
every feature, learning rate 0.1) overfit the tables of ``bench/quality/frontier.py``; :data:`TUNED` grows 100 trees of 15
leaves, each on a seeded half of the features (``colsample_bytree``; LightGBM draws it from the seed, so the trees
stay deterministic), at the same learning rate: about half of the default fit's time, and more accurate after the
thresholds on every table measured.

The evidence is ``python -m bench.quality.gbdt_defaults`` (its figures: docs/architecture.md, "Measured choices").
The test gap is that of the thresholds (what the margin allows), not of the base.

Only the fields still at the model spec's own defaults (LightGBM's) are replaced, in a copy of the spec
(:func:`tuned_spec`): a model spec that sets ``num_leaves``, ``colsample_bytree`` or ``n_estimators`` to anything
else keeps it. A job stores its spec with every default written out, so a field set to exactly LightGBM's default
reads as unset; ``group_thresholds``' ``base_model: "spec"`` boosts the spec's hyper-parameters as they are.

**Selected capacity** (``base_model: "select"``, what ``auto`` asks with cross-fitting). :data:`TUNED` is the more
accurate on rows no fit has seen; on data whose future rows repeat fitting rows exactly (records entered twice, a
finite table sampled with replacement — the population protocol, ``bench.quality.population``) LightGBM's own
defaults (:data:`CAPACITY`: 100 trees of 31 leaves on every feature) memorise them and are the more accurate there.
The rows' out-of-fold scores tell which case holds: each fold model scores rows it did not see, which repeat its
training rows as often as a fresh draw from the population repeats the stored model's. So the base whose
out-of-fold scores give the more accurate rule at the asked tolerances is stored: judged on the validation fold
first when that is decisive, else with both bases cross-fitted on every fitting row
(:meth:`solvers.algorithms.group_thresholds._Thresholded._selected_on_validation`). Measured (``python -m
bench.quality.capacity``, results ``bench/quality/results/capacity.md``; Adult, bank, bank-additional, COMPAS,
8 samples of each kind): the choice was the base more accurate on the judging rows in 57 of 64 samples, the others
within 0.003.
"""
from __future__ import annotations

from typing import Any

#: field -> value of the tuned base; replaces the model spec's value when that is the spec's default
TUNED: dict[str, Any] = {"n_estimators": 100, "num_leaves": 15, "colsample_bytree": 0.5}
#: field -> LightGBM's own default (``LGBMClassifier``): the other base of ``base_model: "select"``
CAPACITY: dict[str, Any] = {"n_estimators": 100, "num_leaves": 31, "colsample_bytree": 1.0}


def tuned_spec(spec: Any, values: dict[str, Any] = TUNED) -> tuple[Any, dict[str, Any]]:
    """(a copy of the gbdt ModelSpec ``spec`` with ``values`` (:data:`TUNED`, or :data:`CAPACITY`) where it holds
    its defaults, the fields replaced ({} when none: ``spec`` itself is returned))."""
    defaults = type(spec).model_fields
    replaced = {name: value for name, value in values.items() if getattr(spec, name) == defaults[name].default}
    return (spec.model_copy(update=replaced) if replaced else spec), replaced
