r"""Percentile intervals I ⊂ [0, 1] of the partial-fairness paper (He, Huang, Yao, Lin,
"Enforcing Fair Predicted Scores on Intervals of Percentiles by Difference-of-Convex
Constraints", §4, Remark 5.3).

Percentiles are *within-group* and counted *from the top*: the rank of a score θ in group k
is F̄_{w,k}(θ) = Pr(h_w(ξ) > θ | γ = k), so I = [0, 0.2) is each group's top 20 %.

An interval spec is one of

* ``[α, β]`` — one interval for every group (the paper's setting);
* ``[[α₁, β₁], [α₂, β₂], ...]`` — a union of disjoint intervals (Remark 5.3);
* ``{"group name": [α, β] or [[...], ...], ...}`` — per-group intervals (Remark 5.3); a group
  not named falls back to the entry ``"*"`` (required when some group is not named).

Internally every group k has pieces [α_{kj}, β_{kj}) (padded with empty pieces), the measure
c_k(F) = Σ_j [min{F, β_kj} − min{F, α_kj}] of I_k ∩ [0, F] and |I_k| = c_k(1). The paper's
identity (eq. 62) generalises to

    Pr(h > θ | γ=k, F̄_k(h) ∈ I_k) = φ_k(F̄_k(θ)),   φ_k(F) = c_k(F) / |I_k|,

which for one interval is [min{F,β} − min{F,α}]/(β − α). Both constraint families and the
exact metrics are written with φ_k, so unions and per-group intervals need no special case.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

IntervalSpec = Any  # list[float] | list[list[float]] | dict[str, ...] | "auto"
MAX_PIECES = 100    # pieces of one union
MAX_GROUPS = 1000   # groups of a per-group interval


def _pieces(value: Any, where: str) -> list[tuple[float, float]]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{where}: an interval is [alpha, beta] or a list of such pairs")
    if all(isinstance(v, (int, float)) for v in value):
        value = [value]
    if len(value) > MAX_PIECES:
        raise ValueError(f"{where}: at most {MAX_PIECES} intervals in a union")
    pieces = []
    for piece in value:
        if not isinstance(piece, (list, tuple)) or len(piece) != 2:
            raise ValueError(f"{where}: each interval is a pair [alpha, beta]")
        a, b = float(piece[0]), float(piece[1])
        if not 0.0 <= a < b <= 1.0:
            raise ValueError(f"{where}: need 0 <= alpha < beta <= 1, got [{a}, {b}]")
        pieces.append((a, b))
    pieces.sort()
    for (a0, b0), (a1, _) in zip(pieces, pieces[1:]):
        if a1 < b0:
            raise ValueError(f"{where}: the intervals of a union must be disjoint")
    return pieces


def validate_interval(value: Any) -> Any:
    """Check an interval spec (raises ValueError naming the problem); returns it unchanged."""
    if value == "auto":
        return value
    if isinstance(value, dict):
        if not value or len(value) > MAX_GROUPS:
            raise ValueError(f"per-group intervals: 1 to {MAX_GROUPS} groups")
        for name, v in value.items():
            _pieces(v, f"interval[{name!r}]")
        return value
    _pieces(value, "interval")
    return value


@dataclass
class Intervals:
    """Pieces per group: ``alpha``/``beta`` of shape (G, J) (empty pieces have α = β = 1)."""

    alpha: np.ndarray
    beta: np.ndarray

    @classmethod
    def build(cls, spec: Any, group_names: Sequence[str]) -> "Intervals":
        if spec == "auto":
            raise ValueError("interval 'auto' must be resolved first (see solvers.constraints.partial_auto)")
        if isinstance(spec, dict):
            per = []
            for name in group_names:
                if name in spec:
                    per.append(_pieces(spec[name], f"interval[{name!r}]"))
                elif "*" in spec:
                    per.append(_pieces(spec["*"], "interval['*']"))
                else:
                    raise ValueError(f"interval: no entry for group {name!r} (and no '*')")
        else:
            per = [_pieces(spec, "interval")] * len(group_names)
        J = max(len(p) for p in per)
        alpha = np.ones((len(per), J))
        beta = np.ones((len(per), J))
        for k, pieces in enumerate(per):
            for j, (a, b) in enumerate(pieces):
                alpha[k, j], beta[k, j] = a, b
        return cls(alpha, beta)

    @property
    def n_groups(self) -> int:
        return self.alpha.shape[0]

    @property
    def width(self) -> np.ndarray:
        """|I_k| per group, shape (G,)."""
        return (self.beta - self.alpha).sum(1)

    def measure(self, F: np.ndarray) -> np.ndarray:
        """c_k(F) for F of shape (G, ...) (one row per group)."""
        F = np.asarray(F, dtype=np.float64)
        shape = (self.n_groups,) + (1,) * (F.ndim - 1) + (-1,)
        a, b = self.alpha.reshape(shape), self.beta.reshape(shape)
        return (np.minimum(F[..., None], b) - np.minimum(F[..., None], a)).sum(-1)

    def phi(self, F: np.ndarray) -> np.ndarray:
        """φ_k(F) = c_k(F)/|I_k| (eq. 62 generalised), F of shape (G, ...)."""
        F = np.asarray(F, dtype=np.float64)
        return self.measure(F) / self.width.reshape((-1,) + (1,) * (F.ndim - 1))

    def keep(self, positions: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Whether the 1-based descending position r of a sample of group k (size n_k) lies in
        I_k, the App. A convention: ⌈α n_k⌉ < r ≤ ⌈β n_k⌉ for some piece [α, β)."""
        a = np.ceil(self.alpha[k] * n[:, None] - 1e-9)
        b = np.ceil(self.beta[k] * n[:, None] - 1e-9)
        r = positions[:, None]
        return ((r > a) & (r <= b)).any(1)

    def grid_bounds(self, kappa: float, grid_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""The grid Î of problem (15) and the bounds of each constraint row.

        Lemma 5.1 written with φ_k: pSP^I ≤ κ iff for every q ∈ [0, 1 − κ) some θ_q has
        φ_k(F̄_k(θ_q)) ∈ [q, q + κ] for all k, i.e. F̄_k(θ_q) ∈ [L_{q,k}, U_{q,k}] with

            L_{q,k} = inf{F : c_k(F) ≥ q|I_k|},   U_{q,k} = sup{F : c_k(F) ≤ (q + κ)|I_k|}.

        For one interval, p = α + q(β − α) ∈ [α, β − κ(β − α)), L = p and U = p + κ(β − α): the
        rows of (15). Grid (the paper: "ten equally spaced values", endpoints unspecified):
        q_j = j(1 − κ)/|Î|, j = 0..|Î|−1, i.e. |Î| equally spaced points of [0, 1 − κ) starting at
        q = 0 (p = α). Returns (q (P,), L (P, G), U (P, G)).
        """
        q = np.arange(grid_size) * max(1.0 - kappa, 0.0) / grid_size
        w = self.beta - self.alpha                      # (G, J)
        cw = np.cumsum(w, 1) - w                        # measure before piece j
        total = w.sum(1)                                # (G,)
        t = q[:, None] * total[None, :]                 # (P, G) lower targets
        u = (q[:, None] + kappa) * total[None, :]       # (P, G) upper targets
        nonempty = w > 0
        # L: first non-empty piece whose end reaches t.
        reach = (cw + w)[None] >= t[..., None] - 1e-12
        jl = np.argmax(reach & nonempty[None], -1)
        gi = np.arange(self.n_groups)[None, :]
        L = self.alpha[gi, jl] + (t - cw[gi, jl])
        # U: the piece with cw_j <= u < cw_j + w_j; beyond |I_k|: 1.
        inside = (cw[None] <= u[..., None] + 1e-12) & (u[..., None] < (cw + w)[None] - 1e-12) & nonempty[None]
        ju = np.argmax(inside, -1)
        U = np.where(inside.any(-1), self.alpha[gi, ju] + (u - cw[gi, ju]), 1.0)
        return q, np.clip(L, 0.0, 1.0), np.clip(U, 0.0, 1.0)

    def describe(self, group_names: Sequence[str]) -> dict[str, list[list[float]]]:
        return {str(name): [[float(a), float(b)] for a, b in zip(self.alpha[k], self.beta[k]) if b > a]
                for k, name in enumerate(group_names)}
