"""solvers.data.bytes_lru: the values kept never exceed the bound in bytes; the least recently used leave first; a
value over the bound alone is not kept."""
from __future__ import annotations

from solvers.data.bytes_lru import BytesLRU


def test_the_least_recently_used_leave_first_and_the_bound_holds():
    lru = BytesLRU(100)
    for key in "abc":
        lru.put(key, key.upper(), 30)
    assert len(lru) == 3 and lru.nbytes == 90
    assert lru.get("a") == "A"             # now the most recently used: b is the oldest
    lru.put("d", "D", 30)
    assert lru.get("b") is None and [lru.get(k) for k in "acd"] == ["A", "C", "D"] and lru.nbytes == 90
    lru.put("e", "E", 80)                   # a, c, d leave (oldest first) until 80 fits
    assert len(lru) == 1 and lru.get("e") == "E" and lru.nbytes <= lru.max_bytes
    lru.put("f", "F", 101)                  # over the bound alone: not kept, nothing else leaves
    assert lru.get("f") is None and lru.get("e") == "E"
    lru.put("e", "E2", 10)                  # a key put again replaces its value and size
    assert lru.get("e") == "E2" and lru.nbytes == 10
    lru.clear()
    assert len(lru) == 0 and lru.get("e") is None
