"""Progress lines: shown on a terminal, never in pipes (CI logs stay exactly the output)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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


# A child process on a pseudo-terminal (~2 s): the full lane's.
@pytest.mark.slow
def test_progress_on_a_terminal(tmp_path: Path) -> None:
    drawn = _on_terminal(_data(tmp_path))
    # the first step is drawn at once, with a bar of the rows read out of the total
    assert "2000/2000" in drawn and "100%" in drawn
    assert f"reading and profiling {tmp_path / 'd.parquet'}" in drawn
    assert "baseline 1 'default' of m 1: 2000 rows" in drawn


def test_no_progress_in_pipes(tmp_path: Path) -> None:
    out = run_cli(*_data(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stderr == "" and "\x1b" not in out.stdout and "profiling" not in out.stdout


class _Recorder:
    """A progress observer that keeps what it was told."""

    def __init__(self) -> None:
        self.passes: list[tuple[str, int | None]] = []
        self.rows: list[int] = []

    def begin(self, label: str, total_rows: int | None) -> None:
        self.passes.append((label, total_rows))
        self.rows.append(0)

    def advance(self, rows: int) -> None:
        self.rows[-1] += rows


def test_reads_report_their_totals_and_rows(tmp_path: Path) -> None:
    from monitor.baselines.stream import profile_source
    from monitor.common.progress import observed
    from monitor.data.datasets import open_source

    frame = pd.DataFrame({"a": np.arange(2500.0), "s": ["x", "y"] * 1250})
    frame.to_parquet(tmp_path / "d.parquet")
    frame.to_csv(tmp_path / "d.csv", index=False)
    for name, total in (("d.parquet", 2500), ("d.csv", 2500)):
        seen = _Recorder()
        with observed(seen):
            profile_source(open_source(tmp_path / name), ["a"], ["s"], batch_rows=1000)
        # a sketch pass and a profiling pass, each with the exact total and every row counted
        assert seen.passes == [(str(tmp_path / name), total)] * 2
        assert seen.rows == [total, total]


def test_golden_replay_reports_rows() -> None:
    from guards._runtime import run_batched
    from monitor.common.progress import observed

    class Session:
        def get_outputs(self) -> list[object]:
            return [type("Out", (), {"name": "y"})()]

        def run(self, names: list[str], batch: dict[str, np.ndarray]) -> list[np.ndarray]:
            return [batch["x"] * 2]

    seen = _Recorder()
    with observed(seen):
        out = run_batched(Session(), {"x": np.arange(10.0)}, batch_size=4)
    assert seen.passes == [("golden rows", 10)] and seen.rows == [10]
    assert out["y"].tolist() == (np.arange(10.0) * 2).tolist()


def test_an_empty_csv_is_a_pass_of_zero_rows(tmp_path: Path) -> None:
    from monitor.common.progress import observed
    from monitor.data.datasets import open_source

    (tmp_path / "empty.csv").write_text("a,s\n")
    seen = _Recorder()
    with observed(seen):
        assert list(open_source(tmp_path / "empty.csv").batches(["a"])) == []
    assert seen.passes == [(str(tmp_path / "empty.csv"), 0)] and seen.rows == [0]


def test_nothing_is_reported_without_an_observer(tmp_path: Path) -> None:
    from monitor.data.datasets import open_source

    pd.DataFrame({"a": [1.0, 2.0]}).to_csv(tmp_path / "d.csv", index=False)
    frames = list(open_source(tmp_path / "d.csv").batches(["a"]))
    assert sum(len(f) for f in frames) == 2
