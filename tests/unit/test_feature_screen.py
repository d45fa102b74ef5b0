"""solvers.feature_screen: identifiers, names, dates, constants, free text, target recodings and
leakage excluded with their reasons, on generated COMPAS-like data and on ProPublica's raw COMPAS file."""
import numpy as np
import pandas as pd
import pytest

from bench.datasets import data_dir
from solvers.feature_screen import screen_features
from tests.datagen import compas_like_table, planted_table

COMPAS = data_dir() / "compas-scores-two-years.csv"


def reasons(screen):
    return {n["column"]: (n["action"], n["reason"]) for n in screen.notes}


def test_compas_like_table():
    table = compas_like_table(1500, seed=1)
    screen = screen_features(table, "two_year_recid", 1, ["race"])
    assert reasons(screen) == {
        "id": ("excluded", "identifier"), "name": ("excluded", "identifier"), "dob": ("excluded", "date"),
        "compas_screening_date": ("excluded", "date"), "c_charge_desc": ("excluded", "free_text"),
        "type_of_assessment": ("excluded", "constant"), "is_recid": ("excluded", "near_duplicate")}
    assert screen.kept == ["sex", "age", "race", "priors_count"]
    leak = next(n for n in screen.notes if n["column"] == "is_recid")
    assert "predicts 'two_year_recid' alone with AUC" in leak["detail"]


def test_a_clean_table_keeps_everything_and_sensitive_columns_stay():
    table = planted_table(2000, seed=2)
    assert screen_features(table, "income", ">50K", ["sex"]).kept == [c for c in table.columns if c != "income"]
    table = table.assign(sex_copy=np.where(table["income"] == ">50K", "a", "b"))
    screen = screen_features(table, "income", ">50K", ["sex_copy"])  # named sensitive: kept even when it leaks
    assert "sex_copy" in screen.kept


def test_numeric_leak_with_many_values_is_leakage():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 3000)
    table = pd.DataFrame({"x": rng.normal(size=3000), "days_after": np.where(y == 1, rng.uniform(0, 100, 3000),
                                                                             rng.uniform(200, 900, 3000)),
                          "s": rng.integers(0, 2, 3000), "y": y})
    assert reasons(screen_features(table, "y", 1, ["s"])) == {"days_after": ("excluded", "leakage")}


@pytest.mark.skipif(not COMPAS.exists(), reason="the shared COMPAS file is not there")
def test_propublica_compas_as_published():
    table = pd.read_csv(COMPAS)
    screen = screen_features(table, "two_year_recid", 1, ["race"])
    got = reasons(screen)
    for column in ("id", "name", "first", "last", "c_case_number"):
        assert got[column] == ("excluded", "identifier"), column
    for column in ("dob", "compas_screening_date", "c_jail_in", "r_offense_date"):
        assert got[column] == ("excluded", "date"), column
    assert got["is_recid"][0] == "excluded" and got["is_recid"][1] in ("near_duplicate", "leakage")
    assert got["type_of_assessment"] == ("excluded", "constant") and got["c_charge_desc"][1] == "free_text"
    assert {"sex", "age", "race", "priors_count", "juv_fel_count", "c_charge_degree"} <= set(screen.kept)


def test_held_out_auc_is_roc_auc():
    from sklearn.metrics import roc_auc_score

    from solvers.feature_screen import _held_out_auc

    rng = np.random.default_rng(1)
    codes = rng.integers(0, 7, 400)
    y = (rng.random(400) < 0.3 + 0.08 * codes).astype(float)
    first = rng.random(400) < 0.5
    counts, sums = np.bincount(codes[first], minlength=7), np.bincount(codes[first], weights=y[first], minlength=7)
    rate = (sums + y[first].mean()) / (counts + 1)
    auc = roc_auc_score(y[~first], rate[codes[~first]])
    assert _held_out_auc(codes, y, first) == pytest.approx(max(auc, 1 - auc), abs=1e-12)
