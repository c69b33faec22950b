"""The drift HTML report: headline, per-column sections, slice charts, explanations, table."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from monitor.detectors import DriftResult, evaluate
from monitor.profiles import profile_frame, specs_for
from monitor.reports import render_html
from monitor.reports._charts import x_scale
from monitor.reports._explain import explain
from tests.conftest import run_cli


def demo_frames(seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Reference and current: f0 (lognormal) drifts only in region=eu; f1 never drifts."""
    rng = np.random.default_rng(seed)

    def frame(n: int, eu_shift: float) -> pd.DataFrame:
        region = rng.choice(["eu", "us", "latam"], n, p=[0.4, 0.4, 0.2])
        f0 = rng.lognormal(0.0, 1.0, n) * np.where(region == "eu", eu_shift, 1.0)
        return pd.DataFrame(
            {
                "f0": f0,
                "f1": rng.normal(0, 1, n),
                "channel": rng.choice(["web", "app"], n),
                "region": region,
            }
        )

    return frame(4000, 1.0), frame(3000, 3.0)


def _report(ref: pd.DataFrame, cur: pd.DataFrame) -> tuple[list[DriftResult], str]:
    cols = ["f0", "f1", "channel"]
    specs = specs_for(cols, ref)
    ref_set = profile_frame(ref, specs, ["region"])
    cur_set = profile_frame(cur, specs, ["region"])
    results = evaluate(ref_set, cur_set, cols)
    return results, render_html(results, ref_set, cur_set, "ref → cur")


def _section(text: str, column: str) -> str:
    start = text.index(f'<section id="col-{column}">')
    return text[start : text.index("</section>", start)]


def test_headline_sections_and_slice_charts() -> None:
    results, text = _report(*demo_frames())
    drifted_slices = {(r.column, str(r.slice)) for r in results if r.slice and r.status == "drift"}
    assert ("f0", "{'region': 'eu'}") in drifted_slices
    # region (the slice column) is compared too, overall
    assert "Dataset drift: no drift — 1 of 4 columns drifted overall" in text
    assert "Drifted columns: f0" in text and "Drifted slices: f0 region=eu" in text
    # worst first: the drifted column's section comes before the others
    assert text.index('id="col-f0"') < text.index('id="col-f1"')
    f0 = _section(text, "f0")
    # overall histogram + CDF, and the same pair for each drifted slice
    assert f0.count("<svg") == 2 * (1 + sum(c == "f0" for c, _ in drifted_slices))
    assert "f0 — region=eu" in f0 and "f0 region=eu: histogram" in f0
    assert "above the threshold and significant" in f0
    assert _section(text, "f1").count("<svg") == 2  # no drifted slice: overall charts only
    assert _section(text, "channel").count("<svg") == 1  # categorical: one bar chart


def test_table_is_sortable_filterable_and_offline() -> None:
    results, text = _report(*demo_frames())
    table = text[text.index('<table class="results"') :]
    assert table.count("<tr>") == len(results) + 1
    assert 'id="results-filter"' in text and "addEventListener('click'" in text
    assert "http://" not in text.replace("http://www.w3.org", "")
    assert "<link" not in text and " src=" not in text


def test_skewed_column_drawn_on_log_axis() -> None:
    ref, _ = demo_frames()
    specs = specs_for(["f0", "f1"], ref)
    assert x_scale(specs["f0"].edges_array).log
    assert not x_scale(specs["f1"].edges_array).log
    _, text = _report(*demo_frames())
    assert "log scale" in _section(text, "f0") and "log scale" not in _section(text, "f1")


def _result(status: str, value: float | None, p: float | None, n_cur: int = 212) -> DriftResult:
    return DriftResult("f0", {"region": "latam"}, "numeric", "wasserstein", value, 0.1, p, 800,
                       n_cur, status)  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize(
    ("result", "sentence"),
    [
        (_result("ok", 0.1173, 0.56), "above the threshold but not significant at n=212"),
        (_result("ok", 0.1, 0.9), "at or below the threshold"),  # exactly the threshold
        (_result("drift", 0.5, 0.001), "above the threshold and significant at alpha 0.01"),
        (_result("insufficient_data", None, None, 12),
         "insufficient data: 12 current rows < min_n 30"),
    ],
)  # fmt: skip
def test_every_verdict_is_explained(result: DriftResult, sentence: str) -> None:
    assert sentence in explain(result, 0.01, 30)


def test_insufficient_slice_explained_in_report() -> None:
    ref, cur = demo_frames()
    cur = pd.concat([cur[cur.region != "latam"], cur[cur.region == "latam"].head(12)])
    _, text = _report(ref, cur)
    assert "insufficient data: 12 current rows &lt; min_n 30" in text


def test_cli_writes_the_report(tmp_path: Path) -> None:
    ref, cur = demo_frames()
    ref.to_parquet(tmp_path / "ref.parquet")
    cur.to_parquet(tmp_path / "cur.parquet")
    out = run_cli("drift", str(tmp_path / "ref.parquet"), str(tmp_path / "cur.parquet"),
                  "--slice-by", "region", "--html", str(tmp_path / "r.html"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "r.html").read_text()
    assert re.search(r"Dataset drift: \w+", text) and "f0 — region=eu" in text
    # named roles are shown beside their column's heading, and only there
    out = run_cli("drift", str(tmp_path / "ref.parquet"), str(tmp_path / "cur.parquet"),
                  "--target", "channel", "--prediction", "f1",
                  "--html", str(tmp_path / "roles.html"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "roles.html").read_text()
    assert "target · label drift" in _section(text, "channel").split("</h2>")[0]
    assert "prediction drift" in _section(text, "f1").split("</h2>")[0]
    assert "class='role'" not in _section(text, "f0")


def test_schema_statuses_are_explained_without_charts() -> None:
    """A column on one side only ('missing'/'new' where detectors report them) has no charts."""
    ref, cur = demo_frames()
    results, _ = _report(ref, cur)
    ref_set = profile_frame(ref, specs_for(["f0", "f1", "channel"], ref), ["region"])
    cur_set = profile_frame(cur, specs_for(["f0"], ref), ["region"])
    gone = [
        dataclasses.replace(r, status="missing", value=None, p_value=None)  # type: ignore[arg-type]
        if r.column == "f1" else r
        for r in results
    ]  # fmt: skip
    text = render_html(gone, ref_set, cur_set, "schema")
    assert "Missing from the current data: f1" in text
    assert "missing: the current data does not carry this column" in _section(text, "f1")
    assert "<svg" not in _section(text, "f1")
    assert text.index('id="col-f1"') < text.index('id="col-f0"')  # worst first
