"""worker.threads: a gbdt solve runs torch on FAIRSOLVE_GBDT_THREADS threads, other models on the process's."""

from __future__ import annotations

import torch

from solvers import ProblemSpec
from worker.threads import solve_threads


def spec(model: dict) -> ProblemSpec:
    return ProblemSpec.model_validate({"target": "y", "positive_label": 1, "sensitive": ["s"], "model": model,
                                       "solver": {"name": "erm"}})


def test_gbdt_solves_take_lightgbms_thread_count_and_give_the_process_its_own_back(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        monkeypatch.setenv("FAIRSOLVE_GBDT_THREADS", "2")
        with solve_threads(spec({"type": "gbdt"})):
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 3
        with solve_threads(spec({"type": "linear"})):
            assert torch.get_num_threads() == 3
        monkeypatch.delenv("FAIRSOLVE_GBDT_THREADS")
        try:
            with solve_threads(spec({"type": "gbdt"})):
                assert torch.get_num_threads() == 1
                raise RuntimeError("a failing solve")
        except RuntimeError:
            pass
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
