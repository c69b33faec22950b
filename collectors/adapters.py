"""The registry of payload adapters, and the native modelwatch adapter.

An adapter turns one payload into objects in the modelwatch event format (see the README's
"Event format"). Register a new one with :func:`register_adapter`; sources pick one by name with
their `format` key and may pass `format_options`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from collectors.base import Adapter, DecodeError
from monitor.registry import Registry

AdapterFactory = Callable[[Mapping[str, Any]], Adapter]

ADAPTERS: Registry[AdapterFactory] = Registry("format")


def register_adapter(name: str, factory: AdapterFactory) -> None:
    """Register an adapter factory under `name`; a name registers once."""
    ADAPTERS.add(name, factory)


def adapter_names() -> list[str]:
    """Registered adapter names, sorted."""
    _load_builtins()
    return ADAPTERS.names()


def make_adapter(name: str, options: Mapping[str, Any] | None = None) -> Adapter:
    """The adapter registered as `name`; RegistryError lists the valid names."""
    _load_builtins()
    return ADAPTERS.lookup(name)(options or {})


def loads(payload: bytes) -> Any:
    """Parse JSON with orjson; DecodeError says whether the bytes or the JSON are broken."""
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        try:
            payload.decode("utf-8")
        except UnicodeDecodeError as uerr:
            raise DecodeError(
                "invalid_utf8", f"payload: {uerr.reason} at byte {uerr.start}"
            ) from None
        if "depth limit" in str(exc):
            raise DecodeError("too_deep", f"payload: {exc}") from None
        raise DecodeError("invalid_json", f"payload: {exc}") from None


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


_BUILTINS_LOADED = False


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    from collectors.cloudevents import CloudEventsAdapter
    from collectors.sagemaker import SageMakerAdapter

    register_adapter("modelwatch", NativeAdapter)
    register_adapter("sagemaker", SageMakerAdapter)
    register_adapter("cloudevents", CloudEventsAdapter)
