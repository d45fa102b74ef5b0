"""Small generated tables with a planted disparity, shared by the tests."""

from __future__ import annotations

import numpy as np
import pandas as pd


def planted_table(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """An Adult-like table: the label depends on `sex` directly, so an unconstrained model is unfair."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["Male", "Female"], size=n, p=[0.6, 0.4])
    male = sex == "Male"
    age = rng.integers(18, 80, size=n)
    hours = np.clip(rng.normal(40 + 5 * male, 10, size=n), 1, 99).round()
    workclass = rng.choice(["Private", "Self-emp", "Gov"], size=n, p=[0.7, 0.15, 0.15])
    race = rng.choice(["White", "Black", "Asian", "Other"], size=n, p=[0.7, 0.15, 0.1, 0.05])
    logit = -1.0 + 1.6 * male + 0.03 * (hours - 40) + 0.02 * (age - 40) + 0.4 * (workclass == "Self-emp")
    income = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K")
    frame = pd.DataFrame({"age": age, "workclass": workclass, "hours-per-week": hours, "race": race,
                          "sex": sex, "income": income})
    frame.loc[rng.choice(n, size=n // 50, replace=False), "workclass"] = None
    return frame


def loose_surrogate_table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Two groups where the sigmoid surrogate of demographic parity is loose: in group a the label is a
    large-margin function of x1 (scores far from 0, σ(f) ≈ 1{f > 0}), in group b the label is noise with
    P(yes) = 0.75 and x1 carries nothing (scores all near one small value). Equal mean σ(f) then leaves
    group b's exact positive rate near 0 or 1 while group a's is about one half."""
    rng = np.random.default_rng(seed)
    s = rng.choice(["a", "b"], n)
    a = s == "a"
    x1 = rng.normal(0, 3, n)
    y = np.where(a, x1 > 0, rng.random(n) < 0.75)
    x1 = np.where(a, x1, rng.normal(0, 0.05, n))
    return pd.DataFrame({"x1": x1, "x2": rng.normal(0, 1, n), "s": s, "y": np.where(y, "yes", "no")})
