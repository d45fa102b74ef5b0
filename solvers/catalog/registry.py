"""Name -> class registries.

:class:`Registry` holds classes registered where they are defined (``@REGISTRY.register(...)``;
the package ``__init__`` imports every module of its folder). :class:`Catalog` holds declarations
(name, Config, metadata) made in light modules, and imports the implementing class only when it
is asked for: the solvers and constraint types (:mod:`solvers.catalog`).
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, Generic, Iterable, TypeVar

T = TypeVar("T", bound=type)


class _Names(Generic[T]):
    """Canonical names and their aliases (case-insensitive), shared by :class:`Registry` and :class:`Catalog`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._aliases: dict[str, str] = {}

    def _claim(self, name: str, aliases: Iterable[str]) -> None:
        keys = [name, *aliases]
        for key in keys:
            if self._canonical(key) is not None:
                raise ValueError(f"{self.kind} {key!r} is already registered")
        for key in keys:
            self._aliases[key.lower()] = name

    def _canonical(self, name: str) -> str | None:
        return self._aliases.get(str(name).lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._canonical(name) is not None


class Registry(_Names[T]):
    """Maps a canonical name (and its aliases) to a registered class.

    ``register(name, aliases=..., **metadata)`` sets ``cls.name``,
    ``cls.aliases`` and every metadata key as class attributes.
    """

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self._classes: dict[str, T] = {}

    def register(self, name: str, aliases: Iterable[str] = (), **metadata: Any) -> Callable[[T], T]:
        def decorator(cls: T) -> T:
            self._claim(name, aliases)
            cls.name = name
            cls.aliases = tuple(aliases)
            for attr, value in metadata.items():
                setattr(cls, attr, value)
            self._classes[name] = cls
            return cls

        return decorator

    def get(self, name: str) -> T:
        """The class registered under ``name`` or one of its aliases (case-insensitive)."""
        canonical = self._canonical(name)
        if canonical is None:
            known = ", ".join(sorted(self._classes))
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}")
        return self._classes[canonical]

    def names(self) -> list[str]:
        return list(self._classes)

    def classes(self) -> list[T]:
        return list(self._classes.values())


class Entry:
    """One declared name of a :class:`Catalog`: its ``Config`` (pydantic), metadata and where it is implemented.

    Everything but :meth:`load` is importable without the implementation's dependencies (torch).
    """

    def __init__(self, name: str, aliases: tuple[str, ...], config: type, implementation: str,
                 metadata: dict[str, Any]) -> None:
        self.name = name
        self.aliases = aliases
        self.Config = config
        self.implementation = implementation  # "package.module:Class"
        self.metadata = metadata

    def __getattr__(self, attr: str) -> Any:
        try:
            return self.__dict__["metadata"][attr]
        except KeyError:
            raise AttributeError(attr) from None

    def load(self) -> type:
        """The implementing class (its module is imported on first use)."""
        module, _, qualname = self.implementation.partition(":")
        cls = getattr(importlib.import_module(module), qualname)
        if getattr(cls, "entry", None) is not self:
            raise TypeError(f"{self.implementation} does not implement {self.name!r} (decorate it with implements)")
        return cls


class Catalog(_Names[T]):
    """A registry whose names are declared with their ``Config`` in light modules, implemented elsewhere.

    ``declare(name, implementation="pkg.mod:Class", aliases=..., **metadata)`` decorates the Config
    class; the implementing module decorates its class with ``implements(name)``, which gives it
    ``name``, ``aliases``, ``Config``, ``entry`` and the metadata (``defaults`` filled in) as class
    attributes. Names, configs
    and metadata (what validating a spec or listing the catalog needs) never import the implementation:
    the API process validates jobs without loading torch. :meth:`get` imports it.
    """

    def __init__(self, kind: str, **defaults: Any) -> None:
        super().__init__(kind)
        self.defaults = defaults  # metadata every entry has unless its declaration says otherwise
        self._entries: dict[str, Entry] = {}

    def declare(self, name: str, implementation: str, aliases: Iterable[str] = (), **metadata: Any
                ) -> Callable[[T], T]:
        def decorator(config: T) -> T:
            self._claim(name, aliases)
            self._entries[name] = Entry(name, tuple(aliases), config, implementation, {**self.defaults, **metadata})
            return config

        return decorator

    def implements(self, name: str) -> Callable[[T], T]:
        def decorator(cls: T) -> T:
            entry = self._entries[name]
            cls.name, cls.aliases, cls.Config, cls.entry = entry.name, entry.aliases, entry.Config, entry
            for attr, value in entry.metadata.items():
                setattr(cls, attr, value)
            return cls

        return decorator

    def entry(self, name: str) -> Entry:
        """The declaration of ``name`` or one of its aliases (case-insensitive); imports nothing."""
        canonical = self._canonical(name)
        if canonical is None:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._entries))}")
        return self._entries[canonical]

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def get(self, name: str) -> T:
        """The implementing class (imported on first use)."""
        return self.entry(name).load()

    def names(self) -> list[str]:
        return list(self._entries)

    def classes(self) -> list[T]:
        return [entry.load() for entry in self._entries.values()]


def import_submodules(package_name: str, package_path: Iterable[str]) -> None:
    """Import every module of a package so that their ``@register`` decorators run."""
    for info in pkgutil.iter_modules(package_path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
