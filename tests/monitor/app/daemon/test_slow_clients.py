"""Slow and greedy clients against a running `serve`: a 64 MB header is answered 431 before
authentication without growing the process; hundreds of idle connections (more than its
open-files limit allows) neither lock an authenticated client out nor stay open."""

from __future__ import annotations

import functools
import resource
import select
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from migrations import upgrade
from monitor.app.daemon._http import connection_budget
from monitor.storage import make_engine
from tests.monitor.app.daemon.conftest import CONFIG, ServerProcess, auth
from tests.waiting import wait_until

LIMITS = """\
  max_header_bytes: 16384
  header_timeout_s: 3
  keep_alive_timeout_s: 1
"""
NOFILE = 256  # the server's soft open-files limit: room for 192 connections
IDLE = 300


def _low_nofile() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, hard))


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`serve` with small header limits and timeouts, under a 256 open-files limit."""
    directory = tmp_path_factory.mktemp("serve")
    url = f"sqlite:///{directory / 'mw.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    path = directory / "mw.yaml"
    config = CONFIG.replace("  max_body_bytes: 65536\n", "  max_body_bytes: 65536\n" + LIMITS)
    path.write_text(config.format(url=url))
    with pytest.MonkeyPatch.context() as patch:
        low = functools.partial(subprocess.Popen, preexec_fn=_low_nofile)
        patch.setattr(subprocess, "Popen", low)
        proc = ServerProcess(path, log=directory / "serve.log")
    proc.wait_ready()
    yield proc
    proc.terminate()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_huge_header_is_answered_431_unauthenticated_without_reading_it(
    guarded: ServerProcess,
) -> None:
    before = rss_kb(guarded.proc.pid)
    total, sent = 64 * 1024 * 1024, 0
    chunk = b"a" * 65536
    with connect(guarded) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ")
        while sent < total:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break  # answered: stop sending, as a client reading its answers would
            try:
                sock.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]
    assert sent < total, "the whole header was sent before any answer"
    assert rss_kb(guarded.proc.pid) - before < 50 * 1024  # far from the header's 64 MB
    assert httpx.get(f"{guarded.url}/healthz", timeout=10).status_code == 200


def test_idle_connections_beyond_the_fd_limit_never_lock_out_a_client_and_are_closed(
    guarded: ServerProcess,
) -> None:
    idle = [connect(guarded) for _ in range(IDLE)]  # more than the server has descriptors for
    try:
        for sock in idle[::2]:  # half of them start a request head and never finish it
            sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        with httpx.Client(base_url=guarded.url, timeout=30) as client:
            for _ in range(3):
                answer = client.get("/v1/models", headers=auth("MW_T_READ"))
                assert answer.status_code == 200, answer.text
        # Every idle one is closed by the server (header timeout, or evicted for a newer one).
        assert all(closed_by_server(sock) for sock in idle)
    finally:
        for sock in idle:
            sock.close()


def closed_by_server(sock: socket.socket) -> bool:
    """Waits (up to a minute) for the server to close `sock` without answering."""
    sock.settimeout(60)
    try:
        return read_all(sock) == b""
    except ConnectionResetError:
        return True


def test_idle_kept_alive_connection_is_closed(guarded: ServerProcess) -> None:
    with connect(guarded) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_until(lambda: b"\r\n\r\n" in sock.recv(65536, socket.MSG_PEEK), "the answer")
        answer = read_all(sock)  # then the server closes it after keep_alive_timeout_s
    assert answer.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    ("configured", "nofile", "expected"),
    [
        (1000, (1024, 4096), (768, 64)),  # systemd's default limit
        (100, (1024, 4096), (100, 64)),
        (1000, (256, 4096), (192, 16)),
        (5000, (65536, 65536), (5000, 2048)),
        (1000, (resource.RLIM_INFINITY, resource.RLIM_INFINITY), (1000, 2048)),
    ],
)
def test_connection_budget_leaves_room_below_the_open_files_limit(
    configured: int, nofile: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert connection_budget(configured, nofile) == expected
