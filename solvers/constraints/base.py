"""Constraint families: differentiable surrogates G(θ) of group-fairness metrics.

A family turns the scores f_θ(x_i) of the training samples into a vector

    G(θ) = Δ̂(θ) − ε ∈ R^m,         G_j(θ) ≤ 0  ⇔  constraint j satisfied,

where Δ̂ is a surrogate of the exact (indicator-based) metric and ε the
tolerance (paper eq. (2)–(3)). Every family is vectorised over all groups at
once through :class:`~solvers.constraints.cells.CellIndex`. The exact metrics used for
evaluation live in :mod:`solvers.metrics.classification`.

Every family, AUC and partial parity included, is one :class:`ConstraintFamily` (as fairlearn's ``Moment``):
``bind`` (the training groups, its ``load_data``), ``gap`` / ``surrogate`` (Δ̂ and G, its ``gamma`` on the
surrogate), ``vjp`` (∂(wᵀG)/∂f, its ``signed_weights``), ``exact_value`` (the exact metric Δ a tolerance is
judged on, on the tolerance's scale) and ``exact_metrics`` (what the split's report adds).

A new family is its Config, declared in :mod:`solvers.catalog` (no torch there)::

    @CONSTRAINTS.declare("my_family", implementation="solvers.constraints.mine:MyFamily", description="...")
    class MyFamilyConfig(ConstraintConfig): ...

and one module in this folder::

    @CONSTRAINTS.implements("my_family")
    class MyFamily(ConstraintFamily):
        def gap(self, scores, data): ...
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import torch
import torch.nn.functional as F_
from torch import Tensor

from ..catalog.base import CONSTRAINTS, ConstraintConfig  # noqa: F401  (CONSTRAINTS re-exported for the families)
from .cells import CellIndex

@dataclass
class FairnessData:
    """Group structure of the training samples, shared by every family.

    ``by_group``: cells g ∈ {0..K-1}; ``by_group_label``: cells 2g + y (y ∈ {0,1}), built on first use
    when not given. Overlapping groups (:meth:`overlapping`): ``group`` holds the group c_p of each membership
    pair and ``by_group.rows`` its sample i_p (see :mod:`solvers.constraints.cells`); the families then see the same cells (a mini-batch of a family that needs only ``by_group`` never builds it).
    ``losses``: per-sample losses ℓ(f_i, y_i) already computed on these rows (:meth:`share_losses`), so a
    family whose loss is the objective's (``loss_gap`` with BCE under a BCE objective) does not recompute them.
    """

    y: Tensor  # (n,) float in {0, 1}
    group: Tensor  # (n,) long
    n_groups: int
    by_group: CellIndex
    group_label: CellIndex | None = field(default=None, repr=False)
    losses: tuple | None = field(default=None, repr=False, compare=False)  # (loss, scores, ℓ(scores, y))
    ordered: tuple | None = field(default=None, repr=False, compare=False)  # cache of :meth:`run`

    @property
    def by_group_label(self) -> CellIndex:
        if self.group_label is None:
            rows = self.by_group.rows
            y = self.y.long() if rows is None else self.y.long().index_select(0, rows)
            self.group_label = CellIndex.build(2 * self.group + y, 2 * self.n_groups, rows=rows)
        return self.group_label

    @classmethod
    def build(cls, y: Tensor, group: Tensor, n_groups: int, rows: Tensor | None = None) -> "FairnessData":
        group = group if group.dtype == torch.long else group.long()
        return cls(y=y, group=group, n_groups=n_groups, by_group=CellIndex.build(group, n_groups, rows=rows))

    @classmethod
    def overlapping(cls, y: Tensor, rows: Tensor, group: Tensor, n_groups: int) -> "FairnessData":
        """Groups given by the membership pairs (i_p = ``rows``[p] is in group ``group``[p])."""
        return cls.build(y, group, n_groups, rows=rows.long())

    def share_losses(self, loss, scores: Tensor, values: Tensor) -> None:
        """Record ``values`` = ``loss.per_sample(scores, self.y)`` for :meth:`per_sample_loss`."""
        self.losses = (loss, scores, values)

    def per_sample_loss(self, loss, scores: Tensor) -> Tensor:
        """``loss.per_sample(scores, self.y)``: the shared values when the same loss was recorded on the same
        scores tensor (identity, not equality: the memo holds the tensor, so its id cannot be reused)."""
        memo = self.losses
        if memo is not None and memo[0] is loss and memo[1] is scores:
            return memo[2]
        return loss.per_sample(scores, self.y)

    def subset(self, idx: Tensor) -> "FairnessData":
        """The same structure on the samples ``idx`` (a mini-batch; overlapping groups: distinct samples)."""
        rows = self.by_group.rows
        if rows is not None:  # the pairs of the picked samples, renumbered to their position in idx
            position = torch.full((self.y.shape[0],), -1, dtype=torch.long, device=rows.device)
            position[idx] = torch.arange(idx.numel(), device=rows.device)
            at = position.index_select(0, rows)
            keep = torch.nonzero(at >= 0).flatten()
            return FairnessData.overlapping(self.y.index_select(0, idx), at.index_select(0, keep),
                                            self.group.index_select(0, keep), self.n_groups)
        return FairnessData.build(self.y.index_select(0, idx), self.group.index_select(0, idx), self.n_groups)

    def run(self, order: Tensor, start: int, stop: int) -> "FairnessData":
        """:meth:`subset` for idx = ``order[start:stop]`` (a run of an epoch's permutation π), from views of π's
        structure: y_π, g_π and the cell counts of every run [a, a + b) with a ≡ ``start`` (mod b), b = stop − start,
        taken from the running counts C_t = Σ_{s<t} e_{g_{π_s}} as C_{a+b} − C_a in one pass (exact integers in
        float32 below 2^24 samples: the same values as :meth:`subset`). Built once per π and batch size (cached on
        π's identity and in-place version), so a batch costs views only."""
        if order.numel() >= 2 ** 24 or self.by_group.rows is not None:  # beyond float32's exact integers; overlaps
            return self.subset(order[start:stop].to(self.y.device))
        cached = self.ordered
        if cached is None or cached[0] is not order or cached[1] != order._version:
            perm = order.to(self.y.device)
            y, group = self.y.index_select(0, perm), self.group.index_select(0, perm)
            counts = torch.zeros(group.numel() + 1, self.n_groups, dtype=torch.float64, device=group.device)
            counts[1:].scatter_(1, group.unsqueeze(1), 1.0)
            cached = self.ordered = (order, order._version, y, group, counts.cumsum_(0).to(torch.float32), {})
        _, _, y, group, cumulative, runs = cached
        size = stop - start
        key = (size, start % size)
        per_run = runs.get(key)
        if per_run is None:  # counts and validity of the runs [a, a + size) for every a ≡ start (mod size)
            counts = cumulative[key[1] + size::size] - cumulative[key[1]:cumulative.shape[0] - size:size]
            keys = [row.tobytes() for row in counts.numpy()] if counts.device.type == "cpu" else None
            per_run = runs[key] = (counts, counts > 0, keys)
        r = start // size
        cells = CellIndex(index=group[start:stop], n_cells=self.n_groups, counts=per_run[0][r], valid=per_run[1][r],
                          composition=None if per_run[2] is None else per_run[2][r])
        return FairnessData(y=y[start:stop], group=cells.index, n_groups=self.n_groups, by_group=cells)

    def to(self, device: torch.device) -> "FairnessData":
        return FairnessData(self.y.to(device), self.group.to(device), self.n_groups, self.by_group.to(device),
                            self.by_group_label.to(device))




def undefined_as_nan(value: Any) -> float:
    """A metric's value as a float, NaN for None (undefined: no tolerance keeps it, ``nan <= ε`` is False)."""
    return float("nan") if value is None else float(value)


def indicator_surrogate(scores: Tensor, kind: str, temperature: float = 1.0) -> Tensor:
    """σ(f/T) ≈ 1{f > 0} (T = ``temperature``; the limit T → 0 is the indicator itself).

    * ``sigmoid``: σ(f) = 1/(1+e^{−f}) (paper eq. 15);
    * ``hinge``: σ(f) = [1 + f]^+, the convex upper bound of 1{f > 0};
    * ``clipped_linear``: σ(f) = min(1, max(0, (1 + f)/2)), the ramp from f = −1 to f = 1.
    """
    if temperature != 1.0:
        scores = scores / temperature
    if kind == "sigmoid":
        return torch.sigmoid(scores)
    if kind == "hinge":
        return F_.relu(1.0 + scores)
    if kind == "clipped_linear":
        return ((1.0 + scores) / 2.0).clamp(0.0, 1.0)
    raise ValueError(f"unknown surrogate {kind!r}")


def sigmoid_rates(scores: Tensor, cells: CellIndex, temperature: float) -> tuple[Tensor, Tensor]:
    """(p, r): p_i = σ(f_i/T) and the cell means r_c = (1/N_c) Σ_{i∈c} p_i, as the rate families' ``gap``
    computes them with the ``sigmoid`` surrogate."""
    probs = indicator_surrogate(scores, "sigmoid", temperature)
    return probs, cells.means(probs)


def rates_vjp(probs: Tensor, cells: CellIndex, per_cell: Tensor, temperature: float) -> Tensor:
    """∂(wᵀG)/∂f_i of a family whose G depends on f only through the cell means r of p = σ(f/T)
    (:func:`sigmoid_rates`), given ``per_cell`` = ∂(wᵀG)/∂r_c: by the chain rule

        ∂(wᵀG)/∂f_i = p_i (1 − p_i) / T · Σ_{c∋i} (∂(wᵀG)/∂r_c) / max(N_c, 1),

    the closed form of the default (autograd) :meth:`ConstraintFamily.vjp`, without a graph."""
    weights = per_cell / (cells.counts.clamp_min(1.0).to(per_cell.dtype) * temperature)
    pulled = cells.pull(weights.to(probs.dtype), probs.shape[0])
    return torch.ops.aten.sigmoid_backward(pulled, probs)  # pulled ⊙ p ⊙ (1 − p), one pass


class ConstraintFamily:
    """One fairness constraint family with tolerance ε; yields m = len(names) constraints."""

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    Config: ClassVar[type[ConstraintConfig]] = ConstraintConfig
    #: True when the family's m rows are the terms of ONE expectation over its groups (PLADA eq. 18:
    #: Δ_I = E_G[·], G drawn uniformly): a Lagrangian term ⟨λ, G⟩ then weighs each row 1/m (PLADA ``row_weights``).
    expectation_over_rows: ClassVar[bool] = False

    def __init__(self, tolerance: float, config: ConstraintConfig | dict | None = None) -> None:
        if tolerance < 0:
            raise ValueError("tolerance must be >= 0")
        self.tolerance = float(tolerance)
        if config is None:
            config = self.Config()
        elif isinstance(config, dict):
            config = self.Config(**config)
        self.config = config

    def bind(self, group_names: Sequence[str], group_counts: Sequence[float] | Tensor,
             n_samples: int | None = None) -> "ConstraintFamily":
        """Tell the family the groups of the training data (names, and sample counts N_g).

        Families whose rows are per group (``loss_gap``, ``intersectional``,
        ``minority_rate``) need this to build :attr:`names` and to fix their rows
        (e.g. the size filter) once, from the whole training set, so that every
        mini-batch yields the same m rows. Called where the Problem is built; calling
        it again with the same groups is harmless. Families that do not need it ignore it.
        ``n_samples``: N, the training samples (default Σ_g N_g, which is N for a partition; overlapping
        groups must pass it).
        """
        counts = torch.as_tensor(group_counts, dtype=torch.float64).detach().cpu().reshape(-1)
        if counts.numel() != len(group_names):
            raise ValueError(f"{len(group_names)} group names but {counts.numel()} counts")
        self.group_names = [str(n) for n in group_names]
        self.group_counts = counts
        self.n_samples = float(counts.sum()) if n_samples is None else float(n_samples)
        self._device_cache: dict = {}
        self._on_bind()
        return self

    @property
    def bound(self) -> bool:
        return getattr(self, "group_names", None) is not None

    def _on_bind(self) -> None:
        """Hook for subclasses: derive per-group index tensors from ``group_names``/``group_counts``."""

    def _require_bound(self) -> None:
        if not self.bound:
            raise RuntimeError(f"constraint {self.name!r} needs the groups: call .bind(group_names, group_counts) "
                               "first (the Problem / solvers.run do this)")

    def _cached(self, key: str, tensor: Tensor, like: Tensor) -> Tensor:
        """``tensor`` (built at bind time, on CPU) on ``like``'s device and dtype, cached."""
        cache_key = (key, like.device, tensor.dtype if not tensor.is_floating_point() else like.dtype)
        hit = self._device_cache.get(cache_key)
        if hit is None:
            hit = tensor.to(device=like.device, dtype=cache_key[2])
            self._device_cache[cache_key] = hit
        return hit

    @property
    def names(self) -> list[str]:
        """One name per constraint row of :meth:`surrogate`."""
        return [self.name]

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        """Surrogate gap Δ̂(θ) ≥ 0, shape (m,)."""
        raise NotImplementedError

    def exact_metrics(self, y: np.ndarray, logits: np.ndarray, group: np.ndarray,
                      group_names: list[str]) -> dict[str, Any] | None:
        """Exact (non-surrogate) metrics of this family on one split, merged into
        ``metrics.<split>`` by :func:`solvers.run` (keys named by the family's type, with
        ``<type>_by_group`` beside). None: the family's metric is among the always-computed
        ones of :func:`solvers.metrics.classification.classification_metrics`."""
        return None

    def exact_value(self, y: np.ndarray, logits: np.ndarray, group, group_names: Sequence[str]) -> float:
        """The family's exact (indicator) metric Δ on one split, on the tolerance's scale: Δ ≤ ε is the promise
        (:func:`solvers.fairness.exact.exact_gaps`). ``logits`` are the raw scores f (ŷ = 1{f > 0}); ``group`` the
        (n,) group index or a :class:`~solvers.data.membership.Membership`. NaN where undefined on the split.
        Default: the value :meth:`exact_metrics` reports under the family's type name."""
        return undefined_as_nan((self.exact_metrics(y, logits, group, list(group_names)) or {}).get(self.name))

    def init_parameters(self, device: torch.device) -> list[Tensor]:
        """Auxiliary variables of the family (e.g. the thresholds θ_p of partial statistical parity),
        reset to their initial values on ``device``; every algorithm optimises them with θ. Default: none."""
        return []

    def surrogate(self, scores: Tensor, data: FairnessData) -> Tensor:
        """G(θ) = Δ̂(θ) − ε, shape (m,)."""
        return self.gap(scores, data) - self.tolerance

    def vjp(self, scores: Tensor, data: FairnessData, w: Tensor) -> Tensor:
        """∂(wᵀG)/∂f ∈ R^n at the scores f (a score-space gradient; no graph kept). Default: autograd
        through :meth:`surrogate`; a family may override it with its closed form."""
        with torch.enable_grad():
            f = scores.detach().requires_grad_()
            (grad,) = torch.autograd.grad((self.surrogate(f, data) * w).sum(), f, allow_unused=True)
        return torch.zeros_like(f) if grad is None else grad

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tolerance={self.tolerance}, config={self.config!r})"
