"""Cron schedules (five fields, UTC), parsed by ``cronsim``."""
from __future__ import annotations

from datetime import datetime, timezone

from cronsim import CronSim, CronSimError


def next_run(expression: str, after: datetime) -> datetime:
    """The first time strictly after ``after`` that ``expression`` matches (UTC); ValueError if invalid."""
    if after.tzinfo is None:
        after = after.replace(tzinfo=timezone.utc)
    try:
        return next(CronSim(expression, after.astimezone(timezone.utc)))
    except CronSimError as exc:
        raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None
    except StopIteration:
        raise ValueError(f"cron expression {expression!r} never matches") from None
