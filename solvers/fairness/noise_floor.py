r"""What a split of a given size can show: the exact gap that a model whose POPULATION gap is exactly 0 shows
on it, and the probability that this gap is ≤ the tolerance ε.

A "zero-gap model" h has, in every group g, the same rate: selection rate p (demographic parity), true-positive
rate a and false-positive rate b (equal opportunity: a; equalized odds: a and b). On a split with n_g rows in
group g, P_g of them positive and N_g = n_g − P_g negative, its predictions are independent Bernoulli draws given
the labels, so the per-group counts are independent binomials

    S_g ~ Bin(n_g, p),      T_g ~ Bin(P_g, a),      F_g ~ Bin(N_g, b),

and its exact gaps on the split are those of :mod:`.exact` (the max − min over groups where the rate is defined):

    DP = max_g S_g/n_g − min_g S_g/n_g,      EOpp = range_g T_g/P_g,      EOdds = max(range_g T_g/P_g, range_g F_g/N_g).

For the loss gap (per-sample losses i.i.d. with mean L and standard deviation σ in every group — the same loss
distribution in each group, so the population gap is 0) the group means are taken normal, m_g ~ N(L, σ²/n_g)
(the central limit approximation, stated; the mean's exact law depends on the loss distribution), with
one-sided gap max_g (m_g − Σ_g n_g m_g / n) and two-sided gap range_g m_g.

:func:`noise_floor` draws ``repetitions`` such splits at once (an (R, K) array of binomial draws per rate, in
chunks of at most ``CHUNK_DRAWS`` entries; no loop over rows or groups) and returns the share of repetitions with
gap ≤ ε (``keep_probability``, its Monte-Carlo standard error √(q(1−q)/R) beside) and the mean gap
(``expected_gap``). ``keep_probability`` is the best share of jobs ANY method can keep on splits of these sizes
when its model is exactly fair on the population: a tolerance below the split's noise is exceeded by chance.
The default rates are the pooled label rate P/n (a model selecting at the base rate); callers that know a
model's pooled rates pass them: :func:`floor_of_predictions` takes them from a model's predictions on the split
(its selection rate, TPR and FPR) — what a job's report says of its test split and an audit of its batch.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

FAMILIES = ("demographic_parity", "equal_opportunity", "equalized_odds", "loss_gap")
MAX_GROUPS = 10_000
MAX_REPETITIONS = 1_000_000
DEFAULT_REPETITIONS = 20_000
CHUNK_DRAWS = 2_000_000  # repetitions × groups entries drawn at once
RATE_FAMILIES = ("demographic_parity", "equal_opportunity", "equalized_odds")  # max − min rate gaps
PREDICTION_REPETITIONS = 2_000  # floor_of_predictions: simulated splits, at most (standard error ≤ 0.011)
PREDICTION_DRAWS = 4_000_000    # floor_of_predictions: binomial draws (repetitions × groups × rates), at most


@dataclass(frozen=True)
class NoiseFloor:
    """The zero-gap model's test gap on one split (module docstring)."""

    family: str
    tolerance: float
    keep_probability: float  # P(gap ≤ ε)
    standard_error: float    # Monte-Carlo standard error of keep_probability
    expected_gap: float      # E[gap]
    repetitions: int

    def as_dict(self) -> dict:
        return asdict(self)


def _checked(family: str, counts, positives, tolerance: float, repetitions: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate the inputs (before anything is allocated); (counts, positives) as int64 arrays."""
    if family not in FAMILIES:
        raise ValueError(f"family: {family!r} is not one of {', '.join(FAMILIES)}")
    counts, positives = np.asarray(counts), np.asarray(positives)
    if counts.ndim != 1 or counts.shape != positives.shape or not 1 <= counts.size <= MAX_GROUPS:
        raise ValueError(f"counts / positives: one count per group, 1 to {MAX_GROUPS} groups, same length")
    if not (np.all(counts >= 0) and np.all(positives >= 0) and np.all(positives <= counts)):
        raise ValueError("counts / positives: 0 ≤ positives ≤ counts in every group")
    if not (np.isfinite(tolerance) and tolerance >= 0):
        raise ValueError("tolerance: a finite number ≥ 0")
    if not 1 <= repetitions <= MAX_REPETITIONS:
        raise ValueError(f"repetitions: 1 to {MAX_REPETITIONS}")
    return counts.astype(np.int64), positives.astype(np.int64)


def _rate_range(rng: np.random.Generator, n: np.ndarray, rate: float, reps: int) -> np.ndarray:
    """(reps,) range over the groups with n_g > 0 of Bin(n_g, rate)/n_g; 0 with fewer than two such groups."""
    n = n[n > 0]
    if n.size < 2:
        return np.zeros(reps)
    share = rng.binomial(n, rate, size=(reps, n.size)) / n
    return share.max(1) - share.min(1)


def _loss_gap(rng: np.random.Generator, n: np.ndarray, sd: float, two_sided: bool, reps: int) -> np.ndarray:
    n = n[n > 0]
    means = rng.standard_normal((reps, n.size)) * (sd / np.sqrt(n))
    if two_sided:
        return means.max(1) - means.min(1)
    return (means - (means @ n / n.sum())[:, None]).max(1)


def zero_gap_gaps(family: str, counts, positives, *, repetitions: int = DEFAULT_REPETITIONS, rate: float | None = None,
                  tpr: float | None = None, fpr: float | None = None, loss_sd: float | None = None,
                  two_sided: bool = False, seed: int = 0) -> np.ndarray:
    """(repetitions,) exact gaps of the zero-gap model on independent splits with these group sizes
    (module docstring). ``rate`` (DP), ``tpr`` / ``fpr`` (EOpp, EOdds) default to the pooled label rate;
    ``loss_sd`` (loss gap) is required."""
    counts, positives = _checked(family, counts, positives, 0.0, repetitions)
    base = positives.sum() / max(counts.sum(), 1)
    rates = {"rate": rate, "tpr": tpr, "fpr": fpr}
    for name, value in rates.items():
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}: a rate in [0, 1]")
    if family == "loss_gap" and not (loss_sd is not None and np.isfinite(loss_sd) and loss_sd >= 0):
        raise ValueError("loss_sd: the per-sample loss's standard deviation (≥ 0) is needed for the loss gap")
    rng = np.random.default_rng(seed)
    per_chunk = max(1, CHUNK_DRAWS // (2 * counts.size))
    out = np.empty(repetitions)
    for start in range(0, repetitions, per_chunk):  # chunks of repetitions, each vectorised over groups
        reps = min(per_chunk, repetitions - start)
        if family == "demographic_parity":
            gap = _rate_range(rng, counts, base if rate is None else rate, reps)
        elif family == "loss_gap":
            gap = _loss_gap(rng, counts, float(loss_sd), two_sided, reps)
        else:
            gap = _rate_range(rng, positives, base if tpr is None else tpr, reps)
            if family == "equalized_odds":
                gap = np.maximum(gap, _rate_range(rng, counts - positives, base if fpr is None else fpr, reps))
        out[start:start + reps] = gap
    return out


def noise_floor(family: str, counts, positives, tolerance: float, **kwargs) -> NoiseFloor:
    """The zero-gap model's keep probability P(gap ≤ ``tolerance``) and expected gap on splits of these sizes;
    ``kwargs`` as :func:`zero_gap_gaps` (``repetitions``, the rates, ``loss_sd``, ``two_sided``, ``seed``)."""
    _checked(family, counts, positives, tolerance, kwargs.get("repetitions", DEFAULT_REPETITIONS))
    gaps = zero_gap_gaps(family, counts, positives, **kwargs)
    keep = float(np.mean(gaps <= tolerance + 1e-12))
    return NoiseFloor(family=family, tolerance=float(tolerance), keep_probability=keep,
                      standard_error=float(np.sqrt(keep * (1.0 - keep) / len(gaps))),
                      expected_gap=float(gaps.mean()), repetitions=len(gaps))


def split_counts(y: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(n_g, P_g) of one split: rows and positive labels per group."""
    group = np.asarray(group).astype(np.int64)
    return (np.bincount(group, minlength=n_groups),
            np.bincount(group, weights=(np.asarray(y) == 1).astype(float), minlength=n_groups).astype(np.int64))


def floor_of_predictions(family: str, y: np.ndarray, pred: np.ndarray, group: np.ndarray, n_groups: int,
                         tolerance: float, seed: int = 0) -> dict | None:
    """:func:`noise_floor` of a rate family (:data:`RATE_FAMILIES`, else None) for the group sizes of one split,
    at the pooled rates of the predictions ``pred`` there (selection rate; TPR, FPR where labels of that class
    exist): ``{keep_probability, standard_error, expected_gap, repetitions, rates}``. At most
    :data:`PREDICTION_REPETITIONS` splits and :data:`PREDICTION_DRAWS` draws, so its cost is bounded for any
    number of groups."""
    if family not in RATE_FAMILIES or len(y) == 0:
        return None
    y = np.asarray(y).reshape(-1) == 1
    pred = np.asarray(pred).reshape(-1) > 0
    cells = np.bincount(4 * np.asarray(group, np.int64) + 2 * y + pred, minlength=4 * n_groups)
    return floor_of_cells(family, cells.reshape(n_groups, 2, 2), tolerance, seed)


def floor_of_cells(family: str, cells: np.ndarray, tolerance: float, seed: int = 0) -> dict | None:
    """:func:`floor_of_predictions` from the (K, 2, 2) counts cells[g, y, ŷ] of rows per group, label and
    decision (all it reads: the group sizes, their positives and the pooled rates)."""
    cells = np.asarray(cells, np.int64)
    if family not in RATE_FAMILIES or cells.sum() == 0:
        return None
    n_groups = cells.shape[0]
    counts, positives = cells.sum(axis=(1, 2)), cells[:, 1, :].sum(axis=1)
    by_label = cells.sum(axis=0)  # [y, ŷ]
    rates = {"rate": float(by_label[:, 1].sum() / by_label.sum()),
             "tpr": float(by_label[1, 1] / by_label[1].sum()) if by_label[1].sum() else None,
             "fpr": float(by_label[0, 1] / by_label[0].sum()) if by_label[0].sum() else None}
    per_split = n_groups * (2 if family == "equalized_odds" else 1)
    repetitions = int(np.clip(PREDICTION_DRAWS // per_split, 100, PREDICTION_REPETITIONS))
    floor = noise_floor(family, counts, positives, float(tolerance), repetitions=repetitions, seed=seed, **rates)
    return {"keep_probability": floor.keep_probability, "standard_error": floor.standard_error,
            "expected_gap": floor.expected_gap, "repetitions": floor.repetitions,
            "rates": {k: v for k, v in rates.items() if v is not None}}
