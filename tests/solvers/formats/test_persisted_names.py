"""Stored artefacts name no Python module, so moving a solvers module never orphans one.

A checkpoint (tensors + JSON scalars keyed by attribute names), a model's state_dict (post-processing wrappers
included) and an audit model file's metadata hold no class or module path; the catalog's implementation strings
are code, not data (the database stores solver and constraint NAMES), and each of them imports."""
import json

import torch
from safetensors import safe_open

from solvers import CONSTRAINTS, solve
from solvers.catalog import ALGORITHMS
from solvers.formats import checkpoint as ckpt
from solvers.models.factory import linear
from solvers.models.thresholded import GroupShift, ThresholdNet, restore_model
from tests.solvers.formats.test_checkpoint import problem
from tests.support.problems import CheckpointAt


def test_every_catalog_implementation_string_imports():
    for registry in (ALGORITHMS, CONSTRAINTS):
        for name in registry.names():
            entry = registry.entry(name)
            assert entry.implementation.startswith("solvers.")
            assert entry.load().entry is entry


def test_a_checkpoint_file_names_no_module(tmp_path):
    observer = CheckpointAt(3)
    solve(problem("linear"), {"name": "ssg", "params": {}}, observer, max_iterations=5, seed=1)
    path = tmp_path / "run.safetensors"
    ckpt.save(path, observer.saved)
    with safe_open(str(path), framework="pt") as fh:
        text = json.dumps(fh.metadata()) + " ".join(fh.keys())
    assert "sampler" in text or "batch" in text or "rng:torch" in text  # the file holds helper state by attribute
    assert "solvers." not in text and "__module__" not in text


def test_a_wrapped_state_names_no_module_and_restores():
    model = linear(3)
    model.net = ThresholdNet(GroupShift(model.net, 0, 0.5, 0.1), [0], [1e6], [[0.0], [1.0]], [[0.0], [1.0]], [0, 1],
                             [[0.1], [-0.2]], [[1.0], [1.0]], torch.ones(3, dtype=torch.float64))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert "net.base.omega" in state and not any("solvers" in key for key in state)
    restored = restore_model(linear(3), state)
    assert isinstance(restored.net, ThresholdNet) and isinstance(restored.net.base, GroupShift)
    x = torch.tensor([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5]])
    torch.testing.assert_close(restored(x), model(x))
