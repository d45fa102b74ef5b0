r"""How often a future row repeats the features of a fitting row (Good–Turing's missing mass).

A model's score of a row is a function of its features x alone, so a future row whose x occurs among the fitting
rows gets the stored model's score of that fitting row: its IN-SAMPLE score, which a flexible model (a boosted
ensemble of deep trees) has pulled towards the row's label. Rows with an x the fitting rows do not hold get a
score like an out-of-fold one. The rates a post-processing rule will realise on the population are therefore a
mixture: with probability ρ the in-sample scores' rates, with 1 − ρ the out-of-fold scores'.

ρ is one minus the probability that the next draw from the population shows an x no fitting row has, which Good
(1953, after Turing) estimates by the share of the n fitting rows whose x occurs exactly once:

    ρ̂ = 1 − N₁ / n,   N₁ = #{x : x occurs once among the fitting rows}.

Continuous features with no repeated row give ρ̂ = 0 (the out-of-fold scores alone, as before). A sample of n rows
drawn with replacement from a finite table of N rows has E N₁ = n (1 − 1/N)^{n−1} ≈ n e^{−n/N}, so ρ̂ ≈
1 − e^{−n/N}: the share of the table's rows the sample holds, which is how often a row of that table is one the
model has seen (:func:`repeat_share` checks this by simulation in ``tests/solvers/data/test_repeats.py``).
"""
from __future__ import annotations

import numpy as np


def repeat_share(X: np.ndarray) -> float:
    """ρ̂ = 1 − N₁ / n of the module docstring over the rows of ``X`` (n, d); 0 for no rows. Rows are compared by
    their bytes (one sort of n keys, no row loop)."""
    X = np.ascontiguousarray(X)
    n = len(X)
    if n == 0:
        return 0.0
    keys = X.reshape(n, -1).view(np.dtype((np.void, X.dtype.itemsize * int(np.prod(X.shape[1:], dtype=int)))))
    _, counts = np.unique(keys.ravel(), return_counts=True)
    return 1.0 - float(np.count_nonzero(counts == 1)) / n


def mixed_scores(out_of_fold: np.ndarray, in_sample: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Each row's in-sample score with probability ``share`` (a seeded draw per row), else its out-of-fold score: a
    sample of the scores the population shows the stored model (module docstring), as many rows as the fitting
    rows, so the rates' sampling error (the population margin's) is that of n rows."""
    if share <= 0.0:
        return out_of_fold
    pick = np.random.default_rng(seed).random(len(out_of_fold)) < share
    return np.where(pick, in_sample, out_of_fold)
