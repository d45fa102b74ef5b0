"""How an upload is read: header row, column names and missing-value markers (stored with the dataset).

The options live in the dataset's ``read_options`` (with the sniffed ``delimiter``) and are applied by
every reader, so the profile, the spec check and the worker see the same table:

* ``header`` (default true): the first CSV line names the columns. With ``header: false`` the first
  line is data and the columns are named by ``column_names`` (else ``column_1`` … ``column_k``).
* ``column_names``: the columns' names, one per column of the file (replaces the header row when there
  is one). Names are stripped, non-empty, unique, at most :data:`MAX_NAME_CHARS` characters.
* ``delimiter``: the field separator; sniffed from the file when not given.
* ``missing_values``: cells equal to one of these markers (after the blank space after a delimiter is
  skipped) are missing; default :data:`DEFAULT_MISSING` (``?`` as in the UCI files, ``NA``, ``N/A``,
  empty, ...). For Parquet they apply to text columns (the format has its own nulls).

Datasets stored before these options existed have none of the keys and are read as before (pandas'
default markers, the header row).
"""
from __future__ import annotations

import json
from typing import Any

DEFAULT_MISSING = ("", "?", "NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "None", "#N/A", "<NA>")
MAX_MARKERS, MAX_MARKER_CHARS, MAX_NAME_CHARS = 50, 50, 255


class OptionError(ValueError):
    """A bad reading option; ``field`` names it (answered 422 with that field)."""

    def __init__(self, field: str, msg: str) -> None:
        super().__init__(f"{field}: {msg}")
        self.field, self.msg = field, msg


def _string_list(field: str, raw: str | list | None, max_items: int, max_chars: int) -> list[str] | None:
    """A JSON list of strings (or, in a form field, comma-separated text); bounded before it is parsed."""
    if raw is None:
        return None
    if isinstance(raw, str):
        if len(raw) > max_items * (max_chars + 8):
            raise OptionError(field, f"longer than {max_items} values of {max_chars} characters")
        text = raw.strip()
        try:
            raw = json.loads(text) if text.startswith("[") else text.split(",")
        except ValueError:
            raise OptionError(field, "not a JSON list of strings") from None
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise OptionError(field, "must be a list of strings")
    if len(raw) > max_items:
        raise OptionError(field, f"{len(raw)} values; the limit is {max_items}")
    if any(len(v) > max_chars for v in raw):
        raise OptionError(field, f"a value longer than {max_chars} characters")
    return raw


def parse_header(raw: str | bool | None) -> bool | None:
    if raw is None or isinstance(raw, bool):
        return raw
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise OptionError("header", f"must be true or false, not {raw[:20]!r}")


def parse_delimiter(raw: str | None) -> str | None:
    """One character separating a CSV file's fields (``\\t`` for a tab); None: sniffed from the file."""
    if raw is None or raw == "":
        return None
    value = "\t" if raw in ("\\t", "tab") else raw
    if len(value) != 1 or value in "\"\r\n\x00" or value.isalnum():
        raise OptionError("delimiter", f"must be one character that is not a letter, digit, quote or line end, "
                                       f"not {raw[:20]!r}")
    return value


def upload_options(header: str | bool | None = None, column_names: str | list | None = None,
                   missing_values: str | list | None = None, max_columns: int = 2000,
                   delimiter: str | None = None) -> dict[str, Any]:
    """The reading options an upload asked for, checked (:class:`OptionError` names the field)."""
    options: dict[str, Any] = {}
    if (sep := parse_delimiter(delimiter)) is not None:
        options["delimiter"] = sep
    parsed_header = parse_header(header)
    if parsed_header is not None:
        options["header"] = parsed_header
    names = _string_list("column_names", column_names, max_columns, MAX_NAME_CHARS)
    if names is not None:
        names = [n.strip() for n in names]
        if not names or any(not n for n in names):
            raise OptionError("column_names", "names must be non-empty")
        if len(set(names)) != len(names):
            dup = next(n for i, n in enumerate(names) if n in names[:i])
            raise OptionError("column_names", f"duplicate name {dup!r}")
        options["column_names"] = names
    markers = _string_list("missing_values", missing_values, MAX_MARKERS, MAX_MARKER_CHARS)
    options["missing_values"] = list(DEFAULT_MISSING) if markers is None else [m.strip() for m in markers]
    return options


def has_header(options: dict[str, Any]) -> bool:
    return bool(options.get("header", True))


def column_names(options: dict[str, Any], width: int) -> list[str] | None:
    """The names the columns get (None: the header row's): ``column_names``, or ``column_1`` … without a header."""
    names = options.get("column_names")
    if names is None and not has_header(options):
        names = [f"column_{j}" for j in range(1, width + 1)]
    return names


def csv_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """``pandas.read_csv`` arguments for the header, names and markers (empty for datasets without them)."""
    kwargs: dict[str, Any] = {}
    if not has_header(options):
        kwargs["header"] = None
    if options.get("column_names") is not None:
        kwargs["names"] = options["column_names"]
        kwargs["header"] = 0 if has_header(options) else None
    if "missing_values" in options:
        kwargs.update(na_values=list(options["missing_values"]), keep_default_na=False)
    return kwargs


def cache_key(options: dict[str, Any]) -> str:
    """The options that change the table read, as one hashable string."""
    return json.dumps({k: options.get(k) for k in ("delimiter", "lineterminator", "header", "column_names",
                                                   "missing_values")}, sort_keys=True)
