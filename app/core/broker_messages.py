"""Which task messages the broker holds: the ids the reconciler (``worker.tasks.resend_lost_jobs``) compares
queued jobs against.

Redis (kombu's transport): a message waits in the list of its queue (one list per priority step,
``queue`` then ``queue\\x06\\x16<p>``) and, once a worker took it and until it is acknowledged, in the
``unacked`` hash; both hold the message JSON whose ``headers.id`` is the task id. Every key carries the
deployment's ``FAIRSOLVE_BROKER_KEY_PREFIX``. The lists are read before the hash: a message moves from the
first to the second, so one moving during the scan is still seen (bar the instant between kombu's pop and its
write to the hash, which at worst sends a duplicate that the delivery rules then drop or fence).

Other transports (the embedded SQLAlchemy one) cannot be read this way: None, and the reconciler waits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import redis
from kombu.transport.redis import Channel

from app.core.settings import get_settings

READ_BATCH = 1000  # list entries read per round trip


def live_task_ids(queues: Iterable[str]) -> set[str] | None:
    """Task ids of every message waiting in ``queues`` or delivered but not yet acknowledged; None when the
    broker is not Redis. Raises the client's error when Redis cannot be reached."""
    settings = get_settings()
    if not settings.broker_url.startswith(("redis://", "rediss://", "unix://")):
        return None
    prefix = settings.broker_key_prefix
    client = redis.Redis.from_url(settings.broker_url, socket_timeout=10, socket_connect_timeout=5)
    try:
        ids: set[str] = set()
        for queue in queues:
            for step in Channel.priority_steps:
                key = prefix + (f"{queue}{Channel.sep}{step}" if step else queue)
                start = 0  # to the list's end as it is read: messages pushed meanwhile shift the older ones on
                while chunk := client.lrange(key, start, start + READ_BATCH - 1):
                    ids.update(_task_id(raw) for raw in chunk)
                    start += READ_BATCH
        ids.update(_task_id(raw, delivered=True) for raw in client.hvals(prefix + Channel.unacked_key))
        ids.discard(None)
        return ids
    finally:
        client.close()


def _task_id(raw: bytes, delivered: bool = False) -> str | None:
    """The task id of one stored message (``[message, exchange, routing_key]`` once delivered)."""
    try:
        message = json.loads(raw)
        return (message[0] if delivered else message)["headers"]["id"]
    except (ValueError, KeyError, IndexError, TypeError):  # not a Celery task message: not ours
        return None
