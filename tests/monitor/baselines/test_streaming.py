"""Datasets read in record batches: streamed profiles equal in-memory ones; bad input is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import create_engine

from monitor.baselines import stream as _stream
from monitor.baselines.store import load_baseline
from monitor.baselines.stream import profile_source
from monitor.data.datasets import DataSource, open_source
from monitor.detectors import profile_variability
from monitor.errors import InputError
from monitor.profiles import ProfileSet, profile_frame, spec_from_reference, specs_for
from monitor.profiles.sketch import SpecSketch, sketch_kinds
from tests.conftest import run_cli


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(3, 1, n)
    amount[rng.random(n) < 0.05] = np.nan
    if n > 10:
        amount[3], amount[7] = np.inf, -np.inf
    return pd.DataFrame(
        {
            "amount": amount,
            "age": rng.integers(18, 90, n),
            # more categories than top_k, so "other" and the tail matter
            "merchant": rng.choice([f"m{i:03d}" for i in range(80)], n, p=_zipf(80)),
            "channel": rng.choice(["web", "app", None], n),
            "region": rng.choice(["eu", "us", "apac"], n),
        }
    )


def _zipf(k: int) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1)
    return w / w.sum()


def assert_same(streamed: ProfileSet, memory: ProfileSet) -> None:
    """Equal row counts and bucket counts; float sums and moments equal up to rounding."""
    assert dict(streamed.rows) == dict(memory.rows)
    assert set(streamed.profiles) == set(memory.profiles)
    for key, mine in streamed.profiles.items():
        theirs: Any = memory.profiles[key]
        assert mine.spec == theirs.spec, key
        assert mine.counts.tolist() == theirs.counts.tolist(), key
        assert mine.null_count == theirs.null_count, key
        if mine.kind == "numeric":
            m: Any = mine
            np.testing.assert_allclose(m.sums, theirs.sums, rtol=1e-9, atol=1e-6)
            assert (m.minimum, m.maximum) == (theirs.minimum, theirs.maximum)
            assert m.mean == pytest.approx(theirs.mean, rel=1e-9)
            assert m.m2 == pytest.approx(theirs.m2, rel=1e-9)


@pytest.mark.parametrize("batch_rows", [1, 997, 100_000])
def test_streamed_profile_equals_in_memory(tmp_path: Path, batch_rows: int) -> None:
    n = 1 if batch_rows == 1 else 20_000
    frame = _frame(n)
    if n == 1:
        frame["amount"] = 5.0
    path = tmp_path / "ref.parquet"
    frame.to_parquet(path, row_group_size=3000)
    cols = ["amount", "age", "merchant", "channel"]
    specs = specs_for(cols, frame, 16, 20)
    chunks = 0 if n == 1 else 7
    got = profile_source(
        open_source(path), cols, ["region"], bins=16, top_k=20, chunks=chunks,
        batch_rows=batch_rows,
    )  # fmt: skip
    assert dict(got.specs) == specs
    memory = profile_frame(frame, specs, ["region"])
    assert_same(got.profiles, memory)
    if chunks:
        assert got.variability is not None
        expected = profile_variability(frame, specs, memory, chunks)
        assert got.variability.chunk_rows == expected.chunk_rows
        assert set(got.variability.spreads) == set(expected.spreads)
        for key, spread in got.variability.spreads.items():
            theirs = expected.spreads[key]
            assert spread.chunks == theirs.chunks, key
            assert spread.mean == pytest.approx(theirs.mean, rel=1e-6), key
            assert spread.std == pytest.approx(theirs.std, rel=1e-6, abs=1e-12), key


def test_a_small_reference_is_read_once_and_profiles_as_if_read_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = _frame(20_000)
    path = tmp_path / "ref.parquet"
    frame.to_parquet(path, row_group_size=3000)
    cols = ["amount", "age", "merchant", "channel"]
    reads: list[list[str]] = []
    batches = DataSource.frames

    def counted(self: DataSource, columns: Any, batch_rows: int = 65_536) -> Any:
        reads.append(list(columns))
        return batches(self, columns, batch_rows)

    monkeypatch.setattr(DataSource, "frames", counted)
    once = profile_source(open_source(path), cols, bins=16, top_k=20, batch_rows=997)
    assert len(reads) == 1  # the sketch pass's frames were profiled again
    monkeypatch.setattr(_stream, "REPLAY_CELLS", 10_000)  # past it: read again, in batches
    twice = profile_source(open_source(path), cols, bins=16, top_k=20, batch_rows=997)
    assert len(reads) == 3
    assert dict(once.specs) == dict(twice.specs)
    for key, mine in once.profiles.profiles.items():
        theirs: Any = twice.profiles.profiles[key]
        assert mine.to_bytes() == theirs.to_bytes(), key  # bit for bit: the same batches


def test_slice_values_past_the_cap_fold_into_other_like_in_memory(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    # 60 shop values with distinct frequencies: the 50 kept are unambiguous
    shops = np.repeat([f"s{i:02d}" for i in range(60)], np.arange(60) + 5)
    frame = pd.DataFrame({"x": rng.normal(size=shops.size), "shop": rng.permutation(shops)})
    frame.loc[::97, "shop"] = None
    frame.to_parquet(tmp_path / "d.parquet")
    specs = specs_for(["x"], frame)
    got = profile_source(open_source(tmp_path / "d.parquet"), ["x"], ["shop"], batch_rows=100)
    assert_same(got.profiles, profile_frame(frame, specs, ["shop"]))
    assert '{"shop":"(other)"}' in got.profiles.rows


def test_past_the_sample_edges_are_approximate_with_exact_ends(tmp_path: Path) -> None:
    x = np.random.default_rng(2).normal(size=50_000)
    frame = pd.DataFrame({"x": x})
    sketch = SpecSketch(sketch_kinds(frame, ["x"]), capacity=5_000)
    for part in (frame.iloc[i : i + 6_000] for i in range(0, 50_000, 6_000)):
        sketch.add(part)
    assert sketch.keys.size == 5_000 and sketch.rows == 50_000
    edges = np.array(sketch.specs(bins=10)["x"].edges)
    exact = np.quantile(x, np.linspace(0, 1, 11))
    assert (edges[0], edges[-1]) == (x.min(), x.max())
    np.testing.assert_allclose(edges, exact, atol=0.1)


def test_sketches_of_parts_merge_to_the_sketch_of_the_whole() -> None:
    frame = _frame(4_000, seed=3)
    cols = ["amount", "age", "merchant", "channel"]
    kinds = sketch_kinds(frame, cols)
    whole = SpecSketch(kinds, ("region",))
    whole.add(frame)
    parts = [SpecSketch(kinds, ("region",), seed=i) for i in range(3)]
    for part, rows in zip(
        parts, (frame.iloc[:1000], frame.iloc[1000:2500], frame.iloc[2500:]), strict=True
    ):
        part.add(rows)
    merged = parts[0].merge(parts[1]).merge(parts[2])
    assert merged.rows == 4_000
    assert merged.specs(16, 20) == whole.specs(16, 20) == specs_for(cols, frame, 16, 20)


def test_many_distinct_categories_stay_bounded_and_mark_the_tail_incomplete() -> None:
    n = 30_000
    ids = np.array([f"u{i}" for i in range(n)], dtype=object)
    ids[: n // 2] = "hot"  # one heavy hitter among 15,001 distinct values
    frame = pd.DataFrame({"user": ids})
    sketch = SpecSketch(sketch_kinds(frame, ["user"]), limit=1_000)
    for part in (frame.iloc[i : i + 3_000] for i in range(0, n, 3_000)):
        sketch.add(part)
        assert len(sketch.counts["user"].counts) <= 2_000
    spec = sketch.specs(top_k=5)["user"]
    assert spec.categories[0] == "hot" and not spec.tail_complete


def test_partitioned_directory_and_glob_through_the_cli(tmp_path: Path) -> None:
    root = tmp_path / "table"
    frames = []
    for region in ("eu", "us"):
        for day in (1, 2):
            part = _frame(700, seed=day).drop(columns="region")
            folder = root / f"region={region}" / f"day={day}"
            folder.mkdir(parents=True)
            part.to_parquet(folder / "part-0.parquet")
            frames.append(part.assign(region=region))
    (root / "_SUCCESS").write_text("")
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    assert run_cli("db", "upgrade", "--database-url", db).returncode == 0
    args = ["--columns", "amount,merchant", "--slice-by", "region", str(root)]
    out = run_cli("baseline", "create", "--model", "m", "--version", "1", *args,
                  "--database-url", db)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "2800 rows, 3 columns, 2 slices" in out.stdout  # region is a column too
    stored = load_baseline(create_engine(db), "m", "1")
    whole = pd.concat(frames, ignore_index=True)
    assert_same(stored, profile_frame(whole, stored.specs, ["region"]))
    glob = run_cli("drift", str(root / "region=eu" / "*" / "*.parquet"), str(root), "--columns",
                   "amount")  # fmt: skip
    assert glob.returncode == 0, glob.stderr
    assert "reference=1400 current=2800" in glob.stdout


def test_csv_and_gzipped_csv_stream(tmp_path: Path) -> None:
    frame = _frame(3_000, seed=4).drop(columns=["amount"])
    frame.to_csv(tmp_path / "a.csv", index=False)
    frame.to_csv(tmp_path / "b.csv.gz", index=False)
    got = profile_source(open_source(tmp_path / "b.csv.gz"), ["age", "merchant"], ["region"])
    memory = pd.read_csv(tmp_path / "a.csv")
    assert_same(got.profiles, profile_frame(memory, got.specs, ["region"]))


def test_empty_current_streams_and_is_a_ci_safe_exit(tmp_path: Path) -> None:
    frame = _frame(2_000)
    frame.to_parquet(tmp_path / "ref.parquet")
    frame.iloc[:0].to_parquet(tmp_path / "cur.parquet")
    out = run_cli("drift", str(tmp_path / "ref.parquet"), str(tmp_path / "cur.parquet"),
                  "--slice-by", "region")  # fmt: skip
    # Read without error, but an empty CURRENT is never a pass (exit 2; see test_drift_cli_ci).
    assert out.returncode == 2, out.stderr
    assert "reference=2000 current=0" in out.stdout and "drift=0" in out.stdout
    assert "the current data is empty" in out.stderr


def _bad_inputs(tmp: Path) -> list[tuple[list[str], str]]:
    _frame(100).to_parquet(tmp / "ok.parquet")
    (tmp / "empty").mkdir()
    (tmp / "mixed").mkdir()
    _frame(10).to_parquet(tmp / "mixed" / "a.parquet")
    _frame(10).to_csv(tmp / "mixed" / "b.csv", index=False)
    (tmp / "broken.parquet").write_bytes(b"PAR1 not really parquet")
    (tmp / "notes.txt").write_text("x")
    pq.write_table(pa.table({"amount": ["a", "b"]}), tmp / "text.parquet")
    return [
        (["missing.parquet"], "missing.parquet: file not found"),
        (["empty"], "empty: no Parquet or CSV files in directory"),
        (["nothing*.parquet"], "nothing*.parquet: no files match"),
        (["mixed"], "mixed: mixes Parquet and CSV files"),
        (["broken.parquet"], "broken.parquet: cannot read"),
        (["notes.txt"], "notes.txt: unsupported file type"),
        (["ok.parquet", "--columns", "amount,nope"], "ok.parquet: column 'nope' not found"),
        (["ok.parquet", "--slice-by", "shop"], "ok.parquet: column 'shop' not found"),
    ]


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    assert run_cli("db", "upgrade", "--database-url", db).returncode == 0
    for args, message in _bad_inputs(tmp_path):
        out = run_cli("baseline", "create", "--model", "m", "--version", "1", *args,
                      "--database-url", db, cwd=tmp_path)  # fmt: skip
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_bad_column_type_is_named() -> None:
    with pytest.raises(InputError, match="column 'amount'"):
        sketch = SpecSketch({"amount": "numeric"})
        sketch.add(pd.DataFrame({"amount": ["a", "b"]}))


def test_public_surface() -> None:
    import monitor.data.datasets

    assert set(monitor.data.datasets.__all__) == {
        "DEFAULT_BATCH_ROWS", "FORMATS", "DataSource", "open_source",
    }  # fmt: skip


def test_forced_categorical_columns_are_profiled_as_categories(tmp_path: Path) -> None:
    frame = _frame(3_000, seed=8)
    frame.to_parquet(tmp_path / "d.parquet")
    got = profile_source(
        open_source(tmp_path / "d.parquet"), ["age", "amount"], categorical=["age"]
    )
    assert got.specs["age"] == spec_from_reference("age", frame["age"], kind="categorical")
    assert got.specs["amount"].kind == "numeric"
    assert_same(got.profiles, profile_frame(frame, got.specs))


def test_rare_values_of_discrete_columns_reach_the_spec_builder() -> None:
    n = 40_000
    codes = np.zeros(n)
    codes[::2] = 10.0
    codes[12_345] = 5.0  # one rare value the 1,000-row sample will almost surely miss
    frame = pd.DataFrame({"code": codes, "x": np.random.default_rng(9).normal(size=n)})
    halves = [
        SpecSketch(sketch_kinds(frame, ["code", "x"]), capacity=1_000, seed=i) for i in (0, 1)
    ]
    halves[0].add(frame.iloc[:20_000])
    halves[1].add(frame.iloc[20_000:])
    merged = halves[0].merge(halves[1])
    assert merged.distinct["code"] == {0.0, 5.0, 10.0}
    assert merged.distinct["x"] is None  # a continuous column stops being tracked at once
    edges = merged.specs(bins=4)["code"].edges
    assert (edges[0], edges[-1]) == (0.0, 10.0)
