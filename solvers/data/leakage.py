"""Target leakage: columns recorded after the outcome, found from the data itself, and models too accurate to be true.

A screen (:mod:`solvers.data.feature_screen`) reads a sample of rows split in two halves: per-value statistics are
learnt on the first (``first``), judged on the second. Every column is reduced to small integer codes
(:func:`codes`: its values, or :data:`BINS` quantile bins for numbers with more values, missing its own code).

* :func:`held_out_auc` — how well the column ALONE ranks the target: the ROC AUC on the second half of the
  target's mean per code learnt on the first (one pseudo-row at the prior), max(a, 1 − a).
* :func:`outcome_only` — a column *defined only for one class*: the rows where it is defined (present, and
  non-zero for numbers and booleans), at least :data:`MIN_DEFINED` and at most :data:`MAX_DEFINED_SHARE` of
  them, are ≥ :data:`PURE_SHARE` of one class c, and P(c | defined) − P(c | not defined) ≥ :data:`PURE_LIFT`.
  The days to a re-offence, the charge of a violent re-offence are recorded only for those who re-offended;
  a column defined for most rows is not "defined only for" anyone (the few zeros of a percentage column of
  Communities and Crime, all in the 94 % majority class, are no sign of leakage).
* :func:`shares_stem` — the column's name shares a word of ≥ :data:`STEM_CHARS` letters with the target's
  (``is_violent_recid`` and ``two_year_recid``); the screen excludes such a column only when it also predicts
  the target (AUC ≥ :data:`STEM_AUC`). A word of the table's naming scheme (in more than :data:`SCHEME_SHARE` of
  the names: ``column`` of the generated ``column_1`` … ``column_15`` of a file read without a header) is no stem.
* :func:`dominant` — a strong column (alone AUC ≥ :data:`DOMINANT_AUC`) that predicts the target about as well as
  ALL the other columns together and carries what none of them does. Naive Bayes on the codes gives each column j
  its held-out log-odds c_j(x); s = Σ_j c_j scores the rows; the rest without j is s − c_j. Column j is dominant
  when AUC(s) − AUC(s − c_j) ≥ :data:`UNIQUE_AUC` (what only j adds) and its own excess AUC is ≥
  :data:`DOMINANT_SHARE` of the rest's, (a_j − ½) ≥ DOMINANT_SHARE · (AUC(s − c_j) − ½). The most unique such
  column is removed and the test repeated (several leaks of one outcome hide each other). A legitimately strong
  column is rarely both: on Adult the most unique one (capital gain, ΔAUC 0.017) alone reaches 0.59 against 0.89
  for the rest; on bank, ``duration`` (the call's length, known after it) alone 0.80 against 0.76, ΔAUC 0.095.
  The rule cannot tell such a leak from a lone legitimate predictor among columns that carry little (a table of
  one strong column and noise): its note says how to keep the column (list it in ``features``).
* :func:`implausible_accuracy` — a warning when an unconstrained model's test split is implausibly well predicted
  (ROC AUC ≥ :data:`IMPLAUSIBLE_AUC` or balanced accuracy ≥ :data:`IMPLAUSIBLE_BALANCED`, both free of the base
  rate): on the tables this service trains on (people's outcomes) that is what a column recorded after the outcome
  gives (the default job on raw COMPAS with them: test AUC 0.993).

Every function is vectorised over rows (bincounts, one sort per AUC); the loops are over columns.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .encoding import normalise_values

BINS = 20
PURE_SHARE = 0.9
PURE_LIFT = 0.4
MIN_DEFINED = 30
MAX_DEFINED_SHARE = 0.5
STEM_CHARS = 4
STEM_AUC = 0.6
SCHEME_SHARE = 0.25   # a word in more than this share of the column names is the table's naming scheme ...
SCHEME_MIN = 3        # ... and in more than this many (a few names sharing a word is a meaning, not a scheme)
UNIQUE_AUC = 0.03
DOMINANT_SHARE = 0.8
DOMINANT_AUC = 0.75
MAX_DOMINANT = 5  # rounds of the dominance test (each removes one column)
IMPLAUSIBLE_AUC = 0.95
IMPLAUSIBLE_BALANCED = 0.9


def codes(s: pd.Series) -> np.ndarray:
    """Category codes of one column: its values, or BINS quantile bins for numbers with more values (missing: its
    own code)."""
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype) and s.nunique() > BINS:
        binned = pd.qcut(s.rank(method="first"), BINS, labels=False).to_numpy(dtype=float)
        return np.where(np.isnan(binned), BINS, binned).astype(np.int64)
    return pd.factorize(normalise_values(s))[0]


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """ROC AUC a = P(s₊ > s₋) + ½ P(s₊ = s₋) over positive / negative pairs, counted per distinct score
    (0.5 with one class)."""
    labels = y > 0.5
    if labels.all() or not labels.any():
        return 0.5
    distinct, index = np.unique(scores, return_inverse=True)
    positives = np.bincount(index, weights=labels, minlength=len(distinct))
    negatives = np.bincount(index, weights=~labels, minlength=len(distinct))
    below = np.cumsum(negatives) - negatives  # negatives scored strictly lower
    return float((positives * (below + 0.5 * negatives)).sum() / (positives.sum() * negatives.sum()))


def code_rates(c: np.ndarray, y: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The target's mean per code on the first half, with one pseudo-row at the prior (unseen codes score it)."""
    k = int(c.max()) + 1
    counts = np.bincount(c[first], minlength=k)
    sums = np.bincount(c[first], weights=y[first], minlength=k)
    prior = y[first].mean() if first.any() else 0.5
    return (sums + prior) / (counts + 1.0)


def held_out_auc(c: np.ndarray, y: np.ndarray, first: np.ndarray) -> float:
    """max(a, 1 − a) for a = ROC AUC on the second half of the target's per-code mean learnt on the first half."""
    a = auc(code_rates(c, y, first)[c[~first]], y[~first])
    return float(max(a, 1.0 - a))


def defined_rows(s: pd.Series) -> np.ndarray:
    """Where the column holds a value: present, and non-zero for numbers and booleans."""
    present = s.notna().to_numpy().copy()
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        present &= s.fillna(0).to_numpy() != 0
    return present


def outcome_only(s: pd.Series, y: np.ndarray) -> dict[str, float] | None:
    """Rows, class and shares when the column is defined only for one class (module docstring), else None."""
    defined = defined_rows(s)
    n = int(defined.sum())
    if n < MIN_DEFINED or n > MAX_DEFINED_SHARE * len(defined):
        return None
    rate_in, rate_out = float(y[defined].mean()), float(y[~defined].mean())
    for cls, share_in, share_out in ((1, rate_in, rate_out), (0, 1 - rate_in, 1 - rate_out)):
        if share_in >= PURE_SHARE and share_in - share_out >= PURE_LIFT:
            return {"rows": n, "share": n / len(defined), "class": cls, "share_in": share_in, "share_out": share_out}
    return None


def _words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return {w for w in re.split(r"[^A-Za-z]+", spaced.lower()) if len(w) >= STEM_CHARS}


def naming_words(columns: Sequence[str]) -> set[str]:
    """Words of a naming scheme, not of a meaning: those in more than :data:`SCHEME_SHARE` of the column names and
    in more than :data:`SCHEME_MIN` of them
    (``column`` of generated names ``column_1`` … ``column_15``, ``pct`` of a census table) — never a stem."""
    columns = [str(c) for c in columns]
    counts: dict[str, int] = {}
    for name in columns:
        for word in _words(name):
            counts[word] = counts.get(word, 0) + 1
    return {w for w, n in counts.items() if n > max(SCHEME_MIN, SCHEME_SHARE * len(columns))}


def shares_stem(column: str, target: str, scheme: set[str] = frozenset()) -> str | None:
    """A word (≥ STEM_CHARS letters; names split at non-letters and camelCase) of both names that is not a word of
    the table's naming ``scheme`` (:func:`naming_words`), else None."""
    common = (_words(str(column)) & _words(str(target))) - set(scheme)
    return max(sorted(common), key=len) if common else None


def dominant(columns: Mapping[str, np.ndarray], alone: Mapping[str, float], y: np.ndarray, first: np.ndarray,
             protected: set[str]) -> list[dict[str, Any]]:
    """The dominant columns among ``columns`` (codes), removed one per round (module docstring), with their held-out
    AUC alone, the rest's and what only they add; ``protected`` columns take part but are never removed."""
    prior = float(np.clip(y[first].mean(), 1e-6, 1 - 1e-6)) if first.any() else 0.5
    base = np.log(prior / (1 - prior))
    log_odds = {}
    for name, c in columns.items():
        rate = np.clip(code_rates(c, y, first), 1e-6, 1 - 1e-6)
        log_odds[name] = (np.log(rate / (1 - rate)) - base)[c[~first]]
    held = y[~first]
    found: list[dict[str, Any]] = []
    while len(found) < MAX_DOMINANT and len(log_odds) > 1 and \
            any(alone[name] >= DOMINANT_AUC for name in log_odds if name not in protected):
        total = sum(log_odds.values())
        full = auc(total, held)
        best = None
        for name, part in log_odds.items():
            if name in protected or alone[name] < DOMINANT_AUC:  # only a strong column can be dominant
                continue
            rest = auc(total - part, held)
            unique = full - rest
            if unique >= UNIQUE_AUC and alone[name] - 0.5 >= DOMINANT_SHARE * (rest - 0.5) and \
                    (best is None or unique > best["unique"]):
                best = {"column": name, "auc": alone[name], "rest": rest, "unique": unique}
        if best is None:
            break
        found.append(best)
        del log_odds[best["column"]]
    return found


def implausible_accuracy(test: Mapping[str, Any] | None, what: str = "the unconstrained model") -> str | None:
    """The warning for a test split's metrics (``roc_auc``, ``balanced_accuracy``) that are implausibly good
    (module docstring), else None."""
    if not test:
        return None
    roc, balanced = test.get("roc_auc"), test.get("balanced_accuracy")
    if (roc is None or roc < IMPLAUSIBLE_AUC) and (balanced is None or balanced < IMPLAUSIBLE_BALANCED):
        return None
    shown = ", ".join(f"{k} {v:.3f}" for k, v in (("test AUC", roc), ("balanced accuracy", balanced)) if v is not None)
    return (f"{what} is implausibly accurate for this table ({shown}): a feature is probably known only after the "
            "outcome (a date, count or charge of the event itself); check the features and the feature screen")
