"""The guarantee travels in job and sweep specs."""
import pytest
from pydantic import ValidationError

from app.schemas import JobCreate
from app.sweeps.grid import SweepCreate, expand

BASE = {"dataset_id": "d", "target": "income", "positive_label": ">50K", "sensitive": ["sex"],
        "constraints": [{"type": "demographic_parity", "tolerance": 0.05}], "guarantee": {"confidence": 0.9}}


def test_every_job_of_a_sweep_carries_the_guarantee():
    jobs = expand(SweepCreate.model_validate({"base": BASE, "grid": {"tolerances": [0.1, 0.05]}}))
    assert len(jobs) == 3 and all(j.spec.guarantee.confidence == 0.9 for j in jobs)


def test_a_bad_guarantee_names_the_field():
    with pytest.raises(ValidationError) as err:
        JobCreate.model_validate(BASE | {"guarantee": {"confidence": 1.5}})
    assert err.value.errors()[0]["loc"] == ("guarantee", "confidence")
    with pytest.raises(ValidationError, match="guarantee: needs a validation split"):
        JobCreate.model_validate(BASE | {"split": {"validation": 0}})
