"""Bounded labels: configured slices only, a cap per column, then "other"."""

from __future__ import annotations

import threading

import pytest

from dashboards import LabelLimiter, SliceLabels
from monitor.config import ModelConfig


def test_limiter_admits_up_to_cap_then_other_and_keeps_admitted_values() -> None:
    limiter = LabelLimiter(2)
    assert [limiter.limit("k", v) for v in ["a", "b", "c", "a", "d", "b"]] == [
        "a",
        "b",
        "other",
        "a",
        "other",
        "b",
    ]
    assert limiter.limit("other-key", "c") == "c"


def test_limiter_rejects_non_positive_cap() -> None:
    with pytest.raises(ValueError, match="max_values"):
        LabelLimiter(0)


def test_limiter_is_bounded_under_concurrent_use() -> None:
    limiter = LabelLimiter(5)
    out: list[str] = []
    lock = threading.Lock()

    def worker(offset: int) -> None:
        labels = [limiter.limit("k", str(offset * 100 + i)) for i in range(100)]
        with lock:
            out.extend(labels)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out) - {"other"}) == 5


@pytest.mark.parametrize(
    ("model", "slice_key", "expected"),
    [
        ("fraud", "", "all"),
        ("fraud", None, "all"),
        ("fraud", "region=eu", "region=eu"),
        ("fraud", '{"region": "eu"}', "region=eu"),  # the collectors' canonical JSON
        ("fraud", '{"region": "eu", "channel": "web"}', "channel=web,region=eu"),
        ("fraud", '{"region": "eu", "user": "u1"}', "other"),
        ("fraud", "{not json", "other"),
        ("fraud", "user_id=123", "other"),  # not a configured slice column
        ("fraud", "region", "other"),  # malformed
        ("fraud", "region=", "other"),
        ("unknown-model", "region=eu", "other"),
    ],
)
def test_slice_labels_only_from_configured_slices(
    models: list[ModelConfig], model: str, slice_key: str | None, expected: str
) -> None:
    assert SliceLabels(models).label(model, slice_key) == expected


def test_slice_values_past_the_models_cap_go_to_column_other(models: list[ModelConfig]) -> None:
    labels = SliceLabels(models)  # max_slice_values=3
    got = [labels.label("fraud", f"region={r}") for r in ["eu", "us", "apac", "latam", "eu"]]
    assert got == ["region=eu", "region=us", "region=apac", "region=(other)", "region=eu"]
    # The cap is per column: another column still has room.
    assert labels.label("fraud", "channel=web") == "channel=web"
