"""A model file read once per run: its bytes and the sha256 of exactly those bytes.

A gate run hashes what it loads: the registered-hash check, the inference sessions, layer
localisation and the recorded hashes all use one read, so a large model is read once, and a
file swapped during the run cannot be hashed as one content and run as another.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from monitor.errors import InputError


@dataclass(frozen=True)
class Artifact:
    """A model file's bytes as read once, and their sha256."""

    path: Path
    data: bytes = field(repr=False)
    sha256: str

    @classmethod
    def of(cls, path: Path, data: bytes) -> Artifact:
        return cls(path, data, hashlib.sha256(data).hexdigest())


def read_artifact(path: Path) -> Artifact:
    """Read a model file whole; InputError naming it when it cannot be read."""
    try:
        return Artifact.of(path, path.read_bytes())
    except (FileNotFoundError, IsADirectoryError):
        raise InputError(f"{path}: model file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the model file ({exc.strerror or exc})") from None
