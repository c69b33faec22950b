"""A throwaway Prometheus (Debian's prometheus package) scraping loopback targets every second."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.services.net import as_user, free_port, service_user, wait_for_port

SCRAPE_INTERVAL = "1s"


def find_prometheus() -> Path:
    """The prometheus server binary; missing is an error naming the package, never a skip."""
    for candidate in (shutil.which("prometheus"), "/usr/bin/prometheus"):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    raise RuntimeError(
        "Prometheus server binary not found; install the Debian package 'prometheus' "
        "(./dev test does this)"
    )


class PrometheusServer:
    """Prometheus with one scrape job against the given `host:port` targets."""

    def __init__(self, targets: list[str], job: str = "modelwatch") -> None:
        self.binary = find_prometheus()
        self.user = service_user()
        self.root = Path(tempfile.mkdtemp(prefix="modelwatch-prom-"))
        self.port = free_port()
        self.targets = targets
        self.job = job
        self._proc: subprocess.Popen[bytes] | None = None

    def _write_config(self) -> Path:
        config = {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
            "scrape_configs": [
                {
                    "job_name": self.job,
                    "scrape_interval": SCRAPE_INTERVAL,
                    "scrape_timeout": SCRAPE_INTERVAL,
                    "static_configs": [{"targets": self.targets}],
                }
            ],
        }
        path = self.root / "prometheus.yml"
        path.write_text(json.dumps(config), encoding="utf-8")  # JSON is valid YAML
        return path

    def start(self) -> None:
        config = self._write_config()
        (self.root / "data").mkdir()
        if self.user is not None:
            for p in (self.root, self.root / "data", config):
                shutil.chown(p, user=self.user)
        cmd = [
            str(self.binary),
            f"--config.file={config}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            f"--storage.tsdb.path={self.root / 'data'}",
            "--log.level=warn",
        ]
        log = (self.root / "prometheus.log").open("wb")
        self._proc = subprocess.Popen(as_user(cmd, self.user), stdout=log, stderr=log)
        try:
            wait_for_port(self.port, 30, "Prometheus")
            self._wait_ready(30)
        except RuntimeError:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        """The port opens before the TSDB does; until then the API answers 503."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as resp:
                    if resp.status == 200:
                        return
            except OSError:  # urllib's HTTPError (503) and URLError are OSErrors
                pass
            time.sleep(0.2)
        raise RuntimeError(f"Prometheus on port {self.port} not ready within {timeout:.0f}s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
            self._proc = None
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params: str) -> Any:
        """GET an HTTP API path and return its `data` member."""
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=5) as resp:
            body = json.loads(resp.read())
        if body.get("status") != "success":
            raise RuntimeError(f"Prometheus {path} failed: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """Instant query; the vector of {metric, value} results."""
        result: list[dict[str, Any]] = self.api("/api/v1/query", query=promql)["result"]
        return result

    def wait_for_scrape(self, promql: str, timeout: float = 30) -> list[dict[str, Any]]:
        """Poll an instant query until it returns series (after at least one scrape)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = self.query(promql)
            if result:
                return result
            time.sleep(0.25)
        targets = self.api("/api/v1/targets")
        raise RuntimeError(f"no series for {promql!r} within {timeout:.0f}s; targets: {targets}")
