"""The registry of payload adapters, and the native modelwatch adapter.

An adapter turns one payload into objects in the modelwatch event format (see "Event format"
in docs/concepts/collectors.md). Register a new one with :func:`register_adapter`; sources pick
one by name with their `format` key and may pass `format_options`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from collectors._base import Adapter, DecodeError
from collectors._cloudevents import CloudEventsAdapter
from collectors._json import loads
from collectors._sagemaker import SageMakerAdapter
from monitor.common.registry import Registry

__all__ = [
    "ADAPTERS",
    "AdapterFactory",
    "NativeAdapter",
    "adapter_names",
    "loads",
    "make_adapter",
    "register_adapter",
]

AdapterFactory = Callable[[Mapping[str, Any]], Adapter]

ADAPTERS: Registry[AdapterFactory] = Registry("format")


def register_adapter(name: str, factory: AdapterFactory) -> None:
    """Register an adapter factory under `name`; a name registers once."""
    ADAPTERS.add(name, factory)


def adapter_names() -> list[str]:
    """Registered adapter names, sorted."""
    return ADAPTERS.names()


def make_adapter(name: str, options: Mapping[str, Any] | None = None) -> Adapter:
    """The adapter registered as `name`; RegistryError lists the valid names."""
    return ADAPTERS.lookup(name)(options or {})


class NativeAdapter:
    """modelwatch's own format: one JSON object per payload (or an array of them)."""

    name = "modelwatch"

    def __init__(self, options: Mapping[str, Any]) -> None:
        if options:
            raise DecodeError(
                "bad_options", f"format 'modelwatch' takes no options: {sorted(options)}"
            )

    def decode(self, payload: bytes) -> Sequence[Any]:
        obj = loads(payload)
        return obj if isinstance(obj, list) else (obj,)


# The built-in formats register on import, like the detectors.
register_adapter("modelwatch", NativeAdapter)
register_adapter("sagemaker", SageMakerAdapter)
register_adapter("cloudevents", CloudEventsAdapter)
