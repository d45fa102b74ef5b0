"""The audit model file streamed from a job's weights (header rewritten, tensors copied) is the file the
refitting export built: same spec, encoder, groups and tensors, and it scores a table alike."""

from __future__ import annotations

import json

import numpy as np
import torch
from safetensors.torch import save_file

from app.audits.export import audit_file
from app.audits.model import AuditModel
from solvers import ProblemSpec, run
from tests.support.audits import SPEC
from bench.common.datagen import planted_table


def test_streamed_audit_file_equals_the_refitted_one(tmp_path):
    table = planted_table(500)
    out = run(table, ProblemSpec.model_validate(SPEC))
    weights = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in out.state_dict.items()}, str(weights), metadata={
        "job_id": "job-1", "groups": json.dumps(out.groups), "encoder": json.dumps(out.encoder)})
    job_spec = {**SPEC, "dataset_id": "d1"}

    streamed = audit_file("job-1", job_spec, weights)
    data = b"".join(streamed.chunks)
    assert len(data) == streamed.size and len(data) % 8 == weights.stat().st_size % 8
    (tmp_path / "streamed.safetensors").write_bytes(data)
    got = AuditModel.load_checked(tmp_path / "streamed.safetensors")
    want = AuditModel.from_job("job-1", job_spec, weights, table)
    assert got.spec == want.spec and got.groups == want.groups and got.job_id == "job-1"
    assert got.encoder.to_dict() == want.encoder.to_dict()
    assert got.state.keys() == want.state.keys() and all(torch.equal(got.state[k], want.state[k]) for k in got.state)
    fresh = planted_table(80, seed=4)
    np.testing.assert_array_equal(got.score(fresh).logits, want.score(fresh).logits)


def test_weights_without_an_encoder_are_not_streamed(tmp_path):
    weights = tmp_path / "old.safetensors"
    save_file({"w": torch.zeros(2)}, str(weights), metadata={"job_id": "old"})
    assert audit_file("old", SPEC, weights) is None
