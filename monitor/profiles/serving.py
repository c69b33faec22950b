"""Serving statistics of a window: requests, errors, latency sketches, attribution sums.

Mergeable like every other summary: counts and sums add, latency sketches merge, so a day is a
merge of its windows. Stage timings have a sketch each: the model stage in `model_latency`
(events' `model_ms`, also named `model_latency_ms`), the others in `stages` by name (STAGES,
without the `_ms`), only those some event carried. `attributions` maps a feature to
`(n, sum of |attribution|)`; its mean absolute attribution is `sum / n`. `measures` holds one
sketch per measure some event carried (`monitor.common.measures`, by canonical name); an event
with `output_tokens` and `latency_ms` but no `tokens_per_s` counts output_tokens / latency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.common.measures import MEASURES
from monitor.profiles._latency import RELATIVE_ERROR, LatencySketch

# The sketch and its accuracy are public here, for the judgements built on serving summaries.
__all__ = ["RELATIVE_ERROR", "STAGES", "LatencySketch", "ServingSummary"]

# The stages of a request, in the order it passes them; "model" is `model_latency`.
STAGES = ("queue", "preprocess", "model", "postprocess", "network")
_OTHER_STAGES = tuple(s for s in STAGES if s != "model")


@dataclass(frozen=True)
class ServingSummary:
    """Requests, errored requests, latency sketches and attribution sums of some events."""

    requests: int = 0
    errors: int = 0
    latency: LatencySketch = field(default_factory=LatencySketch)
    model_latency: LatencySketch = field(default_factory=LatencySketch)
    attributions: Mapping[str, tuple[int, float]] = field(default_factory=dict)
    stages: Mapping[str, LatencySketch] = field(default_factory=dict)
    measures: Mapping[str, LatencySketch] = field(default_factory=dict)

    def measure(self, name: str) -> LatencySketch:
        """The sketch of one registered measure (empty when no event carried it)."""
        return self.measures.get(name, LatencySketch())

    def stage(self, name: str) -> LatencySketch:
        """The sketch of one of STAGES (empty when no event carried it)."""
        return self.model_latency if name == "model" else self.stages.get(name, LatencySketch())

    @classmethod
    def of(cls, columns: Mapping[str, Sequence[Any]], rows: Sequence[int]) -> ServingSummary:
        """The summary of events `rows` of operational columns (`collectors._serving` names)."""

        def present(name: str) -> list[Any]:
            values = columns.get(name)
            return [] if values is None else [values[i] for i in rows if values[i] is not None]

        sums: dict[str, tuple[int, float]] = {}
        for attr in present("attributions"):
            for feature, value in attr.items():
                n, total = sums.get(feature, (0, 0.0))
                sums[feature] = (n + 1, total + abs(value))
        stages = {  # only the columns some event of the batch set (most batches: none)
            s: LatencySketch.of(present(f"{s}_ms")) for s in _OTHER_STAGES if f"{s}_ms" in columns
        }
        return cls(
            requests=len(rows),
            errors=len(present("error")),
            latency=LatencySketch.of(present("latency_ms")),
            model_latency=LatencySketch.of(present("model_latency_ms")),
            attributions=sums,
            stages={s: sketch for s, sketch in stages.items() if sketch.n},
            measures=_measures(columns, rows),
        )

    def merge(self, other: ServingSummary) -> ServingSummary:
        """The summary of both summaries' events."""
        sums = dict(self.attributions)
        for feature, (n, total) in other.attributions.items():
            n0, t0 = sums.get(feature, (0, 0.0))
            sums[feature] = (n0 + n, t0 + total)
        names = sorted({*self.stages, *other.stages})
        return ServingSummary(
            self.requests + other.requests,
            self.errors + other.errors,
            self.latency.merge(other.latency),
            self.model_latency.merge(other.model_latency),
            sums,
            {s: self.stage(s).merge(other.stage(s)) for s in names},
            {m: self.measure(m).merge(other.measure(m)) for m in {*self.measures, *other.measures}},
        )

    def mean_abs_attribution(self) -> dict[str, float]:
        """Each feature's mean absolute attribution over the events that carried one."""
        return {f: total / n for f, (n, total) in self.attributions.items() if n}

    def to_row(self) -> dict[str, Any]:
        """Column values of a `window_serving` row."""
        return {
            "requests": self.requests,
            "errors": self.errors,
            "latency": self.latency.to_json(),
            "model_latency": self.model_latency.to_json(),
            "attributions": {f: [n, t] for f, (n, t) in self.attributions.items()},
            "stages": {name: sketch.to_json() for name, sketch in self.stages.items()},
            "measures": {name: sketch.to_json() for name, sketch in self.measures.items()},
        }

    @classmethod
    def from_row(cls, row: Any) -> ServingSummary:
        """A stored `window_serving` row (an ORM object or a mapping-like result row)."""
        attrs = {f: (int(n), float(t)) for f, (n, t) in (row.attributions or {}).items()}
        return cls(
            int(row.requests),
            int(row.errors),
            LatencySketch.from_json(row.latency),
            LatencySketch.from_json(row.model_latency),
            attrs,
            _sketches(getattr(row, "stages", None)),
            _sketches(getattr(row, "measures", None)),
        )


def _sketches(doc: Mapping[str, Any] | None) -> dict[str, LatencySketch]:
    """A stored `{name: sketch}` document (NULL on rows written before it existed: none)."""
    return {k: LatencySketch.from_json(v) for k, v in (doc or {}).items()}


def _measures(
    columns: Mapping[str, Sequence[Any]], rows: Sequence[int]
) -> dict[str, LatencySketch]:
    """A sketch per measure column some of `rows` set (tokens/s derived where it can be)."""
    out: dict[str, LatencySketch] = {}
    for name in MEASURES:
        values = columns.get(name)
        if name == "tokens_per_s":
            values = _tokens_per_s(columns, values)
        if values is not None:
            present = [values[i] for i in rows if values[i] is not None]
            if present:
                out[name] = LatencySketch.of(present)
    return out


def _tokens_per_s(
    columns: Mapping[str, Sequence[Any]], given: Sequence[Any] | None
) -> Sequence[Any] | None:
    """`tokens_per_s` as given, else output tokens per second of end-to-end latency."""
    tokens, latency = columns.get("output_tokens"), columns.get("latency_ms")
    if tokens is None or latency is None:
        return given
    derived = [
        t * 1000 / ms if t is not None and ms else None
        for t, ms in zip(tokens, latency, strict=True)
    ]
    if given is None:
        return derived
    return [d if g is None else g for g, d in zip(given, derived, strict=True)]
