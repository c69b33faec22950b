"""Failing windows are found by their stored start, never by parsing item names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from monitor.config.serving import SloConfig
from monitor.evaluation.period_jobs import WINDOW_ITEMS
from monitor.failures import Isolation, failing_windows, list_failures, window_item
from monitor.slo.evaluate import SLO_ITEM, retry_failed_slo, slo_item

START = datetime(2026, 1, 1, 10, tzinfo=UTC)
ODD = "a/b c"  # a model name with a slash and a space


def _boom() -> None:
    raise RuntimeError("boom")


def _fail(iso: Isolation, item: str, model: str, version: str, start: datetime | None) -> None:
    assert iso.attempt(item, _boom, model, version, start) is None


def test_window_failures_store_their_start_and_other_items_do_not(engine: Engine) -> None:
    iso = Isolation(engine, "evaluate")
    iso.begin(START)
    later = START + timedelta(hours=1)
    _fail(iso, window_item("drift", ODD, "1 x", START), ODD, "1 x", START)
    _fail(iso, window_item(WINDOW_ITEMS["outcome"], ODD, "1 x", later), ODD, "1 x", later)
    _fail(iso, window_item("drift", "a", "b c/1 x", later), "a", "b c/1 x", later)
    _fail(iso, f"drift {ODD}/1 x day {START.isoformat()}", ODD, "1 x", None)  # a period
    stored = {f.item: f.window_start for f in list_failures(engine, "evaluate")}
    assert stored[f"drift {ODD}/1 x day {START.isoformat()}"] is None
    assert stored[f"drift {ODD}/1 x {START.isoformat()}"] == START
    iso.begin(later)  # as the next run loads them
    assert failing_windows(iso.failing(), "drift", ODD) == [("1 x", START)]
    assert failing_windows(iso.failing(), WINDOW_ITEMS["outcome"], ODD) == [("1 x", later)]
    assert failing_windows(iso.failing(), "drift", "a") == [("b c/1 x", later)]
    assert failing_windows(iso.failing(), SLO_ITEM, ODD) == []


def test_a_failed_slo_window_of_an_odd_model_name_is_retried(engine: Engine) -> None:
    iso = Isolation(engine, "evaluate")
    iso.begin(START)
    _fail(iso, slo_item(ODD, "2", START), ODD, "2", START)
    [failure] = list_failures(engine, "evaluate")
    assert (failure.item, failure.window_start) == (f"slo {ODD}/2 {START.isoformat()}", START)
    iso.begin(START + timedelta(hours=2))  # past its backoff
    retry_failed_slo(iso, engine, ODD, SloConfig(error_rate=0.1))
    assert list_failures(engine, "evaluate") == []  # retried (no serving rows: nothing to fail)
