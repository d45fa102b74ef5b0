"""Column names a person can tell apart: no invisible or direction-changing characters, no two names that look
the same.

A header of an uploaded table is refused (``file: ...``, a 4xx) when

- a name holds a character of Unicode category ``Cc`` (controls) or ``Cf`` (format: the bidirectional overrides
  and isolates U+202A–U+202E, U+2066–U+2069, zero-width spaces and joiners, the BOM, ...): ``sex\\u202e`` shows
  as ``sex`` while naming another column, and a bidi override reorders the text of every page that shows it;
- two names are equal under Unicode compatibility normalisation (NFKC): ``é`` composed (NFC) and decomposed
  (NFD) are two strings that print identically, and so are ``ﬁ`` and ``fi``; a job naming one would silently
  pick whichever matched byte for byte.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

INVISIBLE = frozenset({"Cc", "Cf"})


def column_name_problem(names: Iterable[str]) -> str | None:
    """Why these names cannot be columns of one table (naming the first offender), else None."""
    seen: dict[str, str] = {}
    for name in names:
        bad = next((ch for ch in name if unicodedata.category(ch) in INVISIBLE), None)
        if bad is not None:
            return (f"column name {name[:100]!r} holds the invisible or direction-changing character "
                    f"U+{ord(bad):04X} ({unicodedata.name(bad, 'unnamed')}); rename the column")
        folded = unicodedata.normalize("NFKC", name)
        if folded in seen:
            return (f"column names {seen[folded][:100]!r} and {name[:100]!r} look the same (equal under Unicode "
                    "NFKC normalisation); rename one of them")
        seen[folded] = name
    return None
