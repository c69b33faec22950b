"""The rows both text renderers show, built once from the verdict document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STAT_KEYS = (
    "max_abs",
    "mean_abs",
    "p99_abs",
    "max_rel",
    "cosine",
    "sqnr_db",
    "min_passing_atol",
    "nan_or_inf",
)
LATENCY_KEYS = ("p50_ms", "p95_ms", "p99_ms", "rows_per_s")


def fmt(value: Any) -> str:
    """Numbers to 4 significant digits; null as 'n/a'."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def slice_text(sl: Mapping[str, str] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sl.items()) if sl else "overall"


def criteria_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """Failing criteria first, then inconclusive, then passing; stable otherwise."""
    order = {"fail": 0, "inconclusive": 1, "pass": 2}
    rows = sorted(doc["criteria"], key=lambda c: order[c["status"]])
    return [
        [
            c["status"].upper(),
            c["name"],
            slice_text(c["slice"]),
            fmt(c["value"]),
            fmt(c["threshold"]),
        ]
        for c in rows
    ]


def output_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    return [[name, *(fmt(stats[k]) for k in STAT_KEYS)] for name, stats in doc["outputs"].items()]


def latency_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    return [
        [model, batch, *(fmt(stats[k]) for k in LATENCY_KEYS)]
        for model, per_batch in doc["latency"].items()
        for batch, stats in per_batch.items()
    ]


def worst_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    return [
        [
            str(r["id"]),
            slice_text(r["slice"]) if r["slice"] else "-",
            fmt(r["max_abs"]),
            "yes" if r["flip"] else "no",
        ]
        for r in doc["worst_rows"]
    ]


def headline(doc: Mapping[str, Any]) -> str:
    providers = doc["providers"]
    return (
        f"Gate verdict: {doc['verdict'].upper()} (preset {doc['preset']}, {doc['rows']} golden "
        f"rows; reference on {', '.join(providers['reference'])}, candidate on "
        f"{', '.join(providers['candidate'])})"
    )
