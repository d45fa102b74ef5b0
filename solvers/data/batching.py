"""Mini-batch index sampling, deterministic under a seed and vectorised over groups.

* :meth:`BatchSampler.uniform` — b indices drawn without replacement within an
  epoch (a fresh seeded permutation each epoch), the usual SGD sampling.
* :meth:`BatchSampler.balanced` — b indices *per group*, drawn with replacement
  inside each group, as the stochastic benchmark draws its constraint batches
  (every group is represented in every constraint estimate, whatever its size).
"""
from __future__ import annotations

import torch
from torch import Tensor


FULL_BATCH_MAX_ROWS = 262_144  # 2^18 training rows: the largest table FairSolve's own defaults step on whole
SCALE_BATCH = 4_096            # rows per step above it


def scale_batch_size(n_rows: int) -> int | None:
    """None (full batch) for at most :data:`FULL_BATCH_MAX_ROWS` training rows, else :data:`SCALE_BATCH`."""
    return None if n_rows <= FULL_BATCH_MAX_ROWS else SCALE_BATCH


class BatchSampler:
    def __init__(self, group: Tensor, n_groups: int, seed: int) -> None:
        self.n = group.numel()
        self.device = group.device
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        order = torch.argsort(group.cpu(), stable=True)            # samples sorted by group
        counts = torch.bincount(group.cpu(), minlength=n_groups)
        self.by_group = order.to(self.device)
        self.starts = (torch.cumsum(counts, 0) - counts).to(self.device)
        self.counts = counts.to(self.device)
        self._perm = torch.empty(0, dtype=torch.long)
        self._pos = 0
        nonempty = self.counts > 0   # the balanced draws' fixed layout: the non-empty groups, (K_nonempty, 1) columns
        self.nonempty_groups = torch.nonzero(nonempty).flatten()
        self.nonempty_counts = self.counts[nonempty][:, None]
        self.nonempty_starts = self.starts[nonempty][:, None]

    def uniform(self, batch_size: int) -> Tensor:
        """The next ``batch_size`` indices of the current epoch's permutation (wrapping into a new epoch)."""
        return self.uniform_run(batch_size)[0]

    def uniform_run(self, batch_size: int) -> tuple[Tensor, Tensor | None, int, int]:
        """(:meth:`uniform`'s indices idx, π, a, b) with idx = π[a:b] when the batch is one run of the epoch's
        permutation π (then (idx, None, 0, 0) when it wraps into a new epoch); π is the sampler's own tensor
        (read it, never write it)."""
        need = min(batch_size, self.n)
        if self._pos + need <= self._perm.numel():  # inside the current epoch: a run of the permutation
            start = self._pos
            self._pos += need
            take = self._perm[start:self._pos]   # a copy below: a checkpoint restores a batch in place
            return take.clone() if take.device == self.device else take.to(self.device), self._perm, start, self._pos
        parts = []
        while need > 0:
            if self._pos >= self._perm.numel():
                self._perm, self._pos = torch.randperm(self.n, generator=self.generator), 0
            take = self._perm[self._pos:self._pos + need]
            self._pos += take.numel()
            need -= take.numel()
            parts.append(take)
        if len(parts) == 1:  # the batch opens a new epoch
            return parts[0].to(self.device, copy=True), self._perm, 0, self._pos
        return torch.cat(parts).to(self.device), None, 0, 0

    def balanced(self, per_group: int) -> Tensor:
        """``per_group`` indices from every non-empty group, shape (K_nonempty · per_group,)."""
        return self.balanced_many(1, per_group)[0]

    def balanced_many(self, count: int, per_group: int) -> Tensor:
        """``count`` consecutive :meth:`balanced` draws as one (count, K_nonempty · per_group) tensor, from one
        ``rand`` call (the CPU generator's stream is that of ``count`` separate calls, so the draws are too)."""
        counts = self.nonempty_counts
        u = torch.rand(count, counts.numel(), per_group, generator=self.generator)
        if u.device != self.device:
            u = u.to(self.device)
        offsets = (u * counts).long().clamp_max_(counts - 1).add_(self.nonempty_starts)
        return self.by_group.index_select(0, offsets.reshape(-1)).reshape(count, -1)
