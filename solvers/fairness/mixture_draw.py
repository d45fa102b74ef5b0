r"""The key of a randomised threshold rule's deterministic draw, chosen so that the rule's REALISED rates on the rows
it was fitted on are the rates the LP fitted.

A randomised rule (:mod:`.threshold_lp`) gives group g the thresholds t_{g,j} with weights w_{g,j}: its expected
rate of a kind r (selection, TPR, FPR) is Σ_j w_{g,j} R_r(t_{g,j}). The stored model draws the component from
u(x) = frac(43758.5453 · sin(κᵀx)) (:class:`~solvers.models.thresholded.ThresholdNet`): J(x) = #{j : W_{g,j} ≤ u(x)},
W the cumulative weights. u is a function of the row, so rows with the same features share their draw: on a table
of few distinct rows (COMPAS: 2,518 distinct feature rows among 5,278, and a bootstrap sample repeats rows) the rows
whose decision the draw decides fall in a few cells, and the realised rates are off the expected ones by far more
than independent coins would be. COMPAS, linear, equalized odds ≤ 0.05, one sample: the rule fitted at a gap of
0.0187 realised 0.0403 on its own fitting rows (the African-American group's TPR 0.6472 against 0.6256 fitted) and
0.0553 on the table, where its expectation is 0.0256.

**The key.** The key κ is a seeded random vector; any κ gives a draw that is uniform over rows it has not seen, so
the rule's expectation on new feature rows is the fitted mixture whatever κ is. Among :data:`KEYS` seeded keys
(the first is the rule's own), the one whose realised counts on the fitting rows are nearest the expected ones,

    κ* = argmin_κ Σ_g Σ_r |Σ_{i ∈ g, r} 1[s_i > t_{g, J_κ(x_i)}] − Σ_{i ∈ g, r} Σ_j w_{g,j} 1[s_i > t_{g,j}]| / D_{g,r}

(s the scores the rule was fitted to, r over the rule's rate kinds with their denominators: all rows, the positives,
the negatives; D_{g,r} their counts), is kept. The weights are never changed: the rows of a feature row the fitting
rows hold realise nearly the fitted rates, new ones the fitted mixture. Fewer keys are tried on many rows (the
draws of every key are held at once: at most :data:`DRAW_CELLS` row × key values); on continuous features every
key's realised rates are within the coins' own noise of the expected ones, and the choice changes little: the keys are
tried only on the rows the draw decides (their decision differs between two of their group's components) and only
when at least :data:`MIN_SHARED` of them repeat another's draw (feature rows seen more than once), else the first is
kept: 1–3 ms a job on Adult's 18,000 fitting rows (equalized odds, gbdt).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .threshold_margin import denominators

KEYS = 64                 # seeded keys tried (the first: the rule's own)
DRAW_CELLS = 4_000_000    # ... at most this many row × key draws held at once
MIN_SHARED = 0.05         # ... and only when this share of the rows the draw decides repeat another's draw
_KIND_ROWS = {"sr": None, "tpr": True, "fpr": False}   # rate kind -> the label of its rows (None: every row)


def candidate_keys(first: torch.Tensor, n_rows: int, seed: int) -> torch.Tensor:
    """(C, d): ``first`` (the rule's key) then C − 1 more, uniform on [0, 1000)^d like it, seeded;
    C = min(:data:`KEYS`, :data:`DRAW_CELLS` / n_rows) ≥ 1."""
    count = int(max(1, min(KEYS, DRAW_CELLS // max(n_rows, 1))))
    generator = torch.Generator().manual_seed(int(seed) + 7919)
    more = torch.rand(count - 1, first.numel(), generator=generator, dtype=torch.float64) * 1000.0
    return torch.cat([first.detach().double().cpu().reshape(1, -1), more])


def realised_error(u: np.ndarray, cumulative: np.ndarray, thresholds: np.ndarray, scores: np.ndarray, y: np.ndarray,
                   group: np.ndarray, kinds: Sequence[str], drawn: np.ndarray | None = None) -> np.ndarray:
    """(C,): the module docstring's distance of the realised counts from the expected ones for each column of the
    draws ``u`` (n_drawn, C) of the rows ``drawn`` (a mask; default every row): the other rows' decision is the same
    whatever the draw, so they add nothing but their denominators. Vectorised over rows, keys and groups."""
    K, M = cumulative.shape
    g = np.asarray(group, dtype=np.int64).reshape(-1)
    positive = np.asarray(y).reshape(-1) > 0.5
    drawn = np.ones(len(g), dtype=bool) if drawn is None else drawn
    counts = denominators(positive, g, K)                                                        # D_{g,r}
    above = np.asarray(scores, dtype=np.float64).reshape(-1)[drawn, None] > thresholds[g[drawn]]   # (n_drawn, M)
    weights = np.diff(np.c_[np.zeros(K), cumulative], axis=1)
    gd = g[drawn]
    expected = (weights[gd] * above).sum(1)                                                      # (n_drawn,)
    W = cumulative[gd]
    J = np.zeros(u.shape, dtype=np.int64)
    for j in range(M - 1):   # J = #{j : W_j ≤ u}, one component at a time (M is 1 to 3)
        J += W[:, j, None] <= u
    realised = np.take_along_axis(above, J, axis=1).astype(np.float32)                           # (n_drawn, C)
    error = np.zeros(u.shape[1])
    one_hot = np.zeros((len(gd), K), dtype=np.float32)
    one_hot[np.arange(len(gd)), gd] = 1.0
    for kind in dict.fromkeys(kinds):   # the rule's two or three rate kinds
        if kind not in _KIND_ROWS:
            continue
        label = _KIND_ROWS[kind]
        rows = np.ones(len(gd), dtype=bool) if label is None else positive[drawn] == label
        members = one_hot[rows]                                                                   # (n_r, K)
        deviation = (members.T @ realised[rows]).astype(np.float64) - (members.T @ expected[rows])[:, None]
        error += (np.abs(deviation) / np.maximum(counts[kind], 1.0)[:, None]).sum(0)
    return error


def decided_by_draw(cumulative: np.ndarray, thresholds: np.ndarray, scores: np.ndarray, group: np.ndarray) -> np.ndarray:
    """(n,) the rows whose decision differs between two components their group draws (the others' is the same
    whatever the draw)."""
    K = cumulative.shape[0]
    g = np.asarray(group, dtype=np.int64).reshape(-1)
    used = (np.diff(np.c_[np.zeros(K), cumulative], axis=1) > 0)[g]
    above = np.asarray(scores, dtype=np.float64).reshape(-1)[:, None] > thresholds[g]
    return (above & used).any(1) & (~above & used).any(1)


def best_key(keys: torch.Tensor, rows: Sequence[torch.Tensor], draw, cumulative: np.ndarray, thresholds: np.ndarray,
             scores: np.ndarray, y: np.ndarray, group: np.ndarray, kinds: Sequence[str]) -> tuple[torch.Tensor, dict]:
    """(the key of ``keys`` (C, d) whose draw realises the fitted rates best, {tried, error of the first, error
    kept}); ``draw(x, keys)``: u (n, C) of the rows ``x`` under the keys (d, C) (the stored model's own draw)."""
    drawn = decided_by_draw(cumulative, thresholds, scores, group)
    X = torch.cat(list(rows))[torch.as_tensor(drawn, device=rows[0].device)]
    first = draw(X, keys[:1].T).cpu().numpy().reshape(-1)
    shared = 1.0 - len(np.unique(first)) / len(first) if len(first) else 0.0
    if len(keys) == 1 or not drawn.any() or shared < MIN_SHARED:   # no row repeats a draw: no key is better
        return keys[0], {"keys_tried": 1, "shared_draws": round(shared, 4)}
    u = draw(X, keys.T).cpu().numpy()
    error = realised_error(u, cumulative, thresholds, scores, y, group, kinds, drawn)
    best = int(np.argmin(error))
    return keys[best], {"keys_tried": len(keys), "shared_draws": round(shared, 4),
                        "realised_error_first": float(error[0]), "realised_error": float(error[best])}
