"""Running the configured sources: one thread per source, each feeding its own Ingestor."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from collectors._base import Source
from collectors._files import JsonlSource
from collectors._ingest import Ingestor
from collectors._kafka import KafkaSource
from collectors._kafka_confluent import ConfluentKafkaSource
from collectors._pipeline import PipelinedIngest
from monitor.config import Config, JsonlSourceConfig, KafkaSourceConfig, SourceConfig
from monitor.errors import ModelwatchError

log = logging.getLogger(__name__)


def make_ingestor(engine: Engine, config: Config, source: SourceConfig) -> Ingestor:
    """The ingestor of one configured source."""
    return Ingestor(
        engine,
        source.name,
        source.type,
        config.models,
        config.collect,
        format=source.format,
        format_options=source.format_options,
    )


def make_source(config: Config, source: SourceConfig, ingestor: Ingestor) -> Source:
    """The running source for a config entry; positions come from `ingestor`."""
    batch = config.collect.batch_size
    if isinstance(source, KafkaSourceConfig):
        if source.client == "confluent-kafka":
            return ConfluentKafkaSource(source, ingestor.positions, batch_size=batch)
        return KafkaSource(source, ingestor.positions, batch_size=batch)
    assert isinstance(source, JsonlSourceConfig)
    return JsonlSource(
        source.name,
        source.path,
        ingestor.positions,
        batch_size=batch,
        chunk_bytes=source.read_chunk_bytes,
        poll_interval=source.poll_interval.total_seconds(),
    )


def pipelined(setting: str | bool, source: SourceConfig) -> bool:
    """Whether a source ingests in a worker process (see `collect.pipeline`)."""
    if setting == "auto":
        return isinstance(source, KafkaSourceConfig) and source.client == "kafka-python"
    return bool(setting)


@dataclass
class RunState:
    """Shared between the source threads: a stop flag and the first error."""

    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)


def pump(source: Source, ingestor: Ingestor, state: RunState, until_caught_up: bool) -> None:
    """Ingest batches from `source` until stopped (or caught up, when asked)."""
    for batch in source.batches():
        if batch.records:
            ingestor.ingest(batch)
            keys = {r.key for r in batch.records}
            source.committed({k: ingestor.position(k) for k in keys})
        if state.stop.is_set() or (until_caught_up and source.caught_up()):
            return


def pump_pipelined(
    source: Source, pipe: PipelinedIngest, state: RunState, until_caught_up: bool
) -> None:
    """Like `pump`, with ingest in a worker process overlapping the next poll."""
    try:
        for batch in source.batches():
            # An empty poll must not wait for the worker: fetches are often still in flight.
            done = pipe.submit(batch) if batch.records else pipe.idle()
            for positions in done:
                source.committed(positions)
            if state.stop.is_set() or (until_caught_up and source.caught_up()):
                return
    finally:
        for positions in pipe.drain():
            source.committed(positions)


def run(
    engine: Engine,
    config: Config,
    until_caught_up: bool = False,
    state: RunState | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Run every configured source in its own thread until stopped, an error, or caught up."""
    state = state or RunState()
    threads = []
    for source_config in config.sources:
        ingestor = make_ingestor(engine, config, source_config)
        source = make_source(config, source_config, ingestor)
        pipe = None
        if pipelined(config.collect.pipeline, source_config):
            url = engine.url.render_as_string(hide_password=False)
            pipe = PipelinedIngest(url, config, source_config.name, make_ingestor)
        thread = threading.Thread(
            target=_guarded,
            args=(source, ingestor, state, until_caught_up, pipe),
            name=f"source-{source.name}",
            daemon=True,
        )
        threads.append(thread)
    for thread in threads:
        thread.start()
    if on_ready is not None:
        on_ready()
    for thread in threads:
        while thread.is_alive():
            thread.join(timeout=0.5)
            if state.errors:
                state.stop.set()
    if state.errors:
        raise state.errors[0]


def _guarded(
    source: Source,
    ingestor: Ingestor,
    state: RunState,
    until_caught_up: bool,
    pipe: PipelinedIngest | None,
) -> None:
    try:
        if pipe is None:
            pump(source, ingestor, state, until_caught_up)
        else:
            pump_pipelined(source, pipe, state, until_caught_up)
    except ModelwatchError as exc:
        state.errors.append(exc)
    except Exception as exc:  # a crash of one source stops the collector, loudly
        log.exception("source %s failed", source.name)
        state.errors.append(exc)
    finally:
        state.stop.set() if state.errors else None
        source.close()
        if pipe is not None:
            pipe.close()
