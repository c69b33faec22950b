"""The load-test report as offline HTML (with a latency-vs-rate chart) and as Markdown.

Both draw the same rows (`loadtest_rows`): one per offered rate, corrected percentiles first,
then the uncorrected p99 that a closed-loop measurement would have shown.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.reports._page import page, results_table

if TYPE_CHECKING:  # at run time the report arrives built: drift's report loads no httpx
    from monitor.loadtest import Latency, LoadtestReport, RateResult

HEADER = ("offered /s", "achieved /s", "ok", "p50 ms", "p95 ms", "p99 ms", "max ms",
          "uncorrected p99 ms", "errors", "departs")  # fmt: skip
W, H = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 16, 26, 40
SERIES = (("p50", "#4c78a8", ""), ("p99", "#e45756", ""), ("uncorrected p99", "#999", "4 3"))


def _tick(ms: float) -> str:
    return f"{ms:.3g}" if ms < 1000 else f"{ms:,.0f}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _errors(r: RateResult) -> str:
    return ", ".join(f"{k}: {n}" for k, n in sorted(r.errors.items())) or "none"


def loadtest_rows(report: LoadtestReport) -> list[list[str]]:
    """One row of cells per rate, in HEADER's order."""
    return [
        [
            f"{r.rate:g}",
            f"{r.achieved_rate:.1f}",
            f"{r.ok}/{r.sent}",
            _ms(r.latency.p50),
            _ms(r.latency.p95),
            _ms(r.latency.p99),
            _ms(r.latency.max),
            _ms(r.uncorrected.p99),
            _errors(r),
            "yes" if r.departs else "no",
        ]  # fmt: skip
        for r in report.rates
    ]


def knee_lines(report: LoadtestReport) -> list[str]:
    """The service time, the knee and the capacity bracket, in words."""
    service = _ms(report.service_time_ms)
    lines = [
        f"Service time (median at the lowest rate): {service} ms; {len(report.rates)} rates "
        f"of {report.duration_s:g} s each, per-request timeout {report.timeout_s:g} s."
    ]
    if report.knee_rate is None:
        lines.append("No knee: every rate held (capacity is above the highest rate tried).")
        return lines
    held = "none" if report.sustained_rate is None else f"{report.sustained_rate:g}/s"
    lines.append(
        f"Knee at {report.knee_rate:g}/s: latency departs from the service time there "
        f"({report.rule}). "
        f"Highest rate that held: {held}; throughput when overloaded: "
        f"{_ms(report.saturated_throughput)}/s."
    )
    return lines


def render_loadtest_markdown(report: LoadtestReport) -> str:
    """Headline, knee, and the per-rate table."""
    lines = [f"## Load test of {report.url}", "", *(f"- {x}" for x in knee_lines(report)), ""]
    lines += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in loadtest_rows(report)]
    return "\n".join(lines) + "\n"


def render_loadtest_html(report: LoadtestReport, title: str) -> str:
    """Headline, the latency-vs-rate chart, and the sortable per-rate table."""
    cls = "headline drift" if report.knee_rate is not None else "headline"
    head = f'<div class="{cls}">' + "".join(f"<p>{html.escape(x)}</p>" for x in knee_lines(report))
    body = (
        f"<h1>{html.escape(title)}</h1>{head}</div><h2>Latency vs offered rate</h2>"
        f"{latency_chart(report)}<h2>Rates</h2>"
        f"{results_table('rates', HEADER, loadtest_rows(report), None)}"
    )
    return page(title, body)


def _points(report: LoadtestReport, pick: str) -> list[tuple[float, float]]:
    def value(lat: Latency, uncorrected: Latency) -> float | None:
        return {"p50": lat.p50, "p99": lat.p99, "uncorrected p99": uncorrected.p99}[pick]

    pts = [(r.rate, value(r.latency, r.uncorrected)) for r in report.rates]
    return [(x, y) for x, y in pts if y is not None and y > 0]


def latency_chart(report: LoadtestReport) -> str:
    """p50, p99 and uncorrected p99 (log ms) against the offered rate; the knee as a line."""
    series = {name: _points(report, name) for name, _, _ in SERIES}
    ys = [y for pts in series.values() for _, y in pts]
    if not ys:
        return "<p>No request succeeded: nothing to draw.</p>"
    lo, hi = math.log10(min(ys)) - 0.1, math.log10(max(ys)) + 0.1
    x_hi = max(r.rate for r in report.rates) * 1.05

    def px(x: float) -> float:
        return LEFT + x / x_hi * (W - LEFT - RIGHT)

    def py(y: float) -> float:
        return H - BOTTOM - (math.log10(y) - lo) / (hi - lo) * (H - TOP - BOTTOM)

    parts = [_axes(report, px, py, lo, hi)]
    for name, color, dash in SERIES:
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in series[name])
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                     f'stroke-dasharray="{dash}" points="{pts}"/>')  # fmt: skip
        parts += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>'
                  for x, y in series[name]]  # fmt: skip
    legend = "".join(
        f'<text x="{LEFT + 8 + i * 150}" y="{TOP + 12}" font-size="11" fill="{c}">— {n}</text>'
        for i, (n, c, _) in enumerate(SERIES)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'aria-label="latency vs offered rate" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}">{"".join(parts)}{legend}</svg>'
    )


Pixels = Callable[[float], float]


def _axes(report: LoadtestReport, px: Pixels, py: Pixels, lo: float, hi: float) -> str:
    """Axes, rate ticks, log-latency ticks and the knee."""
    x0, y0 = LEFT, H - BOTTOM
    parts = [
        f'<line x1="{x0}" y1="{y0}" x2="{W - RIGHT}" y2="{y0}" stroke="#555"/>',
        f'<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{y0}" stroke="#555"/>',
        f'<text x="{(x0 + W - RIGHT) / 2}" y="{H - 6}" font-size="11" text-anchor="middle">'
        "offered rate (requests/s)</text>",
        f'<text x="14" y="{(TOP + y0) / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + y0) / 2})">latency ms (log)</text>',
    ]
    parts += [f'<text x="{px(r.rate):.1f}" y="{y0 + 14}" font-size="10" '
              f'text-anchor="middle">{r.rate:g}</text>' for r in report.rates]  # fmt: skip
    for i in range(5):
        y = 10 ** (lo + (hi - lo) * i / 4)
        parts.append(f'<text x="{x0 - 4}" y="{py(y) + 3:.1f}" font-size="10" text-anchor="end">'
                     f'{_tick(y)}</text><line x1="{x0}" y1="{py(y):.1f}" x2="{W - RIGHT}" '
                     f'y2="{py(y):.1f}" stroke="#eee"/>')  # fmt: skip
    if report.knee_rate is not None:
        x = px(report.knee_rate)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{y0}" stroke="#b00" '
                     f'stroke-dasharray="2 2"/><text x="{x + 3:.1f}" y="{TOP + 26}" '
                     f'font-size="10" fill="#b00">knee</text>')  # fmt: skip
    return "".join(parts)
