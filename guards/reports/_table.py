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


CRITERIA_HEADER = ("status", "criterion", "slice", "value", "threshold", "reference", "candidate")


def _with_unit(value: Any, unit: str) -> str:
    text = fmt(value)
    return f"{text} {unit}" if unit and value is not None else text


def _excess(c: Mapping[str, Any]) -> float:
    """How far past its threshold a criterion is (relative), to find the decisive one."""
    value, limit = c["value"], c["threshold"]
    if value is None or not limit:
        return 0.0
    return abs(float(value) - float(limit)) / abs(float(limit))


def ordered_criteria(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Failing first (furthest past its threshold first), then inconclusive, then passing."""
    order = {"fail": 0, "inconclusive": 1, "pass": 2}
    return sorted(doc["criteria"], key=lambda c: (order[c["status"]], -_excess(c)))


def criteria_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """The decisive criterion first; values with their units, both models' values side by side."""
    return [
        [
            c["status"].upper(),
            c["name"],
            slice_text(c["slice"]),
            _with_unit(c["value"], c.get("unit", "")),
            _with_unit(c["threshold"], c.get("unit", "")),
            fmt(c.get("reference")),
            fmt(c.get("candidate")),
        ]
        for c in ordered_criteria(doc)
    ]


def decisive(doc: Mapping[str, Any]) -> str:
    """One line naming the criterion that decided a failing or inconclusive verdict."""
    first = ordered_criteria(doc)[0] if doc["criteria"] else None
    if first is None or first["status"] == "pass":
        return "Every criterion passed."
    unit = first.get("unit", "")
    line = (
        f"Decided by {first['name']} ({slice_text(first['slice'])}): "
        f"{_with_unit(first['value'], unit)} against a threshold of "
        f"{_with_unit(first['threshold'], unit)}"
    )
    if first.get("reference") is not None and first.get("candidate") is not None:
        line += f"; reference {fmt(first['reference'])}, candidate {fmt(first['candidate'])}"
    return line


def run_lines(doc: Mapping[str, Any]) -> list[str]:
    """Model, version, time, artifacts with sha256, golden set and providers."""
    run = doc.get("run") or {}
    providers = doc["providers"]
    lines = [
        f"Model: {run.get('model') or 'n/a'}, version {run.get('version') or 'n/a'}; "
        f"run at {run.get('time', 'n/a')}",
    ]
    for role, art in (run.get("artifacts") or {}).items():
        extra = f", {art['rows']} rows" if "rows" in art else ""
        lines.append(f"{role}: {art['name']} (sha256 {art['sha256']}{extra})")
    settings = run.get("settings") or {}
    if settings:
        parts = [f"{k} {settings[k]}" for k in ("precision", "quantization", "batching", "runtime")
                 if k in settings]  # fmt: skip
        parts += [f"{k}={v}" for k, v in (settings.get("meta") or {}).items()]
        lines.append(f"Optimization settings: {'; '.join(parts)}")
    lines.append(
        f"Providers: reference {', '.join(providers['reference'])}; "
        f"candidate {', '.join(providers['candidate'])}"
    )
    return lines


def output_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    return [[name, *(fmt(stats[k]) for k in STAT_KEYS)] for name, stats in doc["outputs"].items()]


LATENCY_HEADER = (
    "batch", "reference p50 ms", "candidate p50 ms", "p50 ratio",
    "reference p95 ms", "candidate p95 ms", "p95 ratio", "candidate rows/s",
)  # fmt: skip
# Without a configured latency ratio limit a report still calls out a candidate this much slower.
DEFAULT_SLOWER = 1.5


def latency_limit(doc: Mapping[str, Any]) -> tuple[float, str]:
    """The configured p95 ratio limit, else DEFAULT_SLOWER; and how to name it."""
    for c in doc["criteria"]:
        if c["name"].startswith("latency_ratio") and c["threshold"] is not None:
            return float(c["threshold"]), f"limit {c['threshold']:g}x"
    return DEFAULT_SLOWER, f"no ratio limit set; shown above {DEFAULT_SLOWER:g}x"


def _ratio(cand: float, ref: float) -> float | None:
    return cand / ref if ref > 0 else None


def latency_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    """Every batch size, both models side by side, with candidate/reference ratios."""
    lat = doc["latency"]
    if not lat:
        return []
    rows = []
    for batch, cand in lat["candidate"].items():
        ref = lat["reference"][batch]
        r50, r95 = _ratio(cand["p50_ms"], ref["p50_ms"]), _ratio(cand["p95_ms"], ref["p95_ms"])
        rows.append([
            batch, fmt(ref["p50_ms"]), fmt(cand["p50_ms"]), _x(r50),
            fmt(ref["p95_ms"]), fmt(cand["p95_ms"]), _x(r95), fmt(cand["rows_per_s"]),
        ])  # fmt: skip
    return rows


def _x(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}x"


def latency_callouts(doc: Mapping[str, Any]) -> list[str]:
    """'candidate p50 is 3.4x the reference at batch 64 (limit 1.5x)' for each breach."""
    lat, (limit, limit_text) = doc["latency"], latency_limit(doc)
    out = []
    for batch, cand in (lat.get("candidate") or {}).items():
        ref = lat["reference"][batch]
        for key in ("p50_ms", "p95_ms"):
            ratio = _ratio(cand[key], ref[key])
            if ratio is not None and ratio > limit:
                out.append(
                    f"candidate {key[:3]} is {ratio:.1f}x the reference at batch {batch} "
                    f"({fmt(cand[key])} ms vs {fmt(ref[key])} ms; {limit_text})"
                )
    return out


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
    run = doc.get("run") or {}
    what = f"{run['model']} v{run['version']}, " if run.get("model") else ""
    return (
        f"Gate verdict: {doc['verdict'].upper()} ({what}preset {doc['preset']}, {doc['rows']} "
        f"golden rows; reference on {', '.join(providers['reference'])}, candidate on "
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
