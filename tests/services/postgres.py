"""A throwaway PostgreSQL cluster (Debian's postgresql package) on a free loopback port."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg

from tests.services.net import as_user, free_port, service_user, wait_for_port


def find_pg_bindir() -> Path:
    """The directory holding initdb/pg_ctl: pg_config's bindir, else the newest versioned one."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    versioned = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    candidates.extend(Path(p) for p in reversed(versioned))
    for c in candidates:
        if (c / "initdb").exists() and (c / "pg_ctl").exists():
            return c
    raise RuntimeError(
        "PostgreSQL server binaries (initdb, pg_ctl) not found; install the Debian package "
        "'postgresql' (./dev test does this)"
    )


class PostgresServer:
    """initdb + pg_ctl in a temporary directory, trust auth on 127.0.0.1 only."""

    def __init__(self) -> None:
        self.bindir = find_pg_bindir()
        self.user = service_user()
        self.root = Path(tempfile.mkdtemp(prefix="modelwatch-pg-"))
        self.datadir = self.root / "data"
        self.port = free_port()

    def _run(self, *args: str) -> None:
        subprocess.run(
            as_user([str(self.bindir / args[0]), *args[1:]], self.user),
            check=True,
            capture_output=True,
            cwd=self.root,
        )

    def start(self) -> None:
        if self.user is not None:
            shutil.chown(self.root, user=self.user)
            os.chmod(self.root, 0o700)
        self._run(
            "initdb",
            "-D",
            str(self.datadir),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        for attempt in range(3):  # a port taken between the pick and the bind: another one
            try:
                self.resume()
                return
            except subprocess.CalledProcessError:
                log = (self.root / "server.log").read_text(errors="replace")
                if "Address already in use" not in log or attempt == 2:
                    raise
                self.port = free_port()

    def resume(self) -> None:
        """Start the (initialised) server; also brings it back after `pause`."""
        opts = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off "
            "-c max_connections=200"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.datadir),
            "-o",
            opts,
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        wait_for_port(self.port, 30, "PostgreSQL")

    def pause(self) -> None:
        """Stop the server abruptly, keeping its data (an outage; `resume` ends it)."""
        self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def admin_url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, template: str | None = None) -> str:
        """A fresh empty database (or a copy of the database `template`); returns its URL."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"
