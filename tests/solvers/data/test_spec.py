import pandas as pd
import pytest
from pydantic import ValidationError

from solvers import ConstraintSpec, GroupRule, ProblemSpec, SolverSpec, SpecError, check_spec_against_table


def test_unknown_constraint_type():
    with pytest.raises(ValidationError, match="unknown constraint type 'parity'"):
        ConstraintSpec(type="parity", tolerance=0.1)


def test_bad_constraint_field_is_named():
    with pytest.raises(ValidationError, match="surrogate"):
        ConstraintSpec(type="demographic_parity", tolerance=0.1, surrogate="cubic")
    with pytest.raises(ValidationError, match="bogus"):
        ConstraintSpec(type="equalized_odds", tolerance=0.1, bogus=1)
    ok = ConstraintSpec(type="eo", tolerance=0.1, aggregate="separate").build()
    assert ok.names == ["equalized_odds[tpr]", "equalized_odds[fpr]"]


def test_unknown_solver_and_bad_param():
    with pytest.raises(ValidationError, match="unknown solver 'adamw'"):
        SolverSpec(name="adamw")
    with pytest.raises(ValidationError, match="etta"):
        SolverSpec(name="plada", params={"etta": 0.1})
    with pytest.raises(ValidationError, match="eta"):
        SolverSpec(name="plada", params={"eta": -1})
    assert SolverSpec(name="PLADA", params={"eta": 0.5}).config().eta == 0.5


TABLE = pd.DataFrame({
    "income": [" >50K", "<=50K", ">50K", "<=50K"], "sex": ["F", "M", "F", "M"],
    "age": [20, 30, 40, 50], "job": ["a", "b", "c", "a"], "const": ["x", "x", "x", "x"],
})


def _spec(**kw):
    base = dict(target="income", positive_label=">50K", sensitive=["sex"])
    return ProblemSpec(**(base | kw))


@pytest.mark.parametrize("kw,loc", [
    (dict(target="salary"), ("target",)),
    (dict(sensitive=["sex", "gender"]), ("sensitive", 1)),
    (dict(features=["age", "height"]), ("features", 1)),
    (dict(positive_label="high"), ("positive_label",)),
    (dict(sensitive=["const"]), ("sensitive", 0)),
    (dict(sensitive=["job"], group_rules={"job": GroupRule(ranges={"lo": (None, 1)})}), ("group_rules", "job", "ranges")),
    (dict(target="const", positive_label="x"), ("target",)),
])
def test_check_spec_against_table_locs(kw, loc):
    with pytest.raises(SpecError) as info:
        check_spec_against_table(_spec(**kw), TABLE)
    assert info.value.loc == loc and info.value.msg


def test_valid_spec_passes_and_label_match_is_stripped():
    check_spec_against_table(_spec(), TABLE)
    check_spec_against_table(_spec(target="age", positive_label=20), TABLE.assign(age=["20", "30", "20", "30"]))
