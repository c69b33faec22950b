"""What `modelwatch baseline create` does once its flags are parsed (the flags: `_baseline.py`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from migrations import prepare_for_writes
from monitor.app.cli._common import engine_from_options
from monitor.app.cli._drift_input import sample_frame
from monitor.app.cli._estimate_input import ScoreColumns, parse_scores
from monitor.app.cli._progress import progress
from monitor.app.cli._roles import check_slice_columns, roles_from, select_columns
from monitor.attributions import Sums, attribution_columns, reference_sums
from monitor.baselines.spark import profile_dataframe, read_table
from monitor.baselines.store import save_baseline
from monitor.baselines.stream import profile_source
from monitor.config import load_config
from monitor.data.datasets import open_source
from monitor.errors import InputError
from monitor.estimation import (
    MULTIVARIATE_KEY,
    SETTINGS_KEY,
    StoredEstimation,
    StoredMulticlass,
    fit_stored,
    fit_stored_multiclass,
    fit_stored_multivariate,
    fit_stored_regression,
)
from monitor.profiles import ProfileSet, compared_columns

if TYPE_CHECKING:
    from monitor.baselines.stream import StreamedProfile


def create_baseline(
    model: str,
    version: str,
    name: str,
    slice_by: tuple[str, ...],
    columns: str | None,
    bins: int,
    top_k: int | None,
    categorical: tuple[str, ...],
    chunks: int,
    replace: bool,
    engine_name: str,
    table: str | None,
    attributions_path: str | None,
    score: tuple[str, ...],
    label: str | None,
    task: str | None,
    features: str | None,
    data: str | None,
    database_url: str | None,
    config_path: Path | None,
    **roles: Any,
) -> None:
    """Profile DATA or a Spark table and store the baseline (what `baseline create` does)."""
    if chunks < 0:
        raise InputError(f"--chunks must be 0 or more, got {chunks}")
    spark = engine_name == "spark"
    if spark and (table is None or data is not None):
        raise InputError("--engine spark profiles --table NAME|PATH (and takes no DATA)")
    if not spark and (data is None or table is not None):
        raise InputError("give DATA (a file, directory or glob); --table needs --engine spark")
    regression = task == "regression"
    if regression:
        _check_regression(score, label, features, roles.get("prediction_column"), spark)
    elif bool(score) != (label is not None) or (score and spark):
        raise InputError("--score and --label go together, with DATA (not --engine spark)")
    if features is not None and spark:
        raise InputError("--features needs DATA (not --engine spark)")
    wanted = _split(columns)
    for col in categorical:
        if wanted is not None and col not in wanted and col not in slice_by:
            raise InputError(f"--categorical {col}: not among --columns or --slice-by")
    forced = (*_configured_categorical(config_path, model), *categorical)
    column_roles = roles_from({**roles, "config_path": config_path}, model)
    # The database is checked before a long profiling run, not after it.
    engine = engine_from_options(database_url, config_path)
    prepare_for_writes(engine)

    def choose(sample: Any, where: str) -> list[str]:
        check_slice_columns(sample, slice_by, where)
        plain = sample[[c for c in sample.columns if c not in attribution_columns(sample.columns)]]
        return compared_columns(
            select_columns(plain, wanted, slice_by, column_roles, where), slice_by
        )

    with progress(f"reading and profiling {data or table}") as step:
        if table is not None:
            streamed, source, digest = _profile_spark(table, choose, slice_by, bins, top_k, forced)
        else:
            assert data is not None
            streamed, source, digest = _profile_data(
                data, choose, slice_by, (bins, top_k, chunks), forced
            )
        attributions = _attributions(
            attributions_path or data, attributions_path is not None, slice_by, streamed.profiles
        )
        extra = {} if data is None or not score or label is None else (
            _estimation(data, parse_scores(score), label, (chunks, slice_by)))  # fmt: skip
        if data is not None and regression and label is not None and features is not None:
            extra.update(_regression(data, (roles["prediction_column"], label), features,
                                     (chunks, slice_by)))  # fmt: skip
        if data is not None and features is not None:
            extra.update(_multivariate(data, features, chunks))
        step("saving the baseline")
        profiles, variability = streamed.profiles, streamed.variability
        cols = list(streamed.specs)
        baseline_id = save_baseline(
            engine,
            model,
            version,
            profiles,
            name=name,
            source=source,
            source_sha256=digest,
            replace=replace,
            settings={"bins": bins, "top_k": top_k, **attributions, **extra},
            variability=variability,
        )
    spread = "" if variability is None else f", variability of {chunks} chunks"
    if spark:
        spread = ", no reference variability (Spark rows have no order)"
    click.echo(
        f"baseline {baseline_id} '{name}' of {model} {version}: {profiles.n_rows} rows, "
        f"{len(cols)} columns, {len(profiles.slice_keys)} slices{spread}"
    )
    sliced = f"; sliced by {', '.join(slice_by)}" if slice_by else ""
    click.echo(f"  columns: {', '.join(cols)}{sliced}")
    if attributions["attributions"]:
        click.echo(f"  attributions: {', '.join(sorted(attributions['attributions']))}")


def _attributions(
    path: str | None, required: bool, slice_by: Sequence[str], profiles: ProfileSet
) -> dict[str, Any]:
    """Baseline settings of the reference attributions in the `attr.*` columns of `path`:
    `attributions` overall ({} without any or a path) and `attributions_by_slice` of the
    baseline's slices when `path` has the slice columns too; InputError when `required`
    (--attributions) and the file has none."""
    if path is None:
        return {"attributions": {}}
    source = open_source(path)
    columns = attribution_columns(source.columns)
    if not columns and required:
        raise InputError(f"--attributions {path}: no `attr.<feature>` columns")
    if not columns:
        return {"attributions": {}}
    slices = [c for c in slice_by if c in source.columns]
    frames = source.batches([*columns, *slices])
    overall, by_slice = reference_sums(frames, slices, set(profiles.slice_keys))
    out: dict[str, Any] = {"attributions": _doc(overall)}
    if by_slice:
        out["attributions_by_slice"] = {k: _doc(v) for k, v in by_slice.items()}
    return out


def _doc(sums: Sums) -> dict[str, list[float]]:
    return {feature: [n, total] for feature, (n, total) in sums.items()}


def _estimation(
    data: str, scores: ScoreColumns, label: str, how: tuple[int, tuple[str, ...]]
) -> dict[str, Any]:
    """The CBPE calibration of the score(s) against `label`, with thresholds overall and per
    slice, in one more pass over those columns."""
    chunks, slice_by = how[0] or 10, how[1]
    source = open_source(data)
    wanted = [*scores.columns, label, *slice_by]
    source.require(wanted)
    batches = source.batches(wanted)
    try:
        stored: StoredEstimation | StoredMulticlass = (
            fit_stored_multiclass(batches, scores.classes, scores.columns, label, chunks=chunks,
                                  slice_by=slice_by)
            if scores.multiclass
            else fit_stored(batches, scores.columns[0], label, chunks=chunks, slice_by=slice_by)
        )  # fmt: skip
    except InputError as exc:
        raise InputError(f"{data}: {exc}") from None
    return {SETTINGS_KEY: stored.to_dict()}


def _check_regression(
    score: tuple[str, ...], label: str | None, features: str | None, prediction: str | None,
    spark: bool,
) -> None:  # fmt: skip
    if score or label is None or prediction is None or features is None or spark:
        raise InputError("--task regression takes --prediction COL --label COL --features C,... "
                         "with DATA (no --score, not --engine spark)")  # fmt: skip


def _regression(
    data: str, columns: tuple[str, str], features: str, how: tuple[int, tuple[str, ...]]
) -> dict[str, Any]:
    """The loss models of a regression model (DLE) with their thresholds, one more pass."""
    prediction, label = columns
    chunks, slice_by = how[0] or 10, how[1]
    wanted = [c.strip() for c in features.split(",") if c.strip()]
    source = open_source(data)
    needed = list(dict.fromkeys([*wanted, prediction, label, *slice_by]))
    source.require(needed)
    try:
        stored = fit_stored_regression(source.batches(needed), wanted, prediction, label,
                                       chunks=chunks, slice_by=slice_by)  # fmt: skip
    except InputError as exc:
        raise InputError(f"{data}: {exc}") from None
    return {SETTINGS_KEY: stored.to_dict()}


def _multivariate(data: str, features: str, chunks: int) -> dict[str, Any]:
    """The PCA reconstruction model of --features and its reference-chunk bounds."""
    import pandas as pd

    wanted = [c.strip() for c in features.split(",") if c.strip()]
    source = open_source(data)
    source.require(wanted)
    parts = list(source.batches(wanted))
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=wanted)
    try:
        stored = fit_stored_multivariate(frame, wanted, chunks=chunks or 10)
    except InputError as exc:
        raise InputError(f"{data}: {exc}") from None
    return {MULTIVARIATE_KEY: stored.to_dict()}


def _configured_categorical(config_path: Path | None, model: str) -> list[str]:
    """The model's `categorical` columns from the config file, if one was given."""
    if config_path is None:
        return []

    models = {m.name: m for m in load_config(config_path).models}
    return list(models[model].categorical) if model in models else []


def _split(columns: str | None) -> list[str] | None:
    if columns is None:
        return None
    return [c.strip() for c in columns.split(",") if c.strip()]


Choose = Callable[[Any, str], list[str]]


def _profile_data(
    data: str,
    choose: Choose,
    slice_by: tuple[str, ...],
    sizes: tuple[int, int | None, int],
    categorical: tuple[str, ...],
) -> tuple[StreamedProfile, str, str | None]:
    """Profile DATA in record batches; returns the profiles, the source label and its digest.

    `choose` picks the columns from a sample (the first batch); `sizes`: bins, top-k and
    reference chunks."""
    bins, top_k, chunks = sizes
    source = open_source(data)
    source.require(slice_by)
    cols = choose(sample_frame(source), data)
    streamed = profile_source(
        source,
        cols,
        slice_by,
        bins=bins,
        top_k=top_k,
        chunks=chunks,
        categorical=[c for c in categorical if c in cols],
    )
    return streamed, source.path, source.sha256()


def _profile_spark(
    table: str,
    choose: Choose,
    slice_by: tuple[str, ...],
    bins: int,
    top_k: int | None,
    categorical: tuple[str, ...] = (),
) -> tuple[StreamedProfile, str, str | None]:
    """Profile a Spark table or path; Spark sources have no content digest."""

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError("--engine spark needs pyspark: pip install 'modelwatch[spark]'") from None
    import pandas as pd

    # Local-mode workers run this interpreter, which can import modelwatch.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.appName("modelwatch-baseline").getOrCreate()
    try:
        df = read_table(spark, table)
        # Roles and --columns apply; id-likeness needs rows, so Spark columns are taken as named.
        cols = choose(pd.DataFrame(columns=df.columns), table)
        forced = [c for c in categorical if c in cols]
        return profile_dataframe(df, cols, slice_by, bins, top_k, forced), table, None
    finally:
        spark.stop()
