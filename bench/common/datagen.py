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


def compas_like_table(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """A COMPAS-like table as users bring it: an id, names, dates, a constant, free-text charges and
    ``is_recid``, which leaks the label ``two_year_recid`` (every two-year reoffender has it, and a few others)."""
    rng = np.random.default_rng(seed)
    race = rng.choice(["African-American", "Caucasian", "Hispanic"], size=n, p=[0.5, 0.35, 0.15])
    sex = rng.choice(["Male", "Female"], size=n, p=[0.8, 0.2])
    age = rng.integers(18, 70, size=n)
    priors = rng.poisson(3, size=n)
    logit = -0.5 + 0.25 * priors - 0.03 * (age - 35) + 0.3 * (race == "African-American")
    label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    is_recid = np.where(label == 1, 1, (rng.random(n) < 0.05).astype(int))
    days = rng.integers(0, 700, size=n)
    screening = (pd.Timestamp("2013-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d")
    dob = (pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 18000, size=n), unit="D")).strftime("%Y-%m-%d")
    verbs = np.array(["Battery", "Possession of", "Grand Theft", "Driving Under", "Resist Officer", "Burglary"])
    objects = np.array(["Cocaine", "Cannabis", "a Motor Vehicle", "the Influence", "without Violence", "Dwelling"])
    charge = np.char.add(np.char.add(verbs[rng.integers(0, 6, n)], " "), objects[rng.integers(0, 6, n)])
    charge = np.char.add(charge, np.char.add(" count ", rng.integers(1, 20, n).astype(str)))
    return pd.DataFrame({
        "id": rng.permutation(n) + 1, "name": np.char.add("person ", rng.permutation(n).astype(str)),
        "dob": dob, "compas_screening_date": screening, "sex": sex, "age": age, "race": race,
        "priors_count": priors, "c_charge_desc": charge, "type_of_assessment": "Risk of Recidivism",
        "is_recid": is_recid, "two_year_recid": label})
