r"""What a job promises about the POPULATION its rows come from, in one sentence, and whether a guarantee can be
certified at the job's size before anything is trained.

**Certifiability before training.** The Seldonian test of :mod:`.guarantee` accepts a model when the one-sided upper
bound of every gap on the safety (validation) split is ≤ ε; the bound of a rate gap is the joint MOVER bound of
:mod:`.confidence`, whose width for two groups a, b is about z · √(σ_a² + σ_b²), σ_g² = p_g (1 − p_g) / v_g
(v_g the group's denominator on the safety split: rows, positives or negatives), z = z_{1−α'}, α' = (1 − confidence)
/ (R m) (R = ``max_tests``, m the constraints). Before training the rates are those of a model with no gap that
selects as the labels do (p_g the group's label rate for demographic parity and an FPR, ½ for a TPR); the widest
pair gives σ_s = max_{a ≠ b} √(σ_a² + σ_b²) and the width w₀ = z σ_s (:func:`zero_gap_sd`).

**The aim and the pass probability.** A candidate enforced exactly at a training gap τ on c candidate rows has a
population gap off τ by the candidate rows' sampling error (sd σ_c = σ_s √(v / c)), and its value on the safety
rows is off that by theirs (σ_s); the test passes when that value is ≤ ε − w. So it passes with probability
≥ π = :data:`PASS_TARGET` when

    τ ≤ ε − w − z_π σ_s √(1 + v / c) = ε − s(v, c),        (the shortfall s, :func:`shortfall`)

and :mod:`.guarantee` aims its candidate there (not lower: every bit of gap it may keep is accuracy). A tolerance is
**certifiable** when that aim is at least the loop's floor TARGET_FLOOR · ε (a band narrower than that admits
nearly constant classifiers), i.e. a candidate at the floor still passes with probability ≥ π; so a job called
certifiable is met about π of the time (measured: ``bench/quality/results/population.md``). Otherwise the job says, before
its result, about how many rows would make it so: s ∝ 1/√n at fixed shares, so
n_needed = n · (s / ((1 − TARGET_FLOOR) ε))².

**The safety split** (:func:`safety_share`): of the r = train + validation rows, a share q goes to the test; with
σ₁ the zero-gap sd on all r rows, σ_s = σ₁/√q and σ_c = σ₁/√(1 − q), so

    s(q) = σ₁ (z / √q + z_π √(1/q + 1/(1 − q))),

which is smallest near q ≈ 0.6 whatever σ₁. Rows given to the test are rows the model is not fitted on, so the
share is the SMALLEST q of the grid :data:`SAFETY_SHARES` whose shortfall is within SPLIT_SLACK · ε of the best
(max over the constraints of s_j(q) / ε_j): small groups (large σ₁) or a tight tolerance need the best share, many
rows or a loose tolerance leave most of them to training. Loss and AUC gaps have no closed-form width: they are
called certifiable, keep the spec's validation share, and the test decides. Measured (Adult (sex), gbdt, DP ≤ 0.05,
16 bootstrap samples of 20,000 rows, in process: ``python -m bench.quality.population_parts --table adult_sex --kind
demographic_parity --mode guarantee --seeds 0 … 15 --split-slack S``): the slack 0.1 gives 0.8553 accuracy on the
table (met 14 of 16), the best share (slack 0: more safety rows, a higher aim, population gap 0.0235 against
0.0182) 0.8539 (met 16), a smaller share (slack 0.3) 0.8543 (met 14): the fitting rows a larger share takes cost
more than its higher aim gives, and no share comes within 0.005 of the default mode's 0.8617 on the same table
(between the default's 0.8557 at ε = 0.02, population gap 0.0135, and its 0.8617 at 0.0439, a model fitted on all
the rows at the guarantee's 0.0182 would be about 0.8566: what the guarantee gives up is the rows of its test).

**The sentence** (:func:`promise_sentence`): with a guarantee that was met, "with probability ≥ 95 % the
demographic_parity gap on data like these is ≤ 0.05"; not met, "not certified: …" with the rows it would need or
the reason; without a guarantee, the margin of ``group_thresholds`` when it was met (an estimate, "about" and not
"at least": a normal bound on the fitting rates' sampling error only, :mod:`.threshold_margin` says what it leaves
out; at δ = 0.1 gbdt jobs kept ε on 10 of 12 bootstrap samples of Adult, 12 of 12 of bank, 11 of 12 of
bank-additional and 18 of 24 of COMPAS, ``bench/quality/results/population.md``); when it could not be met even at its largest share, that the tolerance is not promised on the
population, with the probability of exceeding it that the sampling error alone gives; else that the job promises
nothing beyond its rows.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy.special import ndtri

#: the probability with which a candidate aimed as the module docstring says should pass the test
PASS_TARGET = 0.9
#: the safety split's share of train ∪ validation is chosen on this grid (module docstring)
SAFETY_SHARES = np.round(np.arange(0.15, 0.701, 0.05), 2)
SPLIT_SLACK = 0.1      # ... the smallest share whose shortfall is within this share of ε of the best
TARGET_FLOOR = 0.1     # the guarantee's training targets stay ≥ ε/10 (:mod:`.guarantee` imports it)
CERTIFIABLE_SHARE = 1.0 - TARGET_FLOOR   # a certifiable tolerance's shortfall is at most this share of it
_DENOMINATORS = {"demographic_parity": ("sr",), "equal_opportunity": ("tpr",), "equalized_odds": ("tpr", "fpr")}


def zero_gap_sd(kind: str, y: np.ndarray, group: np.ndarray, n_groups: int, rows: float) -> float | None:
    """σ of the module docstring: the widest pair's √(σ_a² + σ_b²) of a zero-gap model's rate estimates on ``rows``
    rows split like the labels ``y`` and groups (None for a family without a closed-form width)."""
    y = np.asarray(y).reshape(-1) == 1
    g = np.asarray(group, dtype=np.int64).reshape(-1)
    size = np.bincount(g, minlength=n_groups).astype(np.float64)
    positives = np.bincount(g, weights=y.astype(np.float64), minlength=n_groups)
    return zero_gap_sd_of_counts(kind, size, positives, rows)


def zero_gap_sd_of_counts(kind: str, size: np.ndarray, positives: np.ndarray, rows: float) -> float | None:
    """:func:`zero_gap_sd` from the groups' row and positive counts (of any rows split alike), e.g. a dataset's
    stored counts before a job exists."""
    if kind not in _DENOMINATORS:
        return None
    size, positives = np.asarray(size, dtype=np.float64), np.asarray(positives, dtype=np.float64)
    scale = rows / max(size.sum(), 1.0)
    base = np.where(size > 0, positives / np.maximum(size, 1), np.nan)
    widest = 0.0
    for rate in _DENOMINATORS[kind]:
        n, p = {"sr": (size, base), "tpr": (positives, np.full(len(size), 0.5)),
                "fpr": (size - positives, base)}[rate]
        v = n * scale
        ok = (v > 0) & np.isfinite(p)
        if ok.sum() < 2:
            continue
        var = np.clip(p[ok] * (1 - p[ok]), 1e-6, None) / v[ok]
        widest = max(widest, float(np.sqrt(np.sort(var)[-2:].sum())))   # the two widest groups: the widest pair
    return widest


def plan_of_counts(families: Sequence, tolerances: Sequence[float], size: np.ndarray, positives: np.ndarray,
                   total_rows: int, spec_share: float, confidence: float, max_tests: int) -> dict[str, Any]:
    """Before a job exists (the dashboard's form): the safety share :func:`safety_share` would choose and the
    :func:`certification` at it, from the groups' counts over the job's train ∪ validation rows (``size``,
    ``positives``) and the table's ``total_rows``; ``spec_share`` the spec's validation share of train ∪ validation."""
    rows = float(np.sum(size))
    z = level_z(confidence, max_tests, len(families))
    sds = [zero_gap_sd_of_counts(f.name, size, positives, rows) for f in families]
    q = safety_share(sds, tolerances, z, spec_share)
    out = _certify([zero_gap_sd_of_counts(f.name, size, positives, q * rows) for f in families], tolerances,
                   q * rows, (1 - q) * rows, total_rows, z)
    return {**out, "safety_share": q}


def level_z(confidence: float, max_tests: int, n_constraints: int) -> float:
    """z_{1−α'}, α' = (1 − confidence) / (R m): the one-sided level of each constraint's test."""
    return float(ndtri(1.0 - (1.0 - confidence) / (max_tests * max(n_constraints, 1))))


def shortfall(sd_safety: float, safety_rows: float, candidate_rows: float, z: float,
              pass_target: float = PASS_TARGET) -> float:
    """s = z σ_s + z_π σ_s √(1 + v / c): how far below ε a candidate is aimed (module docstring)."""
    return float(sd_safety * (z + ndtri(pass_target) * math.sqrt(1.0 + safety_rows / max(candidate_rows, 1.0))))


def safety_share(sd_all: Sequence[float | None], tolerances: Sequence[float], z: float,
                 default: float) -> float:
    """q of the module docstring from each constraint's zero-gap sd on all train ∪ validation rows (``sd_all``,
    None: no closed form) and tolerance; ``default`` (the spec's share) when no constraint has a closed form."""
    pairs = [(sd, eps) for sd, eps in zip(sd_all, tolerances) if sd is not None and sd > 0]
    if not pairs:
        return float(default)
    q = SAFETY_SHARES
    z_pass = float(ndtri(PASS_TARGET))
    ratio = np.max([sd * (z / np.sqrt(q) + z_pass * np.sqrt(1 / q + 1 / (1 - q))) / eps for sd, eps in pairs], axis=0)
    return float(q[np.flatnonzero(ratio <= ratio.min() + SPLIT_SLACK)[0]])


def certification(families: Sequence, tolerances: Sequence[float], y: np.ndarray, group: np.ndarray, n_groups: int,
                  validation_rows: int, total_rows: int, confidence: float, max_tests: int,
                  candidate_rows: int | None = None) -> dict[str, Any]:
    """{certifiable, zero_gap_width and shortfall (per constraint), rows_needed}: the module docstring's check before
    training, from the labels and groups ``y``, ``group`` of any rows split like the job's (its train ∪ validation)
    at a safety split of ``validation_rows`` rows and ``candidate_rows`` rows to fit on (default: ``len(y)``);
    ``total_rows`` the job's rows (the answer is in rows of the same table, split alike)."""
    z = level_z(confidence, max_tests, len(families))
    candidate_rows = len(y) if candidate_rows is None else candidate_rows
    sds = [zero_gap_sd(f.name, y, group, n_groups, validation_rows) for f in families]
    return _certify(sds, tolerances, validation_rows, candidate_rows, total_rows, z)


def _certify(sds: Sequence[float | None], tolerances: Sequence[float], validation_rows: float, candidate_rows: float,
             total_rows: int, z: float) -> dict[str, Any]:
    widths, shorts, needed = [], [], total_rows
    for sd, eps in zip(sds, tolerances):
        if sd is None:
            widths.append(None)
            shorts.append(None)
            continue
        short = shortfall(sd, validation_rows, candidate_rows, z)
        widths.append(round(z * sd, 6))
        shorts.append(round(short, 6))
        if short > CERTIFIABLE_SHARE * eps:
            needed = max(needed, int(math.ceil(total_rows * (short / (CERTIFIABLE_SHARE * eps)) ** 2)))
    certifiable = needed <= total_rows
    return {"certifiable": certifiable, "zero_gap_width": widths, "shortfall": shorts,
            "rows_needed": None if certifiable else needed, "pass_target": PASS_TARGET}


def form_check(families: Sequence, tolerances: Sequence[float], group_rows: Sequence[float], positive_rate: float,
               total_rows: int, test: float, validation: float, confidence: float, max_tests: int = 1
               ) -> dict[str, Any]:
    """What the job form says before a guarantee job is submitted: :func:`plan_of_counts` from a table's stored
    counts — the rows of each group (``group_rows``, the whole table) and the overall positive label rate (every
    group at that rate: a model that keeps the gap near 0 selects the groups about alike) — scaled to the
    train ∪ validation rows of the split ``test`` / ``validation``; with the ``sentence`` the form shows."""
    size = np.asarray(group_rows, dtype=np.float64) * (1.0 - test)
    plan = plan_of_counts(families, tolerances, size, size * positive_rate, total_rows,
                          validation / max(1.0 - test, 1e-9), confidence, max_tests)
    pct = f"{100 * confidence:g} %"
    if plan["certifiable"]:
        shorts = [f"{v:.3f}" for v in plan["shortfall"] if v is not None]
        sentence = (f"Certifiable at {total_rows:,} rows at {pct}: about {100 * plan['safety_share']:.0f} % of the "
                    "training and validation rows go to the safety test"
                    + (f", and a model aimed {'/'.join(shorts)} below the tolerance passes it about "
                       f"{100 * PASS_TARGET:g} % of the time." if shorts else "; the test decides."))
    else:
        sentence = (f"Not certifiable at {total_rows:,} rows at {pct}: a model with no gap would have a "
                    f"{'/'.join('—' if w is None else f'{w:.3f}' for w in plan['zero_gap_width'])} bound width; "
                    f"about {plan['rows_needed']:,} rows would be needed. The job still runs and says so.")
    return {**plan, "rows": total_rows, "sentence": sentence}


def not_certifiable_warning(check: dict[str, Any], tolerances: Sequence[float], total_rows: int) -> str:
    return (f"the guarantee is unlikely to be certified at {total_rows:,} rows: a model with no gap would have a "
            f"{'/'.join('—' if w is None else f'{w:.3f}' for w in check['zero_gap_width'])} bound width on the "
            f"safety split, and a candidate must be aimed "
            f"{'/'.join('—' if w is None else f'{w:.3f}' for w in check['shortfall'])} below the tolerance "
            f"({'/'.join(f'{t:g}' for t in tolerances)}) to pass its test with probability "
            f"{100 * check['pass_target']:g} %, which leaves less than a tenth of it; about "
            f"{check['rows_needed']:,} rows would be needed")


def promise_sentence(constraints: Sequence[tuple[str, float]], guarantee: dict[str, Any] | None,
                     enforcement: dict[str, Any] | None) -> dict[str, Any]:
    """{kind, sentence}: the population-level promise of the job in words (module docstring)."""
    what = " and ".join(f"the {name} gap" for name, _ in constraints) or "the gap"
    bound = ", ".join(f"{eps:g}" for _, eps in constraints)
    if guarantee is not None:
        pct = f"{100 * guarantee['confidence']:g} %"
        if guarantee.get("met"):
            return {"kind": "guarantee", "sentence": f"With probability ≥ {pct}, {what} on data like these is ≤ "
                                                     f"{bound} (a one-sided test on held-out rows)."}
        if guarantee.get("rows_needed"):
            return {"kind": "not certified", "sentence": f"Not certified at {pct}: this tolerance needs about "
                                                         f"{guarantee['rows_needed']:,} rows."}
        return {"kind": "not certified", "sentence": f"Not certified at {pct}: no candidate passed the test "
                                                     "(see the guarantee's message)."}
    margin = (enforcement or {}).get("margin")
    if margin and margin.get("met") and margin.get("about") == "population":
        coins = margin.get("coins") or {}
        named = (f"The groups {', '.join(coins)} have" if len(coins) > 1 else f"The group {next(iter(coins), '')} has")
        tossed = (f" {named} too few rows for a threshold of their own: each of their rows is selected by a draw "
                  f"with probability {max(coins.values()):.3g}, whatever its score." if coins else "")
        return {"kind": "estimate", "sentence": f"Estimated: with probability about {100 * (1 - margin['delta']):g} "
                                                f"%, {what} on the population is ≤ {bound}: the thresholds keep a "
                                                "margin for the sampling error of the rows they were fitted on (a "
                                                "model whose scores on new rows move further can miss it more "
                                                f"often).{tossed}"}
    if margin and margin.get("about") == "population":   # at its largest share the bound stayed above δ
        return {"kind": "not kept", "sentence": f"Not promised: these rows are too few for {bound} on the population. "
                                                f"Even with the thresholds fitted at {margin_tolerances(margin)}, "
                                                f"{what} on the population exceeds {bound} with a probability of "
                                                f"about {100 * margin['bound']:.0f} % from the groups' sampling "
                                                "error alone, judged by their sizes (a model whose scores on new rows "
                                                "differ from those the thresholds were fitted to adds to it); more "
                                                "rows of the small groups, or a looser tolerance, would keep it."}
    return {"kind": "none", "sentence": f"No promise beyond the fitting rows: {what} was checked against {bound} "
                                        "there; on new data it moves by the sampling error (see the test interval)."}


def margin_tolerances(margin: dict[str, Any]) -> str:
    """The margin's fitting tolerances ε' in words ("demographic_parity ≤ 0.005")."""
    return ", ".join(f"{name} ≤ {eps:.3g}" for name, eps in (margin.get("tolerances") or {}).items()) or "its floor"
