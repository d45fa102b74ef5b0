"""Schemathesis hooks of :mod:`bench.system.hostile` (loaded by the schemathesis CLI through ``SCHEMATHESIS_HOOKS``).

* ``before_call``: half of the requests get the ids of seeded resources in their path parameters (and job
  bodies their ``dataset_id``), so they reach past the 404s; a request that would revoke the run's own admin
  key revokes the seeded spare key instead (the stateful phase finds key ids in ``GET /keys``).
* ``after_call``: one JSON line per answer (operation, status, and for a 5xx the request as curl) appended
  to the tally file, which the bench counts.
"""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path

import schemathesis

SEEDS: dict = json.loads(Path(os.environ["FAIRSOLVE_HOSTILE_SEEDS"]).read_text())
PROTECTED: set[str] = set(SEEDS.pop("protected_key_ids", []))
TALLY = open(os.environ["FAIRSOLVE_HOSTILE_TALLY"], "a", buffering=1)  # noqa: SIM115 - open for the whole run
LOCK = threading.Lock()
RNG = random.Random(0)


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    with LOCK:
        pick = RNG.random()
        choice = RNG.random()
    params = case.path_parameters if isinstance(case.path_parameters, dict) else {}
    if pick < 0.5:
        for name in params:
            if name in SEEDS:
                params[name] = SEEDS[name][int(choice * len(SEEDS[name]))]
        if isinstance(case.body, dict) and "dataset_id" in case.body:
            case.body["dataset_id"] = SEEDS["dataset_id"][0]
    if params.get("key_id") in PROTECTED:
        params["key_id"] = SEEDS["key_id"][0]


@schemathesis.hook
def after_call(ctx, case, response):
    status = response.status_code
    line = {"op": f"{case.operation.method.upper()} {case.operation.path}", "status": status}
    if status >= 500:
        line["curl"] = case.as_curl_command()[:2000]
    with LOCK:
        TALLY.write(json.dumps(line) + "\n")
