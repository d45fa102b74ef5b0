"""The strict, bounded line reader of uploads, and the error every refused upload raises.

A CSV upload is read one physical line at a time; no line may be longer than ``MAX_LINE_BYTES``, so a file with one
huge line never sits in memory as a whole. Shared by the upload's parser (:mod:`app.datasets.storage`) and its
first-line check (:mod:`app.datasets.header_check`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

MAX_LINE_BYTES = 4 << 20  # one CSV line (a row, or one physical line of a quoted multi-line field)


class DatasetError(ValueError):
    """The uploaded file cannot be used; the message says why (answered as 422)."""


class TooLarge(DatasetError):
    """The upload is over the byte size limit (answered as 413)."""


def raw_lines(fh: BinaryIO, newline: bytes, max_line: int) -> Iterator[bytes]:
    """Physical lines of ``fh`` (ending kept), none longer than ``max_line`` bytes, read in blocks."""
    buf, n = bytearray(), 0
    while block := fh.read(1 << 16):
        scan_from = len(buf)
        buf += block
        start = 0
        while (end := buf.find(newline, max(start, scan_from))) >= 0:
            if end + 1 - start > max_line:
                break
            n += 1
            yield bytes(buf[start:end + 1])
            start = end + 1
        del buf[:start]
        if len(buf) > max_line:
            raise DatasetError(f"file: line {n + 1} is longer than the limit of {max_line} bytes")
    if buf:
        yield bytes(buf)


def text_lines(fh: BinaryIO, newline: bytes, max_line: int = MAX_LINE_BYTES) -> Iterator[str]:
    """Lines decoded one by one as UTF-8 (a BOM on the first is dropped); errors name the line."""
    for n, raw in enumerate(raw_lines(fh, newline, max_line), start=1):
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if b"\x00" in raw:
            raise DatasetError(f"file: NUL byte at line {n}: not a text CSV file")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"file: not UTF-8 text at line {n} (byte {exc.start} of the line); "
                               "upload CSV as UTF-8 or Parquet") from exc
