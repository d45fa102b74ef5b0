r"""Enforce the exact constraint on the training split after a surrogate solve.

A surrogate can be met (e.g. the sigmoid DP gap of mean σ(f) per group) while the constraint the user
wrote (the indicator DP gap) is not: scores near 0 in one group and far from 0 in another make
mean σ(f) equal while the shares with f > 0 differ. With v_j the exact train value of constraint j
(:func:`solvers.fairness.exact.exact_gaps`) and t_j its target (the tolerance ε_j, or a tighter one
set by :mod:`.guarantee`), the solve is not done while some v_j > t_j:

1. **tighten**: τ_j ← max(0, τ_j − (v_j − t_j)) for every violated j (τ the surrogate tolerances, starting at
   t, or at min(t, where the solve left them) with its temperatures — ``auto``'s selected row is fitted under
   tightened, cooled surrogates, and tightening from t would loosen them), and continue the same solver from the
   current model (:class:`.continuation.Continuation`);
   when no τ_j can decrease any more (all at 0), the round instead divides the temperature T of the violated
   rate families' surrogate σ(f/T) by ``COOLING`` (down to ``MIN_TEMPERATURE``; a smaller T is closer to the
   indicator); at most ``MAX_TIGHTEN_ROUNDS`` rounds, while time is left; a round that leaves the worst excess
   max_j (v_j − t_j) larger is undone and ends the tightening, and so is a round that turns a model which
   separated the classes into a near-trivial one (:func:`.triviality.triviality` on the train rows: a constant
   model meets every rate-parity constraint exactly, so without this guard the tightening "succeeds" by
   destroying the model — seen with mini-batch SSG on an MLP, where a surrogate tolerance of 0 at temperature
   0.25 is below the noise of a 4,096-row batch's estimate and the constraint steps flatten the scores; the
   record's ``undone`` then says ``"near_trivial"``);
2. **threshold**: if still violated, for a linear model, a partition of groups and one violated rate constraint
   (demographic parity or equal opportunity, the spread form ``reference="groups"``, or equalized odds), add a
   per-group score offset b_g (:func:`group_offsets`; for equalized odds
   :func:`.odds_offsets.equalized_odds_offsets`, a TPR band and an FPR band at once) so the exact
   train rates of the groups lie in one band of width t, the band of best train accuracy; it is applied only when the offset is a linear
   function of the features (x ↦ b_{g(x)} = vᵀx + v₀ exactly on the train rows, e.g. the sensitive column
   is one-hot encoded among the features), by adding v to the model's weights and bias — the model stays
   a plain linear model. It is kept only if no other constraint's exact train value rises above its target.

``enforcement`` (in the job result) says which was used: method ``none`` (already kept), ``tightened``
(``tightened+cooled`` when the temperature was lowered), ``threshold``, or both joined by ``+``; with the exact train values before/after, the surrogate
tolerances and ``met``.
"""
from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np
import torch

from ..data.membership import Membership
from .exact import exact_gaps
from .odds_offsets import equalized_odds_offsets, nearest_reachable, positions, threshold_at
from .triviality import triviality

MAX_TIGHTEN_ROUNDS = 3
COOLING = 4.0            # a round whose tolerance cannot move divides the rate families' temperature by this
MIN_TEMPERATURE = 0.01
_THRESHOLD_FAMILIES = ("demographic_parity", "equal_opportunity", "equalized_odds")
_BAND_GRID = 401         # candidate lower ends c of the band [c, c + t]
_LINEAR_RTOL = 1e-6      # offset representable: max |Xv + v₀ − b_g| ≤ rtol · (1 + max |b|)


def cooled(temperature: np.ndarray, violated: np.ndarray) -> np.ndarray | None:
    """T_j / ``COOLING`` (down to ``MIN_TEMPERATURE``) for the violated families whose surrogate has a temperature
    above the floor, the others unchanged; None when none of them can be cooled. Shared by :func:`enforce_exact`
    and :mod:`solvers.auto`'s refinements."""
    can = violated & np.isfinite(temperature) & (temperature > MIN_TEMPERATURE)
    if not can.any():
        return None
    return np.where(can, np.maximum(temperature / COOLING, MIN_TEMPERATURE), temperature)


def group_offsets(logits: np.ndarray, y: np.ndarray, group: np.ndarray, rows: np.ndarray, n_groups: int,
                  width: float) -> np.ndarray | None:
    """Per-group offsets b (K,) such that on the ``rows`` mask (DP: all rows, EOpp: y = 1) the shares
    1{f + b_g > 0} of the groups lie in one band [c, c + width], with the best accuracy on all rows among the
    bands c ∈ {0, 1/400, ..., 1}. None if no band works.

    Within group g (n_g mask rows, k_g currently positive) band c allows k ∈ [⌈c n_g⌉, ⌊(c + width) n_g⌋];
    among the positions k a threshold can reach (between two different scores: a block of tied scores is all in
    or all out, :func:`.odds_offsets.positions`) the one nearest to k_g is taken (the fewest changes for that
    band) and the threshold t_g put halfway between the k-th and (k+1)-th largest mask score, b_g = −t_g. The
    accuracy of every (band, group) threshold is counted on all rows of the group by one ``searchsorted`` on keys
    g·span + f (vectorised over bands and groups)."""
    f, g = logits[rows], group[rows]
    order = np.lexsort((-f, g))                      # by group, score decreasing
    s = f[order]
    n = np.bincount(g, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    base, _, k, prev_ok, next_ok = positions(s, n)
    k_now = np.bincount(g, weights=(f > 0).astype(float), minlength=n_groups).astype(np.int64)
    present = n > 0
    c = np.linspace(0.0, 1.0, _BAND_GRID)[:, None]
    lo = np.ceil(c * n - 1e-9).astype(np.int64)
    hi = np.minimum(np.floor((c + width) * n + 1e-9).astype(np.int64), n)
    hi = np.where(hi / np.maximum(n, 1) - lo / np.maximum(n, 1) > width, hi - 1, hi)  # float edge: stay inside
    chosen, ok = nearest_reachable(prev_ok, next_ok, base, n, lo, hi, k_now)
    feasible = (ok | ~present).all(1)
    if not feasible.any():
        return None
    threshold = threshold_at(s, start, n, k[chosen])
    correct = _correct_predictions(logits, y, group, n_groups, threshold)
    score = np.where(feasible, np.where(present, correct, 0).sum(1), -1)
    best = int(np.argmax(score))
    return np.where(present, -threshold[best], 0.0)


def _correct_predictions(logits: np.ndarray, y: np.ndarray, group: np.ndarray, n_groups: int,
                         threshold: np.ndarray) -> np.ndarray:
    """(C, K) correct predictions 1{f > t_{c,g}} == y among all rows of each group g, for thresholds (C, K)."""
    span = 2.0 * (np.abs(logits).max() + np.abs(threshold).max() + 2.0)
    key = group * span + logits
    order = np.argsort(key, kind="stable")
    cum_pos = np.concatenate([[0], np.cumsum(y[order])])
    size = np.bincount(group, minlength=n_groups)
    positives = np.bincount(group, weights=y, minlength=n_groups)
    first = np.concatenate([[0], np.cumsum(size)[:-1]])
    at_or_below = np.searchsorted(key[order], np.arange(n_groups) * span + threshold, side="right")
    predicted = size - (at_or_below - first)
    true_pos = positives - (cum_pos[at_or_below] - cum_pos[first])
    return true_pos + (size - positives) - (predicted - true_pos)


OFFSET_ROWS = 65_536  # rows of [X 1] formed at once in float64 by :func:`linear_offset`


def linear_offset(X: np.ndarray, group: np.ndarray, offsets: np.ndarray) -> np.ndarray | None:
    """(v, v₀) as one (d + 1,) vector with Xv + v₀ = b_{g} on every row, or None if no such linear map.

    The least-squares v of A = [X 1] from the normal equations AᵀA v = Aᵀb, both sides summed over row blocks of
    :data:`OFFSET_ROWS` (float64 memory O((d + 1)² + OFFSET_ROWS · d) whatever n, never A whole), solved by
    ``lstsq`` (its minimum-norm solution when one-hot columns and the intercept make AᵀA singular); v is kept
    only when max |Av − b| ≤ ``_LINEAR_RTOL`` · (1 + max |b|), checked on every row, block by block."""
    n, d = X.shape

    def blocks():
        for start in range(0, n, OFFSET_ROWS):  # a loop over row blocks, vectorised within each
            stop = min(start + OFFSET_ROWS, n)
            yield np.column_stack([X[start:stop].astype(np.float64), np.ones(stop - start)]), offsets[group[start:stop]]

    gram, rhs = np.zeros((d + 1, d + 1)), np.zeros(d + 1)
    for A, target in blocks():
        gram += A.T @ A
        rhs += A.T @ target
    v, *_ = np.linalg.lstsq(gram, rhs, rcond=None)
    worst = max((float(np.abs(A @ v - target).max()) for A, target in blocks()), default=0.0)
    return v if worst <= _LINEAR_RTOL * (1.0 + np.abs(offsets).max()) else None


def shiftable(model) -> bool:
    """Whether the threshold step (step 2) can shift ``model`` per group: a linear ScoreModel (its ``net`` an
    nn.Linear with a bias), not a randomised (reductions) or thresholded (group_thresholds) one."""
    net = getattr(model, "net", None)
    return isinstance(net, torch.nn.Linear) and net.bias is not None


@torch.no_grad()
def add_linear_offset(model, v: np.ndarray) -> bool:
    """f(x) += vᵀx + v₀ for a linear ScoreModel (its ``net`` an nn.Linear); False if not linear."""
    if not shiftable(model):
        return False
    net = model.net
    net.weight.add_(torch.as_tensor(v[:-1], dtype=net.weight.dtype, device=net.weight.device).reshape(1, -1))
    net.bias.add_(float(v[-1]))
    return True


def threshold_correction(model, families: Sequence, targets: np.ndarray, values: np.ndarray, X: np.ndarray,
                         y: np.ndarray, group: np.ndarray, n_groups: int, scores) -> dict[str, Any] | None:
    """Apply the per-group offset of the single violated DP / EOpp / EOdds constraint (module docstring, step 2).
    ``scores(model)`` gives the train logits. Returns ``{"offsets": ...}`` if applied, else None."""
    violated = np.flatnonzero(~(values <= targets))
    if len(violated) != 1 or families[violated[0]].name not in _THRESHOLD_FAMILIES or isinstance(group, Membership) \
            or getattr(families[violated[0]].config, "reference", "groups") != "groups":
        return None  # the offsets put a partition's group rates in one band
    j = int(violated[0])
    logits = scores(model)
    if families[j].name == "equalized_odds":  # two rates per group: TPR and FPR bands at once
        offsets = equalized_odds_offsets(logits, y, group, n_groups, float(targets[j]))
    else:
        rows = np.ones(len(y), dtype=bool) if families[j].name == "demographic_parity" else y == 1
        offsets = group_offsets(logits, y, group, rows, n_groups, float(targets[j]))
    v = None if offsets is None else linear_offset(X, group, offsets)
    if v is None or not add_linear_offset(model, v):
        return None
    return {"offsets": offsets.tolist(), "constraint": families[j].name}


def enforce_exact(model, continuation, targets: Sequence[float], X: np.ndarray, y: np.ndarray,
                  group: np.ndarray, group_names: Sequence[str], scores, *,
                  surrogate: Sequence[float | None] | None = None,
                  temperature: Sequence[float | None] | None = None) -> tuple[Any, dict[str, Any]]:
    """Steps 1-2 of the module docstring on the training split (X, y, group); ``scores(model)`` the train
    logits. ``surrogate`` / ``temperature``: where the solve that gave ``model`` left its surrogate (``auto``'s
    selected row: its tightened training tolerances and cooled temperatures), so that step 1 tightens from
    there, never from a looser surrogate than the one the model was fitted under; default: the targets and the
    families' own temperatures (None entries: those). Returns (model, enforcement record)."""
    families = continuation.families
    targets = np.asarray(targets, dtype=np.float64)

    def exact(m):
        return exact_gaps(families, y, scores(m), group, group_names)

    def judged(m) -> tuple[np.ndarray, bool]:  # (exact train values, near-trivial on train) from one scoring
        logits = scores(m)
        return (exact_gaps(families, y, logits, group, group_names),
                triviality(y, logits, group, len(group_names)) is not None)

    before, trivial = judged(model)
    values, undone = before, None
    surrogate = targets.copy() if surrogate is None else np.minimum(targets, _filled(surrogate, targets))
    start_temperature = np.asarray([getattr(f.config, "temperature", np.nan) for f in families], dtype=np.float64)
    if temperature is not None:
        start_temperature = np.where(np.isfinite(start_temperature), _filled(temperature, start_temperature),
                                     start_temperature)
    temperature = start_temperature.copy()
    used: list[str] = []
    rounds = 0
    while not (values <= targets).all() and rounds < MAX_TIGHTEN_ROUNDS:
        excess = np.where(values > targets, values - targets, 0.0)
        tighter = np.maximum(0.0, surrogate - excess)
        cooler = temperature
        if np.allclose(tighter, surrogate):  # the tolerance cannot move: sharpen σ(f/T) of the violated families
            cooler = cooled(temperature, excess > 0)
            if cooler is None:
                break
        previous = copy.deepcopy(model)
        result = continuation.resolve(model, tighter, cooler)
        if result is None:
            break
        if result.diverged:
            model = previous  # a continuation that diverged is undone
            break
        after, trivial_after = judged(result.model)
        if _worst_excess(after, targets) > _worst_excess(values, targets):  # worse than before: undone, stop
            model, undone = previous, "worse"
            break
        if trivial_after and not trivial:  # fair only by no longer separating the classes: undone, stop
            model, undone = previous, "near_trivial"
            break
        model, surrogate, temperature, rounds, values = result.model, tighter, cooler, rounds + 1, after
    if rounds:
        used.append("tightened" if np.array_equal(temperature, start_temperature, equal_nan=True)
                    else "tightened+cooled")
    threshold = None
    if not (values <= targets).all():
        previous = copy.deepcopy(model)
        threshold = threshold_correction(model, families, targets, values, X, y, group, len(group_names), scores)
        if threshold is not None:
            corrected = _accepted(exact(model), values, targets)
            if corrected is None:  # the offset made another constraint worse than its target: undo it
                model, threshold = previous, None
            else:
                values = corrected
                used.append("threshold")
                continuation.record_change(model, "threshold")
    record = {
        "method": "+".join(used) if used else "none",
        "met": bool((values <= targets).all()),
        "targets": targets.tolist(),
        "exact_train_before": [_num(v) for v in before],
        "exact_train_after": [_num(v) for v in values],
        "surrogate_tolerances": surrogate.tolist(),
        "temperatures": [_num(t) for t in temperature],
        "tighten_rounds": rounds,
    }
    if undone is not None:
        record["undone"] = undone
    if threshold is not None:
        record["threshold"] = threshold
    return model, record


def _filled(values: Sequence[float | None], default: np.ndarray) -> np.ndarray:
    """``values`` as floats, a None or non-finite entry replaced by ``default``'s."""
    out = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    return np.where(np.isfinite(out), out, default)


def _worst_excess(values: np.ndarray, targets: np.ndarray) -> float:
    """max_j (v_j − t_j), undefined values counted as +inf."""
    return float(np.max(np.where(np.isfinite(values), values - targets, np.inf)))


def _accepted(corrected: np.ndarray, values: np.ndarray, targets: np.ndarray) -> np.ndarray | None:
    """``corrected`` if no constraint ends above max(its target, its value before), else None."""
    return corrected if (corrected <= np.maximum(targets, values) + 1e-12).all() else None


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
