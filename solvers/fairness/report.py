"""The honest result of a job: per constraint, the exact value on every split with its 95 % CI and whether
the tolerance is kept, the test split's one-sided 95 % upper bound; and the warnings a user must see.

Entry per constraint (family) of the spec, JSON-ready::

    {"type", "tolerance", "method",
     "train": {"value", "ci": [lo, hi], "kept"}, "validation": {...} | None, "test": {...},
     "test_upper_95", "kept_on_test"}

``kept`` = exact value ≤ tolerance (:mod:`.exact`); CIs and ``test_upper_95`` from :mod:`.intervals` (the upper
bounds hold simultaneously over the job's constraints with probability ≥ 95 %).

Warnings (:func:`warnings_for`):

* near-trivial model: balanced accuracy on the test split < ``MIN_BALANCED_ACCURACY`` (0.55);
* a group whose predicted-positive rate on the test split is < ``MIN_POSITIVE_RATE`` (1 %);
* a constraint whose exact value on the validation split exceeds its tolerance.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .intervals import DEFAULT_BOOT, constraint_bounds

MIN_BALANCED_ACCURACY = 0.55
MIN_POSITIVE_RATE = 0.01
SPLITS = ("train", "validation", "test")


def fairness_entries(families: Sequence, y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                     group_names: Sequence[str], splits: Mapping[str, np.ndarray], *, confidence: float = 0.95,
                     n_boot: int = DEFAULT_BOOT, seed: int = 0) -> list[dict[str, Any]]:
    """One entry per family (module docstring); ``splits`` maps split name -> row positions."""
    per_split = {name: constraint_bounds(families, y[idx], logits[idx], group[idx], group_names,
                                         confidence=confidence, n_boot=n_boot, seed=seed)
                 for name, idx in splits.items()}
    entries = []
    for j, family in enumerate(families):
        test = per_split["test"][j]
        entry = {"type": family.name, "tolerance": family.tolerance, "method": test.method}
        for name in SPLITS:
            entry[name] = per_split[name][j].as_dict(family.tolerance) if name in per_split else None
        entry["test_upper_95"] = float(test.upper) if np.isfinite(test.upper) else None
        entry["kept_on_test"] = entry["test"]["kept"]
        entries.append(entry)
    return entries


def warnings_for(entries: Sequence[Mapping[str, Any]], metrics: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Human-readable warnings (module docstring) from the fairness entries and the split metrics."""
    out: list[str] = []
    test = metrics.get("test", {})
    bal = test.get("balanced_accuracy")
    if bal is not None and bal < MIN_BALANCED_ACCURACY:
        out.append(f"near-trivial model: balanced accuracy on the test split is {bal:.3f} "
                   f"(< {MIN_BALANCED_ACCURACY}); it barely separates the classes")
    rates = test.get("demographic_parity_by_group") or {}
    low = {g: r for g, r in rates.items() if r is not None and r < MIN_POSITIVE_RATE}
    if low:
        listed = ", ".join(f"{g} {100 * r:.1f} %" for g, r in low.items())
        out.append(f"near-trivial model: predicted-positive rate under {100 * MIN_POSITIVE_RATE:.0f} % "
                   f"on the test split for group(s) {listed}")
    for entry in entries:
        val = entry.get("validation")
        if val is not None and not val["kept"]:
            shown = "undefined" if val["value"] is None else f"{val['value']:.4f}"
            out.append(f"constraint {entry['type']} not kept on the validation split: exact value {shown} "
                       f"> tolerance {entry['tolerance']}")
    return out
