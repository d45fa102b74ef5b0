"""Schemathesis against the running app's OpenAPI document on a real stack (PostgreSQL + Redis):
every operation, schema-valid (positive) and schema-violating (negative) requests, with the stack's
admin key. Half of the generated path ids (and job bodies' ``dataset_id``) are replaced by ids of
seeded resources (a dataset with a finished job, a deletable dataset, a sweep, a revocable key,
existing artifact and chart kinds) so that requests reach past the 404s.

Checks enabled: ``not_a_server_error`` (no 5xx); ``response_schema_conformance`` for answers below
400 (a success body matches its documented schema); ``problem_detail`` (every 4xx JSON body is an
object with a ``detail``: FastAPI's list of validation errors or a message naming the problem — the
document lists only the list form for 422 on most routes); ``response_headers_conformance``. After
the generated requests, every operation once more with NUL bytes in path ids, query and JSON body
(PostgreSQL refuses NUL in text). Not enabled: ``content_type_conformance`` (artifacts are
octet-stream, charts HTML on request, while the document lists JSON for them),
``status_code_conformance`` (401, 404, 409, 413 and 429 are answered but not listed in the document),
``positive_data_acceptance`` (schema-valid ids of missing resources are 404) and
``negative_data_rejection`` (free-form ``params`` objects accept what the schema cannot describe).
"""

from __future__ import annotations

import re
import time

import hypothesis.strategies as st
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_headers_conformance, response_schema_conformance

from bench.common.jobs import active_jobs, seed
from tests.support.jobs import FUZZ_RATE_LIMIT

pytestmark = pytest.mark.integration



@schemathesis.check
def success_schema_conformance(ctx, response, case):
    """``response_schema_conformance`` for answers below 400."""
    return response_schema_conformance(ctx, response, case) if response.status_code < 400 else None


@schemathesis.check
def problem_detail(ctx, response, case):
    """A 4xx JSON answer is ``{"detail": <message or list of errors>}``."""
    if 400 <= response.status_code < 500 and "json" in response.headers.get("content-type", [""])[0]:
        body = response.json()
        assert isinstance(body, dict) and isinstance(body.get("detail"), (str, list)) and body["detail"], \
            f"a {response.status_code} answer without a detail: {response.text[:200]}"
    return None


CHECKS = [not_a_server_error, success_schema_conformance, problem_detail, response_headers_conformance]
EXAMPLES = 15  # per operation and generation mode: 1,173 requests over 48 operations (25: 82 s on 2 cores)
MIN_REQUESTS = 1000
RATE = FUZZ_RATE_LIMIT / 2  # requests per second, under the shared stack's per-key limit


class Pacer:
    def __init__(self, rate: float) -> None:
        self.interval, self.next = 1 / rate, time.monotonic()

    def wait(self) -> None:
        now = time.monotonic()
        if now < self.next:
            time.sleep(self.next - now)
        self.next = max(now, self.next) + self.interval


def test_fuzz_all_operations(postgres_stack):
    seeds = seed(postgres_stack)
    schema = schemathesis.openapi.from_url(f"{postgres_stack.url}/openapi.json")
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {postgres_stack.admin_key}"
    pacer, sent, failures, operations = Pacer(RATE), [0], [], []
    before = active_jobs(postgres_stack)
    log = postgres_stack.home / "api.log"
    log_start = log.stat().st_size
    started = time.monotonic()

    for result in schema.get_all_operations():
        operation = result.ok()
        operations.append(operation.label)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @given(case=operation.as_strategy(generation_mode=mode), pick=st.integers(0, 1 << 16))
            @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                      phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
            def run(case, pick):
                if pick % 2 and isinstance(case.path_parameters, dict):
                    for name in case.path_parameters:
                        if name in seeds:
                            case.path_parameters[name] = seeds[name][pick % len(seeds[name])]
                if pick % 2 and isinstance(case.body, dict) and "dataset_id" in case.body:
                    case.body["dataset_id"] = seeds["dataset_id"][0]
                pacer.wait()
                response = case.call(session=session, timeout=30)
                sent[0] += 1
                try:
                    case.validate_response(response, checks=CHECKS)
                except (Exception, BaseExceptionGroup) as exc:  # collect every failure, no shrinking
                    what = " / ".join(line.strip() for line in str(exc).splitlines()[2:6] if line.strip())
                    failures.append(f"{operation.label} [{mode.value}]: {what}\n    {case.as_curl_command()}"[:1500])

            try:
                run()
            except Unsatisfiable:  # nothing to violate (no parameters, no body): positive mode covers it
                assert mode is GenerationMode.NEGATIVE, operation.label

    for operation in operations:  # NUL in every path id, query and JSON string (PostgreSQL refuses it in text)
        method, path = operation.split(" ", 1)
        pacer.wait()
        try:
            response = session.request(method, postgres_stack.url + re.sub(r"\{[^}]+\}", "nul%00id", path),
                                       params={"status": "\x00", "format": "\x00"}, timeout=30,
                                       json={"owner": "\x00", "dataset_id": "\x00", "name": "\x00"})
            status = response.status_code
        except requests.ConnectionError as exc:
            status = f"connection error {exc}"
        sent[0] += 1
        if not isinstance(status, int) or status >= 500:
            failures.append(f"{operation} with NUL bytes: {status}")
    elapsed = time.monotonic() - started
    print(f"fuzz: {sent[0]} requests over {len(operations)} operations in {elapsed:.1f} s, {len(failures)} failures")
    with postgres_stack.client() as client:  # jobs the fuzzer queued would keep the shared worker busy
        for job_id in active_jobs(postgres_stack) - before:
            client.post(f"/api/v1/jobs/{job_id}/cancel")
    kinds = sorted({f.split("\n")[0][:200] for f in failures})
    assert not failures, f"{len(failures)} failures, {len(kinds)} kinds:\n" + "\n".join(kinds) + "\n\n" + \
        "\n\n".join(failures[:10])
    assert sent[0] >= MIN_REQUESTS
    with open(log, "rb") as fh:
        fh.seek(log_start)
        assert b"unhandled error" not in fh.read()
