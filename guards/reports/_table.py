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


TENSOR_KEYS = ("max_abs", "rel_err", "sqnr_db", "cosine", "slice_max_abs", "growth")
RANGE_KEYS = ("calibrated_min", "calibrated_max", "reached_min", "reached_max", "clipped")
MAX_TENSOR_ROWS = 60  # a CI comment stays readable; the JSON report has every tensor


def localization_lines(doc: Mapping[str, Any]) -> list[str]:
    """Culprit first, then what was replayed, then remedies; [] when localisation did not run."""
    loc = doc.get("localization")
    if not loc:
        return []
    if loc.get("error"):
        return [f"Localization failed: {loc['error']}"]
    ops = {t["name"]: t["op_type"] for t in loc["tensors"]}

    def named(name: str | None) -> str:
        return f"{name} ({ops[name]})" if name else "none"

    first = loc["first_divergent"]
    culprit = named(first) if first else f"none over tolerance {fmt(loc['tolerance'])}"
    rows = f"{loc['rows']} rows" + (f" ({slice_text(loc['slice'])} first)" if loc["slice"] else "")
    cut = "; stopped by the time budget" if loc["truncated"] else ""
    return [
        f"First divergent tensor: {culprit}; largest error growth: {named(loc['largest_growth'])}",
        f"Replayed {rows} in {loc['seconds']:.2f}s; tolerance {fmt(loc['tolerance'])} "
        f"(max abs error / max |reference|){cut}",
        *(f"Remedy: {r['text']}: {r['option']}" for r in loc["remedies"]),
    ]


def tensor_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """Matched tensors in topological order, the first divergent and the culprit marked."""
    loc = doc.get("localization") or {}
    marks = {loc.get("largest_growth"): "largest growth", loc.get("first_divergent"): "first"}
    if loc.get("first_divergent") == loc.get("largest_growth"):
        marks = {loc.get("first_divergent"): "first, largest growth"}
    return [
        [t["name"], t["op_type"], *(fmt(t[k]) for k in TENSOR_KEYS), marks.get(t["name"], "")]
        for t in loc.get("tensors", [])[:MAX_TENSOR_ROWS]
    ]


def range_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    loc = doc.get("localization") or {}
    return [[r["name"], *(fmt(r[k]) for k in RANGE_KEYS)] for r in loc.get("ranges", [])]
