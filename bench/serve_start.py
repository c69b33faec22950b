"""`modelwatch serve` start-up with many models: config, registry and the first requests.

N models, each configured (a slice column, drift on) and registered (one version with an
artifact, active), on a fresh database. Measured: parsing and validating the config alone
(in this process), then a real `modelwatch serve` from its start to `/healthz` answering, to
`/readyz` answering, and the whole model list read page by page (`GET /v1/models?limit=`,
following `next_cursor`). Target (issue 40): serve answers within 10 s with 1,000 registered
models. Usage:

    PYTHONPATH=. python bench/serve_start.py [--models 1000] [--db sqlite,postgresql] [--page 100]
        [--starts 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.api_ingest import PG  # noqa: E402
from migrations import upgrade  # noqa: E402
from monitor.config import parse_config  # noqa: E402
from monitor.storage import make_engine  # noqa: E402
from tests.services.net import free_port  # noqa: E402

TOKEN = "bench-serve-token"


def config_doc(url: str, n: int) -> dict[str, object]:
    """The daemon's config with `n` models (named m0000...), each sliced by region."""
    models = [{"name": f"m{i:04d}", "slices": ["region"]} for i in range(n)]
    tokens = [{"name": "bench", "scopes": ["read", "ingest"], "token": TOKEN}]
    return {"database_url": url, "models": models, "api": {"tokens": tokens}}


def register_all(url: str, n: int, directory: Path) -> None:
    """One active version per model (one artifact file shared by all)."""
    from guards.registry import register_version

    artifact = directory / "model.onnx"
    artifact.write_bytes(b"not a real model")
    engine = make_engine(url)
    for i in range(n):
        register_version(engine, f"m{i:04d}", "1", artifact, activate=True)
    engine.dispose()


def timed_serve(config: Path, page: int) -> tuple[float, float, float, int]:
    """Seconds from `serve`'s start to /healthz, to /readyz, and to the whole model list read;
    the models listed."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MODELWATCH_DATABASE_URL", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as deployed: imports from cached bytecode
    args = ["-m", "monitor", "serve", "--config", str(config), "--port", str(port)]
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], env=env, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        healthy = _until(lambda: httpx.get(f"{base}/healthz", timeout=2).status_code == 200)
        healthy -= started
        ready = _until(lambda: httpx.get(f"{base}/readyz", timeout=10).status_code < 600)
        ready -= started
        listed, cursor = 0, None
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            while True:
                params = {"limit": page, **({"cursor": cursor} if cursor else {})}
                doc = http.get("/v1/models", params=params).raise_for_status().json()
                listed += len(doc["models"])
                cursor = doc["next_cursor"]
                if cursor is None:
                    break
        return healthy, ready, time.perf_counter() - started, listed
    finally:
        proc.terminate()
        proc.wait(30)


def _until(check: object, deadline_s: float = 120.0) -> float:
    """The moment `check()` first holds (connection errors count as not yet)."""
    stop = time.monotonic() + deadline_s
    while time.monotonic() < stop:
        try:
            if check():  # type: ignore[operator]
                return time.perf_counter()
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"serve did not answer within {deadline_s:.0f} s")


def one(kind: str, n: int, page: int, directory: Path, starts: int) -> None:
    url = f"sqlite:///{directory / f'start-{n}.db'}" if kind == "sqlite" else PG.create_database()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    register_all(url, n, directory)
    doc = config_doc(url, n)
    config = directory / f"mw-{kind}-{n}.yaml"
    config.write_text(yaml.safe_dump(doc))
    t0 = time.perf_counter()
    parse_config(yaml.safe_load(config.read_text()))
    parsed = time.perf_counter() - t0
    for start in range(starts):  # the first also writes the bytecode cache, as a deploy does
        healthy, ready, listed_s, listed = timed_serve(config, page)
        print(
            f"{kind:10s} {n:5d} models, start {start + 1}: config parsed in {parsed:.2f} s; "
            f"serve /healthz after {healthy:.2f} s, /readyz after {ready:.2f} s, {listed} models "
            f"listed ({page} a page) after {listed_s:.2f} s; load {os.getloadavg()[0]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--db", default="sqlite")
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--starts", type=int, default=2, help="serve starts per database")
    args = parser.parse_args()
    cpu = platform.processor() or platform.machine()
    print(f"modelwatch serve start-up; {os.cpu_count()} cores {cpu}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.db.split(","):
            one(kind, args.models, args.page, Path(tmp), args.starts)


if __name__ == "__main__":
    main()
