"""The modelwatch exception tree.

Every error a user can cause derives from :class:`ModelwatchError`; the CLI prints its message
on one line and exits with status 2. Leaves also inherit the nearest builtin so callers can
catch them idiomatically::

    ModelwatchError(Exception)
    ├── ConfigError(ValueError)            bad YAML, unknown or invalid key (names file and key)
    ├── InputError(ValueError)             bad data file, missing column, unreadable input
    │   ├── SchemaMismatchError            model inputs/outputs do not match the data
    │   └── CorruptProfileError            a stored profile fails validation (non-finite, bad shape)
    ├── NotFoundError(LookupError)         unknown model, version, baseline, run
    ├── ConflictError(ValueError)          duplicate registration, state that forbids the action
    │   └── ArtifactMismatchError          a model file's sha256 differs from the registered one
    ├── StorageError(RuntimeError)         database unreachable or not at the expected schema
    │   └── SchemaVersionError             schema behind head: run `modelwatch db upgrade`
    ├── RegistryError(KeyError)            unknown or duplicate name in a plugin registry
    └── ServiceError(RuntimeError)         an outbound call (Kafka, webhook, Grafana) failed
"""

from __future__ import annotations

__all__ = [
    "ArtifactMismatchError",
    "ConfigError",
    "ConflictError",
    "CorruptProfileError",
    "InputError",
    "ModelwatchError",
    "NotFoundError",
    "RegistryError",
    "SchemaMismatchError",
    "SchemaVersionError",
    "ServiceError",
    "StorageError",
]


class ModelwatchError(Exception):
    """Base of every error modelwatch raises on purpose."""

    exit_code = 2

    def __str__(self) -> str:
        # KeyError quotes its message; keep every leaf a plain one-liner.
        return " ".join(str(a) for a in self.args).replace("\n", " ")


class ConfigError(ModelwatchError, ValueError):
    """Configuration is invalid; the message names the file and key.

    `problems` lists every problem found, one line each (the message shows the first).
    """

    def __init__(self, message: str, problems: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems) or (message,)


class InputError(ModelwatchError, ValueError):
    """An input file or payload is unusable; the message names file, column or field."""


class SchemaMismatchError(InputError):
    """Data and model (or two models) disagree on inputs or outputs."""


class CorruptProfileError(InputError):
    """A stored profile is unreadable or holds impossible values; names where it is stored."""


class NotFoundError(ModelwatchError, LookupError):
    """A named object does not exist."""


class ConflictError(ModelwatchError, ValueError):
    """The action conflicts with existing state."""


class ArtifactMismatchError(ConflictError):
    """A registered version's file is missing or no longer holds the content it was registered
    with; the message names the file and both hashes."""


class StorageError(ModelwatchError, RuntimeError):
    """The database cannot be used."""


class SchemaVersionError(StorageError):
    """The database schema is not at the revision this code expects."""


class RegistryError(ModelwatchError, KeyError):
    """Unknown or duplicate name in a registry."""


class ServiceError(ModelwatchError, RuntimeError):
    """An outbound call to another service failed after its retries."""
