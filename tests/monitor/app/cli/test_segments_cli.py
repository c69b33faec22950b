"""`modelwatch segments`: the summary, the JSON/HTML/Markdown reports, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from monitor.app.cli._segments import METRICS as CLI_METRICS
from monitor.segments import METRICS
from tests.conftest import run_cli
from tests.monitor.segments.conftest import planted_frame


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "scored.parquet"
    planted_frame(20_000).to_parquet(path)
    return path


def test_the_cli_lists_the_package_metrics() -> None:
    assert CLI_METRICS == METRICS


def test_reports_name_the_planted_segment(tmp_path: Path) -> None:
    data = _data(tmp_path)
    out = run_cli("segments", str(data), "--label", "label", "--prediction", "pred", "--bins", "5",
                  "--top", "3", "--json", str(tmp_path / "s.json"), "--html",
                  str(tmp_path / "s.html"), "--markdown", str(tmp_path / "s.md"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "reported=3" in out.stdout and "a = 3 AND b = x AND c = " in out.stdout
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["n_rows"] == 20_000 and len(doc["segments"]) == 3
    assert {p["feature"] for p in doc["segments"][0]["predicates"]} == {"a", "b", "c"}
    assert doc["segments"][0]["q_value"] < 0.05
    assert "a = 3 AND b = x" in (tmp_path / "s.html").read_text()
    assert "| a = 3 AND b = x AND c = " in (tmp_path / "s.md").read_text()


def test_json_on_stdout_sends_the_summary_to_stderr(tmp_path: Path) -> None:
    out = run_cli("segments", str(_data(tmp_path)), "--label", "label", "--prediction", "pred",
                  "--features", "a,b", "--json", "-")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["features"] == ["a", "b"]
    assert "rows=20000" in out.stderr


def test_no_segment_says_why(tmp_path: Path) -> None:
    path = tmp_path / "null.csv"
    planted_frame(3000, weak=False).to_csv(path, index=False)
    out = run_cli("segments", str(path), "--label", "label", "--prediction", "pred",
                  "--markdown", str(tmp_path / "s.md"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "reported=0" in out.stdout and "no segment" in out.stdout
    assert "No segment reported" in (tmp_path / "s.md").read_text()


def test_errors_are_one_line_naming_the_file_or_column(tmp_path: Path) -> None:
    data = _data(tmp_path)
    cases = [
        (["segments", str(tmp_path / "missing.csv"), "--label", "label", "--prediction", "pred"],
         "missing.csv: file not found"),
        (["segments", str(data), "--label", "nope", "--prediction", "pred"], "column 'nope'"),
        (["segments", str(data), "--label", "label", "--prediction", "pred", "--features", "a,zz"],
         "column 'zz'"),
        (["segments", str(data), "--label", "d", "--prediction", "pred", "--metric",
          "log_loss", "--features", "a"], "column 'd': log_loss needs 0/1 labels"),
    ]  # fmt: skip
    for args, message in cases:
        out = run_cli(*args)
        assert out.returncode == 2, out
        assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_non_finite_predictions_name_the_file_and_column(tmp_path: Path) -> None:
    frame = planted_frame(500).astype({"pred": float})
    frame.loc[0, "pred"] = float("nan")
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    out = run_cli("segments", str(path), "--label", "label", "--prediction", "pred")
    assert out.returncode == 2
    assert "bad.parquet: column 'pred': missing or non-finite values" in out.stderr


def test_a_baseline_gives_the_numeric_edges(tmp_path: Path) -> None:
    data = _data(tmp_path)
    ref = tmp_path / "ref.csv"
    planted_frame(5000, seed=9)[["c", "d", "f"]].to_csv(ref, index=False)
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    made = run_cli("baseline", "create", "--model", "m", "--version", "1", "--database-url", db,
                   str(ref))  # fmt: skip
    assert made.returncode == 0, made.stderr
    args = ["segments", str(data), "--label", "label", "--prediction", "pred", "--json", "-",
            "--top", "50", "--min-share", "0.002"]  # fmt: skip
    out = run_cli(*args, "--baseline", "default", "--model", "m", "--database-url", db)
    assert out.returncode == 0, out.stderr
    own = run_cli(*args)
    assert own.returncode == 0, own.stderr

    def c_values(stdout: str) -> set[str]:
        segs = json.loads(stdout)["segments"]
        return {p["value"] for s in segs for p in s["predicates"] if p["feature"] == "c"}

    # the edges come from the baseline's reference (seed 9), not from DATA's own quantiles
    assert c_values(out.stdout) and c_values(own.stdout)
    assert c_values(out.stdout).isdisjoint(c_values(own.stdout))
    missing = run_cli(*args, "--baseline", "nope", "--model", "m", "--database-url", db)
    assert missing.returncode == 2 and "no baseline 'nope'" in missing.stderr


def test_the_cli_lists_the_package_modes() -> None:
    from monitor.app.cli._segments import MODES as CLI_MODES
    from monitor.segments import MODES

    assert CLI_MODES == MODES


def test_label_free_modes_name_the_planted_segment_as_estimates(tmp_path: Path) -> None:
    from tests.monitor.segments.conftest import scored_frame, shifted_frame

    scored_frame(3000, 1).to_parquet(tmp_path / "ref.parquet")
    scored_frame(6000, 2).drop(columns="label").to_parquet(tmp_path / "cur.parquet")
    shifted_frame(5000, 1).to_parquet(tmp_path / "dref.parquet")
    shifted_frame(5000, 2, extra=2.0).to_parquet(tmp_path / "dcur.parquet")
    runs = [("estimated", "cur", "ref", ["--label", "label", "--prediction", "score"]),
            ("drift", "dcur", "dref", [])]  # fmt: skip
    for mode, cur, ref, roles in runs:
        out = run_cli("segments", str(tmp_path / f"{cur}.parquet"), "--mode", mode,
                      "--reference", str(tmp_path / f"{ref}.parquet"), *roles, "--bins", "5",
                      "--json", str(tmp_path / f"{mode}.json"), "--markdown",
                      str(tmp_path / f"{mode}.md"))  # fmt: skip
        assert out.returncode == 0, out.stderr
        doc = json.loads((tmp_path / f"{mode}.json").read_text())
        assert doc["mode"] == mode and doc["estimated"] and doc["status"] == "segments"
        assert {p["feature"] for p in doc["segments"][0]["predicates"]} == {"a", "b", "c"}
        assert "Estimated without labels" in (tmp_path / f"{mode}.md").read_text()
    out = run_cli("segments", str(tmp_path / "cur.parquet"), "--mode", "drift")
    assert out.returncode == 2 and "--mode drift needs --reference" in out.stderr
