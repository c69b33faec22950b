"""The report flags (`--json/--html/--markdown PATH`) read the same on every command that has
them: one decorator (monitor/app/cli/_options.py) defines them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import run_cli

FLAGS = {
    "drift": ("--json", "--html"),
    "skew": ("--json", "--html"),
    "estimate": ("--json", "--html"),
    "canary": ("--json",),
    "compare": ("--json",),
    "gate": ("--json", "--html", "--markdown"),
    "segments": ("--json", "--html", "--markdown"),
}


@pytest.mark.parametrize("command", sorted(FLAGS))
def test_report_flags_take_a_path_or_dash_on_every_command(command: str) -> None:
    out = run_cli(command, "--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # click wraps help lines
    for flag in FLAGS[command]:
        assert f"{flag} PATH" in text
    assert text.count("here (- for stdout)") == len(FLAGS[command])
    assert ("--markdown" in text) == ("--markdown" in FLAGS[command])


def test_a_directory_as_report_path_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    for name in ("ref.csv", "cur.csv"):
        frame.to_csv(tmp_path / name, index=False)
    out = run_cli("drift", str(tmp_path / "ref.csv"), str(tmp_path / "cur.csv"),
                  "--json", str(tmp_path))  # fmt: skip
    assert out.returncode == 2
    assert "--json" in out.stderr and "is a directory" in out.stderr
    assert "Traceback" not in out.stderr
