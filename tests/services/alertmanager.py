"""A throwaway Prometheus Alertmanager (Debian's prometheus-alertmanager) on a free port."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from tests.services.net import free_port, wait_for_port

CANDIDATES = ("/usr/bin/prometheus-alertmanager", "/usr/bin/alertmanager")

CONFIG = """\
route:
  receiver: "null"
  group_wait: 1s
receivers:
  - name: "null"
"""


def find_alertmanager() -> str:
    """The alertmanager binary; a clear error (never a skip) when it is missing."""
    for path in CANDIDATES:
        if Path(path).exists():
            return path
    found = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if found:
        return found
    raise RuntimeError(
        "Alertmanager not found (looked for /usr/bin/prometheus-alertmanager and alertmanager "
        "on PATH); install the Debian package 'prometheus-alertmanager' (./dev test does this)"
    )


class AlertmanagerServer:
    """alertmanager with a null receiver, no clustering, storage in a temporary directory."""

    def __init__(self) -> None:
        self.binary = find_alertmanager()
        self.root = Path(tempfile.mkdtemp(prefix="modelwatch-am-"))
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        config = self.root / "alertmanager.yml"
        config.write_text(CONFIG)
        log = (self.root / "alertmanager.log").open("wb")
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={config}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",
                f"--storage.path={self.root / 'data'}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, 30, "Alertmanager")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"Alertmanager on port {self.port} never became ready")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
