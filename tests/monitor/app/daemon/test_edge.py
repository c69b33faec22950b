"""The edge against a running `modelwatch serve` (SQLite and PostgreSQL), issue 35 items 1, 2, 7:

- poisoned strings (a NUL in a feature name, a version or feature name longer than its column,
  20,000 feature names in one event) are dead letters naming the field, and ingest goes on;
- versions and columns past their per-window caps are dead letters, also when what fills the
  cap was taken before a restart;
- labels that are not labels of the model's task are dead letters naming the value;
- each `?wait=` result describes its own request, also when keyless requests follow each other
  and run concurrently.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import distinct, func, select
from sqlalchemy.engine import Engine

from monitor.storage import WindowProfile, make_engine
from tests.monitor.app.daemon.conftest import (
    CONFIG,
    ServerProcess,
    migrated_url,
    post_drained,
)
from tests.monitor.app.daemon.test_api_ingest import event

pytestmark = pytest.mark.slow

MODELS = """\
models:
  - name: fraud
    slices: [region]
  - name: churn
  - name: kinds
    outcomes: {task: multiclass, classes: [cat, dog]}
  - name: price
    outcomes: {task: regression}
"""
EXTRA = """\
  max_versions_per_window: 4
  max_columns_per_window: 30
"""


@dataclass
class Served:
    url: str
    engine: Engine


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.services])],
)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """One `serve` per backend for the module's tests."""
    directory = tmp_path_factory.mktemp(request.param)
    url = migrated_url(request.param, directory, request)
    engine = make_engine(url)
    config = CONFIG.format(url=url).replace(
        "models:\n  - name: fraud\n    slices: [region]\n", MODELS
    )
    config = config.replace("max_body_bytes: 65536", "max_body_bytes: 2000000")
    path = directory / "mw.yaml"
    path.write_text(config + EXTRA)
    proc = ServerProcess(path)
    proc.wait_ready()
    try:
        yield Served(proc.url, engine)
    finally:
        proc.terminate()
        engine.dispose()


def rejected(result: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    return [(d["index"], d["reason"], d["field"]) for d in result["first_dead_letters"]]


def test_poisoned_strings_are_dead_letters_and_ingest_goes_on(served: Served) -> None:
    poisoned = [
        event(0),
        {**event(1), "features": {"amount": 1.0, "bad\x00name": 2.0}},
        {**event(2), "model_version": "v" * 150},
        {**event(3), "features": {"amount": 1.0, "f" * 250: 2.0}},
        {**event(4), "features": {f"feature_{i}": i for i in range(20_000)}},
        {**event(5), "metadata": {"region": "eu\x00"}},
        {**event(6), "request_id": "r\x1b[31m"},
        {**event(7), "features": {"amount": 1.0, "country": "de\x7f"}},
        event(8),
    ]
    result = post_drained(served.url, poisoned)
    assert (result["events"], result["valid"], result["dead_letters"]) == (9, 2, 7)
    assert rejected(result) == [
        (1, "control_character", "features"),
        (2, "too_long", "model_version"),
        (3, "too_long", "features"),
        (4, "too_many_features", "features"),
        (5, "control_character", "metadata.region"),
        (6, "control_character", "request_id"),
        (7, "control_character", "features.country"),
    ]
    # Every later event is processed, and the service stays ready.
    assert post_drained(served.url, [event(9)])["valid"] == 1
    assert httpx.get(f"{served.url}/readyz", timeout=10).status_code == 200
    with served.engine.connect() as conn:
        fraud = WindowProfile.model == "fraud"
        columns = conn.scalar(select(func.count(distinct(WindowProfile.column))).where(fraud))
        longest = conn.scalar(select(func.max(func.length(WindowProfile.version))).where(fraud))
    assert columns == 3 and longest == 1  # amount, country, prediction; version "1"


def test_versions_and_columns_past_their_window_caps_are_dead_letters(served: Served) -> None:
    versions = [{**event(i, model="churn"), "model_version": f"c{i}"} for i in range(6)]
    result = post_drained(served.url, versions)
    assert result["dead_letters"] == 2
    assert rejected(result) == [(i, "too_many_versions", "model_version") for i in (4, 5)]
    # Version c0 has amount, country and prediction; 26 more make 29 columns, x1 the 30th.
    wide = {**event(10, model="churn"), "features": {f"w{i}": float(i) for i in range(26)}}
    wider = {**event(11, model="churn"), "features": {"amount": 1.0, "x1": 1.0, "x2": 2.0}}
    result = post_drained(served.url, [{**e, "model_version": "c0"} for e in (wide, wider)])
    assert result["valid"] == 1
    assert rejected(result) == [(1, "too_many_columns", "features")]
    assert "collect.max_columns_per_window" in result["first_dead_letters"][0]["detail"]


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=[pytest.mark.pg, pytest.mark.services])]
)
def test_window_caps_hold_across_a_restart(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The caps count what is stored, not what this process saw: a restarted `serve` (or
    another replica) cannot take a cap's worth of versions or columns again."""
    url = migrated_url(backend, tmp_path, request)
    config = CONFIG.format(url=url).replace("slices: [region]", "slices: []")
    path = tmp_path / "mw.yaml"
    path.write_text(config + EXTRA)
    versions = [{**event(i), "model_version": f"v{i}"} for i in range(3)]
    # v0's columns: amount, country, prediction and 26 more: 29 of 30.
    wide = {**event(3), "model_version": "v0", "features": {f"w{i}": i for i in range(26)}}
    before = ServerProcess(path)
    try:
        before.wait_ready()
        assert post_drained(before.url, [*versions, wide])["valid"] == 4
    finally:
        assert before.terminate() == 0
    after = ServerProcess(path)
    try:
        after.wait_ready()
        result = post_drained(after.url, [{**event(i), "model_version": f"v{i}"} for i in (4, 5)])
        assert rejected(result) == [(1, "too_many_versions", "model_version")]
        columns = [{**event(i), "model_version": "v0", "features": {x: 1.0}}
                   for i, x in ((6, "x1"), (7, "x2"))]  # fmt: skip
        result = post_drained(after.url, columns)
        assert result["valid"] == 1
        assert rejected(result) == [(1, "too_many_columns", "features")]
    finally:
        assert after.terminate() == 0


LABELS = [
    ("fraud", "yes", False),
    ("fraud", 0.7, False),
    ("fraud", 2, False),
    ("fraud", "", False),
    ("fraud", 1, True),
    ("fraud", True, True),
    ("fraud", "0", True),
    ("kinds", "bird", False),
    ("kinds", "cat", True),
    ("price", "12", False),
    ("price", 12.5, True),
]


def test_labels_that_are_not_labels_of_the_task_are_dead_letters(served: Served) -> None:
    body = [
        {"request_id": f"lab{i}", "model": model, "label": label, "timestamp": 1767225600}
        for i, (model, label, _) in enumerate(LABELS)
    ]
    result = post_drained(served.url, {"labels": body}, endpoint="labels")
    bad = [i for i, (_, _, ok) in enumerate(LABELS) if not ok]
    assert result["dead_letters"] == len(bad)
    assert [(d["index"], d["reason"], d["field"]) for d in result["first_dead_letters"]] == [
        (i, "invalid_label", "label") for i in bad
    ]
    assert repr(LABELS[0][1]) in result["first_dead_letters"][0]["detail"]


def test_each_waited_request_is_answered_with_its_own_dead_letters(served: Served) -> None:
    def request(bad: int) -> dict[str, Any]:
        body = [{**event(100 + i), "timestamp": "yesterday"} for i in range(bad)]
        return post_drained(served.url, body + [event(200 + bad)], keyed=False)

    # Keyless, one after the other: the second must not be given the first one's row id.
    assert request(2)["dead_letters"] == 2
    assert request(0)["dead_letters"] == 0
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(request, [i % 4 for i in range(16)]))
    for i, result in enumerate(results):
        assert (result["events"], result["dead_letters"]) == (i % 4 + 1, i % 4)
        assert [d["index"] for d in result["first_dead_letters"]] == list(range(i % 4))
