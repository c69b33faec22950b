"""A self-contained HTML drift report: headline, one section per column (worst first) with
reference/current histograms and CDFs, a sentence explaining every verdict, charts for each
drifted slice, and a sortable, filterable table of all results. Offline: no external assets.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from monitor.detectors import DEFAULT_ALPHA, MIN_N, DriftResult
from monitor.profiles import OVERALL, ProfileSet, slice_key, spec_of
from monitor.profiles.kinds import Profile
from monitor.reports._charts import CUR, REF, charts
from monitor.reports._explain import explain, fmt, headline, where
from monitor.reports._page import page, results_table

TABLE_HEADER = (
    "column", "slice", "method", "value", "threshold", "p-value", "n ref", "n cur", "status", "why",
)  # fmt: skip


def render_html(
    results: Sequence[DriftResult],
    reference: ProfileSet,
    current: ProfileSet,
    title: str,
    alpha: float = DEFAULT_ALPHA,
    min_n: int = MIN_N,
    roles: Mapping[str, str] | None = None,
) -> str:
    """The whole report as one HTML string (charts are inline SVG); `roles` labels columns
    with what they are (target, prediction) in their section headings."""
    ordered = sorted(results, key=_severity)
    columns = list(dict.fromkeys(r.column for r in ordered))
    sections = "".join(
        _section(
            col,
            [r for r in ordered if r.column == col],
            reference,
            current,
            (alpha, min_n),
            (roles or {}).get(col),
        )
        for col in columns
    )
    rows = [[*_row(r), explain(r, alpha, min_n)] for r in ordered]
    body = (
        f"<h1>{html.escape(title)}</h1>{_headline(results, reference, current, alpha)}"
        f'<p class="legend"><span style="color:{REF}">■ reference</span>'
        f'<span style="color:{CUR}">■ current</span></p>{sections}'
        f"<h2>All results</h2>{results_table('results', TABLE_HEADER, rows, 8)}"
    )
    return page(title, body)


def _role(role: str | None) -> str:
    return "" if role is None else f" <small class='role'>{html.escape(role)}</small>"


def _headline(
    results: Sequence[DriftResult], reference: ProfileSet, current: ProfileSet, alpha: float
) -> str:
    head = headline(results)
    cls = "headline drift" if head.dataset_drift else "headline"
    lines = [
        *head.lines(),
        f"Reference rows: {reference.n_rows}; current rows: {current.n_rows}; "
        f"false discovery rate alpha {alpha:g} (Benjamini–Hochberg across {len(results)} tests)",
    ]
    return f'<div class="{cls}">' + "".join(f"<p>{html.escape(x)}</p>" for x in lines) + "</div>"


# Worst first; a status this module does not know sorts with "ok".
RANK = {"missing": 0, "drift": 1, "new": 2, "ok": 3, "insufficient_data": 4}


def _severity(r: DriftResult) -> tuple[int, float, str]:
    rank = RANK.get(str(r.status), RANK["ok"])
    ratio = (r.value or 0.0) / r.threshold if r.threshold else 0.0
    return rank, -ratio, r.column


def _row(r: DriftResult) -> list[str]:
    return [
        r.column, where(r), r.method, fmt(r.value), fmt(r.threshold), fmt(r.p_value),
        str(r.n_reference), str(r.n_current), r.status,
    ]  # fmt: skip


def _section(
    column: str,
    results: list[DriftResult],
    reference: ProfileSet,
    current: ProfileSet,
    rules: tuple[float, int],
    role: str | None,
) -> str:
    """One column: overall verdicts and charts, then each drifted slice with its own charts;
    `rules` are alpha and min_n; `role` (target, prediction) is shown beside the name."""
    alpha, min_n = rules
    overall = [r for r in results if r.slice is None]
    status = _column_status(overall)
    parts = [
        f'<section id="col-{html.escape(column)}"><h2>{html.escape(column)} '
        f"<small class='{status}'>{status}</small>{_role(role)}</h2>",
        *(f'<p class="why">{html.escape(explain(r, alpha, min_n))}</p>' for r in overall),
        _charts(reference, current, OVERALL, column, f"{column} overall"),
    ]
    drifted = [r for r in results if r.slice is not None and r.status == "drift"]
    for key, group in _by_slice(drifted).items():
        label = where(group[0])
        parts.append(f"<h3>{html.escape(column)} — {html.escape(label)}</h3>")
        parts += [f'<p class="why">{html.escape(explain(r, alpha, min_n))}</p>' for r in group]
        parts.append(_charts(reference, current, key, column, f"{column} {label}"))
    return "".join(parts) + "</section>"


def _column_status(overall: list[DriftResult]) -> str:
    statuses = {str(r.status) for r in overall}
    return min(statuses, key=lambda s: RANK.get(s, RANK["ok"]), default="insufficient_data")


def _by_slice(results: list[DriftResult]) -> dict[str, list[DriftResult]]:
    out: dict[str, list[DriftResult]] = {}
    for r in results:
        assert r.slice is not None
        ((name, value),) = r.slice.items()  # a slice is one column's value
        key = slice_key(name, value)
        out.setdefault(key, []).append(r)
    return out


def _charts(reference: ProfileSet, current: ProfileSet, key: str, column: str, title: str) -> str:
    """Charts of one column in one slice; none when a side lacks the column or its kind differs."""
    ref_all = reference.profiles.get((OVERALL, column))
    cur_all = current.profiles.get((OVERALL, column))
    if ref_all is None or cur_all is None or cur_all.kind != ref_all.kind:
        return ""
    spec = spec_of(ref_all)
    # A slice absent on one side is an empty profile, as in evaluation.
    ref: Profile = reference.profiles.get((key, column)) or spec.empty()
    cur: Profile = current.profiles.get((key, column)) or spec.empty()
    return charts(ref, cur, title)
