"""A package surface whose names load with their modules on first use (PEP 562).

A package `__init__` that imports every module of the package makes anyone who needs one name
pay for all of them: `config check` reads the receivers' and adapters' names and used to load
delivery's httpx, silences' SQLAlchemy and the HTTP intake. With `lazy_surface` the
``__init__`` keeps its imports for type checkers (under ``TYPE_CHECKING``) and its ``__all__``,
and each name is imported from its module when it is first read (then kept on the package).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_surface"]


def lazy_surface(package: str, homes: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of `package`: ``homes`` maps each module to the names it
    gives the package; a submodule not imported yet is imported when read as an attribute."""
    where = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
