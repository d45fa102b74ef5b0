"""Real datasets for benchmarks, read from ``FAIRSOLVE_DATA_DIR`` (default: ``../shared/datasets``)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
                 "native-country", "income"]


def data_dir() -> Path:
    default = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    return Path(os.environ.get("FAIRSOLVE_DATA_DIR", default))


def adult() -> pd.DataFrame:
    """UCI Adult training split (32,561 rows); ``?`` is a missing value."""
    return pd.read_csv(data_dir() / "adult.data", header=None, names=ADULT_COLUMNS, skipinitialspace=True,
                       na_values="?").dropna(how="all")
