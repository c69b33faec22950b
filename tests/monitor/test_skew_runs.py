"""Feature sources of scheduled skew checks: Parquet files and directories, SQL queries, and a
one-line error naming the source for each way they go wrong."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from monitor.config import FeatureSourceConfig, SkewCheckConfig
from monitor.errors import InputError
from monitor.skew_runs import compare_frames, read_source, status_of
from monitor.storage import make_engine
from tests.services.postgres import PostgresServer


def frames(n: int = 200) -> tuple[pd.DataFrame, pd.DataFrame]:
    serving = pd.DataFrame({"id": range(n), "a": [i * 0.5 for i in range(n)],
                            "b": [i % 7 for i in range(n)]})  # fmt: skip
    offline = serving.copy()
    offline.loc[offline["id"] % 5 == 0, "b"] = -1  # a fifth of `b` differs
    return serving, offline


def sqlite_source(
    tmp_path: Path, frame: pd.DataFrame
) -> tuple[FeatureSourceConfig, dict[str, str]]:
    db = tmp_path / "offline.db"
    with sqlite3.connect(db) as conn:
        frame.to_sql("features", conn, index=False)
    src = FeatureSourceConfig(sql="SELECT id, a, b FROM features", url_env="MW_OFFLINE")
    return src, {"MW_OFFLINE": f"sqlite:///{db}"}


def test_files_directories_and_queries_read_the_same_rows(tmp_path: Path) -> None:
    serving, offline = frames()
    serving.to_parquet(tmp_path / "serving.parquet")
    (tmp_path / "parts").mkdir()
    offline.iloc[:100].to_parquet(tmp_path / "parts" / "0.parquet")
    offline.iloc[100:].to_parquet(tmp_path / "parts" / "1.parquet")
    sql, env = sqlite_source(tmp_path, offline)
    check = SkewCheckConfig(name="c", model="m", key="id",
                            serving=FeatureSourceConfig(path=str(tmp_path / "serving.parquet")),
                            offline=FeatureSourceConfig(path=str(tmp_path / "parts")))  # fmt: skip
    s = read_source(check.serving, "id")
    from_dir = read_source(check.offline, "id")
    from_sql = read_source(sql, "id", env)
    for o in (from_dir, from_sql):
        report = compare_frames(check, s, o)
        rates = {f.column: f.mismatch_rate for f in report.features}
        assert report.n_joined == 200 and rates == {"b": 0.2, "a": 0.0}
        assert status_of(check, report) == "skew"


def test_bad_sources_are_one_line_errors_naming_them(tmp_path: Path) -> None:
    serving, offline = frames()
    sql, env = sqlite_source(tmp_path, offline)
    missing = FeatureSourceConfig(path=str(tmp_path / "missing.parquet"))
    with pytest.raises(InputError, match=r"missing\.parquet"):
        read_source(missing, "id")
    bad = sql.model_copy(update={"sql": "SELECT id FROM nowhere"})
    with pytest.raises(InputError, match=r"sql via \$MW_OFFLINE: query failed: .*nowhere"):
        read_source(bad, "id", env)
    with pytest.raises(InputError, match="environment variable MW_OFFLINE is not set"):
        read_source(sql, "id", {})
    with pytest.raises(InputError, match="more than max_rows=10 rows"):
        read_source(sql.model_copy(update={"max_rows": 10}), "id", env)
    with pytest.raises(InputError, match="key column 'user' not found"):
        read_source(sql, "user", env)
    secret = {"MW_OFFLINE": "postgresql://u:s3cr3t@127.0.0.1:1/db"}
    with pytest.raises(InputError) as refused:
        read_source(sql, "id", secret)
    assert "s3cr3t" not in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("source", "problem"),
    [({}, "give exactly one of path or sql"), ({"path": "a", "sql": "b"}, "exactly one"),
     ({"sql": "select 1"}, "sql needs url_env")],
)  # fmt: skip
def test_a_source_is_a_path_or_a_query(source: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        FeatureSourceConfig(**source)  # type: ignore[arg-type]


def test_a_postgresql_query_source(postgres: PostgresServer) -> None:
    url = postgres.create_database()
    _, offline = frames()
    engine = make_engine(url)
    with engine.begin() as conn:
        offline.to_sql("features", conn, index=False)
    engine.dispose()
    src = FeatureSourceConfig(sql="SELECT id, b FROM features", url_env="MW_OFFLINE")
    got = read_source(src, "id", {"MW_OFFLINE": url})
    assert list(got.columns) == ["id", "b"] and len(got) == 200
