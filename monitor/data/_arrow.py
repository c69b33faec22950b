"""Arrow record batches as `Columns` (monitor.common.columns), and one file read without
``pyarrow.dataset`` (whose import loads pandas: ~0.3 s of a one-shot command).

The values are those of ``RecordBatch.to_pandas()`` (see `monitor.common.columns`); the
batches are those the dataset scanner gives for the same file: each Parquet row group in
batches of at most ``batch_rows`` rows, a CSV file block by block (Arrow's default 1 MiB
blocks, types inferred from the first block), cut to at most ``batch_rows`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from monitor.common.columns import Coded, Columns

_FLOATS = {"float": "float32", "double": "float64"}


def to_columns(batch: Any) -> Columns:
    """One Arrow record batch as `Columns` of numpy arrays, `Coded` text and pandas Series."""
    data = {name: _column(batch.column(i)) for i, name in enumerate(batch.schema.names)}
    return Columns(data, batch.num_rows)


def empty_batch(schema: Any, columns: Sequence[str]) -> Any:
    """A zero-row record batch of `columns` with their types in `schema`."""
    import pyarrow as pa

    fields = [schema.field(c) for c in columns]
    arrays = [pa.nulls(0, f.type) for f in fields]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def file_schema(path: Path, fmt: str) -> Any:
    """The Arrow schema one Parquet or CSV file reads as (the CSV's first block decides)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path)
    import pyarrow.csv as csv

    with csv.open_csv(path) as reader:
        return reader.schema


def file_batches(path: Path, fmt: str, columns: Sequence[str], batch_rows: int) -> Iterator[Any]:
    """The record batches of one file, `columns` only."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        # No pre-buffering: it reads ahead whole column chunks and keeps them (see datasets).
        # One thread: the column work runs on threads of its own (monitor.profiles._parallel),
        # and Arrow's decoding threads tripled the CPU of reading (0.15 vs 0.05 s for 2 x 200k
        # rows x 12 columns) spinning for cores.
        with pq.ParquetFile(path, pre_buffer=False) as pf:
            for group in range(pf.num_row_groups):
                yield from pf.iter_batches(
                    batch_rows, row_groups=[group], columns=list(columns), use_threads=False
                )
        return
    import pyarrow.csv as csv

    options = csv.ConvertOptions(include_columns=list(columns))
    with csv.open_csv(path, convert_options=options) as reader:
        for batch in reader:
            for start in range(0, max(batch.num_rows, 1), batch_rows):
                yield batch.slice(start, batch_rows)


def _column(array: Any) -> Any:
    import pyarrow as pa

    kind = array.type
    if pa.types.is_integer(kind) or str(kind) in _FLOATS:
        return _numbers(array)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _text(array)
    if pa.types.is_boolean(kind):
        return _booleans(array)
    return array.to_pandas()  # dates, timestamps, decimals, dictionaries...: as pandas has them


def _numbers(array: Any) -> NDArray[Any]:
    dtype = np.dtype(_FLOATS.get(str(array.type), str(array.type)))
    start, n = array.offset, len(array)
    values = np.frombuffer(array.buffers()[1], dtype=dtype)[start : start + n]
    if not array.null_count:
        return values
    # pandas: integers with nulls become float64 with NaN; floats keep their width.
    out = values.astype(np.float64 if dtype.kind in "iu" else dtype)
    out[~_valid(array)] = np.nan
    return out


def _text(array: Any) -> Coded:
    # pyarrow's compute kernel itself: `Array.dictionary_encode` imports pyarrow.compute,
    # whose ~300 generated wrappers cost ~40 ms to build.
    from pyarrow._compute import call_function

    encoded = call_function("dictionary_encode", [array])
    indices = encoded.indices
    start, n = indices.offset, len(indices)
    raw = np.frombuffer(indices.buffers()[1], dtype=np.int32)[start : start + n]
    codes = raw.astype(np.intp)
    if indices.null_count:
        codes[~_valid(indices)] = -1
    return Coded(codes, encoded.dictionary.to_pylist(), True, text=True)


def _booleans(array: Any) -> Any:
    bits = np.unpackbits(np.frombuffer(array.buffers()[1], dtype=np.uint8), bitorder="little")
    values = bits[array.offset : array.offset + len(array)].astype(bool)
    if not array.null_count:
        return values
    # pandas: booleans with nulls are objects (True, False, None): categories.
    codes = values.astype(np.intp)
    codes[~_valid(array)] = -1
    return Coded(codes, [False, True], False)


def _valid(array: Any) -> NDArray[np.bool_]:
    bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)
