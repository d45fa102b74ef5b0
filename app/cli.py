"""The ``fairsolve`` command line: key management against the configured database, and batch audits.

    fairsolve keys create --owner alice [--admin]   # prints the key once
    fairsolve keys list
    fairsolve keys revoke KEY_ID

It reads the same settings as the service (``DATABASE_URL``, ``FAIRSOLVE_HOME``) and needs
no running server. Subcommands register themselves in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from sqlalchemy import select

from app.auth import create_key, revoke
from app.db import session_scope
from app.models import ApiKey

COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {}


def command(name: str):
    def register(add: Callable[[argparse._SubParsersAction], None]):
        COMMANDS[name] = add
        return add
    return register


@command("keys")
def add_keys(sub: argparse._SubParsersAction) -> None:
    keys = sub.add_parser("keys", help="create, list and revoke API keys").add_subparsers(dest="action", required=True)
    create = keys.add_parser("create", help="create a key for an owner; the key is printed once")
    create.add_argument("--owner", required=True)
    create.add_argument("--admin", action="store_true", help="the key may manage keys")
    create.set_defaults(run=keys_create)
    keys.add_parser("list", help="list keys (never the keys themselves)").set_defaults(run=keys_list)
    rev = keys.add_parser("revoke", help="revoke a key by id")
    rev.add_argument("key_id")
    rev.set_defaults(run=keys_revoke)


def keys_create(args: argparse.Namespace) -> int:
    with session_scope() as db:
        row, key = create_key(db, args.owner, admin=args.admin)
        print(json.dumps({"id": row.id, "owner": row.owner, "admin": row.admin, "key": key}))
    return 0


def keys_list(args: argparse.Namespace) -> int:
    with session_scope() as db:
        for row in db.scalars(select(ApiKey).order_by(ApiKey.created_at)):
            state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
            print(f"{row.id}  {row.owner:<24} {row.hint}…  {'admin' if row.admin else 'user':<5}  {state}")
    return 0


def keys_revoke(args: argparse.Namespace) -> int:
    with session_scope() as db:
        row = db.get(ApiKey, args.key_id)
        if row is None:
            print(f"no key {args.key_id!r}", file=sys.stderr)
            return 2
        revoke(row)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fairsolve", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS.values():
        add(sub)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
