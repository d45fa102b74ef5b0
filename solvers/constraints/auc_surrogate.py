r"""The square-loss surrogate of the AUC problem and its per-sample min–max form
(Yao, Lin & Yang 2023, eqs. (6)–(10), Lemma 1; Ying et al. 2016).

Square surrogate ℓ(t) = c₁(t − c₂)² of 1[t ≤ 0]. For two sets (P, Q) of the paper's
Appendix-D pairing, with p_G = Pr(z ∈ G), m_G = E[h | G] and s_G(z) = 1_G(z)/p_G:

    F_PQ(w,a,b;z) = c₁c₂² − 2c₁c₂ h s_P + 2c₁c₂ h s_Q + c₁(h − a)² s_P + c₁(h − b)² s_Q
    G_PQ(w;z)     = 2c₁ h s_P − 2c₁ h s_Q

    E[c₁(h(ξ) − h(ξ') − c₂)² | z∈P, z'∈Q] = min_{a,b} max_α E[F_PQ + α G_PQ − c₁α²]       (Lemma 1, corrected)
                                          = c₁[(m_P − m_Q − c₂)² + Var(h|P) + Var(h|Q)]      (closed form)

with a* = m_P, b* = m_Q, α* = m_P − m_Q. **Misprint resolved:** the paper prints "− α²"; the proof
multiplies its eq. (30) by c₁, so the exact form is "− c₁α²" (with − α² the max over α gives
c₁²(m_P − m_Q)², exact only for c₁ = 1). Everything here (d_y, Lemma 3, Lemma 4) uses c₁α².

The five terms k = 0..4 of problem (10) (Appendix-D pairing, which fixes the sign misprint of the
printed G vector in (23)):

    k=0: (D+, D−)  → f₀          k=1: (G1', G1), k=2: (G2, G2') → f₁ = v₁ + v₂
                                 k=3: (G2', G2), k=4: (G1, G1') → f₂ = v₃ + v₄

f₁ ≤ 1 + κ is the surrogate of AUC(G1,G1') − AUC(G2,G2') ≤ κ (because 1[h'−h ≤ 0] on (G1,G1')
is 1 − 1[h > h'] up to ties), f₂ ≤ 1 + κ of the reverse inequality. Sets are (label, protected)
predicates as in :data:`solvers.metrics.auc.GROUP_SETS`; "G2 = G2' = everything" (Ex. 1, Ex. 4)
is the all-rows set, for which the surrogate of the constant ½ is c₁[c₂² + 2Var(h)].
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..metrics.auc import GROUP_SETS

#: term k → index g(k) of its weight ỹ_{g(k)} (objective, C1, C2)
TERM_GROUP = (0, 1, 1, 2, 2)


def _set_mask(y: Tensor, protected: Tensor, spec) -> Tensor:
    mask = torch.ones_like(y, dtype=torch.bool)
    if spec is None:
        return mask
    label, prot = spec
    if label is not None:
        mask = mask & ((y > 0.5) == (label > 0))
    if prot is not None:
        mask = mask & (protected == prot)
    return mask


def term_sets(y: Tensor, protected: Tensor, variant: str | None) -> tuple[Tensor, Tensor]:
    """Membership (n, 5) booleans of P_k and Q_k for the five terms (variant None: only k = 0 is
    meaningful; terms 1–4 repeat (D+, D−) and are unused)."""
    pos = (y > 0.5, None)
    dpos, dneg = (1, None), (-1, None)
    if variant is None:
        sets = [(dpos, dneg)] * 5
    else:
        g1, g1p, g2, g2p = GROUP_SETS[variant]
        sets = [(dpos, dneg), (g1p, g1), (g2, g2p), (g2p, g2), (g1, g1p)]
    del pos
    in_p = torch.stack([_set_mask(y, protected, p) for p, _ in sets], 1)
    in_q = torch.stack([_set_mask(y, protected, q) for _, q in sets], 1)
    return in_p, in_q


def scaled_indicators(in_p: Tensor, in_q: Tensor, dtype=torch.float32) -> tuple[Tensor, Tensor]:
    """s_P = 1_P/p_P and s_Q = 1_Q/p_Q per sample and term, (n, 5), with p from these rows."""
    fp, fq = in_p.to(dtype), in_q.to(dtype)
    return fp / fp.mean(0).clamp_min(1e-12), fq / fq.mean(0).clamp_min(1e-12)


def term_values(h: Tensor, in_p: Tensor, in_q: Tensor, c1: float, c2: float) -> Tensor:
    """v_k = c₁[(m_P − m_Q − c₂)² + Var(h|P) + Var(h|Q)] for k = 0..4 (population variances),
    i.e. the average of c₁(h_i − h_j − c₂)² over all ordered pairs (i ∈ P, j ∈ Q). O(n), differentiable."""
    fp, fq = in_p.to(h.dtype), in_q.to(h.dtype)
    np_, nq = fp.sum(0).clamp_min(1.0), fq.sum(0).clamp_min(1.0)
    hc = h[:, None]
    mp, mq = (fp * hc).sum(0) / np_, (fq * hc).sum(0) / nq
    vp = (fp * (hc - mp) ** 2).sum(0) / np_
    vq = (fq * (hc - mq) ** 2).sum(0) / nq
    return c1 * ((mp - mq - c2) ** 2 + vp + vq)


def level_values(h: Tensor, in_p: Tensor, in_q: Tensor, c1: float, c2: float) -> Tensor:
    """(f₀, f₁, f₂) of problem (10) at the optimal auxiliary variables, exactly, in O(n)."""
    v = term_values(h, in_p, in_q, c1, c2)
    return torch.stack([v[0], v[1] + v[2], v[3] + v[4]])


def per_sample_F_G(h: Tensor, sp: Tensor, sq: Tensor, a: Tensor, b: Tensor, c1: float, c2: float
                   ) -> tuple[Tensor, Tensor]:
    """F_k(x; z_i) and G_k(w; z_i), shape (n, 5), for scores h (n,), s_P/s_Q (n, 5), a, b (5,)."""
    hc = h[:, None]
    F = (c1 * c2 ** 2 - 2 * c1 * c2 * hc * sp + 2 * c1 * c2 * hc * sq
         + c1 * (hc - a) ** 2 * sp + c1 * (hc - b) ** 2 * sq)
    G = 2 * c1 * hc * (sp - sq)
    return F, G
