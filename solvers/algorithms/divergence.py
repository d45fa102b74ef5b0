"""Divergence: the first iterate whose objective, constraints, multipliers or parameters left the finite numbers.

The driver syncs, once per iteration, the vector ``[F(θ_k), G_1..G_m, duals..., Σ_p Σ_i θ_{p,i}]``. The run has
diverged at iteration k when any entry is NaN or ±∞: a NaN or infinite parameter makes the sum NaN or ±∞ (a
finite sum overflowing float32 needs parameters near 1e38, itself a divergence). The driver then stops before
that iterate reaches the observer, so the trajectory ends with the last finite iterate and no non-finite value
is ever stored, nor read as feasible (``max(0, NaN)`` is 0 in Python).

The message names the step sizes of the solver's config (its float fields described as a step), the
parameters a user lowers to make the run stable.
"""
from __future__ import annotations

import math
import re

from pydantic import BaseModel

_STEP = re.compile(r"\bstep\b|step size|learning rate", re.IGNORECASE)


def non_finite_part(flat: list[float], constraint_names: list[str], dual_names: list[str]) -> str | None:
    """What the synced vector ``[objective, constraints..., duals..., parameter sum]`` holds non-finite, or None.

    ``dual_names``: one name per dual entry, in order (``"lambda"`` repeated per entry)."""
    if all(map(math.isfinite, flat)):  # the common case: one C-level pass
        return None
    m = len(constraint_names)
    if not math.isfinite(flat[0]):
        return f"the objective is {flat[0]}"
    for name, value in zip(constraint_names, flat[1:1 + m]):
        if not math.isfinite(value):
            return f"constraint {name!r} is {value}"
    for name, value in zip(dual_names, flat[1 + m:-1]):
        if not math.isfinite(value):
            return f"multiplier {name!r} is {value}"
    return "the model parameters are non-finite"


def step_size_fields(config: BaseModel) -> dict[str, float]:
    """The config's step sizes: float fields whose description speaks of a step (``lr``, ``eta``, ``tau``, ...)."""
    found = {}
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        if isinstance(value, float) and _STEP.search(field.description or ""):
            found[name] = value
    return found


def divergence_message(solver: str, iteration: int, part: str, config: BaseModel) -> str:
    """``solver 'x' diverged at iteration k: <part>; lower its step size (params.lr = 0.5)``."""
    steps = step_size_fields(config)
    named = ", ".join(f"params.{k} = {v:g}" for k, v in steps.items())
    hint = f"lower its step size ({named})" if named else "lower its step size"
    return (f"solver {solver!r} diverged at iteration {iteration}: {part}; the trajectory ends at the last "
            f"finite iterate; {hint}")
