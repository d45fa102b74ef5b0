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

    def uniform(self, batch_size: int) -> Tensor:
        """The next ``batch_size`` indices of the current epoch's permutation (wrapping into a new epoch)."""
        parts, need = [], min(batch_size, self.n)
        while need > 0:
            if self._pos >= self._perm.numel():
                self._perm, self._pos = torch.randperm(self.n, generator=self.generator), 0
            take = self._perm[self._pos:self._pos + need]
            self._pos += take.numel()
            need -= take.numel()
            parts.append(take)
        return torch.cat(parts).to(self.device)

    def balanced(self, per_group: int) -> Tensor:
        """``per_group`` indices from every non-empty group, shape (K_nonempty · per_group,)."""
        nonempty = self.counts > 0
        starts, counts = self.starts[nonempty], self.counts[nonempty]
        u = torch.rand(counts.numel(), per_group, generator=self.generator).to(self.device)
        offsets = (u * counts[:, None]).long().clamp_max(counts[:, None] - 1)
        return self.by_group[(starts[:, None] + offsets).reshape(-1)]
