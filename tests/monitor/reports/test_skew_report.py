"""`modelwatch skew --html`: headline, features table, worst keys per skewed feature; roles."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.conftest import run_cli
from tests.monitor.test_skew import _pair


def test_html_names_worst_keys_per_feature(rng: np.random.Generator, tmp_path: Path) -> None:
    serving, offline = _pair(rng)
    serving.to_parquet(tmp_path / "s.parquet")
    offline.to_csv(tmp_path / "o.csv", index=False)
    out = run_cli("skew", str(tmp_path / "s.parquet"), str(tmp_path / "o.csv"), "--key", "id",
                  "--html", str(tmp_path / "skew.html"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "skew.html").read_text()
    assert "3 of 3 features differ between serving and offline" in text
    assert "Joined 980 keys; only in serving: 2; only offline: 20" in text
    amount = text[text.index('id="feature-amount"') :]
    amount = amount[: amount.index("</section>")]
    assert "50 of 980 joined rows differ" in amount
    assert amount.index("<td>7</td>") < amount.index("</table>")  # worst key listed first
    assert text.index('id="feature-country"') < text.index('id="feature-amount"')


def test_exclude_and_json_to_stdout(rng: np.random.Generator, tmp_path: Path) -> None:
    serving, offline = _pair(rng)
    serving.to_parquet(tmp_path / "s.parquet")
    offline.to_parquet(tmp_path / "o.parquet")
    out = run_cli("skew", str(tmp_path / "s.parquet"), str(tmp_path / "o.parquet"), "--key", "id",
                  "--exclude", "country", "--json", "-")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert [f["column"] for f in json.loads(out.stdout)["features"]] == ["amount", "clean"]
    assert "joined=980" in out.stderr
