r"""PLADA: P-Lagrangian based Alternating Direction Algorithm (Algorithm 1 of
"A Modified Proximal-Perturbed Lagrangian for Non-Convex Non-Smooth
Representatives of Fairness Constraints").

Modified proximal-perturbed Lagrangian (6), reduced over z (7):

    L(θ,u,λ,μ) = F(θ) + ⟨λ, G(θ)+u⟩ − (1/(2ρ))‖λ − μ‖²,    ρ = α/(1+αβ).

Iteration k = 0, 1, ... (Algorithm 1):

    (9)  θ_{k+1} = Π_Θ[θ_k − η(∇F(θ_k) + ∂G(θ_k)ᵀ(w ⊙ λ_k))]
    (10) u_{k+1} = Π_[0,u_max][u_k − τλ_k]
    (11) γ_k = min{γ_0, ρδ_k/(‖λ_k − μ_k‖² + 1)},  δ_k = κ/(k+1)
         μ_{k+1} = μ_k + (γ_k/ρ)(λ_k − μ_k)
    (12) λ_{k+1} = μ_{k+1} + ρ(G(θ_{k+1}) + u_{k+1})
    (13) z_{k+1} = (λ_{k+1} − μ_{k+1})/α          (logged only; no other update uses z)

Choices the paper leaves open (documented here):

* Step (9) in the paper keeps G exact inside the prox subproblem but never says how
  it is solved; Table 2 names η_w / η_u step sizes, so — like the paper's code
  presumably — we take ONE projected (sub)gradient step on F + ⟨λ_k, G⟩
  linearised at θ_k (backprop on F + λ_kᵀG for neural networks).
* Many constraints (``row_weights``, w above; Algorithm 1 as written is w = 1): eq. (18) writes the
  intersectional constraint as ONE expectation E_G over a uniformly drawn group G, with one constraint (and
  one multiplier) per group. We read the θ-step's constraint term as that expectation,
  E_G[λ_G ∂G_G] = (1/m) Σ_g λ_g ∂G_g (the mean of the sampled-group step), so w_g = 1/m on such a family's
  rows ('auto'); the dual steps (10)–(12) stay per constraint, unweighted ("alternatingly optimizing
  (u, z, λ, μ) for each fairness constraint", Sec. 5.2). With w = 1 the constraint term of (9) is ~m times
  the size of one constraint's (λ_g = ρ(G_g + u_g) per row at k = 0) and the step bound
  η < 1/(L_F + 3ρM_G²) shrinks with M_G² ∝ m: on Communities & Crime (627 rows) Table 2's η = 0.1 diverges
  in 2 iterations with w = 1 and runs with w = 1/m (bench/papers/results/communities_crime.md).
* η_u of Table 2 is τ. Defaults: Table 2 row "Models 5.1 and 5.2" for linear models
  (η=0.001, τ=0.1, α=10, β=0.1, γ_0=0.1), row "Neural network 5.3" otherwise
  (η=0.1, τ=0.01, α=10, β=0.5, γ_0=0.1). ``eta``/``tau``/``beta`` = None means
  "the paper default for the model type". Note: η=0.001 with full-batch plain
  gradient steps on standardised features moves θ slowly (a few thousand
  iterations are needed on tabular data); raise ``eta`` for faster runs.
* κ (not given in the paper): default 10, so γ_k = γ_0 for the first ~ρκ/γ_0
  iterations and decays like 1/k afterwards (δ_k → 0, Σ δ_k = ∞ as required).
* u_max = B_G: default 1 + ε_j per constraint. Since every gap is ≥ 0, G_j ≥ −ε_j
  and the fixed point u_j = −G_j never needs more than ε_j, so the bound is
  non-binding at a solution; for bounded surrogates (sigmoid, ramp) ‖G_j‖ ≤ 1 + ε_j.
* Initialisation: θ_0 = 0 for linear models (models.linear), PyTorch's seeded init
  for networks; u_0 = 0, μ_0 = 0, λ_0 = μ_0 + ρ(G(θ_0) + u_0), z_0 = (λ_0−μ_0)/α.
* Θ is the problem's domain (R^d, or the model spec's ℓ1/ℓ2 ball), projected exactly after the step.
* The reported model is the last iterate.
"""
from __future__ import annotations

import torch

from ..catalog.plada import PLADAConfig
from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm, gradient

#: Table 2 of the paper: (η_w, η_u=τ, α, β, γ_0)
PAPER_DEFAULTS: dict[str, dict[str, float]] = {
    "linear": {"eta": 0.001, "tau": 0.1, "alpha": 10.0, "beta": 0.1, "gamma0": 0.1},
    "mlp": {"eta": 0.1, "tau": 0.01, "alpha": 10.0, "beta": 0.5, "gamma0": 0.1},
}


@ALGORITHMS.implements("plada")
class PLADA(Algorithm):
    @classmethod
    def resolve_config(cls, config: PLADAConfig, problem) -> PLADAConfig:
        defaults = PAPER_DEFAULTS["linear" if problem.model_type == "linear" else "mlp"]
        fill = {key: defaults[key] for key in ("eta", "tau", "beta") if getattr(config, key) is None}
        return config.model_copy(update=fill)

    @property
    def rho(self) -> float:
        """ρ = α/(1+αβ)."""
        return self.config.alpha / (1.0 + self.config.alpha * self.config.beta)

    def start(self, current: Evaluation) -> None:
        tolerances = torch.tensor(self.problem.tolerances, dtype=torch.float32, device=self.problem.device)
        self.u_max = tolerances + 1.0 if self.config.u_max is None else torch.full_like(tolerances, self.config.u_max)
        g0 = current.constraints.detach()
        self.u = torch.zeros_like(g0)
        self.mu = torch.zeros_like(g0)
        self.lam = self.mu + self.rho * (g0 + self.u)
        self.row_weights = row_weights(self.problem.constraints, self.config.row_weights, g0)

    def step(self, k: int, current: Evaluation):
        c, rho = self.config, self.rho
        lam, mu = self.lam, self.mu
        # (9) θ_{k+1} = Π_Θ[θ_k − η(∇F(θ_k) + ∂G(θ_k)ᵀ(w ⊙ λ_k))]
        grads = gradient(current.objective + (self.row_weights * lam * current.constraints).sum(), self.params)
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-c.eta)
            self.problem.project_(self.params)
        # (10) u_{k+1} = Π_U[u_k − τλ_k]
        u = torch.minimum((self.u - c.tau * lam).clamp_min(0.0), self.u_max)
        # (11) γ_k and μ_{k+1}
        diff = lam - mu
        delta = c.kappa / (k + 1)
        gamma = torch.clamp(rho * delta / (diff.dot(diff) + 1.0), max=c.gamma0)
        mu = mu + (gamma / rho) * diff
        # (12) λ_{k+1} = μ_{k+1} + ρ(G(θ_{k+1}) + u_{k+1})
        nxt = self.evaluate()
        lam = mu + rho * (nxt.constraints.detach() + u)
        self.u, self.mu, self.lam = u, mu, lam
        duals = {
            "lambda": lam,
            "mu": mu,
            "abs_lambda_minus_mu": (lam - mu).abs(),
            "u": u,
            "z": (lam - mu) / c.alpha,  # (13)
        }
        return nxt, duals


def row_weights(families, rule: str, like: torch.Tensor) -> torch.Tensor:
    """w ∈ R^m of step (9): 1 on every row ('sum'), 1/m_f on the m_f rows of family f ('mean'), or 1/m_f only for
    families whose constraint is an expectation over its rows (``expectation_over_rows``; 'auto')."""
    w = [(1.0 / len(f.names) if rule == "mean" or (rule == "auto" and f.expectation_over_rows) else 1.0)
         for f in families for _ in f.names]
    return torch.tensor(w, dtype=like.dtype, device=like.device) if w else like.new_zeros(0)
