r"""The nonparametric bootstrap: one resampling of the rows and one percentile interval for every caller.

Resample b = 1..B draws n row indices uniformly with replacement, I_b ~ U{0, …, n−1}^n, from ONE seeded
stream: ``default_rng(seed).integers(0, n, n)`` called B times in a row. numpy's stream is the same whether
it is drawn one (n,) row at a time, as (b, n) blocks or as one (B, n) array (int64 or int32 indices), so a
consumer that iterates rows (:meth:`Resamples.__iter__`, only one row of indices held) and one that takes
blocks (:meth:`Resamples.blocks`, vectorised statistics over b replicates at once) see the same resamples
under the same seed.

The percentile interval at level 1 − α of replicate values T_1, …, T_B is

    [q_{α/2}, q_{1−α/2}]

of their empirical distribution (numpy's linear quantile), undefined replicates (None, NaN, ±∞) left out.

Callers: the exact AUC-parity metrics' CIs (:func:`solvers.metrics.auc.auc_fairness`), a job's fairness report
(:mod:`solvers.fairness.confidence`, vectorised statistics over blocks) and the service's audit metrics.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

N_BOOT = 200      # replicates, unless the caller asks for another number
SEED = 0
LEVEL = 0.95


@dataclass(frozen=True)
class Resamples:
    """The row indices of ``n_boot`` bootstrap resamples of ``n`` rows, drawn from a fresh ``default_rng(seed)``
    on every pass (module docstring): iterating gives them one (n,) row at a time, so every metric sees the same
    resamples while only one row of indices is held (8 MB for 1M rows, not 1.6 GB for 200 of them)."""

    n: int
    n_boot: int = N_BOOT
    seed: int = SEED

    def __iter__(self) -> Iterator[np.ndarray]:
        if self.n == 0:
            return
        rng = np.random.default_rng(self.seed)
        for _ in range(self.n_boot):
            yield rng.integers(0, self.n, size=self.n)

    def __len__(self) -> int:
        return self.n_boot if self.n else 0

    def blocks(self, max_entries: int) -> Iterator[np.ndarray]:
        """The same resamples as (b, n) int32 blocks of at most ``max_entries`` indices (at least one row each)."""
        rng = np.random.default_rng(self.seed)
        per_block = max(1, max_entries // max(self.n, 1))
        done = 0
        while done < self.n_boot:
            b = min(per_block, self.n_boot - done)
            yield rng.integers(0, self.n, (b, self.n), dtype=np.int32)
            done += b


def resamples(n: int, n_boot: int = N_BOOT, seed: int = SEED) -> Resamples:
    """The bootstrap resamples' row indices (see :class:`Resamples`)."""
    return Resamples(n, n_boot, seed)


def percentile_ci(values: Iterable[float | None], level: float = LEVEL) -> list[float] | None:
    """The percentile interval [q_{(1−level)/2}, q_{1−(1−level)/2}] of the defined values (None, NaN and infinities
    left out); None when none is defined."""
    defined = np.array([np.nan if v is None else v for v in values], dtype=float)
    defined = defined[np.isfinite(defined)]
    if defined.size == 0:
        return None
    lo, hi = np.quantile(defined, [(1 - level) / 2, 1 - (1 - level) / 2])
    return [float(lo), float(hi)]


def bootstrap_ci(statistic: Callable[[np.ndarray], float | None], n: int, n_boot: int = N_BOOT, seed: int = SEED,
                 level: float = LEVEL) -> list[float] | None:
    """The percentile interval of ``statistic(rows)`` over the ``n_boot`` resamples of ``n`` rows (one call per
    replicate; each call is vectorised over the rows); None without replicates or without a defined value."""
    if n_boot <= 0 or n == 0:
        return None
    return percentile_ci((statistic(rows) for rows in Resamples(n, n_boot, seed)), level)
