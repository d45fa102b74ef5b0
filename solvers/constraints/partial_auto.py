r"""``interval: "auto"`` — the paper's Appendix B rule for choosing I.

1. Train the unconstrained model w* = argmin_w f0(w) (FairSolve's ``erm`` on the same training
   problem, ``auto_iterations`` steps).
2. p = Pr(h_{w*}(ξ) > θ̂) on the training data (the "estimated positive decision rate" when no
   historical rate is known).
3. Among candidate intervals I ∋ p (α ≤ p ≤ β), choose the one where w* is least fair, measured by
   the family's own exact metric (pSP^I or pDP^I on the training data, see
   :mod:`solvers.metrics.partial`).

Candidates (the paper gives none): ``auto_candidates`` when given, else every [a, b] on a 5 % grid
with 0.2 ≤ b − a ≤ 0.5 (the paper's chosen intervals have widths 0.2–0.3). Widths are bounded
below because the empirical partial metrics are noisier on narrow intervals. Ties: the first
candidate in (a, b) order.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..metrics.partial import partial_dp, partial_sp


def default_candidates(p: float, step: float = 0.05, min_width: float = 0.2, max_width: float = 0.5) -> list[list[float]]:
    grid = np.round(np.arange(0.0, 1.0 + 1e-9, step), 10)
    out = [[float(a), float(b)] for a in grid for b in grid
           if min_width - 1e-9 <= b - a <= max_width + 1e-9 and a <= p <= b]
    return out


def unconstrained_scores(problem, iterations: int, seed: int = 0) -> np.ndarray:
    from ..pipeline import solve
    from ..problem import Problem

    plain = Problem(problem.X, problem.y, problem.group, problem.group_names, problem.model_factory,
                    problem.model_type, problem.objective, [], problem.device, problem.domain)
    result = solve(plain, "erm", max_iterations=iterations, seed=seed)
    with torch.no_grad():
        return result.model(problem.X).double().cpu().numpy()


def choose_interval(problem, family) -> dict[str, Any]:
    """Resolve ``family``'s 'auto' interval on ``problem``'s training data (App. B)."""
    cfg = family.config
    scores = unconstrained_scores(problem, cfg.auto_iterations)
    group = problem.group.cpu().numpy()
    G = len(problem.group_names)
    p = float(np.mean(scores > cfg.threshold))
    candidates = cfg.auto_candidates or default_candidates(p)
    covering = [c for c in candidates if c[0] <= p <= c[1]] or list(candidates)
    if family.metric_key == "psp":
        values = [partial_sp(scores, group, c, G)["value"] for c in covering]
    else:
        values = [partial_dp(scores, group, c, cfg.threshold, G)["value"] for c in covering]
    best = int(np.argmax(values))
    return {"interval": [float(covering[best][0]), float(covering[best][1])], "p": p,
            "metric": family.metric_key, "unconstrained_value": float(values[best]),
            "candidates": [{"interval": c, "value": float(v)} for c, v in zip(covering, values)]}
