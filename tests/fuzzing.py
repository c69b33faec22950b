"""Strategies of the fuzz tests: JSON-ish values as broken producers and operators write them.

Text with control characters and lone surrogates, names the code looks for, strings just past
the storage caps; integers past 64 bits, NaN, infinities, epoch times in ms; nested lists and
objects of those. `fuzz(n)` is the settings of a fuzz test: `n` examples (`tests.properties`:
fewer in the fast lane, the same ones every run in CI) and no deadline, since one slow example
on a shared machine is not a finding.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.collectors.conftest import T0, event
from tests.properties import examples

# Names the decoders and the config look for, so random objects sometimes hit real keys.
NAMES = ["fraud", "region", "amount", "output", "instances", "events", "name", "model", "1"]

TEXT = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(codec=None), max_size=12),  # any code point, surrogates included
    st.sampled_from(["", "\x00", "a\x1f", "\x7f", "\x85", "\ud800", "\udfff", "a\nb", " "]),
    st.sampled_from(NAMES),
    st.integers(190, 1100).map(lambda n: "x" * n),  # around the storage columns' sizes
)
NUMBERS = st.one_of(
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([T0, T0 * 1000, -1, 0, 1, 2, 0.5, 1e308, -1e308, 2**63, 32503680000]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)


def nested(leaves: st.SearchStrategy[Any], keys: st.SearchStrategy[Any] = TEXT) -> Any:
    """Lists and objects of `leaves`, a few levels deep."""
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=5), st.dictionaries(keys, inner, max_size=5)
        ),
        max_leaves=25,
    )


JSONISH = nested(SCALARS)


FIELDS = ["request_id", "model", "model_version", "timestamp", "features", "prediction"]
FIELDS += ["metadata", "label", "latency_ms", "model_latency_ms", "error", "attributions"]
FIELDS += ["queue_ms", "model_ms", "network_ms"]  # stage timings (any subset)
FIELDS += ["ttft_ms", "gen_ai.usage.output_tokens", "gpu_memory_mb"]  # measures (aliases too)


@st.composite
def mutated(draw: st.DrawFn, models: Sequence[str] = ("fraud",), ts: float = T0) -> Any:
    """A good event of one of `models` at about `ts`, or a label, with some fields dropped or
    replaced by arbitrary values; now and then with about `collect.max_features_per_event`
    features."""
    i = draw(st.integers(0, 500))
    obj: dict[str, Any] = event(i, ts=ts + i, model=draw(st.sampled_from(models)))
    if draw(st.booleans()):
        obj = {"request_id": obj["request_id"], "model": obj["model"], "timestamp": ts}
        obj["label"] = draw(SCALARS)
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=4)):
        if draw(st.integers(0, 3)) == 0:
            obj.pop(name, None)
        else:
            obj[name] = draw(JSONISH)
    if draw(st.integers(0, 9)) == 0:
        many = draw(st.integers(900, 1100))
        obj["features"] = {f"f{i}": float(i) for i in range(many)}
    return obj


def encode(obj: Any) -> bytes:
    """JSON bytes of `obj`; lone surrogates and non-finite numbers as a lenient encoder
    writes them (`\\ud800`, `NaN`), which is what a broken producer sends."""
    try:
        return orjson.dumps(obj)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(obj).encode()


def fuzz(n: int) -> settings:
    """The settings of a fuzz test drawing `n` examples in the full run."""
    return settings(
        max_examples=examples(n),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
