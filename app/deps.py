"""Injected dependencies: a database session per request, the settings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, TypeVar

from fastapi import Depends, HTTPException
from sqlalchemy.orm import Session

from app.db import session_factory
from app.models import Base
from app.settings import Settings, get_settings


def get_db() -> Iterator[Session]:
    session = session_factory()()
    try:
        yield session
    finally:
        session.close()


DB = Annotated[Session, Depends(get_db)]
AppSettings = Annotated[Settings, Depends(get_settings)]
T = TypeVar("T", bound=Base)


def get_or_404(db: Session, model: type[T], key: str, what: str) -> T:
    row = db.get(model, key)
    if row is None:
        raise HTTPException(status_code=404, detail=f"{what} {key!r} not found")
    return row
