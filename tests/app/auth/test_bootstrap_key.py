"""The bootstrap admin key (issue 19.1): no weak key anywhere, none missing outside the embedded defaults."""
from __future__ import annotations

import secrets

import pytest

from app.auth.keys import bootstrap_key_problem, new_key


@pytest.mark.parametrize("key, embedded, problem", [
    (None, False, "is not set"),
    ("", False, "is not set"),
    ("change-me", True, "too short"),
    ("change-me", False, "too short"),
    ("a" * 64, True, "too weak"),
    ("abcabcabcabcabcabcabcabcabcabcabcabc", False, "too weak"),
    ("correct horse battery staple 0123456789", False, "spaces"),
    ("fsk_" + "\x00" * 40, False, "non-printable"),
    ("fsk_é" + "3cc851b9126a204fc855a5ab5840d85e1898fabe", False, "non-ASCII"),
])
def test_weak_or_missing_keys_are_refused(key, embedded, problem):
    assert problem in bootstrap_key_problem(key, embedded)


def test_generated_keys_pass_and_missing_is_fine_on_the_embedded_defaults():
    assert bootstrap_key_problem(None, embedded=True) is None
    assert bootstrap_key_problem(new_key(), embedded=False) is None
    assert bootstrap_key_problem(secrets.token_urlsafe(32), embedded=False) is None
    assert bootstrap_key_problem(f"fsk_test_{secrets.token_hex(16)}", embedded=False) is None  # the test stacks'


def test_make_run_refuses_a_weak_key_before_starting_anything(tmp_path):
    import os
    import subprocess
    import sys

    from bench.common.stack import ROOT

    env = {**{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")},
           "FAIRSOLVE_HOME": str(tmp_path), "FAIRSOLVE_BOOTSTRAP_API_KEY": "change-me"}
    out = subprocess.run([sys.executable, "-m", "app.launcher"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and "refusing to start: FAIRSOLVE_BOOTSTRAP_API_KEY is too short" in out.stderr
    assert not (tmp_path / "fairsolve.db").exists()  # not even migrated
