r"""Shared pieces of the switching-subgradient family (SSG and IPC's Algorithm 2) and of the
output rules of SSG / IPC / YNW.

* :func:`switching_step` — one step of Polyak's switching rule on

      min_{θ∈Θ} F(θ)   s.t.   max_j G_j(θ) ≤ 0,

  optionally with the proximal terms of IPC's subproblem (9) added to both sides,
  F̃(z) = F(z) + ρ̂/2‖z−x_t‖², G̃(z) = max_j G_j(z) + ρ̂/2‖z−x_t‖²:

      if G̃(z_k) ≤ ε_k:  z_{k+1} = Π_Θ(z_k − η^f_k F̃'(z_k))     (objective step, k ∈ I)
      else:             z_{k+1} = Π_Θ(z_k − η^c_k G̃'(z_k))     (constraint step)

  with G̃' the subgradient of the *most violated* row (the active piece of the max) plus
  ρ̂(z−x_t). η^c_k is either a given number or Polyak's G̃(z_k)/‖G̃'(z_k)‖².
  The branch needs G̃(z_k) on the host: ONE host read per step (the only host sync besides the
  driver's: ``.item()`` of max_j G̃_j, or, in score space without a centre, ``tolist`` of G with j*
  taken on the host); everything else stays on the device.
* :class:`WeightedReservoir` — an online draw of one iterate with P(τ=k) = w_k / Σ_{s∈I} w_s
  (weighted reservoir sampling, seeded), so "random iterate" output rules work without
  knowing the number of iterations in advance and without storing the iterates.
* :class:`WeightedAverage` — Σ_k w_k z_k / Σ_k w_k accumulated on the device.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..problem import Evaluation
from .base import gradient, project


def squared_norm(tensors: list[Tensor]) -> Tensor:
    """Σ ‖t‖² over a list of tensors (a 0-dim device tensor, no host sync)."""
    return torch.stack(torch._foreach_norm(tensors)).square().sum()


def switching_step(
    problem,
    params: list[Tensor],
    current: Evaluation,
    *,
    tolerance: float,
    eta_f: float,
    eta_c: float | None,
    center: list[Tensor] | None = None,
    rho_hat: float = 0.0,
    on_objective_step: Callable[[], None] | None = None,
    normalize_f: bool = False,
) -> bool:
    """One switching-subgradient step in place (then ``problem.project_``).

    ``eta_c=None`` = Polyak's step G̃(z_k)/‖G̃'(z_k)‖² on the constraint branch.
    ``on_objective_step`` is called while the parameters still hold z_k when k ∈ I (to record
    z_k for an output rule). Returns True when the objective step was taken (k ∈ I).
    ``normalize_f``: objective step η^f/‖F̃'(z_k)‖² (Nesterov's switching rule (3.2.24), IDCA's
    Algorithm 2 with η^f = ε) instead of the constant η^f.
    """
    diff = None
    if center is not None:
        with torch.no_grad():
            diff = torch._foreach_sub(params, center)
    constraints = current.constraints
    space = getattr(current, "space", None)
    active = None  # j* (score space without a centre: read on the host with the values, no argmax/one-hot)
    if constraints.numel() == 0:
        g_max, value, objective_step = None, None, True
    elif space is not None and diff is None:
        values = constraints.tolist()  # the one host sync of the switch
        active = max(range(len(values)), key=values.__getitem__)  # the first maximiser, as torch.argmax
        value = values[active]
        objective_step = value <= tolerance
    else:
        g_max = constraints.max()  # subgradient of max_j G_j = subgradient of the active row
        value = g_max.detach()
        if diff is not None:
            value = value + 0.5 * rho_hat * squared_norm(diff)
        objective_step = bool(value.item() <= tolerance)  # the one host sync of the switch
    if objective_step and on_objective_step is not None:
        on_objective_step()
    if space is None:
        with torch.enable_grad():  # (g_max may have been taken under a no-grad driver)
            grads = gradient(current.objective if objective_step else constraints.max(), params)
    elif objective_step:
        grads = space.gradient(1.0, None)
    else:  # e_{j*}: the active row's subgradient
        j = int(constraints.argmax()) if active is None else active
        grads = space.gradient(0.0, unit_vector(j, constraints))
    if diff is not None:
        torch._foreach_add_(grads, diff, alpha=rho_hat)  # ∇ ρ̂/2‖z−x_t‖² = ρ̂(z−x_t)
    if torch.is_grad_enabled():
        with torch.no_grad():
            _descend(params, grads, objective_step, normalize_f, eta_f, eta_c, value)
    else:  # (a score-space run: the driver turned grad mode off; entering no_grad costs as much as the update)
        _descend(params, grads, objective_step, normalize_f, eta_f, eta_c, value)
    project(problem, params)
    return objective_step


def _descend(params: list[Tensor], grads: list[Tensor], objective_step: bool, normalize_f: bool, eta_f: float,
             eta_c: float | None, value) -> None:
    """θ ← θ − η ζ in place for the branch taken (``value``: G̃(z_k), a tensor or its host float, for Polyak's step)."""
    if objective_step and normalize_f:
        norm2 = squared_norm(grads)
        step = eta_f / norm2.clamp_min(torch.finfo(norm2.dtype).tiny)
        torch._foreach_mul_(grads, step.to(grads[0].dtype))
        torch._foreach_sub_(params, grads)
    elif objective_step or eta_c is not None:
        torch._foreach_add_(params, grads, alpha=-(eta_f if objective_step else eta_c))
    else:
        norm2 = squared_norm(grads)
        value = norm2.new_tensor(value) if isinstance(value, float) else value  # (a host value: an exact copy)
        step = value.clamp_min(0.0) / norm2.clamp_min(torch.finfo(norm2.dtype).tiny)
        torch._foreach_mul_(grads, step.to(grads[0].dtype))
        torch._foreach_sub_(params, grads)


_UNIT_ROWS: dict = {}


def unit_vector(j: int, like: Tensor) -> Tensor:
    """e_j ∈ R^m (m = ``like.numel()``) in ``like``'s dtype and device: a row of a cached identity."""
    m = like.numel()
    eye = _UNIT_ROWS.get(m)
    if eye is None or eye.dtype != like.dtype or eye.device != like.device:
        eye = _UNIT_ROWS[m] = torch.eye(m, dtype=like.dtype, device=like.device)
    return eye[j]


class WeightedReservoir:
    """Keeps ONE iterate drawn with P(τ = k) = w_k / Σ_s w_s over every offered k (seeded).

    Offer k replaces the kept copy with probability w_k / W_k (W_k = Σ_{s≤k} w_s); the
    uniform draw is made on a CPU generator, so no device sync is involved.
    """

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self.total = 0.0
        self.kept: list[Tensor] | None = None
        self.index: int | None = None

    def offer(self, index: int, params: list[Tensor], weight: float = 1.0) -> None:
        if weight <= 0.0:
            return
        self.total += weight
        if self.kept is None or float(torch.rand((), generator=self.generator)) < weight / self.total:
            with torch.no_grad():
                self.kept = [p.detach().clone() for p in params]
            self.index = index


class WeightedAverage:
    """Σ_k w_k z_k / Σ_k w_k, accumulated in place on the device."""

    def __init__(self, params: list[Tensor]) -> None:
        self.sum = [torch.zeros_like(p) for p in params]
        self.weight = 0.0

    def add(self, params: list[Tensor], weight: float = 1.0) -> None:
        with torch.no_grad():
            torch._foreach_add_(self.sum, params, alpha=weight)
        self.weight += weight

    def value(self) -> list[Tensor] | None:
        """The average, or None when nothing was added."""
        if self.weight <= 0.0:
            return None
        return torch._foreach_div(self.sum, self.weight)

    def reset(self) -> None:
        torch._foreach_zero_(self.sum)
        self.weight = 0.0


def load_(params: list[Tensor], values: list[Tensor]) -> None:
    """θ ← values, in place."""
    with torch.no_grad():
        torch._foreach_copy_(params, values)
