"""A name -> class registry shared by algorithms and constraint families.

Adding an algorithm (or a constraint family) is one new module that decorates
its class with ``@ALGORITHMS.register(...)``; the package ``__init__`` imports
every module of its folder, so nothing else has to be edited.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, Generic, Iterable, TypeVar

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Maps a canonical name (and its aliases) to a registered class.

    ``register(name, aliases=..., **metadata)`` sets ``cls.name``,
    ``cls.aliases`` and every metadata key as class attributes.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, aliases: Iterable[str] = (), **metadata: Any) -> Callable[[T], T]:
        def decorator(cls: T) -> T:
            keys = [name, *aliases]
            for key in keys:
                if self._canonical(key) is not None:
                    raise ValueError(f"{self.kind} {key!r} is already registered")
            cls.name = name
            cls.aliases = tuple(aliases)
            for attr, value in metadata.items():
                setattr(cls, attr, value)
            self._classes[name] = cls
            for alias in keys:
                self._aliases[alias.lower()] = name
            return cls

        return decorator

    def _canonical(self, name: str) -> str | None:
        return self._aliases.get(str(name).lower())

    def get(self, name: str) -> T:
        """The class registered under ``name`` or one of its aliases (case-insensitive)."""
        canonical = self._canonical(name)
        if canonical is None:
            known = ", ".join(sorted(self._classes))
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}")
        return self._classes[canonical]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._canonical(name) is not None

    def names(self) -> list[str]:
        return list(self._classes)

    def classes(self) -> list[T]:
        return list(self._classes.values())


def import_submodules(package_name: str, package_path: Iterable[str]) -> None:
    """Import every module of a package so that their ``@register`` decorators run."""
    for info in pkgutil.iter_modules(package_path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
