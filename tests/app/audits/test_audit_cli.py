"""``fairsolve-admin audit run`` without a server: exit 0 when every threshold holds, 1 on a breach, 2 on bad
input; the audit model file round-trips the job's spec, encoder and weights."""

from __future__ import annotations

import json
import subprocess
import sys

from app.audits.model import AuditModel
from app.cli import main
from bench.common.datagen import planted_table
from bench.common.stack import ROOT


def test_model_file_round_trips(files):
    model = AuditModel.from_file(files / "model.safetensors")
    assert model.spec.target == "income" and model.job_id == "job-1" and model.groups == ["Female", "Male"]
    scored = model.score(planted_table(50, seed=2))
    assert scored.logits.shape == (50,) and set(scored.group_names) == {"Female", "Male"}


def test_exit_codes_pass_breach_and_bad_input(files, capsys):
    args = ["audit", "run", "--model", str(files / "model.safetensors"), "--data", str(files / "fresh.csv")]
    assert main([*args, "--metrics", '[{"type": "accuracy", "threshold": 0.0}]']) == 0
    assert "all thresholds hold" in capsys.readouterr().out
    (files / "metrics.json").write_text(json.dumps([{"type": "demographic_parity", "threshold": 0.0},
                                                    {"type": "psp", "interval": [0, 0.2], "threshold": 1.0}]))
    assert main([*args, "--metrics", str(files / "metrics.json"), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["breached"] == ["demographic_parity"] and report["n_rows"] == 300
    assert report["results"][1]["passed"] is True and len(report["results"][0]["ci"]) == 2
    assert main([*args, "--metrics", '[{"type": "nope"}]']) == 2
    assert "--metrics: 0.type" in capsys.readouterr().err
    plain = ["audit", "run", "--model", str(files / "plain.safetensors"), "--data", str(files / "fresh.csv")]
    assert main([*plain, "--metrics", "[]"]) == 2
    assert "audit-model" in capsys.readouterr().err


def test_console_command_exit_code(files):
    """The real process: a breach exits 1 and prints the table."""
    done = subprocess.run([sys.executable, "-m", "app.cli", "audit", "run", "--model", str(files / "model.safetensors"),
                           "--data", str(files / "fresh.csv"), "--metrics",
                           '[{"type": "equal_opportunity", "threshold": 0.0}]'],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "BREACHED: equal_opportunity" in done.stdout


def test_a_positive_label_that_never_occurs_is_refused(files):
    """Issue 19 #16: Adult's test file spells the labels ">50K." / "<=50K."; every row was negative and the audit
    passed with exit 0. The process exits 2 naming the field and a few of the values it found."""
    table = planted_table(300, seed=3)
    table["income"] = table["income"].astype(str) + "."
    table.to_csv(files / "dotted.csv", index=False)
    done = subprocess.run([sys.executable, "-m", "app.cli", "audit", "run", "--model", str(files / "model.safetensors"),
                           "--data", str(files / "dotted.csv"), "--metrics", '[{"type": "accuracy", "threshold": 0}]'],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout
    assert "positive_label: '>50K' does not occur in column 'income'" in done.stderr and "'>50K.'" in done.stderr
    assert done.stdout == ""
