r"""Constraint families ``partial_statistical_parity`` (problem (15)) and
``partial_demographic_parity`` (problem (21)) of He, Huang, Yao & Lin, with the DC splits of
their Appendix D (f_i = f_i⁺ − f_i⁻, both convex in (w, θ) for a linear model and the
clipped-linear surrogate).

Surrogates (the paper's, §5): ``clipped_linear`` σ(x) = max{min{x + 0.5, 1}, 0} = σ⁺(x) − σ⁻(x)
with σ⁺(x) = max{x + 0.5, 0}, σ⁻(x) = max{x − 0.5, 0} (note: centred ramp of width 1, not the
width-2 ramp of :func:`solvers.constraints.indicator_surrogate`), or ``sigmoid`` σ(x) = 1/(1+e^{−x}).

Intervals, per-group intervals and unions (Remark 5.3) enter only through
φ_k(F) = c_k(F)/|I_k| (see :mod:`solvers.partial.intervals`).
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F_
from torch import Tensor

from ..catalog.partial import PartialConfig
from ..constraints.base import CONSTRAINTS, ConstraintFamily, FairnessData
from .intervals import Intervals
from .metrics import partial_report


_CELL_LAYOUT: dict[int, tuple[weakref.ref, Any]] = {}
_FAST_MIN_N = 4096  # below this (mini-batches) index_add is as fast and needs no cached layout
_RAMP_BLOCK = 8192  # samples per block of PartialStatisticalParity._ramps (2|Î| x 8192 floats: 640 KB, in L2)


def _segment_sums(values: Tensor, sizes: tuple[int, ...]) -> Tensor:
    """(R, C) sums of the consecutive column blocks of sizes ``sizes`` of ``values`` (R, n)."""
    return torch.stack([part.sum(1) for part in values.split(sizes, dim=1)], 1)


class _SegmentMeans(torch.autograd.Function):
    """Cell means when the samples are sorted by cell: slice sums forward, one repeat backward."""

    @staticmethod
    def forward(ctx, values: Tensor, sizes: tuple[int, ...], inv: Tensor) -> Tensor:
        ctx.sizes, ctx.inv = sizes, inv
        return _segment_sums(values, sizes) * inv

    @staticmethod
    def backward(ctx, g: Tensor):
        gi = g * ctx.inv
        parts = [gi[:, c:c + 1].expand(-1, size) for c, size in enumerate(ctx.sizes)]
        return torch.cat(parts, 1), None, None


def _per_index(cells, tag: str, like: Tensor, build):
    """``build()`` cached per (cell index tensor, tag, dtype, device) in a weak cache that lives as long
    as the index tensor (the full training set's, seen at every inner step of IDCA)."""
    index = cells.index
    ref, store = _CELL_LAYOUT.get(id(index), (None, None))
    if ref is None or ref() is not index:
        key = id(index)
        store = {}
        _CELL_LAYOUT[key] = (weakref.ref(index, lambda _: _CELL_LAYOUT.pop(key, None)), store)
    slot = (tag, like.dtype, like.device)
    if slot not in store:
        store[slot] = build()
    return store[slot]


def _layout(cells, values: Tensor):
    """Cached per cell index: ("sorted", sizes, 1/n_c) when samples are grouped by cell (IDCA's fast
    linear path sorts them so), else ("matrix", (n, C) of 1/n_c weights)."""
    def build():
        index = cells.index
        inv = 1.0 / cells.counts.clamp_min(1.0).to(values.dtype)
        if bool((index[1:] >= index[:-1]).all()):
            return "sorted", tuple(int(c) for c in torch.bincount(index, minlength=cells.n_cells).tolist()), inv
        M = values.new_zeros(index.numel(), cells.n_cells)
        M[torch.arange(index.numel(), device=index.device), index] = 1.0
        return "matrix", M * inv[None, :]

    return _per_index(cells, "layout", values, build)


def _cell_means(values: Tensor, cells) -> Tensor:
    """Row-wise cell means of ``values`` (R, n) → (R, C).

    Large fixed cell indices (the full training set, seen at every inner step of IDCA) use a cached
    layout (weak cache, lives as long as the index tensor): slice sums when the samples are sorted
    by cell (about 10x faster than scatter/gather on a9a), else one BLAS product with an (n, C)
    matrix of 1/n_c weights. Mini-batches use index_add."""
    if cells.index.numel() < _FAST_MIN_N:
        sums = values.new_zeros(values.shape[0], cells.n_cells).index_add(1, cells.index, values)
        return sums / cells.counts.clamp_min(1.0).to(values.dtype)
    lay = _layout(cells, values)
    if lay[0] == "sorted":
        if torch.is_grad_enabled() and values.requires_grad:
            return _SegmentMeans.apply(values, lay[1], lay[2])
        return _segment_sums(values, lay[1]) * lay[2]
    return values @ lay[1]


def _cell_weights(cells, like: Tensor) -> Tensor:
    """(C, n) matrix with entry 1/n_c where sample i is in cell c (0 elsewhere, and for empty cells):
    row c is ∂/∂v of the cell mean (1/n_c) Σ_{i∈c} v_i."""
    onehot = F_.one_hot(cells.index, cells.n_cells).t().to(like.dtype)
    inv = torch.where(cells.valid, 1.0 / cells.counts.clamp_min(1.0), 0.0).to(like.dtype)
    return onehot * inv[:, None]


def _member_weights(cells, k: Tensor, like: Tensor) -> Tensor:
    """(n,) weights 1[i ∈ cell k]/n_k (0 for an empty cell) for a (1,) long tensor ``k``, without a host
    sync: ∂/∂v_i of the cell mean (1/n_k) Σ_{i∈k} v_i. Rows of the cached (C, n) :func:`_cell_weights`."""
    return _per_index(cells, "weights", like, lambda: _cell_weights(cells, like)).index_select(0, k)[0]


class PartialFamily(ConstraintFamily):
    """Shared machinery: interval resolution (including 'auto'), exact metrics, DC interface.

    ``dc_parts(scores, data) -> (f⁺, f⁻)`` with f⁺ − f⁻ = :meth:`surrogate` (the rows G ≤ 0);
    the tolerance κ sits in f⁻ as the paper writes it (Ex. D.3, D.5).
    """

    Config = PartialConfig
    metric_key: str = ""

    def __init__(self, tolerance: float, config=None) -> None:
        super().__init__(tolerance, config)
        self.resolved_interval: Any = None if self.config.interval == "auto" else self.config.interval
        self.auto_report: dict[str, Any] | None = None
        self.intervals: Intervals | None = None

    # -- binding -------------------------------------------------------------------------
    def _on_bind(self) -> None:
        if self.resolved_interval is not None:
            self.intervals = Intervals.build(self.resolved_interval, self.group_names)
            self._build_rows()

    def attach(self, problem) -> None:
        """Called by :class:`~solvers.problem.Problem` after :meth:`bind`: resolves ``interval='auto'``
        on the training data (once)."""
        if self.resolved_interval is None:
            from .auto import choose_interval

            self.auto_report = choose_interval(problem, self)
            self.resolved_interval = self.auto_report["interval"]
            self._on_bind()

    def _build_rows(self) -> None:
        raise NotImplementedError

    def _require_rows(self) -> None:
        self._require_bound()
        if self.intervals is None:
            raise RuntimeError(f"constraint {self.name!r}: interval 'auto' is resolved when the Problem is built")

    def dc_plus(self, scores: Tensor, data: FairnessData) -> Tensor:
        """The f⁺ rows of :meth:`dc_parts` (values)."""
        return self.dc_parts(scores, data)[0]

    def surrogate(self, scores: Tensor, data: FairnessData) -> Tensor:
        plus, minus = self.dc_parts(scores, data)
        return plus - minus

    def gap(self, scores: Tensor, data: FairnessData) -> Tensor:
        return self.surrogate(scores, data) + self.tolerance

    # -- evaluation ----------------------------------------------------------------------
    def exact_metrics(self, y, logits, group, group_names) -> dict[str, Any]:
        interval = self.resolved_interval
        report = partial_report(y, logits, group, group_names, interval, self.config.threshold)
        out = {self.name: report[self.metric_key], f"{self.name}_fairness": 1.0 - report[self.metric_key],
               f"{self.name}_report": report}
        if self.auto_report is not None:
            out[f"{self.name}_auto"] = {k: v for k, v in self.auto_report.items() if k != "candidates"}
        return out


@CONSTRAINTS.implements("partial_statistical_parity")
class PartialStatisticalParity(PartialFamily):
    r"""Problem (15) with rows, for q ∈ Î and k ∈ G (S_{q,k} = (1/n_k) Σ_{i∈k} σ(h_w(ξ_i) − θ_q)):

        lower:  L_{q,k} − S_{q,k} ≤ 0,        upper:  S_{q,k} − U_{q,k} ≤ 0,

    with L = p, U = p + κ(β − α) for one interval (see :meth:`Intervals.grid_bounds`). m = 2|Î|G rows
    (40 for |Î| = 10, G = 2). θ = (θ_q) are auxiliary variables (:meth:`parameters`), optimised
    jointly with w.

    DC split (Ex. D.3; clipped linear, A^±_{q,k} = (1/n_k) Σ σ^±(h − θ_q), jointly convex in
    (w, θ) for linear h): lower f⁺ = A⁻, f⁻ = A⁺ − L; upper f⁺ = A⁺, f⁻ = A⁻ + U.
    Sigmoid (Ex. D.4, with ρ = 0; IDCA's μ/2‖·‖² plays ρ): lower f⁺ = 0, f⁻ = S − L; upper f⁺ = S, f⁻ = U.
    Groups absent from a batch give satisfied rows (f⁺ = 0, f⁻ = 1).

    Feasible start (Assumption 6.3E): at h ≡ 0, θ_q = 0.5 − t_q (clipped) or −logit(t_q) (sigmoid)
    gives S_{q,k} = t_q, with t_q = (max_k L_{q,k} + min_k U_{q,k}) / 2 the middle of the band (p + κ(β − α)/2
    for one interval): every row holds with slack, so the start stays feasible after float rounding, as
    IDCA's feasible iterates need (on the band's edge, t_q = L, float32 rounding left violations of 5e-7 to 1.4e-6 on
    generated data).
    """

    metric_key = "psp"

    def _build_rows(self) -> None:
        q, L, U = self.intervals.grid_bounds(self.tolerance, self.config.grid_size)
        self.grid_q = q
        self.L = torch.as_tensor(L, dtype=torch.float32)          # (P, G)
        self.U = torch.as_tensor(U, dtype=torch.float32)
        t = 0.5 * (L.max(1) + U.min(1))
        if self.config.surrogate == "clipped_linear":
            theta0 = 0.5 - t
        else:
            tc = np.clip(t, 1e-4, 1 - 1e-4)
            theta0 = -np.log(tc / (1 - tc))
        self.theta0 = torch.as_tensor(theta0, dtype=torch.float32)
        self.theta = self.theta0.clone().requires_grad_(True)
        P, G = self.L.shape
        rows = torch.arange(2 * P * G)
        side, j, k = self._row(rows)
        self.row_j, self.row_k = j, k                               # row r = (side, j, k) of dc_parts
        self.row_offset = torch.where(side == 0, 0.5, -0.5)          # f⁺_r = mean over k of max{h − θ_j − offset, 0}
        self.row_theta = (j[:, None] == torch.arange(P)[None, :]).to(torch.float32)   # (m, P) one-hot of j
        self._device_cache = {}

    @property
    def names(self) -> list[str]:
        self._require_rows()
        P, G = self.L.shape
        out = []
        for side in ("lower", "upper"):
            for j in range(P):
                for k in range(G):
                    p = float(self.L[j, k])
                    out.append(f"{self.name}[{side},p={p:.3f},{self.group_names[k]}]")
        return out

    def parameters(self) -> list[Tensor]:
        self._require_rows()
        return [self.theta]

    def shift_thresholds_(self, b: float) -> None:
        """θ ← θ + b in place: the rows at scores h + b equal those at h (a start at h ≡ b stays feasible)."""
        with torch.no_grad():
            self.theta.add_(b)

    def init_parameters(self, device) -> list[Tensor]:
        """Reset θ_q to the feasible start and return [θ] on ``device``."""
        self._require_rows()
        self.theta = self.theta0.to(device).clone().requires_grad_(True)
        return [self.theta]

    def dc_parts(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor]:
        self._require_rows()
        cells = data.by_group
        L = self._cached("L", self.L, scores)
        U = self._cached("U", self.U, scores)
        valid = cells.valid[None, :]
        if self.config.surrogate == "clipped_linear":
            P = L.shape[0]
            A = self._ramps(scores, cells)
            A_minus, A_plus = A[:P], A[P:]                              # (P, G) each
            lo_plus, lo_minus = A_minus, A_plus - L
            up_plus, up_minus = A_plus, A_minus + U
        else:
            theta = self.theta.to(scores.device, scores.dtype)
            S = _cell_means(torch.sigmoid(scores[None, :] - theta[:, None]), cells)
            lo_plus, lo_minus = torch.zeros_like(S), S - L
            up_plus, up_minus = S, U.expand_as(S)
        plus = torch.cat([torch.where(valid, lo_plus, 0.0).reshape(-1), torch.where(valid, up_plus, 0.0).reshape(-1)])
        minus = torch.cat([torch.where(valid, lo_minus, 1.0).reshape(-1),
                           torch.where(valid, up_minus, 1.0).reshape(-1)])
        return plus, minus

    def dc_plus(self, scores: Tensor, data: FairnessData) -> Tensor:
        """The f⁺ rows of :meth:`dc_parts` only, no graph (IDCA's inner switching test). Clipped linear:
        the rows (lower j,k: A⁻_{j,k}; upper: A⁺_{j,k}) are in the order of :meth:`_ramps`' rows."""
        if self.config.surrogate != "clipped_linear":
            return self.dc_parts(scores, data)[0]
        A = self._ramps(scores, data.by_group)
        return torch.where(data.by_group.valid[None, :], A, 0.0).reshape(-1)

    def _ramps(self, scores: Tensor, cells) -> Tensor:
        """(2|Î|, G) = [A⁻; A⁺]: cell means of σ⁻(h − θ_j) = max{h − (θ_j + 0.5), 0}, then of
        σ⁺(h − θ_j) = max{h − (θ_j − 0.5), 0}. With a graph: relu of the (2|Î|, n) block. Values only
        (IDCA's inner step, where this block is the largest array): max{h − t, 0} = max{h, t} − t, so
        the means are mean_k max{h, t} − t, summed block by block over each cell's samples (contiguous
        in IDCA's group-sorted order) through a reused (2|Î|, 8192) buffer that stays in cache: one
        write and one read per block instead of three passes over the whole (2|Î|, n) array."""
        theta = self.theta.to(scores.device, scores.dtype)
        t = torch.cat([theta + 0.5, theta - 0.5])[:, None]
        if torch.is_grad_enabled() and (scores.requires_grad or theta.requires_grad):
            return _cell_means(F_.relu(scores[None, :] - t), cells)
        lay = _layout(cells, scores) if cells.index.numel() >= _FAST_MIN_N else None
        if lay is None or lay[0] != "sorted":
            return _cell_means(torch.maximum(scores[None, :], t), cells) - t
        buf = getattr(self, "_ramp_buffer", None)
        if buf is None or buf.shape[0] != t.shape[0] or buf.dtype != scores.dtype or buf.device != scores.device:
            buf = self._ramp_buffer = scores.new_empty((t.shape[0], _RAMP_BLOCK))
        sums, start = [], 0
        for size in lay[1]:
            total = t.new_zeros(t.shape[0])
            for a in range(start, start + size, _RAMP_BLOCK):
                part = buf[:, :min(_RAMP_BLOCK, start + size - a)]
                torch.maximum(scores[None, a:a + part.shape[1]], t, out=part)
                total += part.sum(1)
            sums.append(total)
            start += size
        return torch.stack(sums, 1) * lay[2] - t

    def _row(self, row):
        """Row index of :meth:`dc_parts` → (side: 0 lower / 1 upper, grid index j, group k); ints or tensors."""
        P, G = self.L.shape
        side, rest = row // (P * G), row % (P * G)
        return side, rest // G, rest % G

    def dc_plus_row_grad(self, scores: Tensor, data: FairnessData, row: Tensor) -> tuple[Tensor, list[Tensor]]:
        r"""Subgradient of ONE row r of f⁺ (IDCA's active row), in closed form and without a host sync
        (``row`` is a 0-dim long tensor): (∂f⁺_r/∂h (n,), [∂f⁺_r/∂θ (|Î|,)]). With x_i = h_i − θ_j and
        w_i = 1[i ∈ k]/n_k (row r = (side, j, k)):

            clipped linear: lower f⁺ = A⁻_{j,k}: ∂/∂h_i = w_i 1[x_i − 0.5 > 0];  upper f⁺ = A⁺_{j,k}: w_i 1[x_i + 0.5 > 0]
            sigmoid:        lower f⁺ = 0;  upper f⁺ = S_{j,k}: w_i s(x_i)(1 − s(x_i))

        and ∂/∂θ_j = −Σ_i ∂/∂h_i (other θ: 0); relu'(0) = 0 as in autograd; rows of a group absent from
        ``data`` are constant (0)."""
        self._require_rows()
        r = row.reshape(1)
        h = scores.detach()
        theta = self.theta.detach().to(h.device, h.dtype)
        j = self._cached("row_j", self.row_j, h).index_select(0, r)
        offset = self._cached("row_offset", self.row_offset, h).index_select(0, r)
        weights = _member_weights(data.by_group, self._cached("row_k", self.row_k, h).index_select(0, r), h)
        if self.config.surrogate == "clipped_linear":   # 1[h − θ_j − offset > 0]
            gh = torch.where(h > theta.index_select(0, j) + offset, weights, 0.0)
        else:                                           # upper rows (offset < 0) only
            s = torch.sigmoid(h - theta.index_select(0, j))
            gh = s * (1.0 - s) * weights * (offset < 0)
        g_theta = self._cached("row_theta", self.row_theta, h).index_select(0, r)[0] * -gh.sum()
        return gh, [g_theta]

    def dc_minus_jacobian(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, list[Tensor]]:
        r"""Jacobian of f⁻ (rows of :meth:`dc_parts`) w.r.t. the scores h (m, n) and θ (m, |Î|), in
        closed form (IDCA's linearisation (32), once per outer iteration). With x_{j,i} = h_i − θ_j
        and w_{k,i} = 1[i ∈ k]/n_k:

            clipped linear: ∂f⁻_{lower,j,k}/∂h_i = w_{k,i} 1[x_{j,i} + 0.5 > 0]   (f⁻ = A⁺ − L)
                            ∂f⁻_{upper,j,k}/∂h_i = w_{k,i} 1[x_{j,i} − 0.5 > 0]   (f⁻ = A⁻ + U)
            sigmoid:        ∂f⁻_{lower,j,k}/∂h_i = w_{k,i} s(x_{j,i})(1 − s(x_{j,i})),  upper rows 0,

        and ∂f⁻_{·,j,k}/∂θ_{j'} = −δ_{jj'} Σ_i ∂f⁻_{·,j,k}/∂h_i. The subgradient at a kink is that of
        autograd (relu'(0) = 0)."""
        self._require_rows()
        theta = self.theta.to(scores.device, scores.dtype).detach()
        x = scores.detach()[None, :] - theta[:, None]                            # (P, n)
        if self.config.surrogate == "clipped_linear":
            d = torch.stack([(x + 0.5 > 0).to(x.dtype), (x - 0.5 > 0).to(x.dtype)])
        else:
            s = torch.sigmoid(x)
            d = torch.stack([s * (1.0 - s), torch.zeros_like(s)])
        W = _cell_weights(data.by_group, x)                                     # (G, n)
        Jh = d[:, :, None, :] * W[None, None]                                    # (2, P, G, n)
        P = x.shape[0]
        eye = torch.eye(P, dtype=x.dtype, device=x.device)
        Jtheta = -Jh.sum(-1)[..., None] * eye[:, None, :]                        # (2, P, G, P)
        m = Jh.shape[0] * P * Jh.shape[2]
        return Jh.reshape(m, -1), [Jtheta.reshape(m, P)]


@CONSTRAINTS.implements("partial_demographic_parity")
class PartialDemographicParity(PartialFamily):
    r"""Problem (21): for every ordered pair (k, k'), with S_k = (1/n_k) Σ_{i∈k} σ(h_w(ξ_i) − θ̂),

        φ_k(S_k) − φ_{k'}(S_{k'}) − κ ≤ 0,   φ_k(S) = Σ_j [min{S, β_kj} − min{S, α_kj}] / |I_k|,

    which for one interval is (26) divided by (β − α). G(G − 1) rows.

    DC split (Ex. D.5, eq. 84): with S = S⁺ − S⁻ (σ^± as above), min{S, c} = S⁺ + c − M(c),
    M_k(c) = max{S⁻_k + c, S⁺_k} (convex), so with Ma_k = Σ_j M_k(α_kj)/|I_k|, Mb_k = Σ_j M_k(β_kj)/|I_k|:

        f⁺ = Ma_k + Mb_{k'},    f⁻ = Mb_k + Ma_{k'} + κ      (the S⁺ terms cancel).

    Sigmoid (Ex. D.6): the same with M_k(c) replaced by max{−S_k, −c}.
    """

    metric_key = "pdp"

    def _build_rows(self) -> None:
        G = len(self.group_names)
        kk = [(a, b) for a in range(G) for b in range(G) if a != b]
        self.pairs = torch.as_tensor(kk, dtype=torch.long).reshape(-1, 2)
        iv = self.intervals
        self.piece_mask = torch.as_tensor(iv.beta > iv.alpha)
        self.alpha_t = torch.as_tensor(iv.alpha, dtype=torch.float32)
        self.beta_t = torch.as_tensor(iv.beta, dtype=torch.float32)
        self.width_t = torch.as_tensor(iv.width, dtype=torch.float32)
        self._device_cache = {}

    @property
    def names(self) -> list[str]:
        self._require_rows()
        return [f"{self.name}[{self.group_names[a]}-{self.group_names[b]}]" for a, b in self.pairs.tolist()]

    def _means(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor]:
        """Per-sample features φ (2, n) and their group means (2, G) at x = h − θ̂: clipped linear
        φ = (σ⁺(x), σ⁻(x)) (means S⁺, S⁻); sigmoid φ = (σ(x), 0) (means S, 0)."""
        x = scores - self.config.threshold
        if self.config.surrogate == "clipped_linear":
            phi = torch.stack([F_.relu(x + 0.5), F_.relu(x - 0.5)])
        else:
            phi = torch.stack([torch.sigmoid(x), torch.zeros_like(x)])
        return phi, _cell_means(phi, data.by_group)

    def _pieces(self, S: Tensor, scores: Tensor, end: str) -> tuple[Tensor, Tensor]:
        """M-terms at the interval ends c = α_kj (``end='alpha'``) or β_kj: the values
        Σ_j mask_kj M_k(c_kj)/|I_k| (G,) and their derivatives w.r.t. the two group means (G, 2),
        with M_k(c) = max{S⁻_k + c, S⁺_k} (clipped linear) or max{−S_k, −c} (sigmoid). At a tie the
        subgradient takes the second argument."""
        c = self._cached(end, self.alpha_t if end == "alpha" else self.beta_t, scores)
        mask = self._cached("mask", self.piece_mask, scores).to(scores.dtype) / self._cached(
            "width", self.width_t, scores)[:, None]                       # (G, J): mask_kj / |I_k|
        if self.config.surrogate == "clipped_linear":
            first = S[1][:, None] + c > S[0][:, None]                    # M = S⁻ + c
            M = torch.where(first, S[1][:, None] + c, S[0][:, None])
            dM = torch.stack([(mask * ~first).sum(1), (mask * first).sum(1)], 1)   # ∂/∂(S⁺, S⁻)
        else:
            first = -S[0][:, None] > -c                                   # M = −S
            M = torch.where(first, -S[0][:, None], -c)
            dM = torch.stack([-(mask * first).sum(1), torch.zeros_like(S[0])], 1)
        return (M * mask).sum(1), dM

    def _M(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor]:
        _, S = self._means(scores, data)
        return self._pieces(S, scores, "alpha")[0], self._pieces(S, scores, "beta")[0]

    def _pair_grads(self, scores: Tensor, data: FairnessData, rows: Tensor, plus: bool) -> Tensor:
        r"""∂/∂h (R, n) of the rows ``rows`` of f⁺ (``plus``) or f⁻, without a host sync. Row (k, k'):
        f⁺ = Ma_k + Mb_{k'}, f⁻ = Mb_k + Ma_{k'} + κ (see the class doc), and for i in group g

            ∂/∂h_i = Σ_{(M, g)} ∂M/∂S⁺_g φ'⁺(x_i)/n_g + ∂M/∂S⁻_g φ'⁻(x_i)/n_g,

        φ'⁺ = 1[x + 0.5 > 0], φ'⁻ = 1[x − 0.5 > 0] (clipped linear; relu'(0) = 0) or φ' = (s(1 − s), 0)
        (sigmoid), x = h − θ̂. Rows whose groups are not both present are constant (0)."""
        h = scores.detach()
        x = h - self.config.threshold
        if self.config.surrogate == "clipped_linear":
            dphi = torch.stack([(x + 0.5 > 0), (x - 0.5 > 0)]).to(h.dtype)       # (2, n)
        else:
            s = torch.sigmoid(x)
            dphi = torch.stack([s * (1.0 - s), torch.zeros_like(s)])
        _, S = self._means(h, data)
        dA, dB = self._pieces(S, h, "alpha")[1], self._pieces(S, h, "beta")[1]
        first, second = (dA, dB) if plus else (dB, dA)
        pairs = self.pairs.to(h.device).index_select(0, rows)
        k, k2 = pairs[:, 0], pairs[:, 1]
        cells = data.by_group
        groups = torch.arange(cells.n_cells, device=h.device)
        coef = ((k[:, None] == groups).to(h.dtype)[..., None] * first[None]
                + (k2[:, None] == groups).to(h.dtype)[..., None] * second[None])             # (R, G, 2)
        coef = coef * (cells.valid[k] & cells.valid[k2]).to(h.dtype)[:, None, None]
        inv = torch.where(cells.valid, 1.0 / cells.counts.clamp_min(1.0), 0.0).to(h.dtype)
        per_sample = (coef * inv[None, :, None]).index_select(1, cells.index)                  # (R, n, 2)
        return per_sample[..., 0] * dphi[0] + per_sample[..., 1] * dphi[1]

    def dc_plus_row_grad(self, scores: Tensor, data: FairnessData, row: Tensor) -> tuple[Tensor, list[Tensor]]:
        """∂f⁺_r/∂h (n,) of one row (a 0-dim long tensor; no host sync) and [] (no auxiliary variables)."""
        self._require_rows()
        return self._pair_grads(scores, data, row.reshape(1), plus=True)[0], []

    def dc_minus_jacobian(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, list[Tensor]]:
        """∂f⁻/∂h (m, n) of every row, in closed form (IDCA's linearisation (32)), and [] (no θ)."""
        self._require_rows()
        rows = torch.arange(self.pairs.shape[0], device=scores.device)
        return self._pair_grads(scores, data, rows, plus=False), []

    def dc_parts(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor]:
        self._require_rows()
        Ma, Mb = self._M(scores, data)
        pairs = self.pairs.to(scores.device)
        k, k2 = pairs[:, 0], pairs[:, 1]
        valid = data.by_group.valid
        ok = valid[k] & valid[k2]
        plus = torch.where(ok, Ma[k] + Mb[k2], 0.0)
        minus = torch.where(ok, Mb[k] + Ma[k2] + self.tolerance, 1.0)
        return plus, minus
