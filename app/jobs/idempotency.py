"""``Idempotency-Key`` on ``POST /jobs`` and ``POST /sweeps``: a retried request gets the first response.

The record is written in the same transaction as the resources the request created, so a
request either created them and its record, or neither. A retry with the same key and the
same body is answered with the stored status and body (``Idempotent-Replayed: true``) and
queues nothing; the same key with a different body is a 422. Two concurrent first requests
race on the unique ``(owner, key)``: the loser rolls back and replays the winner's response. Any other
integrity error at commit (a row the request refers to was deleted meanwhile) is a 409, never a replay: a
request is answered from a record only when that record exists.

Any other POST of the API that carries the header is refused with a 400 naming it (:class:`RefuseUnhonoured`),
before authentication or its body is read: a retried upload, audit or model was created once per retry while
the client believed the key protected it. Cancels are idempotent by themselves and accept it.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated

from fastapi import Header, HTTPException
from fastapi.responses import JSONResponse
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.keys import Caller
from app.models import IdempotencyRecord

MAX_KEY_LENGTH = 255
KEY_CONSTRAINT = "uq_idempotency_owner_key"
IdempotencyKey = Annotated[str | None, Header(description="Retries with this key return the first response and "
                                                          "queue nothing new.")]


#: POST paths that honour the key (:class:`Submission`), or that are idempotent without it (a cancel).
HONOURED = re.compile(r"/api/v1/(jobs|sweeps)(/[^/]+/cancel)?/?")


class RefuseUnhonoured:
    """ASGI middleware: 400 for a POST under ``/api/v1/`` carrying ``Idempotency-Key`` where it is not honoured."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if (scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].startswith("/api/v1/")
                or HONOURED.fullmatch(scope["path"])
                or not any(name.lower() == b"idempotency-key" for name, _ in scope.get("headers") or ())):
            return await self.app(scope, receive, send)
        await JSONResponse({"detail": [{
            "loc": ["header", "Idempotency-Key"], "type": "value_error",
            "msg": "not honoured on this route (only POST /api/v1/jobs and /api/v1/sweeps replay a retry); "
                   "send the request without it"}]}, status_code=400)(scope, receive, send)


def request_digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def check_key(key: str | None) -> None:
    if key is not None and not (0 < len(key) <= MAX_KEY_LENGTH):
        raise HTTPException(status_code=422, detail=[{"loc": ["header", "Idempotency-Key"], "type": "value_error",
                                                      "msg": f"must be 1 to {MAX_KEY_LENGTH} characters"}])


def replay(db: Session, caller: Caller, key: str | None, route: str, digest: str) -> JSONResponse | None:
    """The stored response for this key, or None when the key is new (or absent)."""
    check_key(key)
    if key is None:
        return None
    record = db.scalar(select(IdempotencyRecord).where(IdempotencyRecord.owner == caller.owner,
                                                       IdempotencyRecord.key == key))
    if record is None:
        return None
    if record.route != route or record.request_sha256 != digest:
        raise HTTPException(status_code=422, detail=[{
            "loc": ["header", "Idempotency-Key"], "type": "value_error",
            "msg": "this key was already used for a different request"}])
    return JSONResponse(record.response, status_code=record.status_code, headers={"Idempotent-Replayed": "true"})


def lost_key_race(exc: IntegrityError) -> bool:
    """The violated constraint is the unique ``(owner, key)`` (PostgreSQL names it, SQLite names its columns)."""
    text = str(exc.orig)
    return KEY_CONSTRAINT in text or "idempotency_records.key" in text


class Submission:
    """One POST that may carry an ``Idempotency-Key``: replay a stored response, or commit a new one."""

    def __init__(self, db: Session, caller: Caller, key: str | None, route: str, body: dict) -> None:
        self.db, self.caller, self.key, self.route = db, caller, key, route
        self.digest = request_digest(body)

    def replayed(self) -> JSONResponse | None:
        return replay(self.db, self.caller, self.key, self.route, self.digest)

    def commit(self, status_code: int, response: dict) -> JSONResponse | None:
        """Commit the session's new rows with the record; on a lost race, the winner's response."""
        if self.key is not None:
            self.db.add(IdempotencyRecord(owner=self.caller.owner, key=self.key, route=self.route,
                                          request_sha256=self.digest, status_code=status_code, response=response))
        try:
            self.db.commit()
        except IntegrityError as exc:
            self.db.rollback()
            if self.key is not None and lost_key_race(exc):
                if (winner := self.replayed()) is not None:  # a concurrent request with the same key won
                    return winner
            raise HTTPException(status_code=409, detail="a resource this request refers to was changed or deleted "
                                                        "while it was stored; nothing was created") from exc
        return None
