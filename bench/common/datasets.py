"""Real datasets for benchmarks, read from ``FAIRSOLVE_DATA_DIR`` (default: ``../shared/datasets``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
                 "native-country", "income"]


def data_dir() -> Path:
    default = Path(__file__).resolve().parents[3] / "shared" / "datasets"
    return Path(os.environ.get("FAIRSOLVE_DATA_DIR", default))


def adult() -> pd.DataFrame:
    """UCI Adult training split (32,561 rows); ``?`` is a missing value."""
    return pd.read_csv(data_dir() / "adult.data", header=None, names=ADULT_COLUMNS, skipinitialspace=True,
                       na_values="?").dropna(how="all")


def bank() -> pd.DataFrame:
    """UCI Bank Marketing "additional" (``bank-additional-full.csv``, ``;``-separated, 41,188 rows x 21).

    Label ``y`` (``yes`` = subscribed, 4,640 rows); the usual sensitive attribute is ``age``
    (binarise with ``group_rules``, e.g. ranges {"25-60": [25, 61]}). Every column is kept as read;
    ``duration`` is only known after the call (the UCI notes advise dropping it for a realistic
    model): callers choose their ``features``.
    """
    return pd.read_csv(data_dir() / "bank-additional-full.csv", sep=";")


COMPAS_COLUMNS = ["sex", "age", "age_cat", "race", "juv_fel_count", "juv_misd_count", "juv_other_count",
                  "priors_count", "c_charge_degree", "two_year_recid"]


def compas() -> pd.DataFrame:
    """ProPublica COMPAS two-year recidivism, with ProPublica's own filter (6,172 of 7,214 rows):
    ``-30 <= days_b_screening_arrest <= 30``, ``is_recid != -1``, ``c_charge_degree != 'O'``,
    ``score_text != 'N/A'``.

    Columns kept (:data:`COMPAS_COLUMNS`): demographics ``sex``, ``age``, ``age_cat``, ``race``;
    criminal history ``juv_fel_count``, ``juv_misd_count``, ``juv_other_count``, ``priors_count``;
    ``c_charge_degree`` (F/M); label ``two_year_recid`` (1 = reoffended within two years).
    Dropped: identifiers, names, dates, case numbers, free-text charge descriptions, and everything
    known only after screening or produced by COMPAS itself (``decile_score``, ``score_text``,
    ``v_*``, ``is_recid``, ``r_*``, ``vr_*``, ``start``/``end``/``event``). The usual sensitive
    attribute is ``race`` (Caucasian vs not, via ``group_rules``).
    """
    raw = pd.read_csv(data_dir() / "compas-scores-two-years.csv")
    keep = (raw["days_b_screening_arrest"].between(-30, 30) & (raw["is_recid"] != -1)
            & (raw["c_charge_degree"] != "O") & (raw["score_text"] != "N/A"))
    return raw.loc[keep, COMPAS_COLUMNS].reset_index(drop=True)


def _libsvm(path: Path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols, labels = [], [], []
    with open(path) as fh:
        for i, line in enumerate(fh):
            parts = line.split()
            if not parts:
                continue
            labels.append(int(float(parts[0])))
            for item in parts[1:]:
                j = int(item.split(":")[0])
                rows.append(len(labels) - 1)
                cols.append(j - 1)
    X = np.zeros((len(labels), n_features), dtype=np.float32)
    X[np.asarray(rows), np.asarray(cols)] = 1.0
    return X, np.asarray(labels)


def a9a() -> dict:
    """LIBSVM a9a (train 32,561 / test 16,281 rows, 123 binary features); label +1 = income >50K.
    ``group`` = feature 72 (Female = 1, Male = 0)."""
    Xtr, ytr = _libsvm(data_dir() / "a9a", 123)
    Xte, yte = _libsvm(data_dir() / "a9a.t", 123)
    return {"X_train": Xtr, "y_train": (ytr > 0).astype("int64"), "group_train": Xtr[:, 71].astype("int64"),
            "X_test": Xte, "y_test": (yte > 0).astype("int64"), "group_test": Xte[:, 71].astype("int64"),
            "group_names": ["Male", "Female"]}


def bank_additional() -> pd.DataFrame:
    """The same table as :func:`bank` (kept as a name callers use)."""
    return bank()
