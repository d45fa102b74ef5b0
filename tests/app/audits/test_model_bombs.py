"""Audit model files built as bombs (issue 19.4) are refused from their header, before any weight, model or
feature matrix is allocated: a spec of huge hidden layers, an encoder of 100,000 categories, a model too large
for its encoder's width, a file storing too many weights."""
from __future__ import annotations

import json
import time
import tracemalloc

import numpy as np
import pytest
from safetensors.numpy import save_file

from app.audits.model import AuditModel, ModelError
from app.audits.model_file import FORMAT_KEY, FORMAT_VERSION

SPEC = {"target": "y", "positive_label": 1, "sensitive": ["s"], "model": {"type": "linear"}}


def model_file(path, spec=None, categories=3, tensors=None) -> None:
    encoder = {"columns": ["c"], "plan": [{"column": "c", "kind": "categorical",
                                           "categories": [f"v{i}" for i in range(categories)]}]}
    metadata = {FORMAT_KEY: FORMAT_VERSION, "spec": json.dumps(spec or SPEC), "encoder": json.dumps(encoder),
                "groups": "[]", "job_id": ""}
    save_file(tensors or {"net.weight": np.zeros((1, categories), np.float32)}, str(path), metadata=metadata)


@pytest.mark.parametrize("build, message", [
    (dict(spec={**SPEC, "model": {"type": "mlp", "hidden": [12000, 12000]}}), "less than or equal to 4096"),
    (dict(spec={**SPEC, "model": {"type": "mlp", "hidden": [4096, 4096]}}), "parameters (more than 10000000)"),
    (dict(spec={**SPEC, "model": {"type": "mlp", "hidden": [3000, 3000]}}, categories=5000), "more than 10000000"),
    (dict(categories=100_000), "the encoder is too wide"),
    (dict(tensors={"net.weight": np.zeros((1, 3), np.float32), "extra": np.zeros((10_000_001,), np.uint8)}),
     "stores 10000004 weights"),
])
def test_model_bombs_are_refused_before_allocating(tmp_path, build, message):
    path = tmp_path / "bomb.safetensors"
    model_file(path, **build)
    tracemalloc.start()
    started = time.process_time()
    try:
        with pytest.raises(ModelError) as err:
            AuditModel.load_checked(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message in str(err.value)
    assert time.process_time() - started < 2.0 and peak < 50 * 2 ** 20  # was 2.65 GB for the first shape


def test_a_model_within_the_caps_loads(tmp_path):
    path = tmp_path / "ok.safetensors"
    model_file(path, tensors={"net.weight": np.zeros((1, 3), np.float32), "net.bias": np.zeros((1,), np.float32)})
    assert AuditModel.load_checked(path).encoder.n_features == 3
