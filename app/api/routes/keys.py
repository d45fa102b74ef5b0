"""API keys: created (the key shown once) and revoked by an admin key."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from app.auth.keys import create_key, revoke
from app.api.deps import DB, AdminCaller, caller_cache, find
from app.models import ApiKey
from app.core.strict_json import StrictJSONRoute

router = APIRouter(prefix="/api/v1/keys", tags=["keys"], route_class=StrictJSONRoute)


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    owner: str = Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]*$",
                       description="The account the key acts for; resources created with it belong to it.")
    admin: bool = Field(False, description="Whether the key may create and revoke keys.")


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    owner: str
    hint: str = Field(description="The key's first characters, to tell keys apart.")
    admin: bool
    created_at: datetime
    revoked_at: datetime | None


class KeyCreated(KeyOut):
    key: str = Field(description="The API key. It is shown only in this response; only its hash is stored.")


@router.post("", status_code=status.HTTP_201_CREATED, response_model=KeyCreated)
def create(body: KeyCreate, db: DB, caller: AdminCaller) -> dict:
    row, key = create_key(db, body.owner, admin=body.admin)
    return {**KeyOut.model_validate(row).model_dump(), "key": key}


@router.get("", response_model=list[KeyOut])
def list_keys(db: DB, caller: AdminCaller) -> list[ApiKey]:
    return list(db.scalars(select(ApiKey).order_by(ApiKey.created_at)))


@router.delete("/{key_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete(key_id: str, db: DB, caller: AdminCaller) -> None:
    """Revoke a key: every later request with it is 401. The row stays, for the record."""
    row = find(db, ApiKey, key_id)
    if row is None:
        raise HTTPException(status_code=404, detail=f"key {key_id!r} not found")
    revoke(row)
    db.commit()
    caller_cache().forget(row.id)
