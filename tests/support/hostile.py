"""Hostile dataset uploads, generated: each case is the bytes of one file, the status the API must
answer and a pattern its ``detail`` must match (naming the problem: the line for CSV, the limit for sizes).

``LIMITS`` are the server limits the cases are built against (set them in the stack's environment).
``refused()`` are malformed files (each answered 4xx); ``accepted()`` are odd but valid files that must
be stored as data (formula cells, BOM, CR-only endings, odd names, Parquet with strange pandas metadata).
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import pickle
import random
import tarfile
import zipfile
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


MAX_BYTES = 6 << 20
MAX_ROWS = 10_000
MAX_COLUMNS = 500
LIMITS = {"FAIRSOLVE_MAX_UPLOAD_BYTES": str(MAX_BYTES), "FAIRSOLVE_MAX_UPLOAD_ROWS": str(MAX_ROWS),
          "FAIRSOLVE_MAX_UPLOAD_COLUMNS": str(MAX_COLUMNS)}
MAX_LINE = 4 << 20  # app.datasets.storage.MAX_LINE_BYTES
SIZE = {413, 422}
UNPROCESSABLE = {422}


@dataclass
class Case:
    name: str
    data: bytes
    status: set[int] = field(default_factory=lambda: UNPROCESSABLE)
    detail: str = ""  # a regular expression the response's detail must match (re.search, case-insensitive)
    filename: str = "data.csv"
    form: dict[str, str] = field(default_factory=dict)
    columns: list[str] | None = None  # accepted cases: the columns the stored dataset must have


def good_csv(rows: int = 40) -> bytes:
    rng = random.Random(7)
    lines = ["age,income,group,label"] + [
        f"{rng.randint(18, 90)},{rng.uniform(0, 1e5):.2f},\"{rng.choice(['a, x', 'b', 'c'])}\",{rng.randint(0, 1)}"
        for _ in range(rows)]
    return ("\n".join(lines) + "\n").encode()


def parquet_bytes(table: pa.Table, **kwargs) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **kwargs)
    return buf.getvalue()


def good_parquet(rows: int = 200) -> bytes:
    rng = np.random.default_rng(3)
    return parquet_bytes(pa.table({"x": rng.normal(size=rows), "g": rng.integers(0, 2, rows),
                                   "y": rng.integers(0, 2, rows)}))


def pickle_bomb(marker: str) -> bytes:
    """A pickle that creates ``marker`` when unpickled: the server must never unpickle it."""

    class Creates:
        def __reduce__(self):
            return (open, (marker, "w"))

    return pickle.dumps({"frame": Creates()}, protocol=4)


def _truncated_csv() -> list[Case]:
    base = good_csv()
    lines = base.split(b"\n")
    cases = []
    for k in (3, 9, 17, 28, 39):  # cut inside the quoted field of data line k: an unterminated quote
        cut = sum(len(x) + 1 for x in lines[:k]) + lines[k].index(b'"') + 2
        cases.append(Case(f"csv cut in a quoted field, line {k + 1}", base[:cut],
                          detail=rf"line {k + 1}\b.*(unexpected end|EOF)"))
    for k in (2, 11, 25, 33, 40):  # cut in the second field of data line k: too few fields
        cut = sum(len(x) + 1 for x in lines[:k]) + lines[k].index(b",") + 3
        cases.append(Case(f"csv cut mid-row, line {k + 1}", base[:cut], detail=rf"ragged.*line {k + 1}\b"))
    cases.append(Case("csv cut inside the header", base[:9], detail="no data rows"))
    cases.append(Case("csv cut right after the header", base[:len(lines[0]) + 1], detail="no data rows"))
    return cases


def _truncated_parquet() -> list[Case]:
    data = good_parquet()
    cases = [Case(f"parquet truncated to {f:.0%}", data[:int(len(data) * f)], detail="PARQUET", filename="d.parquet")
             for f in (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)]
    cases += [Case(f"parquet without its last {n} bytes", data[:-n], detail="PARQUET", filename="d.parquet")
              for n in (1, 4, 8)]
    footer = bytearray(data)
    footer[-8:-4] = (len(data) * 4).to_bytes(4, "little")  # footer length past the start of the file
    cases.append(Case("parquet with a footer length past the file", bytes(footer), detail="PARQUET"))
    cases.append(Case("parquet magic only", b"PAR1", detail="PARQUET"))
    cases.append(Case("parquet magic around garbage", b"PAR1" + random.Random(1).randbytes(3000) + b"PAR1",
                      detail="PARQUET"))
    corrupt = bytearray(data)
    for i in range(len(data) - 300, len(data) - 8, 7):
        corrupt[i] ^= 0x5A
    cases.append(Case("parquet with a corrupted footer", bytes(corrupt), detail="PARQUET"))
    return cases


def _binary() -> list[Case]:
    rng = random.Random(11)
    cases = [Case(f"random bytes, {n}", b"\x00" + rng.randbytes(n), detail="binary|NUL|not UTF-8")
             for n in (1, 100, 1000, 70_000, 200_000)]
    cases += [Case(f"high bytes only, {n}", bytes(rng.randrange(0x80, 0x100) for _ in range(n)),
                   detail=r"not UTF-8 text at line 1\b") for n in (2, 50, 5000)]
    magic = {"PNG image": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "ELF binary": b"\x7fELF\x02\x01\x01\x00",
             "JPEG image": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "SQLite database": b"SQLite format 3\x00",
             "old Excel file": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Arrow IPC file": b"ARROW1\x00\x00",
             "PDF with a binary stream": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\nstream\n\xff\xfe\x00\x01"}
    cases += [Case(name, head + rng.randbytes(2000), detail="binary|NUL|not UTF-8|not a CSV") for name, head in
              magic.items()]
    for proto in (2, 3, 4, 5):
        cases.append(Case(f"pickle, protocol {proto}", pickle.dumps({"a": [1, 2, 3]}, protocol=proto),
                          detail="pickle", filename="data.pkl"))
    cases.append(Case("NUL byte in the header", b"a,b\x00,c\n1,2,3\n", detail=r"NUL byte at line 1\b"))
    body = good_csv(5000)
    head = body[:body.index(b"\n", 70_000) + 1]
    nul_line = head.count(b"\n") + 1
    cases.append(Case("NUL byte past the sniff window", head + b"1,2\x00,x,0\n" + body[len(head):],
                      detail=rf"NUL byte at line {nul_line}\b"))
    cases.append(Case("NUL bytes only", b"\x00" * 5000, detail="binary"))
    return cases


def _encodings() -> list[Case]:
    text = "name,city,label\nJosé,Zürich,1\nChloé,Kraków,0\n"
    cases = []
    for enc, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-32-le", b"\xff\xfe\x00\x00"),
                     ("utf-32-be", b"\x00\x00\xfe\xff")):
        cases.append(Case(f"{enc} with a BOM", bom + text.encode(enc), detail=r"UTF-(16|32).*line 1\b"))
        cases.append(Case(f"{enc} without a BOM", text.encode(enc), detail=r"UTF-16|binary|NUL byte at line 1\b"))
    cases.append(Case("latin-1 in the header", "café,b\n1,2\n".encode("latin-1"),
                      detail=r"not UTF-8 text at line 1\b"))
    cases.append(Case("latin-1 in a row", text.encode("latin-1"), detail=r"not UTF-8 text at line 2\b"))
    cases.append(Case("cp1252 smart quotes", "a,b\n1,“quoted”\n".encode("cp1252"), detail=r"line 2\b"))
    cases.append(Case("shift-jis", "名前,値\n東京,1\n".encode("shift_jis"), detail=r"line 1\b"))
    late = good_csv(5000)  # > 64 KiB: the error is past the sniff window
    assert len(late) > 64 * 1024
    for name, bad in (("invalid UTF-8", b"\xff"), ("overlong encoding", b"\xc0\xaf"),
                      ("an encoded surrogate", b"\xed\xa0\x80"), ("a lone continuation byte", b"\x80"),
                      ("a 5-byte sequence", b"\xf8\x88\x80\x80\x80")):
        data = late + b"1,2.0,\"b" + bad + b"\",0\n" + b"3,4.0,c,1\n" * 10
        cases.append(Case(f"{name} past the sniff window", data, detail=r"not UTF-8 text at line 5002\b"))
    cases.append(Case("a truncated multi-byte character at the end", b"a,b\n1,\xc3", detail=r"line 2\b"))
    cases.append(Case("latin-1 in the last line of a big file", late + "9,1.0,é,1\n".encode("latin-1"),
                      detail=r"not UTF-8 text at line 5002\b"))
    return cases


def _sizes() -> list[Case]:
    cases = [
        Case("one line over the line limit", b"a" * (MAX_LINE + 10), detail=r"line 1 is longer"),
        Case("a data row over the line limit", b"a,b\n1,2\n3," + b"9" * (MAX_LINE + 10) + b"\n",
             detail=r"line 3 is longer"),
        Case("a header over the line limit", b",".join(b"c%d" % i for i in range(MAX_LINE // 6)) + b"\n1\n",
             detail=r"line 1 is longer|columns"),
        Case("a field over the CSV field limit", b"a,b\n1,\"" + b"x" * 200_000 + b"\"\n", detail=r"line 2\b.*field"),
        Case("a quoted field over many lines", b"a,b\n1,\"" + b"x\n" * 100_000 + b"\"\n", detail=r"field"),
        Case("a file over the size limit", good_csv(10)[:40] + b"1,2,3,4\n" * (MAX_BYTES // 8 + 10),
             status={413}, detail=rf"limit of {MAX_BYTES} bytes"),
        Case("garbage over the size limit", b"\x00" * (MAX_BYTES + 1), status={413}, detail="limit"),
        Case("more rows than the limit", b"a,b\n" + b"1,2\n" * (MAX_ROWS + 1), detail=rf"limit of {MAX_ROWS} rows"),
        Case("10,000 columns", (",".join(f"c{i}" for i in range(10_000)) + "\n" + ",".join(["1"] * 10_000)
                                + "\n").encode(), detail=rf"10000 columns.*limit is {MAX_COLUMNS}"),
        Case("parquet with 10,000 columns", parquet_bytes(pa.table({f"c{i}": [1] for i in range(10_000)})),
             detail=rf"10000 columns.*limit is {MAX_COLUMNS}", filename="d.parquet"),
    ]
    return cases


def _bombs() -> list[Case]:
    zeros = b"0," * (16 << 20)  # 32 MiB of CSV-looking text, compressing to little
    header = b"a,b\n"
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data.csv", header + zeros)
    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w:gz") as tf:
        info = tarfile.TarInfo("data.csv")
        payload = header + zeros[:1 << 20]
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    nested = io.BytesIO()
    with zipfile.ZipFile(nested, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("inner.zip", zbuf.getvalue())
    cases = [
        Case("zip bomb named .csv", zbuf.getvalue(), detail="ZIP"),
        Case("nested zip named .csv", nested.getvalue(), detail="ZIP"),
        Case("gzip bomb named .csv", gzip.compress(header + zeros, 9), detail="gzip"),
        Case("tar.gz named .csv", tbuf.getvalue(), detail="gzip"),
        Case("bzip2 bomb named .csv", bz2.compress(header + zeros[:1 << 20]), detail="bzip2"),
        Case("xz bomb named .csv", lzma.compress(header + zeros[:4 << 20]), detail="xz"),
        Case("gzip named .parquet", gzip.compress(good_parquet()), detail="gzip", filename="d.parquet"),
    ]
    rows = np.zeros(200_000, dtype=np.int64)
    cases.append(Case("parquet of 200,000 rows, tiny on disk", parquet_bytes(pa.table({"x": rows, "y": rows})),
                      detail=rf"limit of {MAX_ROWS} rows", filename="d.parquet"))
    big = pa.table({"s": pa.array(["a" * 40_000] * 1000)})  # 40 MB of text
    cases.append(Case("parquet of long strings, zstd", parquet_bytes(big, compression="zstd", use_dictionary=False),
                      status=SIZE, detail="limit", filename="d.parquet"))
    cases.append(Case("parquet of one long string, dictionary encoded", parquet_bytes(big, compression="zstd"),
                      status=SIZE, detail="limit", filename="d.parquet"))
    cases.append(Case("parquet with many row groups of long strings",
                      parquet_bytes(big, compression="zstd", row_group_size=10), status=SIZE, detail="limit",
                      filename="d.parquet"))
    return cases


def _shapes() -> list[Case]:
    cases = [
        Case("empty file", b"", detail="empty"),
        Case("whitespace only", b" \n\r\n\t \n", detail="empty"),
        Case("a BOM only", b"\xef\xbb\xbf", detail="no header|empty"),
        Case("header only", b"a,b,c\n", detail="no data rows"),
        Case("header only, blank lines after", b"a,b,c\n\n\n\n", detail="no data rows"),
        Case("an empty header name", b"a,,c\n1,2,3\n", detail=r"column 2 .*no name"),
        Case("an empty header", b",,\n1,2,3\n", detail="no header"),
        Case("ragged: a short row", b"a,b,c\n1,2,3\n4,5\n", detail=r"ragged.*line 3 has 2 fields"),
        Case("ragged: a long row", b"a,b,c\n1,2,3\n4,5,6,7\n", detail=r"ragged.*line 3 has 4 fields"),
        Case("ragged: late", good_csv(500) + b"1,2\n", detail=r"ragged.*line 502\b"),
        Case("ragged with CR-only endings", b"a,b\r1,2\r3\r", detail=r"ragged.*line 3\b"),
        Case("ragged with CRLF endings", b"a,b\r\n1,2\r\n3,4,5\r\n", detail=r"ragged.*line 3\b"),
        Case("text after a closing quote", b"a,b\n1,\"x\"y\n", detail=r"line 2\b"),
        Case("an unterminated quote", b"a,b\n1,\"x\n2,3\n", detail=r"unexpected end"),
        Case("a CR inside an unquoted field", b"a,b\n1,x\ry\n", detail=r"line 2\b"),
        Case("a UTF-8 BOM then UTF-16", b"\xef\xbb\xbf" + "a,b\n1,2\n".encode("utf-16-le"), detail="NUL|binary|UTF-16"),
        Case("parquet with no rows", parquet_bytes(pa.table({"a": pa.array([], pa.int64())})),
             detail="no rows", filename="d.parquet"),
        Case("parquet with duplicate columns",
             parquet_bytes(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])),
             detail="duplicate column name 'a'", filename="d.parquet"),
        Case("parquet with an empty column name", parquet_bytes(pa.table({"": [1], "b": [2]})),
             detail="empty or invalid name", filename="d.parquet"),
        Case("parquet with a list column", parquet_bytes(pa.table({"a": [[1, 2], [3]], "b": [1, 2]})),
             detail="type list", filename="d.parquet"),
        Case("parquet with a struct column", parquet_bytes(pa.table({"a": [{"x": 1}, {"x": 2}], "b": [1, 2]})),
             detail="type struct", filename="d.parquet"),
        Case("parquet with a map column",
             parquet_bytes(pa.table({"a": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))})),
             detail="type map", filename="d.parquet"),
        Case("parquet with a binary column", parquet_bytes(pa.table({"a": pa.array([b"\x00\x01"], pa.binary())})),
             detail="type binary", filename="d.parquet"),
    ]
    return cases


def refused(marker: str) -> list[Case]:
    """At least 100 malformed files; ``marker`` is a path that unpickling any of them would create."""
    pickled = pickle_bomb(marker)
    ext = pa.field("x", pa.binary(), metadata={b"ARROW:extension:name": b"arrow.py_extension_type",
                                               b"ARROW:extension:metadata": pickled})
    cases = [Case("a pickle that runs code", pickled, detail="pickle", filename="data.csv"),
             Case("a pickle named .parquet", pickled, detail="pickle", filename="d.parquet"),
             Case("parquet with a pickled extension type",
                  parquet_bytes(pa.Table.from_arrays([pa.array([b"a"], pa.binary())], schema=pa.schema([ext]))),
                  detail="type binary|PARQUET", filename="d.parquet")]
    for group in (_truncated_csv, _truncated_parquet, _binary, _encodings, _sizes, _bombs, _shapes):
        cases += group()
    return cases


def _odd_pandas_metadata(meta: bytes) -> bytes:
    table = pa.table({"x": [1.0, 2.0, 3.0], "y": [0, 1, 0]})
    return parquet_bytes(table.replace_schema_metadata({b"pandas": meta}))


def accepted() -> list[Case]:
    """Odd but valid uploads: stored as data, with these columns."""
    formula = ("id,note,amount\n1,=cmd|' /C calc'!A0,10\n2,+SUM(A1:A2),-5\n3,-2+3,7\n4,@SUM(1),1\n"
               "5,\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",2\n").encode()
    pandas_meta = {
        "not JSON": b"{not json",
        "JSON of the wrong shape": b"[1, 2, 3]",
        "a missing index column": json.dumps({"index_columns": ["nope"], "columns": []}).encode(),
        "a huge range index": json.dumps({"index_columns": [{"kind": "range", "start": 0, "stop": 10**18,
                                                              "step": 1}], "columns": [{"name": "x"}]}).encode(),
        "odd column types": json.dumps({"index_columns": [], "column_indexes": [{"name": None, "pandas_type":
                                        "mixed-integer", "numpy_type": "object", "metadata": {"x": 1}}],
                                        "columns": [{"name": "x", "pandas_type": "categorical", "numpy_type":
                                                     "os.system", "metadata": {"ordered": "maybe"}}]}).encode(),
        "a MultiIndex of columns": json.dumps({"index_columns": [], "column_indexes": [{}, {}, {}],
                                               "columns": [{"name": ["a", "b"], "field_name": "x"}]}).encode(),
    }
    cases = [Case("formula cells", formula, columns=["id", "note", "amount"]),
             Case("a UTF-8 BOM", b"\xef\xbb\xbfa,b\n1,2\n", columns=["a", "b"]),
             Case("CR-only line endings", b"a,b\r1,2\r3,4\r", columns=["a", "b"]),
             Case("CRLF line endings", b"a;b\r\n1;2\r\n", columns=["a", "b"]),
             Case("a path in the file name", b"a,b\n1,2\n", filename="../../../../etc/passwd", columns=["a", "b"]),
             Case("control characters in the names", b"a,b\n1,2\n", filename="x\x01\x1b[31m.csv",
                  form={"name": "n\x1b\x7fame"}, columns=["a", "b"]),
             Case("infinities and NaN", b"a,b\n1,inf\n2,-inf\n3,nan\n4,1e999\n", columns=["a", "b"]),
             Case("duplicate headers (the repeat renamed)", b"a,b,a\n1,2,3\n", columns=["a", "b", "a.1"]),
             Case("duplicate headers after trimming", b"a, a\n1,2\n", columns=["a", "a.1"]),
             Case("parquet with NUL in the text", parquet_bytes(pa.table({"s": ["a\x00b", "c"], "y": [1, 0]})),
                  filename="d.parquet", columns=["s", "y"])]
    cases += [Case(f"parquet whose pandas metadata is {name}", _odd_pandas_metadata(meta), filename="d.parquet",
                   columns=["x", "y"]) for name, meta in pandas_meta.items()]
    return cases
