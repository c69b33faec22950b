"""Paired shadow mode through the Ingestor, on SQLite and PostgreSQL: sides paired by request
id across batches, pair statistics per window and slice, unpaired sides counted after the
horizon, labels joined into correctness pairs, bad roles dead-lettered naming the field."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from collectors import Ingestor, RawRecord
from migrations import upgrade
from monitor.config import CollectConfig, ModelConfig
from monitor.config.shadow import ShadowConfig
from monitor.shadow import ShadowSummary
from monitor.storage import (
    DeadLetter,
    OutcomeSummaryRow,
    ShadowPending,
    ShadowWindow,
    make_engine,
)
from tests.collectors.conftest import T0, event

MODELS = [ModelConfig(name="fraud", slices=["region"], shadow=ShadowConfig(pair_horizon="1m"))]


def side(i: int, role: str, score: float, ts: float | None = None, **extra: Any) -> dict[str, Any]:
    version = "1" if role == "primary" else "2"
    return event(i, ts, role=role, prediction=score, model_version=version, **extra)


def label(i: int, value: int, ts: float | None = None) -> dict[str, Any]:
    return {"request_id": f"r{i}", "model": "fraud", "timestamp": ts or T0 + i, "label": value}


class Feed:
    def __init__(self, engine: Engine, **collect: Any) -> None:
        self.ing = Ingestor(engine, "src", "kafka", MODELS, CollectConfig(**collect))
        self.next = 0

    def __call__(self, objs: list[Any]) -> Any:
        recs = [
            RawRecord("p0", self.next + i, self.next + i + 1, orjson.dumps(o))
            for i, o in enumerate(objs)
        ]
        self.next += len(objs)
        return self.ing.ingest(recs)


def stored(engine: Engine) -> dict[tuple[str, str, str], ShadowSummary]:
    with Session(engine) as s:
        rows = s.scalars(select(ShadowWindow)).all()
        out: dict[tuple[str, str, str], ShadowSummary] = {}
        for r in rows:
            key = (r.primary_version, r.shadow_version, r.slice_key)
            out[key] = out.get(key, ShadowSummary()).merge(ShadowSummary.from_row(r))
        return out


def pending(engine: Engine) -> int:
    with Session(engine) as s:
        return int(s.scalar(select(func.count()).select_from(ShadowPending)) or 0)


@pytest.mark.parametrize("columnar", [True, False])
def test_sides_pair_across_batches_per_window_and_slice(engine: Engine, columnar: bool) -> None:
    feed = Feed(engine)
    feed.ing.planner.columnar = columnar  # both validation paths carry the role alike
    # requests 0-9: primary scores 0.2 (class 0); the shadow flips requests 0-2 (0.9)
    feed([side(i, "primary", 0.2, latency_ms=10.0) for i in range(10)])
    assert pending(engine) == 10
    feed([side(i, "shadow", 0.9 if i < 3 else 0.25, latency_ms=20.0) for i in range(10)])
    got = stored(engine)
    overall = got[("1", "2", "")]
    assert (overall.pairs, overall.decided, overall.flips) == (10, 10, 3)
    assert overall.abs_diff_sum == pytest.approx(3 * 0.7 + 7 * 0.05)
    assert overall.timed == 10 and overall.ratio_sum == pytest.approx(20.0)
    eu = got[("1", "2", '{"region":"eu"}')]  # even requests: 0 and 2 flip
    assert (eu.pairs, eu.flips) == (5, 2)
    assert pending(engine) == 10  # complete pairs wait for their labels


def test_labels_make_correctness_pairs_and_shadow_never_joins(engine: Engine) -> None:
    feed = Feed(engine)
    feed([label(0, 1), label(9, 0)])  # before any side: they wait for their sides
    assert pending(engine) == 2
    feed([side(i, r, s) for i in range(4) for r, s in (("primary", 0.2), ("shadow", 0.8))])
    feed([label(i, 1) for i in range(1, 4)])  # the shadow is right, the primary wrong
    overall = stored(engine)[("1", "2", "")]
    assert (overall.labelled, overall.shadow_only, overall.primary_only) == (4, 4, 0)
    assert pending(engine) == 1  # request 9's label, until the pair horizon
    feed([side(5, "primary", 0.2, ts=T0 + 120)])
    assert pending(engine) == 1  # the label expired unpaired (counted nowhere), side 5 waits
    assert ("1", "", "") not in stored(engine) and ("", "2", "") not in stored(engine)
    with Session(engine) as s:  # outcome summaries are the primary's only
        versions = set(s.scalars(select(OutcomeSummaryRow.version)))
    assert versions == {"1"}


def test_alone_sides_are_counted_unpaired_after_the_horizon(engine: Engine) -> None:
    feed = Feed(engine)
    feed([side(0, "primary", 0.2), side(1, "shadow", 0.3)])
    feed([side(2, "primary", 0.1, ts=T0 + 120)])  # two minutes later: past the 1m horizon
    got = stored(engine)
    assert got[("1", "", "")].unpaired_primary == 1
    assert got[("", "2", "")].unpaired_shadow == 1
    assert pending(engine) == 1


def test_repeats_after_pairing_are_ignored_and_unlabelled_pairs_expire(engine: Engine) -> None:
    feed = Feed(engine, label_horizon="10m")
    feed([side(0, "primary", 0.2), side(0, "shadow", 0.9)])
    feed([side(0, "shadow", 0.1)])  # a retry of a side already paired: not a second pair
    overall = stored(engine)[("1", "2", "")]
    assert (overall.pairs, overall.flips) == (1, 1)
    assert pending(engine) == 1  # the pair waits for its label ...
    feed([side(1, "primary", 0.2, ts=T0 + 900)])  # ... until the label horizon has passed
    assert pending(engine) == 1  # only request 1's side is left


def test_labels_dated_later_never_expire_a_side_waiting_for_its_pair(engine: Engine) -> None:
    feed = Feed(engine)
    feed([side(0, "primary", 0.2)])
    feed([label(7, 1, ts=T0 + 3600)])  # an hour later, of another request
    feed([side(0, "shadow", 0.9)])
    assert stored(engine)[("1", "2", "")].pairs == 1


@pytest.mark.parametrize("columnar", [True, False])
def test_bad_roles_are_dead_letters_naming_the_field(engine: Engine, columnar: bool) -> None:
    feed = Feed(engine)
    feed.ing.planner.columnar = columnar
    result = feed([event(0, role="canary"), event(1, role=3), event(2, role="primary")])
    assert result.events == 1
    with Session(engine) as s:
        rows = s.execute(select(DeadLetter.reason, DeadLetter.detail)).all()
    assert sorted(rows) == [
        ("invalid_role", "role: expected 'primary' or 'shadow', got 'canary'"),
        ("invalid_role", "role: expected 'primary' or 'shadow', got int"),
    ]


def test_how_the_stream_is_batched_changes_nothing(
    engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rng = random.Random(7)
    events: list[dict[str, Any]] = []
    for i in range(60):
        score = rng.random()
        events.append(side(i, "primary", score, latency_ms=5.0 + i % 7))
        events.append(side(i, "shadow", min(1.0, score + rng.gauss(0, 0.2)), latency_ms=6.0))
        events.append(label(i, i % 2))
    rng.shuffle(events)  # sides and labels in any order, within the horizon
    whole = Feed(engine)
    whole(events)
    other = make_engine(f"sqlite:///{tmp_path_factory.mktemp('split') / 'split.db'}")
    upgrade(other)
    split = Feed(other)
    cuts = sorted(rng.sample(range(1, len(events)), 6))
    for start, end in zip([0, *cuts], [*cuts, len(events)], strict=True):
        split(events[start:end])
    one, many = stored(engine), stored(other)
    assert one.keys() == many.keys()
    for key, summary in one.items():
        for name, value in summary.to_row().items():
            want = pytest.approx(value) if isinstance(value, float) else value
            assert many[key].to_row()[name] == want, (key, name)
    assert (one[("1", "2", "")].pairs, one[("1", "2", "")].labelled) == (60, 60)
    assert pending(engine) == pending(other) == 0  # every pair labelled and done
    other.dispose()
