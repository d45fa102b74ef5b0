"""Inputs accepted once and failing later, or echoed whole (issue 31 item 9): seeds are bounded, a sweep point
listed twice is refused, look-alike and invisible column names are refused at upload, and a 422 echoes a bounded
amount of the input."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ValidationError

from app.datasets.column_names import column_name_problem
from app.main import create_app
from app.schemas import JobCreate
from app.datasets.storage import DatasetError, profile_upload
from app.sweeps.grid import GridError, SweepCreate, expand
from app.api.validation_answer import MAX_ECHO_CHARS, MAX_ERRORS

BASE = {"dataset_id": "d", "target": "y", "positive_label": 1, "sensitive": ["s"],
        "constraints": [{"type": "demographic_parity", "tolerance": 0.1}], "solver": {"name": "plada"}}


@pytest.mark.parametrize("spec", [{"split": {"seed": -1}}, {"seed": -1}, {"seed": 2**32}, {"split": {"seed": 2**64}}])
def test_a_seed_out_of_range_is_refused_naming_it(spec):
    with pytest.raises(ValidationError) as raised:
        JobCreate.model_validate({**BASE, **spec})
    assert raised.value.errors()[0]["loc"][-1] == "seed"
    assert JobCreate.model_validate({**BASE, "seed": 2**32 - 1, "split": {"seed": 0}}).seed == 2**32 - 1


@pytest.mark.parametrize("grid, loc", [
    ({"tolerances": [0.05, 0.1, 0.05]}, ("grid", "tolerances")),
    ({"seeds": [1, 2, 1]}, ("grid", "seeds")),
    ({"params": {"eta": [0.1, 0.1]}}, ("grid", "params", "eta")),
    ({"solvers": [{"name": "plada"}, {"name": "plada"}]}, ("grid", "solvers", 1)),
    ({"solvers": [{"name": "plada", "params": {"eta": 0.2}}, {"name": "plada", "params": {"eta": 0.3}}],
      "params": {"eta": [0.5]}}, ("grid", "solvers", 1)),  # the same job once the params grid is applied
])
def test_a_sweep_point_listed_twice_is_refused(grid, loc):
    with pytest.raises(GridError) as raised:
        expand(SweepCreate.model_validate({"base": BASE, "grid": grid}))
    assert raised.value.loc == loc and "twice" in raised.value.msg or "also solver" in raised.value.msg
    assert len(expand(SweepCreate.model_validate({"base": BASE, "grid": {"tolerances": [0.05, 0.1]}}))) == 3


@pytest.mark.parametrize("names, needle", [
    (["caf\u00e9", "cafe\u0301"], "look the same"),          # NFC and NFD of one word
    (["\ufb01le", "file"], "look the same"),                  # a ligature and its letters
    (["sex", "sex\u202e"], "U+202E"),                         # a right-to-left override
    (["age", "a\u200bge"], "U+200B"),                         # a zero-width space
])
def test_look_alike_and_invisible_column_names_are_refused(tmp_path, names, needle):
    assert needle in column_name_problem(names)
    path = tmp_path / "t.csv"
    pd.DataFrame({names[0]: [1, 2], names[1]: [3, 4], "y": [0, 1]}).to_csv(path, index=False)
    with pytest.raises(DatasetError, match=re.escape(needle)):
        profile_upload(path)
    assert column_name_problem(["café", "cafe", "Sex", "sex", "年齢"]) is None


class Body(BaseModel):
    name: int
    items: list[int] = []


def test_a_422_echoes_a_bounded_part_of_the_input():
    app = create_app()

    @app.post("/echo")
    def echo(body: Body) -> None:
        return None

    client = TestClient(app)
    huge = "x" * 1_500_000
    response = client.post("/echo", json={"name": huge, "items": ["a"] * 500, "y" * 10_000: 1})
    assert response.status_code == 422
    assert len(response.content) < 20_000, len(response.content)
    detail = response.json()["detail"]
    assert detail[0]["loc"] == ["body", "name"] and detail[0]["input"].startswith("x" * MAX_ECHO_CHARS + "…")
    assert len(detail) == MAX_ERRORS + 1 and "501 in all" in detail[-1]["msg"]
