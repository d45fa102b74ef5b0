"""Catalog: switching subgradient methods (SSG, IPC / IPP-SSG and its stochastic form) and the virtual-queue baseline (YNW)."""
from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from .base import ALGORITHMS, AlgorithmConfig


@ALGORITHMS.declare(
    "ssg",
    overlapping_groups=True,
    implementation="solvers.algorithms.ssg:SSG",
    aliases=("switching-subgradient",),
    paper="Huang & Lin, Oracle Complexity of Single-Loop Switching Subgradient Methods for Non-Smooth Weakly "
    "Convex Functional Constrained Optimization (NeurIPS 2023); SSG baseline of PLADA, SSw of the stochastic benchmark",
    description="Single-loop switching subgradient: a projected subgradient step on the objective when the "
    "largest constraint is below the tolerance ε_k, otherwise a (Polyak) step on the most violated constraint; "
    "outputs a random objective-step iterate from the second half of the run.",
)
class SSGConfig(AlgorithmConfig):
    eta_f: PositiveFloat = Field(
        0.5, description="Objective step size η^f (constant; Huang & Lin 2023 use a constant step on objective "
        "steps). Default 0.5 = the stochastic benchmark's SSw setting (§4).")
    eta_c: PositiveFloat | None = Field(
        None, description="Constraint step size η^c. None = Polyak's step g(θ_k)/‖ζ_g‖² (Huang & Lin 2023, "
        "weakly convex constraints); a number = constant step (benchmark SSw uses 0.05).")
    schedule: Literal["constant", "diminishing"] = Field(
        "constant", description="'constant' steps, or 'diminishing' η/√(k+1) (Polyak's step is never scaled).")
    tolerance: NonNegativeFloat = Field(
        1e-4, description="Switching tolerance ε_k (objective step when max_j G_j ≤ ε_k). Default 1e-4 = benchmark "
        "SSw (§4); Huang & Lin take ε_k = ε constant.")
    tolerance_decay: float = Field(
        1.0, gt=0.0, le=1.0, description="ε_k = ε · decay^(k − decay_start) for k ≥ decay_start (1 = constant).")
    decay_start: int = Field(500, ge=0, description="First iteration of the tolerance decay (benchmark: 500).")
    start_fraction: float = Field(
        0.5, ge=0.0, lt=1.0, description="k_0 = ⌊start_fraction · K⌋: only objective steps k ≥ k_0 can be the output.")
    output: Literal["random", "last"] = Field(
        "random", description="'random' = the paper's θ_τ, τ ∈ I with P(τ=k) ∝ η_k (default); 'last' = last iterate.")


@ALGORITHMS.declare(
    "ipc",
    overlapping_groups=True,
    implementation="solvers.algorithms.ipc:IPC",
    aliases=("ipp_ssg", "ipp-ssg", "inexact-proximally-constrained"),
    paper="Ma, Lin & Yang, Proximally Constrained Methods for Weakly Convex Optimization with Weakly Convex "
    "Constraints (2019), Algorithm 1 with the switching subgradient oracle (Algorithm 2); IPP-SSG of Huang & Lin 2023",
    description="Double-loop inexact proximal point method: each subproblem adds ρ̂/2‖x−x_t‖² to the objective AND "
    "the constraint (strongly convex) and is solved by K switching-subgradient steps with γ_k = 2/((ρ̂−ρ)(k+2)) "
    "and a (k+1)-weighted average of the objective-step iterates.",
)
class IPCConfig(AlgorithmConfig):
    rho_hat: PositiveFloat = Field(
        10 ** -2.5, description="Proximal parameter ρ̂ > ρ of subproblem (9). Default 10^-2.5 (§5, all real data sets).")
    rho: PositiveFloat | None = Field(
        None, description="Weak-convexity modulus ρ < ρ̂ (enters γ_k = 2/((ρ̂−ρ)(k+2))). None = ρ̂/2 (§5: ρ̂ = 2ρ).")
    eps_hat: PositiveFloat = Field(
        1e-2, description="Subproblem accuracy ε̂: the switching test is G(z_k) ≤ ε̂² (§5 / A.5: ε̂ = 1e-2).")
    inner_iterations: PositiveInt | None = Field(
        None, description="K, inner steps per subproblem. None = ⌈1/ε̂²⌉ (§5 / A.5: K = 1/ε̂² = 10⁴).")
    output: Literal["random", "last_outer", "last"] = Field(
        "last", description="'last' = the last inner iterate (default; see the module docstring for why); "
        "'random' = Algorithm 1's x_R, R uniform on {0..T}; 'last_outer' = x_T.")

    @model_validator(mode="after")
    def _rho_below_rho_hat(self):
        self.resolved_rho()  # ρ < ρ̂ (the subproblem must be strongly convex): a config error, not a runtime one
        return self

    def resolved_rho(self) -> float:
        rho = self.rho if self.rho is not None else self.rho_hat / 2.0
        if rho >= self.rho_hat:
            raise ValueError(f"rho: must be < rho_hat ({self.rho_hat}), got {rho}")
        return rho

    def resolved_inner(self) -> int:
        return self.inner_iterations or math.ceil(1.0 / self.eps_hat ** 2)


@ALGORITHMS.declare(
    "ipc_stochastic",
    overlapping_groups=True,
    implementation="solvers.algorithms.ipc:IPCStochastic",
    aliases=("ipc-stochastic", "ipc-ynw"),
    paper="Ma, Lin & Yang, Proximally Constrained Methods for Weakly Convex Optimization with Weakly Convex "
    "Constraints (2019), Algorithm 1 with the stochastic oracle of Yu, Neely & Wei (Algorithm 3)",
    description="Inexact proximally constrained method whose strongly convex subproblems are solved by K "
    "mini-batch primal-dual (virtual queue) steps with V = √K, α = K; the subproblem output is the mean inner iterate.",
)
class IPCStochasticConfig(IPCConfig):
    batch_size: PositiveInt | None = Field(
        256, description="Samples per stochastic step of Algorithm 3 (the paper gives none; 256 chosen). "
        "None = full batch.")


@ALGORITHMS.declare(
    "ynw",
    overlapping_groups=True,
    implementation="solvers.algorithms.ynw:YNW",
    aliases=("yu-neely-wei", "virtual-queue"),
    paper="Yu, Neely & Wei, Online Convex Optimization with Stochastic Constraints (NeurIPS 2017); the "
    "'subgradient method by [53]' baseline of the IPC paper (Ma, Lin & Yang 2019, §5)",
    description="Primal-dual subgradient method with virtual queues Q_i (drift-plus-penalty): a projected step "
    "on V·F + Σ Q_i G_i, then Q_i grows by the linearised constraint value; outputs the averaged iterate.",
)
class YNWConfig(AlgorithmConfig):
    horizon: PositiveInt | None = Field(
        None, description="K of V = √K, α = K. None = the run's max_iterations.")
    V: PositiveFloat | None = Field(None, description="Weight V of the objective subgradient ([53]: √K). None = √K.")
    alpha: PositiveFloat | None = Field(
        None, description="Proximal weight α of the primal step (step = 1/(2α); [53]: K). None = K.")
    output: Literal["average", "last"] = Field(
        "average", description="'average' = [53]'s θ̄_K = mean of θ_0..θ_{K−1} (default); 'last' = last iterate.")
