"""A file whose quotes are all plain quoted fields (app.datasets.csv_quotes) is told from one with any other quote,
whatever the block size, and agrees with the csv module's strict reading on the files it accepts."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from app.datasets import csv_quotes
from app.datasets.csv_quotes import blank_after_delimiter, last_row_end, plain_quotes

PLAIN = {
    "none": b"a,b\n1,2\n",
    "every text quoted": b'"a","b"\n"x",1\n"y",2\n',
    "doubled quote": b'a,b\n"say ""hi""",1\n',
    "only a doubled quote": b'a,b\n"""",1\n',
    "empty quoted": b'a,b\n"",1\n',
    "line end inside": b'a,b\n"x\ny",1\n',
    "delimiter inside": b'a,b\n"x,y",1\n',
    "last field quoted at the end": b'a,b\n1,"z"',
    "semicolons": b'"age";"job"\n58;"management"\n44;"technician"\n',
    "crlf (UCI bank-additional)": b'"age";"y"\r\n56;"no"\r\n57;"yes"\r\n',
}
OTHER = {
    "text after a closing quote": b'a,b\n1,"x"y\n',
    "quote inside an unquoted field": b'a,b\nx"y,1\n',
    "blank before a quote": b'a,b\n1, "y"\n',
    "blank after a quote": b'a,b\n"x" ,1\n',
    "left open": b'a,b\n1,"xy\n',
    "bom before a quote": b'\xef\xbb\xbf"a",b\n1,2\n',
}


@pytest.mark.parametrize("block", [1, 2, 3, 5, 1 << 20])
def test_plain_quotes_are_told_from_the_others_at_any_block_size(block, monkeypatch):
    monkeypatch.setattr(csv_quotes, "BLOCK_BYTES", block)
    for name, body in PLAIN.items():
        assert plain_quotes(io.BytesIO(body), ";" if name == "semicolons" or "bank" in name else ",") == (True, name != "none"), name
    for name, body in OTHER.items():
        assert plain_quotes(io.BytesIO(body), ",")[0] is False, name


def test_on_random_files_plain_means_the_strict_csv_reading_reads_them(monkeypatch):
    """Random rows of quotes, delimiters, line ends and letters: every file called plain is read by the csv module's
    strict mode without error, and every file the csv module writes (any quoting) is called plain."""
    monkeypatch.setattr(csv_quotes, "BLOCK_BYTES", 4)
    rng = np.random.default_rng(5)
    alphabet = np.array(list('"",,\nab \r'))
    plain = 0
    for _ in range(3000):
        text = "".join(rng.choice(alphabet, int(rng.integers(1, 14))))
        if plain_quotes(io.BytesIO(text.encode()), ",")[0]:
            plain += 1
            list(csv.reader(io.StringIO(text, newline=""), strict=True))  # raises csv.Error if not
    assert plain > 300
    for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC):
        out = io.StringIO(newline="")
        writer = csv.writer(out, quoting=quoting, lineterminator="\n")
        writer.writerows([["a", 'b "c"', "x,y", "line\nend", 1.5, ""] for _ in range(50)])
        assert plain_quotes(io.BytesIO(out.getvalue().encode()), ",")[0], quoting


def test_a_delimiter_of_several_bytes_is_left_to_the_line_by_line_reading():
    assert plain_quotes(io.BytesIO('a€"b"\n'.encode()), "€") == (False, True)


def test_blank_space_after_a_delimiter_counts_outside_the_quotes_only():
    assert blank_after_delimiter(b"age, sex\n39, Male\n", ",")
    assert not blank_after_delimiter(b'city,n\n"Boston, MA",1\n', ",")
    assert blank_after_delimiter(b'city,n\n"Boston, MA", 1\n', ",")


def test_the_last_row_end_is_outside_the_quotes():
    head = b'a,b\n"x\ny",1\n"p\nq'
    assert head[:last_row_end(head)] == b'a,b\n"x\ny",1\n'
    assert last_row_end(b'"no\nend') == 0
