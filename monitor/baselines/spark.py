"""Profiles of Spark DataFrames: each partition is profiled where it lives, partials merged here.

Needs the optional extra ``modelwatch[spark]`` (pyspark); pyspark is imported only inside the
functions below, so importing this module is cheap. Both passes of a streamed baseline run as
``mapInArrow`` over the DataFrame's partitions: the first builds a `SpecSketch` per partition
(merged on the driver into the specs), the second profiles each partition's record batches on
those specs; the driver merges the pickled partial `ProfileSet`s. Only these summaries cross to
the driver, never rows. Executors must be able to import modelwatch (same Python environment).

Spark has no row order, so no reference chunks (and no reference variability) are derived here.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import reduce
from pathlib import Path
from typing import Any

from monitor.baselines.stream import Folds, StreamedProfile, profile_batches, slice_folds
from monitor.errors import InputError
from monitor.profiles import ColumnSpec, ProfileSet, profile_frame
from monitor.profiles.sketch import SpecSketch, sketch_kinds

__all__ = ["profile_dataframe", "profile_spark", "read_table", "sketch_spark"]

_PAYLOAD = "payload binary"


def profile_spark(
    df: Any,
    specs: Mapping[str, ColumnSpec],
    slice_by: Sequence[str] = (),
    folds: Folds | None = None,
) -> ProfileSet:
    """Profile Spark DataFrame `df` on `specs` (one `mapInArrow` pass), overall and per slice."""
    _require(df, [*specs, *slice_by])
    wanted = list(dict.fromkeys([*specs, *slice_by]))
    specs, folds = dict(specs), dict(folds or {})

    def profile_partition(batches: Iterable[Any]) -> Iterator[Any]:
        frames = (b.to_pandas() for b in batches if b.num_rows)
        first = next(frames, None)
        if first is None:
            return
        chained = _chain(first, frames)
        whole, _ = profile_batches(chained, specs, slice_by, folds, first.iloc[:0])
        yield _payload(whole)

    partials = _collect(df.select(*wanted).mapInArrow(profile_partition, _PAYLOAD))

    empty = profile_frame(_empty_frame(df, wanted), specs, slice_by)
    return reduce(ProfileSet.merge, partials, empty)


def sketch_spark(
    df: Any, columns: Sequence[str], slice_by: Sequence[str] = (), categorical: Sequence[str] = ()
) -> SpecSketch:
    """The first pass: one `SpecSketch` per partition, merged on the driver."""
    _require(df, [*columns, *slice_by])
    wanted = list(dict.fromkeys([*columns, *slice_by]))
    kinds = sketch_kinds(_empty_frame(df, list(columns)), columns, categorical)

    def sketch_partition(batches: Iterable[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        context = TaskContext.get()
        # Each partition samples with its own seed; merged keys stay uniform.
        sketch = SpecSketch(kinds, tuple(slice_by), seed=context.partitionId() if context else 0)
        for batch in batches:
            sketch.add(batch.to_pandas())
        yield _payload(sketch)

    partials = _collect(df.select(*wanted).mapInArrow(sketch_partition, _PAYLOAD))
    return reduce(SpecSketch.merge, partials, SpecSketch(kinds, tuple(slice_by)))


def profile_dataframe(
    df: Any,
    columns: Sequence[str],
    slice_by: Sequence[str] = (),
    bins: int = 64,
    top_k: int | None = None,
    categorical: Sequence[str] = (),
) -> StreamedProfile:
    """Specs from a sketch pass, then profiles, of a Spark DataFrame (as a baseline needs)."""
    sketch = sketch_spark(df, columns, slice_by, categorical)
    if sketch.rows == 0:
        raise InputError("the Spark table has no rows to derive a baseline from")
    specs = sketch.specs(bins, top_k)
    return StreamedProfile(profile_spark(df, specs, slice_by, slice_folds(sketch, slice_by)), specs)


def read_table(spark: Any, table: str) -> Any:
    """A catalog table by NAME, or a Parquet/CSV file or directory by PATH."""
    path = Path(table)
    try:
        if not path.exists():
            return spark.table(table)
        if path.name.lower().endswith((".csv", ".csv.gz")):
            return spark.read.csv(str(path), header=True, inferSchema=True)
        return spark.read.parquet(str(path))
    except Exception as exc:  # pyspark's AnalysisException and friends
        what = "path" if path.exists() else "table"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{what} '{table}': cannot read with Spark: {first}") from None


def _require(df: Any, columns: Sequence[str]) -> None:
    for col in columns:
        if col not in df.columns:
            raise InputError(f"column '{col}' not found in the Spark DataFrame")


def _empty_frame(df: Any, columns: list[str]) -> Any:
    """A zero-row pandas frame with the dtypes `mapInArrow` batches convert to."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(df.select(*columns).schema)
    return pa.Table.from_batches([], schema=schema).to_pandas()


def _collect(df: Any) -> list[Any]:
    return [pickle.loads(row.payload) for row in df.collect()]


def _payload(obj: Any) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_pydict({"payload": [pickle.dumps(obj)]})


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest
