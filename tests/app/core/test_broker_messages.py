"""The reconciler's view of the broker: task ids waiting in a queue's lists or delivered and unacknowledged,
read from a real Redis under the deployment's key prefix (kombu's layout)."""
from __future__ import annotations

import json
import uuid

import pytest
import redis
from kombu.transport.redis import Channel

from app.core.settings import get_settings
from bench.common.stack import REDIS_URL
from app.core.broker_messages import live_task_ids


@pytest.fixture
def broker(monkeypatch):
    prefix = f"bm-{uuid.uuid4().hex[:8]}:"
    monkeypatch.setenv("CELERY_BROKER_URL", REDIS_URL)
    monkeypatch.setenv("FAIRSOLVE_BROKER_KEY_PREFIX", prefix)
    get_settings.cache_clear()
    client = redis.Redis.from_url(REDIS_URL)
    yield client, prefix
    for key in client.keys(f"{prefix}*"):
        client.delete(key)
    get_settings.cache_clear()


def message(task_id: str) -> str:
    return json.dumps({"body": "", "headers": {"id": task_id, "task": "fairsolve.run_job"}, "properties": {}})


def test_waiting_and_unacked_messages_are_live(broker):
    client, prefix = broker
    client.lpush(f"{prefix}cpu", *[message(f"job{i}-1") for i in range(2500)])  # more than one read batch
    client.lpush(f"{prefix}cpu{Channel.sep}6", message("urgent-1"))
    client.lpush(f"{prefix}gpu", message("gpu-1"), "not json")
    client.hset(f"{prefix}unacked", "tag", json.dumps([json.loads(message("running-2")), "", "cpu"]))
    client.lpush("cpu", message("another-deployment-1"))  # no prefix: not ours
    try:
        live = live_task_ids(["cpu", "gpu"])
    finally:
        client.delete("cpu")
    assert live == {f"job{i}-1" for i in range(2500)} | {"urgent-1", "gpu-1", "running-2"}
    assert live_task_ids(["cpu"]) >= {"running-2"} and "gpu-1" not in live_task_ids(["cpu"])


def test_a_broker_that_cannot_be_read_answers_none(monkeypatch):
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("BROKER_URL", raising=False)
    get_settings.cache_clear()
    try:
        assert live_task_ids(["cpu"]) is None  # the embedded SQLAlchemy transport
    finally:
        get_settings.cache_clear()
