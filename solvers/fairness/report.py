"""The honest result of a job: per constraint, the exact value on every split with its 95 % CI and whether
the tolerance is kept, the test split's one-sided 95 % upper bound; and the warnings a user must see.

Entry per constraint (family) of the spec, JSON-ready::

    {"type", "tolerance", "method",
     "train": {"value", "ci": [lo, hi], "kept"}, "validation": {...} | None, "test": {...},
     "test_upper_95", "kept_on_test"}

``kept`` = exact value ≤ tolerance (:mod:`.exact`); CIs and ``test_upper_95`` from :mod:`.confidence` (the upper
bounds hold simultaneously over the job's constraints with probability ≥ 95 %).

Warnings (:func:`warnings_for`):

* near-trivial model: balanced accuracy on the test split < ``MIN_BALANCED_ACCURACY`` (0.55);
* a group whose predicted-positive rate on the test split is < ``MIN_POSITIVE_RATE`` (1 %);
* a constraint whose exact value on the TRAINING split exceeds its tolerance (the model does not
  keep the constraint even on the rows it was fitted to), with why, from the job's ``enforcement`` record: the
  solver did not meet its surrogate there (``surrogate_met: false``, so no exact enforcement ran), or the exact
  enforcement did not reach the tolerance (``met: false``, the method named);
* a constraint whose exact value on the validation split exceeds its tolerance;
* a constraint whose tolerance the test split is too small to show (``test_noise_floor`` below);
* deterministic thresholds whose mixed-integer solve ran out of the job's time limit (the record's ``status``
  ``time_limit``): the rule is the best one found, or a constant rule, not the proven optimum.

**What the test split can show** (``test_noise_floor``, for demographic parity, equal opportunity and equalized
odds over a partition of the rows, max − min form): :func:`.noise_floor.floor_of_predictions` for the test split's
group sizes, at the model's own pooled test rates (its selection rate; its TPR and FPR): the probability
``keep_probability`` that a model whose gap on the POPULATION is exactly 0 shows a test gap ≤ the tolerance, and
its ``expected_gap``. Below :data:`NOISE_FLOOR_WARN` the test verdict says more about the split than the model,
and the job warns so: a pass or fail there is then read with the test interval, not as the model's property.
Its draws are bounded there (at most 2,000 simulated splits: Monte-Carlo standard error ≤ 0.011), seeded by the
job's seed.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..data.membership import Membership, rows_of
from .confidence import constraint_bounds
from .noise_floor import floor_of_predictions
from .triviality import MIN_BALANCED_ACCURACY
from .triviality import MIN_GROUP_RATE as MIN_POSITIVE_RATE

LISTED_GROUPS = 10  # groups named in one warning
SPLITS = ("train", "validation", "test")
REPORT_BOOT = 500  # bootstrap replicates per split of the report's loss / AUC gaps (the guarantee uses 1000)
NOISE_FLOOR_WARN = 0.5           # warn when a zero-gap model keeps the tolerance on test less often than this


def fairness_entries(families: Sequence, y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                     group_names: Sequence[str], splits: Mapping[str, np.ndarray], *, confidence: float = 0.95,
                     n_boot: int = REPORT_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """One entry per family (module docstring); ``splits`` maps split name -> row positions; ``group`` the rows'
    group index, or a :class:`~solvers.data.membership.Membership` (groups that overlap)."""
    per_split = {name: constraint_bounds(families, y[idx], logits[idx], rows_of(group, idx), group_names,
                                         confidence=confidence, n_boot=n_boot, seed=seed)
                 for name, idx in splits.items()}
    entries = []
    for j, family in enumerate(families):  # without a test split (an estimator's training data): no test entries
        test = per_split["test"][j] if "test" in per_split else None
        method = (test or next(iter(per_split.values()))[j]).method
        entry = {"type": family.name, "tolerance": family.tolerance, "method": method}
        for name in SPLITS:
            entry[name] = per_split[name][j].as_dict(family.tolerance) if name in per_split else None
        entry["test_upper_95"] = float(test.upper) if test is not None and np.isfinite(test.upper) else None
        entry["kept_on_test"] = entry["test"]["kept"] if test is not None else None
        if "test" in splits:
            idx = splits["test"]
            entry["test_noise_floor"] = split_noise_floor(family, y[idx], logits[idx], rows_of(group, idx),
                                                          len(group_names), seed)
        entries.append(entry)
    return entries


def split_noise_floor(family, y: np.ndarray, logits: np.ndarray, group, n_groups: int,
                      seed: int = 0) -> dict[str, Any] | None:
    """What this test split can show of ``family``'s tolerance (module docstring); None for other families,
    overlapping groups or a gap measured against the overall rate."""
    if isinstance(group, Membership) or getattr(family.config, "reference", "groups") == "overall":
        return None
    return floor_of_predictions(family.name, y, np.asarray(logits, dtype=np.float64) > 0, group, n_groups,
                                float(family.tolerance), seed)


def trivial_reasons(balanced_accuracy: float | None, positive_rates: Mapping[str, float | None]) -> list[str]:
    """Why a model is near-trivial: balanced accuracy < ``MIN_BALANCED_ACCURACY``, groups whose
    predicted-positive rate is < ``MIN_POSITIVE_RATE``; empty when neither."""
    out = []
    if balanced_accuracy is not None and balanced_accuracy < MIN_BALANCED_ACCURACY:
        out.append(f"balanced accuracy {balanced_accuracy:.3f} (< {MIN_BALANCED_ACCURACY}), it barely separates "
                   "the classes")
    low = {g: r for g, r in positive_rates.items() if r is not None and r < MIN_POSITIVE_RATE}
    if low:
        listed = ", ".join(f"{g} {100 * r:.1f} %" for g, r in list(low.items())[:LISTED_GROUPS])
        if len(low) > LISTED_GROUPS:  # many (overlapping) groups: a count, not a page of names
            listed += f" and {len(low) - LISTED_GROUPS} more"
        out.append(f"predicted-positive rate under {100 * MIN_POSITIVE_RATE:.0f} % for group(s) {listed}")
    return out


def split_trivial_reasons(y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                          group_names: Sequence[str]) -> list[str]:
    """:func:`trivial_reasons` of the predictions 1{f > 0} on one split (the metrics' own definitions)."""
    from sklearn.metrics import balanced_accuracy_score

    from ..metrics.classification import group_fairness

    pred = (np.asarray(logits) > 0).astype(int)
    both = 0 < np.sum(y) < len(y)
    bal = float(balanced_accuracy_score(y, pred)) if both else None
    return trivial_reasons(bal, group_fairness(y, pred, group, list(group_names))["demographic_parity_by_group"])


def warnings_for(entries: Sequence[Mapping[str, Any]], metrics: Mapping[str, Mapping[str, Any]],
                 enforcement: Mapping[str, Any] | None = None) -> list[str]:
    """Human-readable warnings (module docstring) from the fairness entries, the split metrics and the job's
    exact-enforcement record (None: none ran)."""
    test = metrics.get("test", {})
    out = [f"near-trivial model: {reason} on the test split"
           for reason in trivial_reasons(test.get("balanced_accuracy"), test.get("demographic_parity_by_group") or {})]
    for split in ("train", "validation"):
        for entry in entries:
            kept = entry.get(split)
            if kept is not None and not kept["kept"]:
                shown = "undefined" if kept["value"] is None else f"{kept['value']:.4f}"
                out.append(f"constraint {entry['type']} not kept on the {_SPLIT_NAMES[split]} split: exact value "
                           f"{shown} > tolerance {entry['tolerance']}" + (_why_not_on_train(enforcement)
                                                                            if split == "train" else ""))
    if enforcement and enforcement.get("status") == "time_limit":
        gap = enforcement.get("mip_gap")
        kept = (f": the model keeps the best rule it found, within a relative optimality gap of {gap:.2%}"
                if gap is not None else " before it found a rule: the model keeps the better constant rule "
                "(everybody positive or everybody negative)")
        out.append(f"the exact threshold search (a mixed-integer solve) ran out of the job's time limit{kept}. A "
                   "longer time_limit_s, fewer groups or randomised thresholds would solve it")
    for entry in entries:
        floor = entry.get("test_noise_floor")
        if floor and floor["keep_probability"] < NOISE_FLOOR_WARN:
            out.append(f"constraint {entry['type']}: the test split is too small to show a tolerance of "
                       f"{entry['tolerance']}: a model with no gap on the population would show a test gap above "
                       f"it with probability {1 - floor['keep_probability']:.0%} (expected test gap "
                       f"{floor['expected_gap']:.4f}); read the test value with its 95 % interval")
    return out


_SPLIT_NAMES = {"train": "training", "validation": "validation"}


def _why_not_on_train(enforcement: Mapping[str, Any] | None) -> str:
    """Why a constraint is over its tolerance on the training split, from the enforcement record."""
    if not enforcement:
        return ""
    if enforcement.get("surrogate_met") is False:
        worst = enforcement.get("surrogate_max_violation")
        shown = "" if worst is None else f", its largest row over the tolerance by {worst:.4f},"
        return (f" (the solver's surrogate constraint is not met on the training split{shown} so no exact "
                "enforcement ran: more iterations or another solver may keep it)")
    if enforcement.get("met") is False:
        return f" (exact enforcement, method {enforcement.get('method', 'none')}, did not reach it)"
    return ""
