"""``fairsolve-admin``, the operator's command line: API keys against the configured database, and batch audits.

    fairsolve-admin keys create --owner alice [--admin]   # prints the key once
    fairsolve-admin keys list
    fairsolve-admin keys revoke KEY_ID

It reads the same settings as the service (``DATABASE_URL``, ``FAIRSOLVE_HOME``) and needs
no running server. Subcommands register themselves in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from sqlalchemy import select

from app.auth.keys import create_key, revoke
from app.core.db import session_scope
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
    create.set_defaults(run=keys_create, database=True)
    keys.add_parser("list", help="list keys (never the keys themselves)").set_defaults(run=keys_list, database=True)
    rev = keys.add_parser("revoke", help="revoke a key by id")
    rev.add_argument("key_id")
    rev.set_defaults(run=keys_revoke, database=True)


HOME_HINT = ("set FAIRSOLVE_HOME to the service's home folder (the .fairsolve folder `make run` made, holding "
             "fairsolve.db) or DATABASE_URL")


def locate_database() -> str | None:
    """Point the settings at the service's database; None when found, else what to set, in one line.

    ``DATABASE_URL`` is used as given. Otherwise the embedded database ``fairsolve.db`` is looked for in
    ``FAIRSOLVE_HOME`` when set, else in ``./.fairsolve``, the parent folders' ``.fairsolve`` and the project's
    own (where ``make run`` keeps it); the first found becomes ``FAIRSOLVE_HOME``. Nothing is created: run outside
    the project, the command used to make an empty ``.fairsolve`` there and fail on its missing tables."""
    import os
    from pathlib import Path

    from app.core.settings import get_settings

    if os.environ.get("DATABASE_URL"):
        return None
    if os.environ.get("FAIRSOLVE_HOME"):
        home = Path(os.environ["FAIRSOLVE_HOME"]).expanduser()
        return None if (home / "fairsolve.db").is_file() else f"FAIRSOLVE_HOME={home} holds no fairsolve.db; {HOME_HINT}"
    here = Path.cwd().resolve()
    project = Path(__file__).resolve().parent.parent
    for folder in (here, *here.parents, project):
        if (folder / ".fairsolve" / "fairsolve.db").is_file():
            os.environ["FAIRSOLVE_HOME"] = str(folder / ".fairsolve")
            get_settings.cache_clear()
            return None
    return f"no FairSolve database found in {here} or its parents: {HOME_HINT}"


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


AUDIT_HELP = """Audit a model on a table without a server; prints the report, exits 1 on a breach, 0 otherwise
(2: bad input, such as a label column in which the model's positive label never occurs). --model is an
audit model file: a job's weights with its spec and fitted encoder in the safetensors metadata, from
GET /api/v1/jobs/{job_id}/audit-model (a plain weights artifact lacks the encoder and is refused).
--metrics is a JSON list of {type, threshold, ...} (or a file holding it); types as in
GET /api/v1/audits/metrics. CIs: the rate gaps (demographic_parity, equal_opportunity, equalized_odds) exact
Clopper-Pearson, as a job's fairness report; the other metrics 200 bootstrap resamples, seed 0. Instead of --model,
--predictions audits a
prediction log: the data already holds the model's output, named by a JSON object (or a file holding it)
{"score_column" | "prediction_column", "threshold", "score_scale", "label_column", "positive_label",
"sensitive"} as in POST /api/v1/audits. With --format json the report holds its score_summary; --reference
takes such an earlier report, and the drift metrics (score_ks, score_psi) compare with it (as previous and
baseline run alike); without it they have no value."""


@command("audit")
def add_audit(sub: argparse._SubParsersAction) -> None:
    audit = sub.add_parser("audit", help="batch audits of a model").add_subparsers(dest="action", required=True)
    run = audit.add_parser("run", help="audit a model on a CSV / Parquet file", description=AUDIT_HELP)
    model = run.add_mutually_exclusive_group(required=True)
    model.add_argument("--model", help="audit model file (.safetensors) of a job")
    model.add_argument("--predictions", help="prediction log columns: a JSON object, or a file holding it")
    run.add_argument("--data", required=True, help="CSV or Parquet file with the model's columns and the label")
    run.add_argument("--metrics", required=True, help="JSON list of {type, threshold, ...}, or a file holding it")
    read = run.add_argument_group("reading --data (CSV), as the API's upload options")
    read.add_argument("--header", choices=("true", "false"), help="whether the first line names the columns "
                      "(default: it does, unless it looks like data)")
    read.add_argument("--column-names", help="the columns' names: a JSON list or comma-separated")
    read.add_argument("--missing-values", help="cells read as missing: a JSON list or comma-separated")
    read.add_argument("--sep", "--delimiter", dest="delimiter", help="field separator (\\t for a tab; default: sniffed)")
    run.add_argument("--format", choices=("table", "json"), default="table")
    run.add_argument("--reference", help="an earlier --format json report: the drift metrics compare with it")
    run.set_defaults(run=audit_run)


def audit_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pydantic import TypeAdapter, ValidationError

    from app.audits.drift import compare, summarise
    from app.audits.logs import PredictionLog
    from app.audits.metrics import MetricSpec
    from app.audits.model import AuditModel, ModelError
    from app.audits.report import evaluate, format_table
    from app.datasets.read_options import OptionError, upload_options
    from app.datasets.storage import DatasetError, read_upload
    from solvers import SpecError

    try:
        option = "--metrics"
        specs = TypeAdapter(list[MetricSpec]).validate_json(_inline_or_file(args.metrics, "["))
        if args.predictions is not None:
            option = "--predictions"
            model = PredictionLog.model_validate_json(_inline_or_file(args.predictions, "{"))
            refused = model.refusal(specs)
            if refused is not None:
                print(f"--predictions: {refused[0]}: {refused[1]}", file=sys.stderr)
                return 2
        else:
            model = AuditModel.from_file(Path(args.model))
        reference = _reference(Path(args.reference)) if args.reference else None
        asked = upload_options(args.header, args.column_names, args.missing_values, delimiter=args.delimiter)
        table = read_upload(Path(args.data), asked=asked)
        for warning in table.attrs.get("warnings", []):
            print(f"fairsolve-admin audit run: --data: {warning['message']}", file=sys.stderr)
        scored = model.score(table)
        summary = summarise(scored)
        drift = compare(summary, reference, args.reference)
        report = evaluate(specs, scored, drift={"previous": drift, "baseline": drift})
    except OptionError as exc:
        print(f"--{exc.field.replace('_', '-').replace('delimiter', 'sep')}: {exc.msg}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        first = exc.errors()[0]
        print(f"{option}: {'.'.join(map(str, first['loc']))}: {first['msg']}", file=sys.stderr)
        return 2
    except (ModelError, DatasetError, SpecError, OSError, ValueError) as exc:
        print(f"fairsolve-admin audit run: {exc}", file=sys.stderr)
        return 2
    report["n_rows"] = len(table)
    if args.format == "json":
        report["score_summary"] = summary
    print(json.dumps(report, indent=2) if args.format == "json" else format_table(report))
    return 1 if report["breached"] else 0

def _reference(path) -> dict:
    """The score summary of an earlier ``--format json`` report (ValueError when the file holds none)."""
    report = json.loads(path.read_text())
    if not isinstance(report, dict) or not isinstance(report.get("score_summary"), dict):
        raise ValueError(f"--reference: {path} is not a --format json report with a score_summary")
    return report["score_summary"]


def _inline_or_file(value: str, opener: str) -> str:
    from pathlib import Path

    return value if value.lstrip().startswith(opener) else Path(value).read_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fairsolve-admin", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in COMMANDS.values():
        add(sub)
    args = parser.parse_args(argv)
    if getattr(args, "database", False):
        from sqlalchemy.exc import DBAPIError

        if (problem := locate_database()) is not None:
            print(f"fairsolve: {problem}", file=sys.stderr)
            return 2
        try:
            return args.run(args)
        except DBAPIError as exc:  # unreachable, not migrated, ...: one line, not a traceback
            reason = str(exc.orig).strip().splitlines()[0][:200] if exc.orig is not None else type(exc).__name__
            print(f"fairsolve: the database cannot be used ({reason}); {HOME_HINT}, and run the migrations "
                  "(alembic upgrade head)", file=sys.stderr)
            return 2
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
