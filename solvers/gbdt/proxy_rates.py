r"""Group error rates of a score vector, exact and through FairGBM's cross-entropy proxy, with their derivatives.

A *rate kind* r counts, among the rows M_r it concerns, those on one side of the threshold 0: with s_r = +1 the
predicted positives 1{f > 0} (demographic parity: all rows, the positive rate; FPR: the rows with y = 0), with
s_r = −1 the predicted negatives 1{f ≤ 0} among the rows with y = 1 (FNR; FNR parity is TPR parity, equal
opportunity). Per group g, with n_{r,g} rows of g in M_r and z_i = s_r f_i:

    exact  r_{r,g}(f) = (1/n_{r,g}) Σ_{i ∈ M_r ∩ g} 1{s_r f_i > 0}   (1{f_i ≤ 0} for s_r = −1),
    proxy  r̄_{r,g}(f) = (1/n_{r,g}) Σ_{i ∈ M_r ∩ g} φ(z_i),   φ(z) = log(1 + e^{z + a}),  a = log(e^m − 1),

(Cruz et al. 2023: the cross-entropy proxy, shifted so that φ(0) = m; with the default margin m = 1,
φ(z) ≥ 1 for z ≥ 0 and φ > 0: an upper bound of the step). φ'(z) = σ(z + a), φ''(z) = σ(z + a)(1 − σ(z + a)).

Constraints of one kind (spread ≤ ε over any number of groups): the paper writes one per group b,
c_b = max_a r_a − r_b − ε ≤ 0; we write the same feasible set as one per ordered pair of groups with rows,

    c_{r,(a,b)}(f) = r_{r,a}(f) − r_{r,b}(f) − ε_r ≤ 0   (a ≠ b),

each with its own multiplier λ_{r,(a,b)} ≥ 0, and report per group b the paper's value max_a c_{(a,b)} = c_b (and
Σ_a λ_{(a,b)} as its multiplier). Why: with the per-group form, while group b is the worst its constraint reads −ε,
so its multiplier decays at the rate η_λ ε only; measured on ``bench.common.datagen.planted_table`` (DP ≤ 0.03), both
groups' multipliers then grew, the worst group swapped every round and the exact gap swung between 0.03 and 0.97.
A pair's constraint reads −gap − ε once the order flips, so its multiplier decays at once (same run: the gap stays
within a few hundredths of ε).

Proxy constraints (``proxy="bound"``, the default): c̃_{(a,b)} = r̄_a − r̲_b − ε with the upper bound r̄ = mean φ of
the rate that is lowered and the lower bound r̲ = mean ψ, ψ(z) = 1 − φ(−z) ≤ 1{z > 0}, of the rate that is raised,
so c̃ ≥ c and c̃ is convex in f. ``proxy="rates"`` puts φ in both places, as FairGBM's implementation does: raising
r̄_b is then cheapest by pushing rows already far above the threshold further (φ grows without bound there), which
leaves the exact rate unchanged and makes the descent unbounded below (measured on a planted problem and on Adult,
sex, DP: the scores ran off and the exact gap did not move). For i ∈ M_r in group g, with Λ⁺_g = Σ_b λ_{(g,b)} and
Λ⁻_g = Σ_a λ_{(a,g)},

    ∂/∂f_i Σ_j λ_j c̃_j = s_r [Λ⁺_g φ'(z_i) − Λ⁻_g ψ'(z_i)] / n_{r,g},
    ∂²/∂f_i² Σ_j λ_j c̃_j = [Λ⁺_g φ''(z_i) − Λ⁻_g ψ''(z_i)] / n_{r,g}   (≥ 0 for "bound": ψ'' = −φ''(−z) ≤ 0),

ψ'(z) = φ'(−z). Groups without rows in M_r have no constraint (c = −ε). Everything is vectorised over the rows and
groups (one ``bincount`` per kind and quantity, (G, G) pair matrices); the kinds (at most two per constraint
family) are a Python loop. :meth:`ProxyRates.per_pair_share` is 1 / (G_r − 1) per pair, G_r the groups with rows
in M_r: the share of one pair in a group's Λ, by which the ascent divides its step
(:mod:`solvers.algorithms.fair_boosting`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

KINDS = {"demographic_parity": (("positive_rate", None, 1),),
         "equal_opportunity": (("fnr", 1, -1),),
         "equalized_odds": (("fpr", 0, 1), ("fnr", 1, -1))}


@dataclass(frozen=True)
class RateKind:
    name: str
    rows: np.ndarray       # (n,) bool: the rows M_r
    sign: int              # s_r
    tolerance: float       # ε_r
    counts: np.ndarray     # (G,) n_{r,g}


@dataclass(frozen=True)
class ProxyRates:
    """The rate kinds of a problem's constraint families on its training rows (``group``: (n,) group index)."""

    group: np.ndarray
    n_groups: int
    kinds: tuple[RateKind, ...]
    margin: float = 1.0
    proxy: str = "bound"   # "bound": r̲ = mean ψ for the subtracted rate; "rates": φ for every rate

    @classmethod
    def build(cls, families, y: np.ndarray, group: np.ndarray, n_groups: int, margin: float = 1.0,
              proxy: str = "bound") -> "ProxyRates":
        kinds = []
        for family in families:
            for name, label, sign in KINDS[family.name]:
                rows = np.ones(len(y), bool) if label is None else (y == label)
                counts = np.bincount(group[rows], minlength=n_groups).astype(float)
                kinds.append(RateKind(f"{family.name}[{name}]", rows, sign, float(family.tolerance), counts))
        return cls(group, n_groups, tuple(kinds), margin, proxy)

    @property
    def size(self) -> int:
        """Multipliers: one per kind and ordered pair of groups (a, b)."""
        return len(self.kinds) * self.n_groups ** 2

    @property
    def shift(self) -> float:
        """a = log(e^m − 1)."""
        return float(np.log(np.expm1(self.margin)))

    def _upper(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(φ, φ', φ'') at z."""
        p = expit(z + self.shift)
        return np.logaddexp(0.0, z + self.shift), p, p * (1 - p)

    def _lower(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ψ, ψ', ψ'') at z: ψ(z) = 1 − φ(−z) ("bound"), or φ itself ("rates", the reference implementation)."""
        if self.proxy == "rates":
            return self._upper(z)
        phi, d1, d2 = self._upper(-z)
        return 1.0 - phi, d1, -d2

    def _rates(self, kind: RateKind, per_row: np.ndarray) -> np.ndarray:
        sums = np.bincount(self.group[kind.rows], weights=per_row[kind.rows], minlength=self.n_groups)
        return np.divide(sums, kind.counts, out=np.zeros(self.n_groups), where=kind.counts > 0)

    def _valid(self, kind: RateKind) -> np.ndarray:
        """(G, G): the pairs a ≠ b of groups with rows in M_r (the others have no constraint)."""
        present = kind.counts > 0
        return present[:, None] & present[None, :] & ~np.eye(self.n_groups, dtype=bool)

    def _pairs(self, kind: RateKind, high: np.ndarray, low: np.ndarray) -> np.ndarray:
        """(G, G): high_a − low_b − ε for the valid pairs, −ε elsewhere."""
        return np.where(self._valid(kind), high[:, None] - low[None, :], 0.0) - kind.tolerance

    def _exact_rates(self, kind: RateKind, f: np.ndarray) -> np.ndarray:
        hit = (f > 0) if kind.sign > 0 else (f <= 0)
        return self._rates(kind, hit.astype(float))

    def per_pair_share(self) -> np.ndarray:
        """(size,): 1 / (G_r − 1) for every pair of kind r, G_r its groups with rows in M_r (1 when G_r ≤ 2): the
        share of one pair in a group's multiplier sum Λ_g, which has G_r − 1 pairs (the ascent's scaling)."""
        return np.concatenate([np.full(self.n_groups ** 2, 1.0 / max(1, int((k.counts > 0).sum()) - 1))
                               for k in self.kinds]) if self.kinds else np.zeros(0)

    def exact_pairs(self, f: np.ndarray) -> np.ndarray:
        """c(f) (size,): r_a − r_b − ε for every kind and ordered pair (a, b), kind-major, row-major pairs."""
        return np.concatenate([self._pairs(k, r, r).ravel() for k in self.kinds
                               for r in [self._exact_rates(k, f)]]) if self.kinds else np.zeros(0)

    def exact(self, f: np.ndarray) -> np.ndarray:
        """Per kind and group b: max_a c_{a,b} = max_a r_a − r_b − ε, the paper's per-group constraint values."""
        return self._per_group(self.exact_pairs(f))

    def proxy_pairs(self, f: np.ndarray) -> np.ndarray:
        """c̃(f) (size,): r̄_a − r̲_b − ε for every ordered pair (a ≠ b)."""
        out = []
        for kind in self.kinds:
            z = kind.sign * f
            out.append(self._pairs(kind, self._rates(kind, self._upper(z)[0]),
                                   self._rates(kind, self._lower(z)[0])).ravel())
        return np.concatenate(out) if out else np.zeros(0)

    def proxy_values(self, f: np.ndarray) -> np.ndarray:
        """Per kind and group b: max_a c̃_{a,b}."""
        return self._per_group(self.proxy_pairs(f))

    def _per_group(self, pairs: np.ndarray) -> np.ndarray:
        return pairs.reshape(len(self.kinds), self.n_groups, self.n_groups).max(axis=1).ravel()

    def per_group(self, multipliers: np.ndarray) -> np.ndarray:
        """Per kind and group b: Σ_a λ_{a,b}, the weight that raises b's rate (the paper's λ_b)."""
        return multipliers.reshape(len(self.kinds), self.n_groups, self.n_groups).sum(axis=1).ravel()

    def derivatives(self, f: np.ndarray, multipliers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(∂/∂f_i, ∂²/∂f_i²) of Σ_j λ_j c̃_j(f) over the pairs, each (n,) (see the module docstring)."""
        grad, hess = np.zeros(len(f)), np.zeros(len(f))
        lam = multipliers.reshape(len(self.kinds), self.n_groups, self.n_groups)
        for kind, lam_r in zip(self.kinds, lam):
            lam_r = np.where(self._valid(kind), lam_r, 0.0)
            z = kind.sign * f
            _, dphi, d2phi = self._upper(z)
            _, dpsi, d2psi = self._lower(z)
            inverse = np.divide(1.0, kind.counts, out=np.zeros(self.n_groups), where=kind.counts > 0)
            up = (lam_r.sum(axis=1) * inverse)[self.group]     # Σ_b λ_{g,b} / n_g: lowers g's rate
            low = (lam_r.sum(axis=0) * inverse)[self.group]    # Σ_a λ_{a,g} / n_g: raises g's rate
            grad += np.where(kind.rows, kind.sign * (up * dphi - low * dpsi), 0.0)
            hess += np.where(kind.rows, up * d2phi - low * d2psi, 0.0)
        return grad, hess

    def names(self, group_names: list[str]) -> list[str]:
        """One name per kind and group (the per-group values of :meth:`exact`, :meth:`proxy_values`)."""
        return [f"{kind.name}[{g}]" for kind in self.kinds for g in group_names]
