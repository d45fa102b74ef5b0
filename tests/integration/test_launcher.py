"""`make run`'s launcher: migrates, serves the API with a worker and beat, and Ctrl-C stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from tests.stack import ROOT, alive, descendants, free_port


def test_launcher_serves_and_ctrl_c_stops_everything(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "FAIRSOLVE_BOOTSTRAP_API_KEY")}
    env.update({"FAIRSOLVE_HOME": str(tmp_path), "PORT": str(port)})
    launcher = subprocess.Popen([sys.executable, "-m", "app.launcher"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            raise AssertionError("the launcher's API did not come up")
        assert (tmp_path / "fairsolve.db").exists()  # migrated the embedded database
        key_file = tmp_path / "admin.key"
        assert key_file.stat().st_mode & 0o077 == 0  # the printed admin key is readable by its owner only
        base = f"http://127.0.0.1:{port}/api/v1/datasets"
        assert httpx.get(base, timeout=5).status_code == 401
        headers = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
        assert httpx.get(base, headers=headers, timeout=5).json() == []
        time.sleep(2)  # let the worker and beat finish starting
        children = descendants(launcher.pid)
        assert len(children) >= 3  # api, worker (+ its pool), beat
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=40) == 0
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in children if alive(pid)]
    finally:
        if launcher.poll() is None:
            launcher.kill()
