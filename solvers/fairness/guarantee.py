r"""High-confidence fairness guarantee in the Seldonian sense: train on the train split,
accept a candidate only if a one-sided upper confidence bound of every constraint on the validation split
is ≤ its tolerance.

**The bound.** Let α = 1 − confidence, R = ``max_tests`` (default 1) and m the number of constraints. For a
candidate model h the bound U_j(h) of constraint j is the one-sided upper bound of :mod:`.confidence` at level
1 − α/(R m): for a rate gap the JOINT bound (the MOVER limit of the difference of the true extreme pair's rates
from one-sided Clopper–Pearson limits, no union over cells; coverage ≥ the level by simulation in
``tests/solvers/fairness/test_fairness_intervals.py``), for a loss / AUC gap the bootstrap quantile (asymptotic). So for a
*fixed* h, P(∃ j: Δ_j(h) > U_j(h)) ≤ α/R, Δ_j(h) the constraint's value on the data distribution.

**The safety split** (:func:`safety_split`, before anything is trained): the job's train ∪ validation rows are split
again, stratified by group × label, into candidate rows (the solver's "train") and safety rows (its
"validation", the test's), the safety share q chosen from the groups' sizes, label rates and the tolerance by
:func:`solvers.fairness.promise.safety_share` (the smallest share whose aim is within a tenth of ε of the best:
small groups or a tight tolerance get up to 0.7 of the rows, many rows as few as 0.15). The encoder stays the one
fitted on the spec's train split (column means, scales and categories: no label and no gap information).

**Candidate selection, then one test** (Seldonian candidate selection): every candidate is built and judged on the
candidate rows only — aimed, enforced exactly there, its predicted bound v^train + w computed there — and the loop
tests the first candidate whose predicted bound is ≤ ε; with R = 1 (the default) that is the only test, so no
union over candidates is spent and the test runs at level 1 − α/m. The candidates are aimed at what the test
will accept with probability π = :data:`~solvers.fairness.promise.PASS_TARGET`: h_1 is the solver's model h_0,
exactly enforced on the candidate rows at

    τ_1 = max(ε · TARGET_FLOOR, min(ε, ε − w_0 − z_π (w_0 / z) √(1 + v/c))),

w_0 = (U^train(h_0) − v^train(h_0))·√(c/v) the bound's width predicted at the safety split's v rows from the
candidate split's c rows (its own bound's width rescaled), z = z_{1−α/(Rm)}: the candidate's population gap is off
τ by the candidate rows' sampling error (sd ≈ (w_0/z)·√(v/c)) and its safety value off that by the safety rows'
(w_0/z), so a candidate aimed at ε − w_0 passes half the time and one aimed at τ_1 about π of the time
(:mod:`.promise` states it). With R > 1, h_{r+1} continues h_r (warm start) with the targets

    τ_{r+1} = max(ε/10, min(τ_r − ε/(2R), the aim above at h_r's width w_r)),

then enforced exactly on the candidate rows.

**Thresholded candidates (gbdt).** When the solver's model is a group-thresholds rule (``auto`` over gbdt:
LightGBM scores cross-fitted on the candidate rows, per-group thresholds by the LP of
:mod:`solvers.fairness.threshold_lp`), a candidate at τ is that rule chosen again at τ on the
scores it was chosen on (:func:`~solvers.models.thresholded.refit_of`), around the same base, with its own population
margin off (the aim above already leaves room for the candidate rows' sampling error); its predicted bound uses
min(v^train, τ) — the LP keeps the gap of the out-of-fold rates it was fitted to ≤ τ, while the refitted base's
in-sample train rates are optimistic. Solving again instead (the continuation) boosted the base on to twice its trees
and cross-fitted that model once more: its rule then missed its aim on unseen rows (Adult (sex), DP ≤ 0.05, 20,000
bootstrap rows, seeds 0–3: the signed gap on the population rows no sample drew was −0.031 to +0.002 for a rule
fitted at +0.016 to +0.019 out of fold; chosen again on the same scores, −0.013 to +0.016) and the job took 7.0–7.8 s
in process against 3.0–3.1 s. A model restored from its weights keeps no scores and is solved again.

**Verifiability.** When w_0 ≥ ε for some constraint, no model can pass the test at this validation size, not
even one with a validation value of 0 (``bench/quality/results/promise.md``: COMPAS by race, 636 and 420 validation rows
per group, w_0 ≈ 0.10 for DP and 0.14 for equalized odds; Adult by race ≈ 0.04 for DP): the guarantee then
reports ``verifiable: false`` (with ``predicted_width`` w_0) beside ``met: false``. No candidate is tested and
no tightening sequence is run; with ``when_unverifiable = "tightest"`` (the default) the one candidate h_1 is
aimed at the smallest exact gap the TRAINING split (or train ∪ validation, below) resolves,

    τ_j = min(ε_j · TARGET_FLOOR, TIGHTEST_ROWS / D_j)      (rate families; ε_j · TARGET_FLOOR for the others),

D_j the smallest denominator of family j's rates on those rows (DP: the group sizes n_g; equal
opportunity: the positives P_g; equalized odds: min(P_g, N_g)): a band of width TIGHTEST_ROWS / D_j still holds
TIGHTEST_ROWS achievable rates of every group, so the exact threshold step of :mod:`.enforce` can reach it at
the cost of a few rows' predictions (its band is the most accurate one of that width). When that candidate is
near-trivial or MODEST_COST less accurate on train than the solver's model, a second one is aimed at ε from the
solver's model and the tightest is kept only if it is not near-trivial and at most MODEST_COST less accurate on
train than that one (``aim.reason`` says which and why). With ``"tolerance"`` the candidate is aimed at ε, as a
job without a guarantee. Either way the job says ``met: false`` and why, and
``aim`` records the targets and the reason. A tolerance inside the split's own noise (a model whose population
gap is exactly 0 exceeds it on a test split of this size with the probability of :mod:`.noise_floor`) is kept on
unseen data only by chance; the tightest aim makes the model's own contribution to the gap as small as the
rows it is fitted on allow.

**Pooled correction.** No test is run on an unverifiable tolerance, so the validation rows are free: given the
rows of train ∪ validation (``pooled``), the exact enforcement of every candidate (and the rows and denominators
D_j of the tightest aim) is fitted there instead of on train alone. Its aim is the model's POPULATION gap: a
band of width τ on n_g rows per group leaves the population rates of the corrected model off by the sampling
error of those rows, Δ ≈ |τ| + O(√(Σ_g p_g(1 − p_g)/n_g)), which pooling shrinks by √(n_train/(n_train + n_val))
(``python -m bench.quality.promise --pooling``: an unconstrained logistic regression corrected to the tightest band on
train or on train ∪ validation, over many splits; ``bench/quality/results/promise.md``). The validation bound reported
beside (``best_bound``) is then computed on rows the correction was fitted on: ``aim.fitted_on`` says
``"train+validation"`` and the message says that the bound is not out of sample.

A candidate is *tested* — its validation bound compared with ε — only if, on the training split alone, it is not
near-trivial (balanced accuracy ≥ 0.55, every group's predicted-positive rate ≥ 1 %, :func:`.report.trivial_reasons`:
a constant classifier is fair but useless) and its predicted bound v^train + w ≤ ε. The first tested candidate
with U_j(h) ≤ ε_j for all j is returned; at most R candidates are tested. Which candidates exist and which are
tested depends on the training data and the split sizes only, never on the validation rows (the loop merely stops
at the first pass; under a guarantee :func:`solvers.run` gives no solver the validation split — ``auto`` judges its
portfolio, ``level_set`` / ``iqrc`` select their iterate on the training split), so by the union bound over the
≤ R tests:

    P(the returned model violates some constraint) ≤ Σ_{tested r} P(U(h_r) ≤ ε and Δ(h_r) > ε) ≤ R · α/R = α.

If no tested candidate passes (within R tests, 3R candidates, the time budget, or when the targets reach their
floor untested), the job still succeeds with
``guarantee = {"met": false, "best_bound", "message"}`` and the non-trivial candidate with the smallest worst
validation excess U_j − ε_j; it is *not* presented as fair (the message is also a warning of the job). When some
w_j ≥ ε_j the test cannot pass even with a validation value of 0, and the message says so.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np
from scipy.special import ndtri

from ..models.thresholded import refit_of, report_of
from .enforce import enforce_exact
from .exact import exact_gaps, tolerances
from .confidence import upper_bounds
from .promise import PASS_TARGET, TARGET_FLOOR, level_z, safety_share, zero_gap_sd
from .report import split_trivial_reasons

ROUNDS_PER_TEST = 3   # candidates trained per allowed test (untested ones cost no confidence)
TIGHTEST_ROWS = 2     # an unverifiable tolerance: aim at a band of this many rows of the smallest rate denominator
MODEST_COST = 0.02    # ... unless that costs more train accuracy than this (or gives a near-trivial model)
_RESOLVED = {True: "train gap the training split", False: "gap the training and validation rows"}  # message
_RATE_DENOMINATORS = {"demographic_parity": "rows", "equal_opportunity": "positives", "equalized_odds": "both"}


def guarantee_bounds(families: Sequence, y_val: np.ndarray, logits_val: np.ndarray, group_val: np.ndarray,
                     group_names: Sequence[str], confidence: float = 0.95, n_tests: int = 1,
                     seed: int = 0) -> np.ndarray:
    """(m,) one-sided upper bounds on the validation split, simultaneous over the constraints, at level
    1 − (1 − confidence)/n_tests (one of ``n_tests`` candidates tested). A candidate is accepted iff every
    bound ≤ its tolerance; NaN (undefined) never passes."""
    return upper_bounds(families, y_val, logits_val, group_val, group_names,
                        confidence=1.0 - (1.0 - confidence) / n_tests, seed=seed, joint=True)


def _aim(eps: np.ndarray, width: np.ndarray, z: float, safety_over_candidate: float) -> np.ndarray:
    """ε − w − z_π (w/z) √(1 + v/c) (module docstring): the training target a candidate passes the test from with
    probability about π; undefined widths (NaN) count 0."""
    w = np.nan_to_num(width, nan=0.0)
    return eps - w - float(ndtri(PASS_TARGET)) * (w / z) * np.sqrt(1.0 + safety_over_candidate)


def _next_targets(tau: np.ndarray, eps: np.ndarray, aim: np.ndarray, max_tests: int) -> np.ndarray:
    """τ ← max(ε·TARGET_FLOOR, min(τ − ε/(2R), aim))."""
    return np.maximum(TARGET_FLOOR * eps, np.minimum(tau - eps / (2 * max_tests), aim))


def _width(families, model, scores, train: tuple, group_names: Sequence[str], level: float, scale: float,
           seed: int, logits: np.ndarray | None = None, value: np.ndarray | None = None) -> np.ndarray:
    """w = (U^train − v^train)·√(n_train/n_val): the width of ``model``'s bound predicted for the validation split."""
    X_tr, y_tr, g_tr = train
    logits = scores(model, X_tr) if logits is None else logits
    value = exact_gaps(families, y_tr, logits, g_tr, group_names) if value is None else value
    return scale * (upper_bounds(families, y_tr, logits, g_tr, group_names, confidence=level, seed=seed, joint=True)
                    - value)


def _first_targets(aim: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """τ_1 = max(ε·TARGET_FLOOR, min(ε, aim))."""
    return np.maximum(TARGET_FLOOR * eps, np.minimum(eps, aim))


def tightest_targets(families: Sequence, eps: np.ndarray, y: np.ndarray, group: np.ndarray,
                     n_groups: int) -> np.ndarray:
    """τ_j = min(ε_j · TARGET_FLOOR, TIGHTEST_ROWS / D_j) for the rate families, ε_j · TARGET_FLOOR for the others
    (module docstring, verifiability); D_j over the groups present on the training split (a partition; with
    overlapping groups, a :class:`~solvers.data.membership.Membership`, ε_j · TARGET_FLOOR)."""
    if not isinstance(group, np.ndarray):  # overlapping groups (a Membership): only loss gaps, no rate band
        return TARGET_FLOOR * np.asarray(eps, dtype=np.float64)
    y = np.asarray(y) == 1
    rows = np.bincount(group, minlength=n_groups)
    positives = np.bincount(group, weights=y.astype(float), minlength=n_groups)
    negatives = rows - positives
    present = rows > 0
    if not present.any():
        return TARGET_FLOOR * np.asarray(eps, dtype=np.float64)
    smallest = {"rows": rows[present].min(), "positives": positives[present].min(),
                "both": np.minimum(positives, negatives)[present].min()}
    out = TARGET_FLOOR * np.asarray(eps, dtype=np.float64)
    for j, family in enumerate(families):  # the spec's few constraints
        d = smallest.get(_RATE_DENOMINATORS.get(family.name, ""), 0)
        if d > 0:
            out[j] = min(out[j], TIGHTEST_ROWS / d)
    return out


def safety_split(splits: dict[str, np.ndarray], y: np.ndarray, group: np.ndarray, n_groups: int, families: Sequence,
                 confidence: float, max_tests: int, seed: int) -> tuple[dict[str, np.ndarray], float]:
    """(splits with "train" / "validation" re-drawn, q): the rows of train ∪ validation split again, stratified by
    group × label, into candidate rows ("train") and a share q of safety rows ("validation"), q by
    :func:`~solvers.fairness.promise.safety_share` (module docstring, the safety split); the test split is untouched.
    Families without a closed-form width keep the spec's share."""
    from ..data.splitting import _split

    rows = np.concatenate([splits["train"], splits["validation"]])
    sds = [zero_gap_sd(f.name, y[rows], group[rows], n_groups, len(rows)) for f in families]
    q = safety_share(sds, tolerances(families), level_z(confidence, max_tests, len(families)),
                     len(splits["validation"]) / max(len(rows), 1))
    keep, take = _split(rows, 2 * np.asarray(group) + np.asarray(y), q, seed + 2)
    return {**splits, "train": keep, "validation": take}, q


def seldonian(model, continuation, confidence: float, max_tests: int, train: tuple, val: tuple,
              group_names: Sequence[str], scores: Callable[[Any, np.ndarray], np.ndarray], *, enforce: bool = True,
              seed: int = 0, when_unverifiable: str = "tightest", pooled: tuple | None = None
              ) -> tuple[Any, dict[str, Any] | None, dict[str, Any]]:
    """The loop of the module docstring. ``train`` = (X, y, group), ``val`` = (X, y, group);
    ``scores(model, X)`` the logits; ``when_unverifiable``: "tightest" or "tolerance" (module docstring);
    ``pooled``: the rows of train ∪ validation (X, y, group), where an unverifiable tolerance's exact correction
    is fitted (module docstring, pooled correction; None: on train).
    Returns (model, enforcement record of the returned candidate, guarantee)."""
    families = continuation.families
    eps = tolerances(families)
    X_tr, y_tr, g_tr = train
    X_val, y_val, g_val = val
    level = 1.0 - (1.0 - confidence) / max_tests
    scale = np.sqrt(len(y_tr) / max(len(y_val), 1))
    z = level_z(confidence, max_tests, len(families))
    ratio = len(y_val) / max(len(y_tr), 1)   # v / c
    tau = eps.copy()
    candidates: list[dict[str, Any]] = []
    accepted = None      # (model, enforcement, bounds) of the first tested candidate that passed
    fallback = None      # (worst validation excess, model, enforcement, bounds) of the best non-trivial candidate
    enforcement = too_wide = None
    tests = 0
    best_tested = None   # (worst validation excess, bounds) of the best candidate that was tested
    first_width = None   # the bound's width predicted at the validation split's size from the solver's model
    verifiable = True
    aim = eps.copy()     # the first candidate's training targets
    reason = "verifiable"
    start = retry = None  # unverifiable, tightest: the solver's model and its train accuracy, for a retry at ε
    fit = train          # the rows the exact correction is fitted on: train, or train ∪ validation (unverifiable)
    for r in range(ROUNDS_PER_TEST * max_tests):
        if r == 0:  # aim the first candidate at what the test accepts with probability π (module docstring)
            first_width = _width(families, model, scores, train, group_names, level, scale, seed)
            verifiable = bool(np.all(first_width < eps))
            if not verifiable and pooled is not None:  # nothing is tested: the validation rows join the correction
                fit = pooled
            if verifiable:
                tau = _first_targets(_aim(eps, first_width, z, ratio), eps)
            elif when_unverifiable == "tightest":  # no test can pass: the smallest gap the fitting rows resolve
                tau = tightest_targets(families, eps, fit[1], fit[2], len(group_names))
                start = (copy.deepcopy(model), _accuracy(y_tr, scores(model, X_tr)))
            else:
                tau = eps.copy()
            aim = tau.copy()
            reason = "verifiable" if verifiable else f"unverifiable: {when_unverifiable}"
        elif retry is not None:  # the tightest aim looked costly: the solver's model aimed at the tolerance too
            model, tau = start[0], eps.copy()
        elif report_of(model) is not None and enforce:   # group thresholds: refitted at τ below
            pass
        else:
            result = continuation.resolve(model, tau)
            if result is None or result.diverged:
                break
            model = result.model
        thresholded = report_of(model) is not None
        if thresholded and enforce:   # group thresholds: the rule fitted again at τ (module docstring, gbdt)
            again = refit_of(model)
            if again is not None:     # on the scores it was chosen on, around the same base
                model = again(model, tau)
                continuation.record_change(model, f"thresholds chosen again at {_fmt(tau)}")
            else:
                refit = continuation.resolve(model, tau)
                if refit is None or refit.diverged:
                    break
                model = refit.model
            enforcement = report_of(model)
        elif enforce:
            model, enforcement = enforce_exact(model, continuation, tau, *fit, group_names,
                                               lambda m: scores(m, fit[0]))
        # train-only decisions: near-trivial?, predicted bound, next targets
        train_logits = scores(model, X_tr)
        trivial = split_trivial_reasons(y_tr, train_logits, g_tr, group_names)
        value = exact_gaps(families, y_tr, train_logits, g_tr, group_names)
        width = _width(families, model, scores, train, group_names, level, scale, seed, train_logits, value)
        # a thresholded rule's gap on the (out-of-fold) rates it was fitted to is ≤ τ by its LP
        predicted = (np.minimum(value, tau) if thresholded and enforce else value) + width
        if np.any(width >= eps):  # even a validation value of 0 would fail the test: said in the message
            too_wide = width
        tested = not trivial and bool(np.all(predicted <= eps))
        tests += tested
        # validation: the test (when designated) and the bound reported for every candidate
        bounds = guarantee_bounds(families, y_val, scores(model, X_val), g_val, group_names, confidence,
                                  max_tests, seed)
        excess = float(np.max(np.where(np.isfinite(bounds), bounds - eps, np.inf)))
        candidates.append({"targets": tau.tolist(), "predicted_bound": [_num(b) for b in predicted],
                           "tested": tested, "bounds": [_num(b) for b in bounds], "near_trivial": trivial})
        if not trivial and (fallback is None or excess < fallback[0]):
            fallback = (excess, copy.deepcopy(model), enforcement, bounds)
        if tested and (best_tested is None or excess < best_tested[0]):
            best_tested = (excess, bounds)
        if tested and excess <= 0:
            accepted = (model, enforcement, bounds)
            break
        if not verifiable and start is not None:
            accuracy = _accuracy(y_tr, train_logits)
            if retry is None and (trivial or start[1] - accuracy > MODEST_COST):
                # maybe not a modest cost: one more candidate, aimed at ε, to compare with
                retry = {"model": copy.deepcopy(model), "enforcement": enforcement, "bounds": bounds,
                         "excess": excess, "accuracy": accuracy, "trivial": bool(trivial)}
                continue
            if retry is not None:  # keep the tightest unless near-trivial or > MODEST_COST less accurate on train
                cost = accuracy - retry["accuracy"]
                if retry["trivial"] or (not trivial and cost > MODEST_COST):
                    why = "near-trivial" if retry["trivial"] else f"{cost:.3f} less accurate on train"
                    reason = f"unverifiable: tolerance (the tightest aim {_fmt(aim)} was {why})"
                    aim, fallback = eps.copy(), (excess, copy.deepcopy(model), enforcement, bounds)
                else:
                    fallback = (retry["excess"], retry["model"], retry["enforcement"], retry["bounds"])
        if tests >= max_tests or not verifiable:  # unverifiable: one candidate, aimed as asked, nothing to test
            break
        tighter = _next_targets(tau, eps, _aim(eps, width, z, ratio), max_tests)
        if not tested and np.allclose(tighter, tau):  # nothing left to try below the floor
            break
        tau = tighter
    met = accepted is not None
    if met:
        model, enforcement, bounds = accepted
    elif fallback is not None:
        _, model, enforcement, bounds = fallback
    pct = f"{100 * confidence:g} %"
    verifiable = first_width is not None and verifiable and too_wide is None   # one answer, the message's too
    untested = None if tests else _untested_reason(candidates, eps)
    if met:
        message = (f"guarantee met: with probability ≥ {pct} every constraint holds on the data distribution "
                   f"(one-sided bounds on the validation split ≤ tolerance; test {tests} of at most {max_tests})")
    else:
        message = (f"guarantee NOT met: no tested candidate's {pct} upper bound on the validation split was ≤ the "
                   f"tolerance ({tests} test(s), {len(candidates)} candidate(s), within the time budget); the model "
                   f"returned has the smallest validation bound but carries no guarantee")
        if untested is not None:
            message += f"; {untested}"
        if too_wide is not None:
            message += (f"; the bound's width predicted for this validation split ({_fmt(too_wide)}) is at least the "
                        f"tolerance ({_fmt(eps)}): more validation rows, a lower confidence or a looser tolerance "
                        "is needed")
        if first_width is not None and not bool(np.all(first_width < eps)):
            message += ("; the tolerance cannot be verified at this validation size, so the model was aimed at "
                        + (f"the smallest exact {_RESOLVED[fit is train]} resolves ({_fmt(aim)})"
                           if reason == "unverifiable: tightest" else f"the tolerance ({_fmt(aim)})")
                        + (f": {reason.split('(', 1)[1].rstrip(')')}" if "(" in reason else ""))
        if fit is not train:
            message += ("; its exact correction was fitted on the training and validation rows together, so the "
                        "validation bound above is not out of sample")
    n_trivial = sum(bool(c["near_trivial"]) for c in candidates)
    if n_trivial:
        message += f"; {n_trivial} near-trivial candidate(s) were not accepted"
    tested_bounds = bounds if met else (best_tested[1] if best_tested is not None else None)
    guarantee = {"confidence": confidence, "met": bool(met),
                 "best_bound": None if tested_bounds is None else [_num(b) for b in tested_bounds],
                 "returned_bound": [_num(b) for b in bounds], "untested_reason": untested,
                 "verifiable": verifiable,
                 "aim": {"targets": [float(a) for a in aim], "reason": reason,
                         "fitted_on": "train" if fit is train else "train+validation"},
                 "predicted_width": None if first_width is None else [_num(w) for w in first_width],
                 "tolerances": eps.tolist(), "test_level": level, "max_tests": max_tests, "tests": tests,
                 "bound": "mover_clopper_pearson", "pass_target": PASS_TARGET,
                 "split": {"candidate_rows": int(len(y_tr)), "safety_rows": int(len(y_val))},
                 "candidates": candidates, "message": message}
    return model, enforcement, guarantee


def _untested_reason(candidates: list[dict[str, Any]], eps: np.ndarray) -> str:
    """Why no candidate was tested: each was near-trivial on train, or its predicted bound (train value + the bound's
    predicted width) exceeded the tolerance."""
    if not candidates:
        return "no candidate was tested: none was trained within the time budget"
    trivial = sum(bool(c["near_trivial"]) for c in candidates)
    predicted = [c["predicted_bound"] for c in candidates if not c["near_trivial"]]
    parts = []
    if predicted:
        smallest = min(max(np.inf if b is None else b for b in p) for p in predicted)
        parts.append(f"{len(predicted)} had a predicted bound above the tolerance (smallest {smallest:.3f} > "
                     f"{_fmt(eps)})")
    if trivial:
        parts.append(f"{trivial} were near-trivial on the training split")
    return "no candidate was tested: of " + f"{len(candidates)} candidate(s), " + " and ".join(parts)


def _accuracy(y: np.ndarray, logits: np.ndarray) -> float:
    return float(np.mean((np.asarray(logits) > 0) == (np.asarray(y) == 1)))


def _fmt(values: np.ndarray) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
