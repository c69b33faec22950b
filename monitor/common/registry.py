"""The one registry pattern for named plugins: drift detectors, input adapters, alert receivers and
outcome metrics are each one `Registry`.

A registry is a read-only mapping from name to item. Registering a name twice raises; looking up
an unknown name raises RegistryError listing the valid names, so config validation and error
messages read from the registry itself, never from a copied list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

from monitor.errors import RegistryError

T = TypeVar("T")


class Registry(Mapping[str, T]):
    """Items of one kind by name; `noun` names the kind in errors ("drift method")."""

    def __init__(self, noun: str) -> None:
        self.noun = noun
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        """Register `item` as `name` and return it; a name registers once."""
        if name in self._items:
            raise RegistryError(f"{self.noun} {name!r} is already registered")
        self._items[name] = item
        return item

    def lookup(self, name: str) -> T:
        """The item registered as `name`; RegistryError listing the valid names otherwise."""
        try:
            return self._items[name]
        except KeyError:
            valid = ", ".join(self.names())
            raise RegistryError(f"unknown {self.noun} {name!r}; valid: {valid}") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
