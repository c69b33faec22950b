"""Profiles on Spark: a multi-partition DataFrame profiles exactly as the same data in pandas."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import create_engine

from monitor.baselines.store import load_baseline
from monitor.errors import InputError
from monitor.profiles import profile_frame, specs_for
from tests.conftest import REPO, run_cli
from tests.monitor.baselines.test_streaming import _frame, assert_same

pytestmark = pytest.mark.slow
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "512m",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
}
SUBMIT_ARGS = " ".join(f"--conf {k}={v}" for k, v in LOCAL_CONF.items()) + " pyspark-shell"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local-mode session on two cores, bound to loopback, without UI."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # Importing NannyML (the estimation oracle) starts a Spark context through one of its
    # dependencies, with workers on whatever `python3` is first on PATH; stop it so the
    # session below is this interpreter's, on these settings.
    stale = SparkContext._active_spark_context
    if stale is not None:
        stale.stop()
    builder = SparkSession.builder.master("local[2]").appName("modelwatch-tests")
    for key, value in LOCAL_CONF.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def test_spark_profile_equals_pandas(spark: Any) -> None:
    from monitor.baselines.spark import profile_dataframe, profile_spark

    frame = _frame(6_000, seed=5)
    df = spark.createDataFrame(frame).repartition(5)
    assert df.rdd.getNumPartitions() == 5
    cols = ["amount", "age", "merchant", "channel"]
    specs = specs_for(cols, frame, 16, 20)
    memory = profile_frame(frame, specs, ["region"])
    assert_same(profile_spark(df, specs, ["region"]), memory)
    # The sketch pass over partitions builds the same specs as pandas does from all rows.
    built = profile_dataframe(df, cols, ["region"], bins=16, top_k=20)
    assert dict(built.specs) == specs
    assert_same(built.profiles, memory)


def test_empty_partitions_bad_columns_and_missing_tables(spark: Any) -> None:
    from monitor.baselines.spark import profile_spark, read_table

    frame = _frame(10, seed=6)
    df = spark.createDataFrame(frame).repartition(8)  # most partitions are empty
    specs = specs_for(["amount", "merchant"], frame)
    assert_same(profile_spark(df, specs), profile_frame(frame, specs))
    with pytest.raises(InputError, match="column 'nope' not found"):
        profile_spark(df, specs, ["nope"])
    with pytest.raises(InputError, match="table 'no_such_table': cannot read with Spark"):
        read_table(spark, "no_such_table")


def test_cli_baseline_from_a_spark_path(tmp_path: Path) -> None:
    frame = _frame(3_000, seed=7)
    (tmp_path / "t").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[part].to_parquet(tmp_path / "t" / f"part-{i}.parquet")
    db = f"sqlite:///{tmp_path / 'mw.db'}"
    assert run_cli("db", "upgrade", "--database-url", db).returncode == 0
    env = {"PYSPARK_SUBMIT_ARGS": SUBMIT_ARGS, "SPARK_LOCAL_IP": "127.0.0.1"}
    base = ["baseline", "create", "--model", "m", "--version", "1", "--engine", "spark"]
    out = run_cli(*base, "--table", str(tmp_path / "t"), "--columns", "amount,merchant",
                  "--slice-by", "region", "--database-url", db, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "3000 rows, 3 columns, 3 slices" in out.stdout
    stored = load_baseline(create_engine(db), "m", "1")
    whole = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "t").iterdir())])
    assert_same(stored, profile_frame(whole, stored.specs, ["region"]))
    for args, message in [
        ([], "--engine spark profiles --table"),
        (["--table", "t", str(tmp_path / "t")], "--engine spark profiles --table"),
    ]:
        bad = run_cli(*base, *args, "--database-url", db)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    local = run_cli(*base[:-2], "--table", "t", "--database-url", db)
    assert local.returncode == 2 and "--table needs --engine spark" in local.stderr


def test_public_surface_and_lazy_pyspark() -> None:
    import monitor.baselines.spark

    assert set(monitor.baselines.spark.__all__) == {
        "profile_dataframe", "profile_spark", "read_table", "sketch_spark",
    }  # fmt: skip
    code = "import sys, monitor.baselines.spark; print('pyspark' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"},
    )
    assert out.stdout.strip() == "False", "importing monitor.baselines.spark started pyspark"
