"""pyproject.toml declares ranges and extras; requirements.txt is the lock. The lock must sit inside the ranges."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _declared() -> dict[str, Requirement]:
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra if not r.startswith("fairsolve[")]
    return {canonicalize_name(r.name): r for r in reqs}


def _locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"requirements.txt must pin exactly: {line}"
            pins[canonicalize_name(req.name)] = spec.version
    return pins


def test_every_locked_version_is_inside_its_declared_range():
    declared, locked = _declared(), _locked()
    assert set(locked) == set(declared), (
        f"in the lock only: {sorted(set(locked) - set(declared))}; declared only: {sorted(set(declared) - set(locked))}"
    )
    outside = {name: (version, str(declared[name].specifier)) for name, version in locked.items()
               if version not in declared[name].specifier}
    assert not outside, f"locked versions outside pyproject's ranges: {outside}"


def test_ranges_have_a_floor_and_a_ceiling():
    loose = [str(r) for r in _declared().values()
             if not ({s.operator for s in r.specifier} >= {">=", "<"})]
    assert not loose, f"declare each dependency as >=tested,<next major: {loose}"


def test_extras_and_the_admin_script():
    extras = PROJECT["optional-dependencies"]
    assert {"client", "local", "server"} <= set(extras)
    assert "fairsolve[client,local]" in extras["server"]
    assert PROJECT["scripts"] == {"fairsolve-admin": "app.cli:main"}
    version = re.search(r'__version__ = "([^"]+)"', (ROOT / "app" / "__init__.py").read_text()).group(1)
    assert PROJECT["dynamic"] == ["version"] and version
