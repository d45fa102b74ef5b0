r"""Whether a CSV file's quotes are all plain quoted fields, so that Arrow's reader, pandas and the ``csv`` module's
strict reading split it into the same fields (:func:`app.datasets.storage.arrow_csv_profile` reads such a file
with Arrow; any other is checked line by line, which names the line of a malformed one).

Numbered in file order, the quotes of such a file alternate: quote 2k opens a field, quote 2k + 1 closes it (a
doubled quote inside a field is a close followed at once by an open). So:

* an opening quote follows a delimiter, a line end (``\n`` or ``\r``), the file's start or the quote before it;
* a closing quote precedes a delimiter, a line end (``\n``, ``\r``: all three readers end a row at either, and
  at ``\r\n``), the file's end or the quote after it;
* there is an even number of quotes.

Between two quotes the file is then either inside one field (no quote there: every byte is literal) or between
fields (no quote: delimiters and line ends split as in an unquoted file), which is how all three readers read it.
Files this declines although the ``csv`` module reads them: a quote inside an unquoted field (``x"y``), blank space
around a quoted field (``, "y"``), a BOM before a quoted first field. Text after a closing quote
(``"x"y``, which pandas and Arrow read as ``xy``) and a quote left open are declined too, and refused by the line
check. One pass over the file in blocks, vectorised within each (numpy over the bytes and the quotes' neighbours).
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

QUOTE = ord('"')
NEWLINE = ord("\n")
RETURN = ord("\r")
BLOCK_BYTES = 1 << 20  # per block at most 8 bytes of positions per byte read: 1 MiB bounds them to 8 MiB


def plain_quotes(fh: BinaryIO, delimiter: str) -> tuple[bool, bool]:
    """(whether every quote of the file is part of a plain quoted field (module docstring), whether it has any). A
    delimiter of more than one byte in UTF-8 answers (False, True): such a file is read line by line."""
    if len(delimiter.encode()) != 1:
        return False, True
    bound = np.zeros(256, dtype=bool)   # the bytes a quote may follow (an opening one) or precede (a closing one)
    bound[[ord(delimiter), NEWLINE, RETURN, QUOTE]] = True
    fh.seek(0)
    seen = 0              # quotes before this block
    before = NEWLINE      # the byte before this block (the file's start reads as a line end)
    closing_last = False  # the previous block ended with a closing quote: this block's first byte must bound it
    while block := fh.read(BLOCK_BYTES):
        data = np.frombuffer(block, dtype=np.uint8)
        if closing_last and not bound[data[0]]:
            return False, True
        at = np.flatnonzero(data == QUOTE)
        opens, closes = (at[0::2], at[1::2]) if seen % 2 == 0 else (at[1::2], at[0::2])
        if len(opens) and opens[0] == 0:
            if not bound[before]:
                return False, True
            opens = opens[1:]
        if not bound[data[opens - 1]].all():
            return False, True
        closing_last = bool(len(closes)) and closes[-1] == len(data) - 1
        if not bound[data[closes[:-1] + 1 if closing_last else closes + 1]].all():
            return False, True
        seen += len(at)
        before = data[-1]
    return seen % 2 == 0, seen > 0


def blank_after_delimiter(head: bytes, delimiter: str) -> bool:
    """Whether a delimiter outside the quoted fields of ``head`` (quotes plain) is followed by a space: the UCI
    files' ``39, Male``, which pandas' ``skipinitialspace`` reads as ``Male`` and Arrow as `` Male``. A quoted
    ``"Boston, MA"`` is text, as every reader reads it."""
    data = np.frombuffer(head, dtype=np.uint8)
    at = np.flatnonzero((data[:-1] == ord(delimiter)) & (data[1:] == ord(" ")))
    return bool((np.searchsorted(np.flatnonzero(data == QUOTE), at) % 2 == 0).any())


def last_row_end(head: bytes) -> int:
    """The length of ``head`` up to its last line end outside a quoted field (quotes plain, module docstring), 0
    when there is none."""
    data = np.frombuffer(head, dtype=np.uint8)
    ends = np.flatnonzero(data == NEWLINE)
    quotes_before = np.searchsorted(np.flatnonzero(data == QUOTE), ends)
    outside = ends[quotes_before % 2 == 0]
    return int(outside[-1]) + 1 if len(outside) else 0
