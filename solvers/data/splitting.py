"""Deterministic stratified train / validation / test split.

Strata are the cells group × label (stratum = 2g + y), so every group's label
balance is preserved in each split. Strata too small to be split are merged into
one "rare" stratum; if sklearn still cannot stratify, we fall back to stratifying
by label only, then to a plain shuffled split.
"""
from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split


def _split(indices: np.ndarray, strata: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(keep, take) with ``take`` ≈ fraction · len(indices)."""
    local = strata[indices]
    uniq, inverse, counts = np.unique(local, return_inverse=True, return_counts=True)
    merged = np.where(counts[inverse] < 2, -1, local)  # rare strata together
    candidates = [merged]
    if (merged == -1).sum() == 1:  # a lone rare sample cannot form a stratum: fold it into the largest
        candidates = [np.where(merged == -1, uniq[np.argmax(counts)], merged)]
    candidates += [local % 2, None]  # label only, then unstratified
    for stratify in candidates:
        try:
            keep, take = train_test_split(indices, test_size=fraction, random_state=seed, shuffle=True, stratify=stratify)
            return np.sort(keep), np.sort(take)
        except ValueError:
            continue
    raise ValueError("cannot split: too few rows")


def split_indices(strata: np.ndarray, test: float = 0.2, validation: float = 0.2, seed: int = 0
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row positions (train, validation, test); disjoint, covering, sorted, deterministic in ``seed``.

    ``strata``: (n,) int, e.g. 2·group + label. ``validation`` may be 0 (empty array).
    """
    strata = np.asarray(strata)
    everything = np.arange(len(strata))
    rest, test_idx = _split(everything, strata, test, seed)
    if validation <= 0:
        return rest, np.zeros(0, dtype=np.int64), test_idx
    train_idx, val_idx = _split(rest, strata, validation / (1.0 - test), seed + 1)
    return train_idx, val_idx, test_idx
