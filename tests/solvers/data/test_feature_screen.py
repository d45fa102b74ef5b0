"""solvers.feature_screen: identifiers, names, dates, constants, free text, target recodings and
leakage excluded with their reasons, on generated COMPAS-like data and on ProPublica's raw COMPAS file."""
import numpy as np
import pandas as pd
import pytest

from bench.common.datasets import data_dir
from solvers.feature_screen import screen_features
from bench.common.datagen import compas_like_table, planted_table

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
    # issue 30 item 2: the columns recorded after the outcome, each with a reason drawn from the data
    for column in ("r_days_from_arrest", "is_violent_recid", "vr_charge_degree", "vr_charge_desc", "event"):
        assert got[column] == ("excluded", "outcome_only"), column
    assert got["end"] == ("excluded", "dominant")
    assert {"decile_score", "c_days_from_compas", "days_b_screening_arrest", "start"} <= set(screen.kept)


@pytest.mark.skipif(not (data_dir() / "bank-full.csv").exists(), reason="the shared bank file is not there")
@pytest.mark.parametrize("file", ["bank-full.csv", "bank-additional-full.csv"])
def test_bank_duration_is_excluded_and_nothing_else(file):
    table = pd.read_csv(data_dir() / file, sep=";")
    screen = screen_features(table, "y", "yes", ["marital"])
    assert reasons(screen) == {"duration": ("excluded", "dominant")}
    assert "as well as all other columns together" in screen.notes[0]["detail"]


@pytest.mark.skipif(not (data_dir() / "adult.data").exists(), reason="the shared Adult file is not there")
def test_adult_keeps_every_column():
    from bench.common.datasets import adult

    table = adult()
    for seed in range(3):  # its strong legitimate predictors (relationship, capital gain) are not leaks
        assert screen_features(table, "income", ">50K", ["sex"], seed=seed).excluded == []


def test_adult_read_without_a_header_keeps_every_column():
    """A file read without a header gets generated names (column_1 … column_15): their shared word is the naming
    scheme, not a stem of the target's, so no column is excluded as "named like the target" (seen: column_1, age,
    excluded with AUC 0.71 through the service)."""
    from bench.common.datasets import adult

    from solvers.leakage import naming_words, shares_stem

    table = adult()
    table.columns = [f"column_{i + 1}" for i in range(table.shape[1])]
    assert naming_words(table.columns) == {"column"} and shares_stem("column_1", "column_15", {"column"}) is None
    assert shares_stem("is_violent_recid", "two_year_recid", naming_words(["is_violent_recid", "two_year_recid",
                                                                           "age", "sex", "race"])) == "recid"
    assert screen_features(table, "column_15", ">50K", ["column_10"], seed=0).excluded == []


def test_a_column_defined_only_for_positives_is_excluded():
    rng = np.random.default_rng(3)
    n = 4000
    x = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(int)
    later = np.where((y == 1) & (rng.random(n) < 0.4), rng.integers(1, 300, n), np.nan)  # days to the event
    table = pd.DataFrame({"x": x, "s": rng.integers(0, 2, n), "days_to_event": later,
                          "sometimes": np.where(rng.random(n) < 0.3, rng.normal(size=n), np.nan), "y": y})
    screen = screen_features(table, "y", 1, ["s"])
    assert reasons(screen) == {"days_to_event": ("excluded", "outcome_only")}
    assert "100 % of them with y = 1" in screen.notes[0]["detail"]


def test_a_column_named_like_the_target_is_excluded_when_it_predicts_it():
    rng = np.random.default_rng(4)
    n = 4000
    x = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-x))).astype(int)
    table = pd.DataFrame({"x": x, "s": rng.integers(0, 2, n),
                          "defaultFlag": np.where(rng.random(n) < 0.3, y, rng.integers(0, 2, n)),  # predicts it
                          "default_branch": rng.integers(0, 5, n),  # shares the word, predicts nothing
                          "loan_default": y})
    got = reasons(screen_features(table, "loan_default", 1, ["s"]))
    assert got == {"defaultFlag": ("excluded", "target_stem")}


def test_a_dominant_column_is_excluded_and_a_strong_shared_one_is_not():
    rng = np.random.default_rng(5)
    n = 5000
    a, b = rng.normal(size=n), rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(a + b)))).astype(int)
    table = pd.DataFrame({"a": a, "a_copy": a + 0.3 * rng.normal(size=n), "b": b, "s": rng.integers(0, 2, n),
                          "call_seconds": rng.gamma(2, 60, n) * np.where(y == 1, 4.0, 1.0), "y": y})
    screen = screen_features(table, "y", 1, ["s"])
    assert reasons(screen) == {"call_seconds": ("excluded", "dominant")}
    # without the leak, the strongest column (carried also by its noisy copy) stays
    assert screen_features(table.drop(columns="call_seconds"), "y", 1, ["s"]).excluded == []


def test_implausible_accuracy_warns_only_beyond_plausible():
    from solvers.leakage import implausible_accuracy

    assert implausible_accuracy({"roc_auc": 0.977, "balanced_accuracy": 0.91}).startswith(
        "the unconstrained model is implausibly accurate for this table (test AUC 0.977, balanced accuracy 0.910)")
    assert implausible_accuracy({"roc_auc": 0.9, "balanced_accuracy": 0.92}) is not None
    assert implausible_accuracy({"roc_auc": 0.90, "balanced_accuracy": 0.78}) is None  # Adult's
    assert implausible_accuracy({"roc_auc": None, "balanced_accuracy": None}) is None
    assert implausible_accuracy(None) is None


def test_held_out_auc_is_roc_auc():
    from sklearn.metrics import roc_auc_score

    from solvers.leakage import held_out_auc as _held_out_auc

    rng = np.random.default_rng(1)
    codes = rng.integers(0, 7, 400)
    y = (rng.random(400) < 0.3 + 0.08 * codes).astype(float)
    first = rng.random(400) < 0.5
    counts, sums = np.bincount(codes[first], minlength=7), np.bincount(codes[first], weights=y[first], minlength=7)
    rate = (sums + y[first].mean()) / (counts + 1)
    auc = roc_auc_score(y[~first], rate[codes[~first]])
    assert _held_out_auc(codes, y, first) == pytest.approx(max(auc, 1 - auc), abs=1e-12)


def test_a_stored_job_spec_with_its_screen_is_the_problem_spec():
    from app.schemas import problem_fields
    from solvers.spec import ProblemSpec

    stored = {"dataset_id": "d1", "target": "y", "positive_label": 1, "sensitive": ["s"], "features": ["x"],
              "feature_screen": [{"column": "id", "action": "excluded", "reason": "identifier", "detail": "..."}]}
    spec = ProblemSpec.model_validate(problem_fields(stored))
    assert spec.features == ["x"]
    with pytest.raises(ValueError):  # the API body itself still refuses unknown keys
        ProblemSpec.model_validate({k: v for k, v in stored.items() if k != "dataset_id"})
