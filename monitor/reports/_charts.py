"""Inline SVG charts of two profiles: overlaid histograms, CDFs and category bars, with axes.

Numeric profiles share the reference's quantile edges, so every chart is drawn from the
stored bucket counts (raw data is never reloaded). A skewed positive column (a long right
tail) is drawn on a log x axis, otherwise its whole body would sit in the first few pixels.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from monitor.profiles import CategoricalProfile, NumericProfile
from monitor.profiles.kinds import Profile

W, H = 460, 220
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 22, 36
REF, CUR = "#4c78a8", "#f58518"
# Ratio of the top edge to the median edge above which a positive column is drawn on log x.
SKEW_RATIO = 20.0
MAX_BARS = 20


@dataclass(frozen=True)
class _Scale:
    """Maps data values to pixels on the x axis (linear or log10)."""

    lo: float
    hi: float
    log: bool

    def __call__(self, x: float) -> float:
        a, b, v = (math.log10(t) for t in (self.lo, self.hi, x)) if self.log else (
            self.lo, self.hi, x)  # fmt: skip
        span = (b - a) or 1.0
        return LEFT + (min(max(v, a), b) - a) / span * (W - LEFT - RIGHT)

    def ticks(self) -> list[float]:
        if self.log:
            a, b = math.log10(self.lo), math.log10(self.hi)
            return [10 ** (a + (b - a) * i / 4) for i in range(5)]
        return [self.lo + (self.hi - self.lo) * i / 4 for i in range(5)]


def x_scale(edges: NDArray[np.float64]) -> _Scale:
    """Log scale when every edge is positive and the top edge is far above the median one."""
    lo, hi = float(edges[0]), float(edges[-1])
    mid = float(edges[len(edges) // 2])
    log = lo > 0 and mid > 0 and hi / mid > SKEW_RATIO
    if hi <= lo:
        hi = lo + 1.0
    return _Scale(lo, hi, log)


def _y(share: float, peak: float) -> float:
    return H - BOTTOM - share / (peak or 1.0) * (H - TOP - BOTTOM)


def _frame(title: str, scale: _Scale | None, peak: float, y_label: str) -> str:
    """Axes, tick labels and the title; `scale` None for category charts."""
    x0, y0, x1 = LEFT, H - BOTTOM, W - RIGHT
    parts = [
        f'<text x="{LEFT}" y="14" font-size="12" font-weight="600">{html.escape(title)}</text>',
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="#555"/>',
        f'<line x1="{x0}" y1="{TOP}" x2="{x0}" y2="{y0}" stroke="#555"/>',
        f'<text x="12" y="{(TOP + y0) / 2:.0f}" font-size="10" text-anchor="middle" '
        f'transform="rotate(-90 12 {(TOP + y0) / 2:.0f})">{html.escape(y_label)}</text>',
    ]
    for frac in (0.0, 0.5, 1.0):
        y = _y(frac * peak, peak)
        parts.append(
            f'<text x="{x0 - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">'
            f"{frac * peak:.3g}</text>"
            f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#eee"/>'
        )
    for tick in scale.ticks() if scale is not None else []:
        x = scale(tick)  # type: ignore[misc]  # scale is not None inside this loop
        parts.append(
            f'<text x="{x:.1f}" y="{y0 + 14}" font-size="10" text-anchor="middle">{tick:.3g}</text>'
        )
    if scale is not None and scale.log:
        parts.append(
            f'<text x="{x1}" y="{H - 4}" font-size="10" text-anchor="end">log scale</text>'
        )
    return "".join(parts)


def _svg(body: str, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'aria-label="{html.escape(label)}" width="{W}" height="{H}" viewBox="0 0 {W} {H}">'
        f"{body}</svg>"
    )


def _shares(p: Profile) -> NDArray[np.float64]:
    out: NDArray[np.float64] = p.counts / max(p.n, 1)
    return out


def histogram_svg(ref: NumericProfile, cur: NumericProfile, title: str) -> str:
    """Reference and current densities per interior bin, overlaid (bar height ∝ share/width)."""
    edges = ref.spec.edges_array
    scale = x_scale(edges)
    xs = [scale(float(e)) for e in edges.tolist()]
    widths = [max(b - a, 2.0) for a, b in zip(xs, xs[1:], strict=False)]
    dens = {
        color: [s / w for s, w in zip(_shares(p)[1:-1].tolist(), widths, strict=True)]
        for color, p in ((REF, ref), (CUR, cur))
    }
    peak = max((max(d, default=0.0) for d in dens.values()), default=0.0) or 1.0
    bars = []
    for color, values in dens.items():
        for x, w, d in zip(xs, widths, values, strict=False):
            y = _y(d, peak)
            bars.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{H - BOTTOM - y:.1f}" '
                f'fill="{color}" fill-opacity="0.45"/>'
            )
    body = _frame(title, scale, 1.0, "density (rel.)") + "".join(bars)
    return _svg(body, f"histogram {title}")


def cdf_svg(ref: NumericProfile, cur: NumericProfile, title: str) -> str:
    """Empirical CDFs at the reference edges, on the histogram's x axis."""
    edges = ref.spec.edges_array
    scale = x_scale(edges)
    lines = []
    for color, p in ((REF, ref), (CUR, cur)):
        cdf = np.cumsum(_shares(p))[:-1]
        pts = " ".join(
            f"{scale(e):.1f},{_y(c, 1.0):.1f}"
            for e, c in zip(edges.tolist(), cdf.tolist(), strict=True)
        )
        lines.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
    return _svg(_frame(title, scale, 1.0, "CDF") + "".join(lines), f"cdf {title}")


def bars_svg(ref: CategoricalProfile, cur: CategoricalProfile, title: str) -> str:
    """Share of each category (top MAX_BARS by combined share), reference beside current."""
    labels = [*ref.spec.categories, "(other)", "(unseen)"]
    r, c = _shares(ref), _shares(cur)
    top = np.argsort(-(r + c), kind="stable")[:MAX_BARS]
    top = top[(r + c)[top] > 0]
    width = (W - LEFT - RIGHT) / max(len(top), 1)
    peak = max(float(r.max(initial=0)), float(c.max(initial=0))) or 1.0
    parts = [_frame(title, None, peak, "share")]
    for i, b in enumerate(top.tolist()):
        x = LEFT + i * width
        for j, (share, color) in enumerate(((r[b], REF), (c[b], CUR))):
            y = _y(float(share), peak)
            parts.append(
                f'<rect x="{x + 1 + j * (width - 2) / 2:.1f}" y="{y:.1f}" '
                f'width="{(width - 2) / 2:.1f}" height="{H - BOTTOM - y:.1f}" fill="{color}"/>'
            )
        label = html.escape(labels[b][:12])
        parts.append(
            f'<text x="{x + width / 2:.1f}" y="{H - BOTTOM + 14}" font-size="10" '
            f'text-anchor="middle">{label}</text>'
        )
    return _svg("".join(parts), f"categories {title}")


def charts(ref: Profile, cur: Profile, title: str) -> str:
    """The charts of one column (or one slice of it)."""
    if isinstance(ref, NumericProfile) and isinstance(cur, NumericProfile):
        return histogram_svg(ref, cur, f"{title}: histogram") + cdf_svg(ref, cur, f"{title}: CDF")
    assert isinstance(ref, CategoricalProfile) and isinstance(cur, CategoricalProfile)
    return bars_svg(ref, cur, f"{title}: share per category")
