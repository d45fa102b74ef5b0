"""`make run`'s launcher: migrates, serves the API with a worker and beat, and Ctrl-C stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from bench.common.stack import ROOT, alive, answers, descendants, free_port
from bench.common.wait import wait_until


def test_launcher_serves_and_ctrl_c_stops_everything(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "FAIRSOLVE_BOOTSTRAP_API_KEY")}
    env.update({"FAIRSOLVE_HOME": str(tmp_path), "PORT": str(port)})
    launcher = subprocess.Popen([sys.executable, "-m", "app.launcher"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: answers(f"http://127.0.0.1:{port}/readyz"), 90, 0.3, "the launcher's API ready")
        assert (tmp_path / "fairsolve.db").exists()  # migrated the embedded database
        key_file = tmp_path / "admin.key"
        assert key_file.stat().st_mode & 0o077 == 0  # the printed admin key is readable by its owner only
        base = f"http://127.0.0.1:{port}/api/v1/datasets"
        assert httpx.get(base, timeout=5).status_code == 401
        headers = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
        assert httpx.get(base, headers=headers, timeout=5).json() == []
        # the five services started and both prefork workers forked their pools (booted): a SIGINT now is a clean stop
        wait_until(lambda: len(descendants(launcher.pid)) >= 7, 60, 0.2,
                   lambda: f"the launcher's services booted (processes: {len(descendants(launcher.pid))})")
        children = descendants(launcher.pid)
        assert len(children) >= 3  # api, worker (+ its pool), beat
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=40) == 0
        wait_until(lambda: not [pid for pid in children if alive(pid)], 10, 0.2,
                   lambda: f"the launcher's children gone (alive: {[pid for pid in children if alive(pid)]})")
    finally:
        if launcher.poll() is None:
            launcher.kill()
