r"""SSL-ALM and ALM (Algorithm 2 of Kliachkin, Lepšová, Bareilles, Mareček, "Benchmarking
Stochastic Approximation Algorithms for Fairness-Constrained Training of Deep Neural
Networks"; the method of Huang, Zhang & Alacaoglu 2025, cited there as "JakubReview").

The inequalities G(θ) ≤ 0 become equalities with slacks (Sec. 3.3):

    c(x) = G(θ) + s = 0,   x = (θ, s) ∈ 𝒳 = Θ × R^m_{≥0}.

Augmented Lagrangian and its proximal (smoothed) version (Sec. 3.3):

    L_ρ(x, y)      = F(θ) + yᵀc(x) + (ρ/2)‖c(x)‖²
    K_{ρ,μ}(x,y,z) = L_ρ(x, y) + (μ/2)‖x − z‖²

Stochastic gradient of K (eq. 10), ξ an objective batch, ζ1, ζ2 independent constraint batches:

    𝒢(x, y, z; ξ, ζ1, ζ2) = ∇f(x, ξ) + ∇c(x, ζ1)ᵀy + ρ∇c(x, ζ1)ᵀc(x, ζ2) + μ(x − z)

Iteration k (Algorithm 2, eq. 11):

    y_{k+1} = y_k + η c(x_k, ζ1);      if ‖y_{k+1}‖ ≥ M_y:  y_{k+1} = 0     (dual reset)
    x_{k+1} = proj_𝒳(x_k − τ 𝒢(x_k, y_{k+1}, z_k; ξ, ζ1, ζ2))
    z_{k+1} = z_k + β(x_k − z_k)

ALM is the same iteration with μ = 0 (Sec. 4, "smoothing term removed"); z is then unused.

Choices the paper leaves open (documented here):

* Defaults: the paper's experiment section (Sec. 4, "Algorithms and parameters"): μ = 2, ρ = 1,
  τ = 0.01, η = 0.05, β = 0.5, M_y = 10 (ALM: identical with μ = 0).
* Slack initialisation s_0 = 0, y_0 = 0, z_0 = x_0 (public code of the paper). The slack
  enters c(x) = G(θ) + s, so the dual step is y += η (G(θ_k; ζ1) + s_k) and the s-block of 𝒢 is
  y_{k+1} + ρ(G(θ_k; ζ2) + s_k) + μ(s_k − z^s_k); proj_𝒳 clamps s at 0 and applies Π_Θ
  (``problem.project_``) to θ.
* z update uses x_k (the paper's formula), not x_{k+1}.
* Batches: ξ = ``batch_size`` samples drawn uniformly (epoch permutation); ζ1 and ζ2 are two
  independent constraint batches of ``constraint_batch`` samples per group (``sampler.balanced``;
  "we sample an equal number of data points for every subgroup", Sec. 4). F is evaluated on ξ and
  G on ζ1 (two forwards with graph) and G on ζ2 (one forward without graph). The paper gives no batch
  size (the public code uses 8, and 8 per group for constraints); ``batch_size=None`` (default) is the
  full-batch deterministic method, where ζ1 = ζ2 = ξ = the training set and one forward suffices.
* The evaluation returned for logging (objective on ξ, constraints on ζ1, at θ_{k+1}) is the one
  the next iteration uses, so logging costs no extra forward.
* Output: the last iterate (the paper's public code takes one extra full-batch step after its loop;
  we do not).
"""
from __future__ import annotations

import torch
from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt
from torch import Tensor

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm, AlgorithmConfig, gradient


class StochasticConstraintsConfig(AlgorithmConfig):
    constraint_batch: PositiveInt | None = Field(
        None, description="Samples PER GROUP in each constraint estimate (drawn with replacement inside each "
        "group, Sec. 4: equal number of points for every subgroup). None = batch_size per group (the paper's "
        "public code), or the whole training set when batch_size is None (full batch).")


class BalancedConstraintBatches:
    """Mixin: objective on a uniform batch ξ, constraints on a per-group balanced batch ζ."""

    problem: object
    config: StochasticConstraintsConfig

    @property
    def full_batch(self) -> bool:
        size = self.config.batch_size
        return (size is None or size >= self.problem.n_samples) and self.config.constraint_batch is None

    @property
    def per_group(self) -> int:
        return self.config.constraint_batch or self.config.batch_size or self.problem.n_samples

    @property
    def n_nonempty_groups(self) -> int:
        return int((self.sampler.counts > 0).sum())

    def constraint_idx(self, scale: int = 1) -> Tensor | None:
        """Indices of a fresh constraint batch (``scale`` × per-group size), None when full batch."""
        return None if self.full_batch else self.sampler.balanced(self.per_group * scale)

    def split_evaluate(self, obj_idx: Tensor | None, con_idx: Tensor | None) -> Evaluation:
        """F on ``obj_idx`` and G on ``con_idx`` (one forward when both are the full set, else two)."""
        if obj_idx is None and con_idx is None:
            return self.problem.evaluate(self.model, None)
        a = self.problem.evaluate(self.model, obj_idx)
        b = self.problem.evaluate(self.model, con_idx)
        return Evaluation(a.scores, a.objective, b.constraints)

    def evaluate(self) -> Evaluation:
        return self.split_evaluate(None if self.full_batch else self.batch(), self.constraint_idx())

    def constraint_samples(self) -> int:
        return self.n_nonempty_groups * self.per_group


class ALMConfig(StochasticConstraintsConfig):
    eta: PositiveFloat = Field(0.05, description="Dual step size η of y_{k+1} = y_k + η c(x_k, ζ1) (Sec. 4: 0.05).")
    tau: PositiveFloat = Field(0.01, description="Primal step size τ of x_{k+1} = proj(x_k − τ𝒢) (Sec. 4: 0.01).")
    rho: NonNegativeFloat = Field(1.0, description="Augmented-Lagrangian penalty ρ ≥ 0 (Sec. 4: 1.0).")
    M_y: PositiveFloat = Field(10.0, description="Dual safeguard: y is reset to 0 when ‖y‖ ≥ M_y (Alg. 2 line 6; "
                               "Sec. 4: 10).")


class SSLALMConfig(ALMConfig):
    mu: NonNegativeFloat = Field(2.0, description="Proximal (smoothing) weight μ of (μ/2)‖x − z‖² (Sec. 4: 2.0; "
                                 "μ = 0 is ALM).")
    beta: float = Field(0.5, gt=0.0, le=1.0, description="Proximal-centre step β of z_{k+1} = z_k + β(x_k − z_k) "
                        "(Sec. 4: 0.5).")


@ALGORITHMS.register(
    "ssl_alm",
    aliases=("ssl-alm", "sslalm", "smoothed_linearized_alm"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (SSL-ALM, Algorithm 2; Huang, Zhang & Alacaoglu 2025)",
    description="Stochastic smoothed and linearized augmented Lagrangian: slacks turn G ≤ 0 into equalities; "
    "one stochastic dual ascent step with reset when ‖y‖ ≥ M_y, one projected stochastic gradient step on the "
    "proximal augmented Lagrangian K_{ρ,μ}, and a damped move of the proximal centre z.",
)
class SSLALM(BalancedConstraintBatches, Algorithm):
    Config = SSLALMConfig

    @property
    def mu(self) -> float:
        return float(getattr(self.config, "mu", 0.0))

    def start(self, current: Evaluation) -> None:
        g0 = current.constraints.detach()
        self.s = torch.zeros_like(g0)              # slack s_0 = 0
        self.y = torch.zeros_like(g0)              # y_0 = 0
        if self.mu > 0:                            # z_0 = x_0
            self.z = [p.detach().clone() for p in self.params]
            self.z_s = self.s.clone()

    def step(self, k: int, current: Evaluation):
        c = self.config
        mu, s = self.mu, self.s
        c1 = current.constraints                    # G(θ_k; ζ1), with graph
        # (11) y_{k+1} = y_k + η c(x_k, ζ1), reset to 0 when ‖y_{k+1}‖ ≥ M_y (no host sync)
        y = self.y + c.eta * (c1.detach() + s)
        y = torch.where(torch.linalg.vector_norm(y) >= c.M_y, torch.zeros_like(y), y)
        # c(x_k, ζ2) on an independent constraint batch (the same full set when full batch)
        if self.full_batch:
            c2 = c1.detach()
        else:
            with torch.no_grad():
                c2 = self.problem.evaluate(self.model, self.constraint_idx()).constraints
        w = y + c.rho * (c2 + s)                    # 𝒢_θ = ∇f + ∇c(ζ1)ᵀ w (+ μ(θ − z))
        grads = gradient(current.objective + (w * c1).sum(), self.params)
        grad_s = w.clone()
        with torch.no_grad():
            if mu > 0:
                torch._foreach_add_(grads, torch._foreach_sub(self.params, self.z), alpha=mu)
                grad_s += mu * (s - self.z_s)
                # z_{k+1} = z_k + β(x_k − z_k)   (uses x_k, before the primal step)
                torch._foreach_lerp_(self.z, [p.detach() for p in self.params], c.beta)
                self.z_s = self.z_s + c.beta * (s - self.z_s)
            # x_{k+1} = proj_𝒳(x_k − τ𝒢)
            torch._foreach_add_(self.params, grads, alpha=-c.tau)
            self.problem.project_(self.params)
            self.s = (s - c.tau * grad_s).clamp_min(0.0)
        self.y = y
        nxt = self.evaluate()
        return nxt, {"y": y, "slack": self.s}

    def samples_per_step(self) -> int:
        if self.full_batch:
            return self.problem.n_samples
        return super().samples_per_step() + 2 * self.constraint_samples()


@ALGORITHMS.register(
    "alm",
    aliases=("augmented_lagrangian", "stochastic_alm"),
    paper="Kliachkin et al., Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training "
    "of Deep Neural Networks (ALM = Algorithm 2 with μ = 0, Sec. 4)",
    description="Stochastic linearized augmented Lagrangian with slacks: SSL-ALM without the proximal smoothing "
    "term (μ = 0); dual ascent with reset when ‖y‖ ≥ M_y and one projected stochastic gradient step on L_ρ.",
)
class ALM(SSLALM):
    """SSL-ALM with μ = 0 (the same implementation; z is never formed)."""

    Config = ALMConfig
