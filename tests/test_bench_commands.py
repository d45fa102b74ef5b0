"""Every ``python -m bench.…`` command the README, docs/, the bench results and the code's docstrings and comments
quote names a module that exists (the benchmarks moved into bench/papers, bench/quality, bench/system and
bench/common; a stale path in a document is a command that fails)."""

from __future__ import annotations

import importlib.util
import re
import subprocess

from bench.common.stack import ROOT

COMMAND = re.compile(r"python3? -m (bench(?:\.\w+)+)")
SCANNED = (".md", ".py", ".txt", ".toml", ".ini", ".cfg", ".yml", ".yaml")


def quoted_commands() -> dict[str, list[str]]:
    """Module name → the tracked files that quote ``python -m <module>``."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    found: dict[str, list[str]] = {}
    for name in listed:
        path = ROOT / name
        if not (path.suffix in SCANNED or path.name == "Makefile") or not path.is_file() or path.samefile(__file__):
            continue
        for module in set(COMMAND.findall(path.read_text(errors="replace"))):
            found.setdefault(module, []).append(name)
    return found


def test_every_quoted_bench_command_names_a_module():
    found = quoted_commands()
    assert len(found) >= 20  # the README and the benchmarks' docstrings quote most of them
    missing = {module: files for module, files in found.items()
               if (spec := importlib.util.find_spec(module)) is None or spec.submodule_search_locations is not None}
    assert not missing, f"`python -m` of no module (or of a package): {missing}"


def test_the_pattern_sees_a_stale_path(tmp_path):
    """The check can fail: the old flat path of a benchmark is found and does not resolve."""
    assert COMMAND.findall("run `python -m bench.promise --seeds 3`") == ["bench.promise"]
    assert importlib.util.find_spec("bench.promise") is None
    assert importlib.util.find_spec("bench.quality.promise") is not None
