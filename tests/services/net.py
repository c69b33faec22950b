"""Loopback helpers shared by the service launchers."""

from __future__ import annotations

import os
import pwd
import socket
import time


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float, what: str) -> None:
    """Block until 127.0.0.1:port accepts connections, or raise naming the service."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f}s")


def service_user() -> str | None:
    """When running as root, the unprivileged account services run as (None when not root)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root but no unprivileged user (postgres, nobody) exists")


def as_user(cmd: list[str], user: str | None) -> list[str]:
    """Prefix a command so it runs as `user` (unchanged when user is None)."""
    return cmd if user is None else ["runuser", "-u", user, "--", *cmd]
