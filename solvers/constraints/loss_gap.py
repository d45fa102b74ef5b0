"""Loss-gap constraints: a group's mean loss may not exceed the overall (or another
group's) mean loss by more than δ (stochastic benchmark eq. 4; PLADA eq. 18)."""
from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

import numpy as np

from ..metrics.classification import loss_gap
from ..objectives import get_objective
from .base import CONSTRAINTS, ConstraintFamily, FairnessData, undefined_as_nan

LossName = Literal["bce", "logistic", "hinge", "truncated_logistic"]


@CONSTRAINTS.implements("loss_gap")
class LossGap(ConstraintFamily):
    r"""Group mean losses L_g(θ) = (1/N_g) Σ_{i∈I_g} ℓ(f_θ(x_i), y_i), overall L(θ) = (1/N) Σ_i ℓ(f_θ(x_i), y_i).

    * ``one_sided`` (default): G_g(θ) = L_g(θ) − L(θ) − δ ≤ 0 for every kept group g
      (PLADA eq. 18 with one constraint per group, no absolute value); rows named
      ``loss_gap[g]``.
    * ``two_sided``: for every pair a < b (in group order), G_{a-b} = L_a − L_b − δ and
      G_{b-a} = L_b − L_a − δ (stochastic benchmark eq. 4:
      −δ ≤ L_s − L_s̄ ≤ δ as c1, c2); rows named ``loss_gap[a-b]``, ``loss_gap[b-a]``.

    ℓ is the ``loss`` field's per-sample objective (:mod:`solvers.objectives`), with ỹ = 2y − 1.
    Kept groups: N_g > ``min_group_fraction`` · N on the training data given to :meth:`bind`
    (fixed once, so every mini-batch yields the same rows). L is computed as
    Σ_g w_g L_g / Σ_g w_g over the groups present in ``data`` with w_g = N_g/N the training
    shares — on the full training set this is exactly the overall mean, and on a
    group-balanced mini-batch it stays an estimate of the population mean. A row whose
    group(s) are absent from ``data`` is 0 (before − δ). Every row is linear in the group losses,
    Δ̂ = Lᵀ R with a fixed K × m matrix R (:meth:`row_matrix`, built once per cell index, with the
    1/n_g of the means folded in): one ``index_add`` for the group sums and one product — no loop over
    groups or samples. Needs :meth:`bind`.

    Overlapping groups (a sparse membership M, :mod:`solvers.data.membership`; PLADA's C&C threshold groups): the
    group sums are Mᵀℓ and the shares no longer add up to the population, so one-sided rows take L as the
    batch's plain mean (1/n) Σ_i ℓ_i instead: G_g = L_g − L − δ = (Mᵀℓ)_g / n_g − 1ᵀℓ / n − δ; the size filter
    is N_g > ``min_group_fraction`` · N with N the number of training samples (not Σ_g N_g).
    """

    def _on_bind(self) -> None:
        self._loss = get_objective(self.config.loss)  # ℓ (per_sample) and ∂ℓ/∂f (derivative)
        counts = self.group_counts
        total = torch.tensor(float(self.n_samples)).clamp_min(1.0)
        kept = torch.nonzero(counts > self.config.min_group_fraction * total).flatten()
        self._weights = counts / total
        names = self.group_names
        K = len(names)
        if self.config.mode == "one_sided":
            self._rows = (kept,)
            self._names = [f"{self.name}[{names[g]}]" for g in kept.tolist()]
            self._basis = _one_hot(kept, K)                        # column g: e_g
        else:
            i, j = torch.triu_indices(kept.numel(), kept.numel(), 1)
            a = torch.stack([kept[i], kept[j]], 1).reshape(-1)   # (a,b), (b,a), ...
            b = torch.stack([kept[j], kept[i]], 1).reshape(-1)
            self._rows = (a, b)
            self._names = [f"{self.name}[{names[p]}-{names[q]}]" for p, q in zip(a.tolist(), b.tolist())]
            self._basis = _one_hot(a, K) - _one_hot(b, K)          # column (a, b): e_a − e_b

    @property
    def names(self) -> list[str]:
        self._require_bound()
        return list(self._names)

    def _check(self, data: FairnessData) -> None:
        self._require_bound()
        if data.by_group.n_cells != len(self.group_names):
            raise ValueError(f"{self.name}: bound to {len(self.group_names)} groups, data has {data.by_group.n_cells}")

    def row_matrix(self, valid: Tensor, like: Tensor, overlapping: bool = False) -> Tensor:
        """R ∈ R^{K×m} with Δ̂ = Lᵀ R (L the group losses): column r of a one-sided row g is
        (e_g − ω) with ω_h = w_h 1{h valid} / Σ_{h'} w_h' 1{h' valid} (w_h = N_h/N), of a two-sided row (a, b)
        is e_a − e_b; a column whose group(s) are absent (``valid`` False) is 0. No host sync.
        ``overlapping``: one-sided columns are e_g alone (the overall mean (1/n) 1ᵀℓ is subtracted apart)."""
        if self.config.mode == "one_sided":
            rows = self._cached("rows", self._rows[0], valid)
            if overlapping:
                return self._cached("basis", self._basis, like) * valid[rows]
            w = self._cached("weights", self._weights, like) * valid
            omega = w / w.sum().clamp_min(torch.finfo(like.dtype).tiny)
            return (self._cached("basis", self._basis, like) - omega[:, None]) * valid[rows]
        a, b = self._cached("a", self._rows[0], valid), self._cached("b", self._rows[1], valid)
        return self._cached("basis", self._basis, like) * (valid[a] & valid[b])

    def _per_sample_matrices(self, cells, like: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(R̃, R̃ᵀ, −ε·1) with R̃ = diag(1/n_g) R for the cells of ``data`` (n_g their sizes), so that
        Δ̂ = (Σ_{i∈g} ℓ_i)_gᵀ R̃ (R̃ᵀ contiguous: G = −ε + R̃ᵀ sums is one ``addmv``); kept on the cell index (a
        mini-batch's G and its VJP, a balanced batch layout or the training set reuse it) and, on the CPU, per
        count vector (mini-batches of one size repeat a few compositions; reading it costs no sync)."""
        memo = cells.__dict__.get("_row_matrix")
        if memo is not None and memo[0] is self and memo[1] is like.dtype:
            return memo[2]
        composition = cells.counts_key()
        key = None if composition is None else (composition, like.dtype, self.tolerance, cells.overlapping)
        counts = cells.counts
        matrices = None if key is None else self._device_cache.get(key)
        if matrices is None:
            counts = counts.clamp_min(1.0)
            R = self.row_matrix(cells.valid, like, cells.overlapping) / (
                counts if counts.dtype == like.dtype else counts.to(like.dtype)).unsqueeze(1)
            overall = None
            if cells.overlapping and self.config.mode == "one_sided":  # c_r = 1{row r's group present}
                overall = cells.valid[self._cached("rows", self._rows[0], cells.valid)].to(R.dtype)
            matrices = (R, R.t().contiguous(), torch.full((R.shape[1],), -self.tolerance, dtype=R.dtype,
                                                          device=R.device), overall)
            if key is not None and len(self._device_cache) < _CACHED_COMPOSITIONS:
                self._device_cache[key] = matrices
        cells.__dict__["_row_matrix"] = (self, like.dtype, matrices)
        return matrices

    def exact_value(self, y, logits, group, group_names) -> float:
        """max_g (L_g − L) over the kept groups (``one_sided``), or max_g L_g − min_g L_g (``spread``), of the
        exact mean losses of the config's loss."""
        cfg = self.config
        out = loss_gap(y, logits, group, list(group_names), cfg.loss, cfg.min_group_fraction, "gap")
        if getattr(cfg, "mode", "one_sided") == "one_sided":
            return undefined_as_nan(out["gap"])
        values = np.asarray([v for v in out["gap_by_group"].values() if v is not None], dtype=float)
        return float(values.max() - values.min()) if values.size else float("nan")

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        return self._rows_value(scores, data, None)

    def surrogate(self, scores: Tensor, data: FairnessData) -> Tensor:
        """G = Δ̂ − ε as one fused product (overlapping one-sided rows: minus c · 1ᵀℓ/n)."""
        return self._rows_value(scores, data, True)

    def _rows_value(self, scores: Tensor, data: FairnessData, shifted: bool | None) -> Tensor:
        """R̃ᵀ(Mᵀℓ) [− c · 1ᵀℓ/n], minus ε when ``shifted``."""
        self._check(data)
        _, RT, neg_tolerance, overall = self._per_sample_matrices(data.by_group, scores)
        losses = data.per_sample_loss(self._loss, scores)  # shared with the objective when it is ℓ
        sums = data.by_group.sums(losses)
        G = torch.addmv(neg_tolerance, RT, sums) if shifted else torch.mv(RT, sums)
        return G if overall is None else G - overall * losses.mean()

    @property
    def loss(self):
        """ℓ, the :class:`~solvers.objectives.Objective` whose group means the rows compare."""
        self._require_bound()
        return self._loss

    def score_weights(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """a_i = (M R̃ w)_i − cᵀw/n (a partition: (R̃ w)_{g_i}, no c term), so that ∂(wᵀG)/∂f_i = ℓ'(f_i, y_i) a_i:
        a caller that also needs ℓ' elsewhere (the objective's rows of a score space) multiplies once."""
        cells = data.by_group
        R, _, _, overall = self._per_sample_matrices(cells, scores)
        w = w if w.dtype == scores.dtype else w.to(scores.dtype)
        per_sample = cells.pull(torch.mv(R, w), scores.shape[0])
        if overall is not None:
            per_sample = per_sample - overall.dot(w) / scores.shape[0]
        return per_sample

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """∂(wᵀG)/∂f_i = ℓ'(f_i, y_i) ((M R̃ w)_i − cᵀw/n) (a partition: (R̃ w)_{g_i}, no c term)."""
        return self._loss.derivative(scores, data.y) * self.score_weights(scores, data, w)


_CACHED_COMPOSITIONS = 4096  # bound of the per-count-vector cache (many groups: too many compositions to keep)


def _one_hot(index: Tensor, n: int) -> Tensor:
    """(n, len(index)) with column r = e_{index[r]}."""
    return torch.nn.functional.one_hot(index, n).t().to(torch.float64)
