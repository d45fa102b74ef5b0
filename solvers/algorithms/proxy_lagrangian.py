r"""Proxy-Lagrangian baseline (Cotter, Jiang & Sridharan 2019), pairwise, as used by Yao, Lin & Yang
(2023, App. E.2) on problem (2):

    max_w AUC(D+, D−)   s.t.   AUC(G1,G1') − AUC(G2,G2') ≤ κ,   AUC(G2,G2') − AUC(G1,G1') ≤ κ.

Two players on every mini-batch (all pairs *inside* the batch, cost O(B²); full batch: O(n²)):

* θ-player: one SGD step on λ₀·(1 − ÂUC_σ(D+,D−)) + Σ_j λ_j ĝ_j^σ, where ÂUC_σ(P,Q) = mean_{i∈P,j∈Q}
  σ((h_i − h_j)/s) (sigmoid with temperature ``temperature``) — surrogates of the indicators;
* λ-player: λ ∈ Δ^{3} (objective weight λ₀ and the two constraints) by multiplicative weights on the
  ORIGINAL constraints: λ_j ∝ λ_j exp(η_λ ĝ_j) with ĝ_j the exact (indicator, ties ½) constraint values on
  the batch pairs, ĝ₀ = 0. This is the external-regret simplification of the proxy-Lagrangian's
  swap-regret λ-player (a stationary distribution of a column-stochastic matrix); documented deviation.

For networks the paper replaces the original oracle by one SGD step on w — which is what this does.
Output: the validation-selected iterate (same rule as ``level_set``).
"""
from __future__ import annotations

import torch

from ..constraints.auc_parity import AUCParity
from ..metrics.auc import GROUP_SETS
from ..constraints.auc_surrogate import _set_mask
from .base import ALGORITHMS, Algorithm, gradient
from .level_set import IterateSelector


def pair_auc(h: torch.Tensor, in_p: torch.Tensor, in_q: torch.Tensor, temperature: float | None
             ) -> torch.Tensor:
    """Mean over pairs (i∈P, j∈Q, i≠j) of σ((h_i − h_j)/s) (or of 1[h_i>h_j] + ½·1[=] when s is None);
    O(|P||Q|) — the quadratic cost of pairwise methods. ½ when there is no pair."""
    d = h[in_p][:, None] - h[in_q][None, :]
    if d.numel() == 0:
        return h.new_tensor(0.5)
    vals = torch.sigmoid(d / temperature) if temperature is not None else (d > 0).to(h.dtype) + 0.5 * (d == 0).to(h.dtype)
    ip, iq = torch.nonzero(in_p).flatten(), torch.nonzero(in_q).flatten()
    not_self = (ip[:, None] != iq[None, :]).to(h.dtype)
    return (vals * not_self).sum() / not_self.sum().clamp_min(1.0)


@ALGORITHMS.implements("proxy_lagrangian")
class ProxyLagrangian(Algorithm):
    def start(self, current) -> None:
        fams = [f for f in self.problem.constraints if isinstance(f, AUCParity)]
        if len(fams) != 1:
            raise ValueError("proxy_lagrangian needs exactly one 'auc_parity' constraint")
        self.family = fams[0]
        self.prot = self.problem.group == self.family.protected_index()
        self.lam = torch.full((3,), 1.0 / 3.0, device=self.problem.device)
        self.selector = IterateSelector(self.family, self.family.tolerance)
        self.steps = 0

    def _aucs(self, h, y, prot, temperature):
        g1, g1p, g2, g2p = GROUP_SETS[self.family.config.variant]
        pos = y > 0.5
        auc = pair_auc(h, pos, ~pos, temperature)
        a1 = pair_auc(h, _set_mask(y, prot, g1), _set_mask(y, prot, g1p), temperature)
        a2 = h.new_tensor(0.5) if g2 is None else pair_auc(h, _set_mask(y, prot, g2), _set_mask(y, prot, g2p), temperature)
        kappa = self.family.tolerance
        return auc, torch.stack([a1 - a2 - kappa, a2 - a1 - kappa])

    def step(self, k, current):
        p, c = self.problem, self.config
        idx = self.batch()
        X, y, prot = (p.X, p.y, self.prot) if idx is None else (p.X[idx], p.y[idx], self.prot[idx])
        h = self.model(X)
        auc_s, g_s = self._aucs(h, y, prot, c.temperature)
        loss = self.lam[0] * (1.0 - auc_s) + (self.lam[1:] * g_s).sum()
        grads = gradient(loss, self.params)
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-c.lr)
            p.project_(self.params)
            _, g_exact = self._aucs(h.detach(), y, prot, None)
            logits = torch.log(self.lam) + c.lr_lambda * torch.cat([g_exact.new_zeros(1), g_exact])
            self.lam = torch.softmax(logits, 0)
        self.steps += 1
        if self.steps % c.select_every == 0:
            self.selector.consider(self.model, self.validation or p, self.steps)
        ev = p.evaluate(self.model, idx)
        return ev, {"lambda": self.lam.clone()}

    def finish(self):
        self.selector.consider(self.model, self.validation or self.problem, self.steps)
        self.selector.restore(self.model)
        with torch.no_grad():
            return self.problem.evaluate(self.model)
