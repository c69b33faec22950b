"""Progress lines: shown on a terminal, never in pipes (CI logs stay exactly the output)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import REPO, run_cli


def _data(tmp_path: Path) -> list[str]:
    rng = np.random.default_rng(3)
    pd.DataFrame({"amount": rng.normal(size=2000)}).to_parquet(tmp_path / "d.parquet")
    return ["baseline", "create", "--model", "m", "--version", "1", str(tmp_path / "d.parquet"),
            "--database-url", f"sqlite:///{tmp_path / 'mw.db'}", "--chunks", "4"]  # fmt: skip


def _on_terminal(args: list[str]) -> str:
    """Run `modelwatch ARGS` with stdout and stderr on a pseudo-terminal; everything it drew."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm", "COLUMNS": "120"}
    proc = subprocess.Popen([sys.executable, "-m", "monitor", *args], stdout=slave,
                            stderr=slave, stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO once the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(120) == 0
    return b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    drawn = _on_terminal(_data(tmp_path))
    # the first step is drawn at once; later ones when the spinner refreshes
    assert f"reading and profiling {tmp_path / 'd.parquet'}" in drawn
    assert "baseline 1 'default' of m 1: 2000 rows" in drawn


def test_no_progress_in_pipes(tmp_path: Path) -> None:
    out = run_cli(*_data(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stderr == "" and "\x1b" not in out.stdout and "profiling" not in out.stdout
