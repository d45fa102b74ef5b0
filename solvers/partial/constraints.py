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
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F_
from pydantic import Field, PositiveInt, field_validator
from torch import Tensor

from ..constraints.base import CONSTRAINTS, ConstraintConfig, ConstraintFamily, FairnessData
from .intervals import Intervals, validate_interval
from .metrics import partial_report


class PartialConfig(ConstraintConfig):
    interval: Any = Field(
        ..., description="Percentile interval I = [alpha, beta] (fractions, top-down within each group: [0, 0.2] "
        "is each group's top 20%), a union [[a1, b1], [a2, b2]], per-group {group: [a, b], '*': [a, b]} "
        "(Remark 5.3), or 'auto' (App. B rule: among candidate intervals covering p = Pr(h_w* > threshold) of "
        "the unconstrained model w*, the one where w* is least fair).")
    grid_size: PositiveInt = Field(10, description="|Î|, number of grid percentiles p (auxiliary θ_p) of problem "
                                   "(15) (paper: 10). Used by partial_statistical_parity only.")
    surrogate: Literal["clipped_linear", "sigmoid"] = Field(
        "clipped_linear", description="σ ≈ 1{x>0}: 'clipped_linear' max{min{x+0.5,1},0} (all the paper's "
        "experiments) or 'sigmoid' e^x/(1+e^x).")
    threshold: float = Field(0.0, description="Decision threshold θ̂ on the score h_w (logit) for pDP, and for "
                             "p in the 'auto' rule (paper: 0).")
    auto_candidates: list[list[float]] | None = Field(
        None, description="Candidate intervals for interval='auto' (None: every [a, b] on a 5% grid with "
        "0.2 <= b − a <= 0.5 covering p).")
    auto_iterations: PositiveInt = Field(300, description="Iterations of the unconstrained fit for 'auto'.")

    @field_validator("interval")
    @classmethod
    def _interval(cls, value: Any) -> Any:
        return validate_interval(value)


_CELL_LAYOUT: dict[int, tuple[weakref.ref, Any]] = {}
_FAST_MIN_N = 4096  # below this (mini-batches) index_add is as fast and needs no cached layout


class _SegmentMeans(torch.autograd.Function):
    """Cell means when the samples are sorted by cell: slice sums forward, one repeat backward."""

    @staticmethod
    def forward(ctx, values: Tensor, sizes: tuple[int, ...], inv: Tensor) -> Tensor:
        ctx.sizes, ctx.inv = sizes, inv
        sums = torch.stack([part.sum(1) for part in values.split(sizes, dim=1)], 1)
        return sums * inv

    @staticmethod
    def backward(ctx, g: Tensor):
        gi = g * ctx.inv
        parts = [gi[:, c:c + 1].expand(-1, size) for c, size in enumerate(ctx.sizes)]
        return torch.cat(parts, 1), None, None


def _layout(cells, values: Tensor):
    """Cached per cell index: ("sorted", sizes, 1/n_c) when samples are grouped by cell (IDCA's fast
    linear path sorts them so), else ("matrix", (n, C) of 1/n_c weights)."""
    index = cells.index
    ref, lay = _CELL_LAYOUT.get(id(index), (None, None))
    if ref is not None and ref() is index and lay[-1].dtype == values.dtype and lay[-1].device == values.device:
        return lay
    inv = 1.0 / cells.counts.clamp_min(1.0).to(values.dtype)
    if bool((index[1:] >= index[:-1]).all()):
        lay = ("sorted", tuple(int(c) for c in torch.bincount(index, minlength=cells.n_cells).tolist()), inv)
    else:
        M = values.new_zeros(index.numel(), cells.n_cells)
        M[torch.arange(index.numel(), device=index.device), index] = 1.0
        lay = ("matrix", M * inv[None, :])
    key = id(index)
    _CELL_LAYOUT[key] = (weakref.ref(index, lambda _: _CELL_LAYOUT.pop(key, None)), lay)
    return lay


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
        return _SegmentMeans.apply(values, lay[1], lay[2])
    return values @ lay[1]


def _cell_slice(values: Tensor, cells, c: int) -> Tensor:
    """``values[..., i]`` for the samples i of cell ``c``: a slice (no copy) when the samples are
    sorted by cell (IDCA's fast linear path), else a boolean selection."""
    if cells.index.numel() >= _FAST_MIN_N:
        lay = _layout(cells, values)
        if lay[0] == "sorted":
            start = sum(lay[1][:c])
            return values[..., start:start + lay[1][c]]
    return values[..., cells.index == c]


def _cell_weights(cells, like: Tensor) -> Tensor:
    """(C, n) matrix with entry 1/n_c where sample i is in cell c (0 elsewhere, and for empty cells):
    row c is ∂/∂v of the cell mean (1/n_c) Σ_{i∈c} v_i."""
    onehot = F_.one_hot(cells.index, cells.n_cells).t().to(like.dtype)
    inv = torch.where(cells.valid, 1.0 / cells.counts.clamp_min(1.0), 0.0).to(like.dtype)
    return onehot * inv[:, None]


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


@CONSTRAINTS.register(
    "partial_statistical_parity",
    aliases=("psp", "partial_sp"),
    description="Partial statistical parity on a percentile interval I (He et al., problem (15)): the score "
    "distributions of all groups, restricted to each group's own percentiles in I, are within KS distance "
    "`tolerance` (κ). Auxiliary thresholds θ_p on a grid Î of |Î| = grid_size percentiles.",
)
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
    gives S_{q,k} = t_q, with t_q = max_k L_{q,k} (= p for one interval), which lies in [L, U].
    """

    metric_key = "psp"

    def _build_rows(self) -> None:
        q, L, U = self.intervals.grid_bounds(self.tolerance, self.config.grid_size)
        self.grid_q = q
        self.L = torch.as_tensor(L, dtype=torch.float32)          # (P, G)
        self.U = torch.as_tensor(U, dtype=torch.float32)
        t = L.max(1)
        t = np.where(t <= U.min(1), t, 0.5 * (t + U.min(1)))
        if self.config.surrogate == "clipped_linear":
            theta0 = 0.5 - t
        else:
            tc = np.clip(t, 1e-4, 1 - 1e-4)
            theta0 = -np.log(tc / (1 - tc))
        self.theta0 = torch.as_tensor(theta0, dtype=torch.float32)
        self.theta = self.theta0.clone().requires_grad_(True)
        self._device_cache = {}

    @property
    def names(self) -> list[str]:
        self._require_rows()
        P, G = self.L.shape
        iv = self.intervals
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

    def init_parameters(self, device) -> list[Tensor]:
        """Reset θ_q to the feasible start and return [θ] on ``device``."""
        self._require_rows()
        self.theta = self.theta0.to(device).clone().requires_grad_(True)
        return [self.theta]

    def dc_parts(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor]:
        self._require_rows()
        cells = data.by_group
        theta = self.theta.to(scores.device, scores.dtype)
        graph = torch.is_grad_enabled() and (scores.requires_grad or theta.requires_grad)
        x = scores[None, :] - theta[:, None] if graph or self.config.surrogate != "clipped_linear" else None  # (P, n)
        L = self._cached("L", self.L, scores)
        U = self._cached("U", self.U, scores)
        valid = cells.valid[None, :]
        if self.config.surrogate == "clipped_linear":
            P = theta.shape[0]                                         # one product for σ⁺ and σ⁻
            if graph:
                A = _cell_means(F_.relu(torch.cat([x + 0.5, x - 0.5])), cells)
            else:  # values only (IDCA's inner switching test): in place in a reused buffer
                A = self._ramp_means(scores, torch.cat([theta - 0.5, theta + 0.5]), cells)
            A_plus, A_minus = A[:P], A[P:]                              # (P, G) each
            lo_plus, lo_minus = A_minus, A_plus - L
            up_plus, up_minus = A_plus, A_minus + U
        else:
            S = _cell_means(torch.sigmoid(x), cells)
            lo_plus, lo_minus = torch.zeros_like(S), S - L
            up_plus, up_minus = S, U.expand_as(S)
        plus = torch.cat([torch.where(valid, lo_plus, 0.0).reshape(-1), torch.where(valid, up_plus, 0.0).reshape(-1)])
        minus = torch.cat([torch.where(valid, lo_minus, 1.0).reshape(-1),
                           torch.where(valid, up_minus, 1.0).reshape(-1)])
        return plus, minus

    def _ramp_means(self, scores: Tensor, t: Tensor, cells) -> Tensor:
        """(R, C) cell means of max{h_i − t_r, 0} with no autograd graph: h − t written into a reused
        (R, n) buffer, clamped in place, then the cell sums (3 passes, no allocation of the (R, n)
        block — its fresh allocation and page faults dominated the values-only call)."""
        shape = (t.numel(), scores.numel())
        buf = getattr(self, "_ramp_buffer", None)
        if buf is None or buf.shape != shape or buf.dtype != scores.dtype or buf.device != scores.device:
            buf = self._ramp_buffer = scores.new_empty(shape)
        torch.sub(scores[None, :], t[:, None], out=buf)
        return _cell_means(buf.clamp_min_(0.0), cells)

    def _row(self, row: int) -> tuple[int, int, int]:
        """Row index of :meth:`dc_parts` → (side: 0 lower / 1 upper, grid index j, group k)."""
        P, G = self.L.shape
        side, rest = divmod(row, P * G)
        return side, rest // G, rest % G

    def dc_plus_row_grad(self, scores: Tensor, data: FairnessData, row: int) -> tuple[int, Tensor, list[Tensor]]:
        r"""Subgradient of ONE row of f⁺ (the active row of IDCA's switching step), in closed form from
        group k's samples only: returns (k, ∂f⁺/∂h on ``_cell_slice(h, cells, k)`` (n_k,), [∂f⁺/∂θ (|Î|,)]).
        With x_i = h_i − θ_j, i ∈ k:

            clipped linear: lower f⁺ = A⁻_{j,k}: ∂/∂h_i = 1[x_i − 0.5 > 0]/n_k;  upper f⁺ = A⁺_{j,k}: 1[x_i + 0.5 > 0]/n_k
            sigmoid:        lower f⁺ = 0;  upper f⁺ = S_{j,k}: s(x_i)(1 − s(x_i))/n_k

        and ∂/∂θ_j = −Σ_i ∂/∂h_i (other θ: 0); relu'(0) = 0 as in autograd."""
        self._require_rows()
        side, j, k = self._row(row)
        h = _cell_slice(scores.detach(), data.by_group, k)
        theta = self.theta.detach().to(scores.device, scores.dtype)
        g_theta = torch.zeros_like(theta)
        if h.numel() == 0 or (self.config.surrogate == "sigmoid" and side == 0):
            return k, torch.zeros_like(h), [g_theta]
        x = h - theta[j]
        if self.config.surrogate == "clipped_linear":
            gh = ((x - 0.5 > 0) if side == 0 else (x + 0.5 > 0)).to(h.dtype)
        else:
            s = torch.sigmoid(x)
            gh = s * (1.0 - s)
        gh = gh / h.numel()
        g_theta[j] = -gh.sum()
        return k, gh, [g_theta]

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


@CONSTRAINTS.register(
    "partial_demographic_parity",
    aliases=("pdp", "partial_dp"),
    description="Partial demographic parity on a percentile interval I (He et al., problem (21)): among each "
    "group's scores with within-group percentile in I, the share above the threshold θ̂ differs by at most "
    "`tolerance` (κ) between groups.",
)
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

    def _M(self, scores: Tensor, data: FairnessData) -> tuple[Tensor, Tensor]:
        cells = data.by_group
        x = (scores - self.config.threshold)[None, :]
        a = self._cached("alpha", self.alpha_t, scores)
        b = self._cached("beta", self.beta_t, scores)
        mask = self._cached("mask", self.piece_mask, scores)
        width = self._cached("width", self.width_t, scores)
        if self.config.surrogate == "clipped_linear":
            Sp = _cell_means(F_.relu(x + 0.5), cells)[0]               # (G,)
            Sm = _cell_means(F_.relu(x - 0.5), cells)[0]
            Ma = torch.maximum(Sm[:, None] + a, Sp[:, None])           # (G, J)
            Mb = torch.maximum(Sm[:, None] + b, Sp[:, None])
        else:
            S = _cell_means(torch.sigmoid(x), cells)[0]
            Ma = torch.maximum(-S[:, None], -a)
            Mb = torch.maximum(-S[:, None], -b)
        Ma = (Ma * mask).sum(1) / width
        Mb = (Mb * mask).sum(1) / width
        return Ma, Mb

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
