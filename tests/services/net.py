"""Loopback helpers shared by the service launchers."""

from __future__ import annotations

import os
import pwd
import random
import socket
import time
from pathlib import Path


def _ephemeral_start() -> int:
    """The first port the kernel hands out to outgoing connections (Linux: 32768 by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, below the ephemeral range.

    Not a port the kernel picks (`bind(0)`): those come from the range it also gives every
    outgoing connection, and with the suite's thousands of connections one took a port between
    this pick and a server's bind (PostgreSQL failed to start: "Address already in use"). A
    random port below the range collides only with another pick of this function."""
    top = _ephemeral_start()
    for _ in range(200):
        port = random.randrange(10_000, top)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # all taken: the kernel's pick
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
