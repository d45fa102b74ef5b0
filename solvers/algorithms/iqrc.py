r"""IQRC (Ma et al. 2020) as used by Yao, Lin & Yang (AISTATS 2023, Algorithm 3) for the weakly
convex case (an MLP score h_w): a proximal outer loop whose subproblem (28)

    min_{x'} f₀(x') + (ρ̂/2)‖x' − x̃⁽ˢ⁾‖²   s.t.   f_i(x') + (ρ̂/2)‖x' − x̃⁽ˢ⁾‖² ≤ 1 + κ,  i = 1, 2,

is solved by SFLS with the SMD oracle (:mod:`.level_set`) with d_x(x) = (ρ̂/2)‖x − x̃⁽ˢ⁾‖²
(x-update Π_X((x − η g + η ρ̂ x̃)/(1 + η ρ̂)), U(r) of Lemma 4 plus the τ-weighted d_x term).

x̃⁽ˢ⁺¹⁾ = B(x̃⁽ˢ⁾, ρ̂, ε̂, δ/S): every ``oracle_calls_per_stage`` oracle calls the stage ends, the
prox centre moves to the current x̄ and the level restarts at r₀. Defaults: ρ̂ = 1e-5 (paper App. E.3),
everything else as ``level_set``. The networks start at PyTorch's seeded initialisation (x⁽⁰⁾ = 0 is a
symmetric saddle of an MLP; the paper is silent). Output: the validation-selected iterate (the paper's
experiments), not the random x̃⁽ᴿ⁾ of the theory.
"""
from __future__ import annotations

from .base import ALGORITHMS
from .level_set import LevelSet


@ALGORITHMS.implements("iqrc")
class IQRC(LevelSet):
    def _after_oracle_call(self) -> None:
        if self.outer % self.config.oracle_calls_per_stage == 0:
            self.prox_center = self._snapshot()   # x̃⁽ˢ⁺¹⁾ = the subproblem's output x̄
            self.r = self.config.r0 if self.config.r0 is not None else self.c1 * self.c2 ** 2 + 0.01
            self.eps_opt = None
            self.converged = False
            self.stage = getattr(self, "stage", 0) + 1
