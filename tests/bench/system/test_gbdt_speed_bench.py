"""bench.system.gbdt_speed's summary: medians per side, their ratios, and whether both sides gave the same results."""
from __future__ import annotations

import pytest

from bench.system.gbdt_speed import medians


def job(side: str, wall: float, cpu: float, accuracy: float = 0.85, error: str | None = None) -> dict:
    return {"side": side, "dataset": "adult_sex", "method": "gbdt erm", "wall_s": wall, "cpu_s": cpu,
            "test_accuracy": accuracy, "test_gap": 0.1, "error": error}


def test_medians_ratios_and_equal_results():
    rows = [job("base", 4.0, 2.0), job("base", 6.0, 3.0), job("base", 5.0, 9.0),
            job("this", 2.0, 1.0), job("this", 3.0, 1.5), job("this", 2.5, 1.2)]
    (entry,) = medians(rows, ["adult_sex"], ["gbdt erm"])
    assert entry["base_wall_s"] == 5.0 and entry["this_wall_s"] == 2.5 and entry["wall_s_ratio"] == pytest.approx(0.5)
    assert entry["base_cpu_s"] == 3.0 and entry["cpu_s_ratio"] == pytest.approx(1.2 / 3.0)
    assert entry["same_results"] is True
    rows[-1] = job("this", 2.5, 1.2, accuracy=0.86)
    assert medians(rows, ["adult_sex"], ["gbdt erm"])[0]["same_results"] is False


def test_a_failed_job_or_a_missing_side_is_an_error_not_a_ratio():
    assert medians([job("base", 1, 1)], ["adult_sex"], ["gbdt erm"])[0]["error"] is True
    rows = [job("base", 1, 1), job("this", 1, 1, error="failed: boom")]
    assert medians(rows, ["adult_sex"], ["gbdt erm"])[0]["error"] is True
