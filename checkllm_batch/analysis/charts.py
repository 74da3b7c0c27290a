"""Small inline SVG charts generated in Python: no JavaScript, no CDN, no plotting library.

Each function returns an `Svg` (a str that Jupyter displays as a picture and the HTML
report inlines as is). Every bar is a `<rect class="bar">` with a `<title>` tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2",
           "#97bbf5", "#9c6b4e", "#9498a0")
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


class Svg(str):
    """An SVG document; `_repr_svg_` makes notebooks draw it."""

    def _repr_svg_(self) -> str:
        return str(self)


def _fmt(value: float | None, percent: bool) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if percent else f"{value:.4g}"


def _error_bar(x_low: float, x_high: float, y: float) -> str:
    """A 95 % interval drawn over a bar: a line from low to high with end caps."""
    return (f'<g class="error-bar" stroke="#222" stroke-width="1.2">'
            f'<line x1="{x_low:.1f}" y1="{y:.1f}" x2="{x_high:.1f}" y2="{y:.1f}"/>'
            f'<line x1="{x_low:.1f}" y1="{y - 5:.1f}" x2="{x_low:.1f}" y2="{y + 5:.1f}"/>'
            f'<line x1="{x_high:.1f}" y1="{y - 5:.1f}" x2="{x_high:.1f}" y2="{y + 5:.1f}"/>'
            "</g>")


def bars(items: Sequence[tuple[str, float | None]], *, title: str = "",
         percent: bool = False, max_value: float | None = None, width: int = 500,
         errors: Sequence[tuple[float | None, float | None]] | None = None) -> Svg:
    """Horizontal bars, one per (label, value); a None value is drawn as 'n/a'. `errors`
    gives each bar its 95 % interval (low, high), drawn as an error bar and said in the
    tooltip and the label."""
    label_w, row_h, top = 180, 22, 28 if title else 8
    values = [v for _, v in items if v is not None]
    scale_max = max_value if max_value is not None else max([abs(v) for v in values] or [1])
    scale_max = scale_max or 1
    plot_w = width - label_w - (150 if errors else 70)  # room for "[low, high]"
    height = top + row_h * len(items) + 8
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="chart-svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}" {FONT}>')]
    if title:
        parts.append(f'<text x="0" y="16" font-weight="bold">{escape(title)}</text>')
    for i, (label, value) in enumerate(items):
        y = top + i * row_h
        short = label if len(label) <= 28 else label[:27] + "…"
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">'
                     f'{escape(short)}</text>')
        w = 0.0 if value is None else max(0.0, plot_w * min(abs(value) / scale_max, 1.0))
        low, high = errors[i] if errors else (None, None)
        said = _fmt(value, percent) + (f" [{_fmt(low, percent)}, {_fmt(high, percent)}]"
                                       if low is not None and high is not None else "")
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="16" '
                     f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(label)}: '
                     f'{said}</title></rect>')
        end = w
        if low is not None and high is not None:
            def x_of(v: float) -> float:
                return label_w + max(0.0, plot_w * min(abs(v) / scale_max, 1.0))
            parts.append(_error_bar(x_of(low), x_of(high), y + 11))
            end = max(w, x_of(high) - label_w)
        parts.append(f'<text x="{label_w + end + 6:.1f}" y="{y + 15}">{said}</text>')
    parts.append("</svg>")
    return Svg("".join(parts))


def rate_bar(rate: float | None, low: float | None, high: float | None, *,
             width: int = 110, height: int = 14) -> Svg:
    """A rate in [0, 1] as a small bar on a 0-100 % track with its 95 % interval as an error
    bar, for a table cell; an empty track when there is no rate."""
    def x(v: float) -> float:
        return 1 + (width - 2) * min(max(v, 0.0), 1.0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="rate-bar" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" aria-hidden="true">'
             f'<rect x="1" y="3" width="{width - 2}" height="{height - 6}" fill="#eef0f3"/>']
    if rate is not None:
        parts.append(f'<rect class="bar" x="1" y="3" width="{x(rate) - 1:.1f}" '
                     f'height="{height - 6}" fill="{PALETTE[0]}"/>')
    if low is not None and high is not None:
        parts.append(_error_bar(x(low), x(high), height / 2))
    parts.append("</svg>")
    return Svg("".join(parts))


def _short(label: str, chars: int = 24) -> str:
    return label if len(label) <= chars else label[:chars - 1] + "…"


def histogram(counts: Sequence[tuple[float, int]], *, title: str = "", width: int = 360,
              height: int = 160) -> Svg:
    """Vertical bars for (bin_start, count) over [0, 1] in 10 bins."""
    by_bin = {round(b * 10): n for b, n in counts}
    peak = max(by_bin.values() or [1])
    top, bottom, left = 24 if title else 6, 20, 14 + 7 * len(f"{peak:,}")  # the label fits
    plot_h, plot_w = height - top - bottom, width - left - 8
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="chart-svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}" {FONT}>')]
    if title:
        parts.append(f'<text x="0" y="15" font-weight="bold">{escape(title)}</text>')
    for i in range(10):
        n = by_bin.get(i, 0)
        h = plot_h * n / peak
        x = left + i * plot_w / 10
        parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" '
                     f'width="{plot_w / 10 - 2:.1f}" height="{h:.1f}" fill="{PALETTE[0]}">'
                     f'<title>{i / 10:.1f}–{(i + 1) / 10:.1f}: {n}</title></rect>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
                 f'y2="{top + plot_h}" stroke="#888"/>')
    for tick in (0, 0.5, 1):
        parts.append(f'<text x="{left + tick * plot_w:.1f}" y="{height - 5}" '
                     f'text-anchor="middle">{tick:g}</text>')
    parts.append(f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{peak:,}</text>')
    parts.append("</svg>")
    return Svg("".join(parts))


def heatmap(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[int]], *,
            title: str = "", cell: int = 44) -> Svg:
    """A confusion-matrix heat map: rows are actual labels, columns predicted labels."""
    longest = max([len(c) for c in columns] + [1])
    left = 14 + 7 * min(max([len(r) for r in rows] + [1]), 24)  # row labels fit
    top = (40 if title else 22) + 5 * min(longest, 24)  # column labels slant up, apart
    width, height = left + cell * len(columns) + 8 + 6 * min(longest, 24), top + cell * len(rows) + 26
    peak = max([v for row in values for v in row] or [1]) or 1
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" class="chart-svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{escape(title)}" {FONT}>')]
    if title:
        parts.append(f'<text x="0" y="15" font-weight="bold">{escape(title)}</text>')
    parts.append(f'<text x="0" y="{top - 6}">predicted →</text>')
    for j, name in enumerate(columns):
        x = left + j * cell + cell / 2
        parts.append(f'<text x="{x}" y="{top - 6}" transform="rotate(-40 {x} {top - 6})">'
                     f'{escape(_short(name))}<title>{escape(name)}</title></text>')
    for i, name in enumerate(rows):
        parts.append(f'<text x="{left - 6}" y="{top + i * cell + cell / 2 + 4}" '
                     f'text-anchor="end">{escape(_short(name))}<title>{escape(name)}</title></text>')
        for j, value in enumerate(values[i]):
            shade = int(245 - 180 * value / peak)
            fill = f"rgb({shade},{shade + 5 if shade < 250 else 250},255)"
            ink = "#fff" if value / peak > 0.6 else "#222"
            x, y = left + j * cell, top + i * cell
            parts.append(f'<rect class="bar cell" x="{x}" y="{y}" width="{cell - 2}" '
                         f'height="{cell - 2}" fill="{fill}"><title>actual {escape(name)}, '
                         f'predicted {escape(columns[j])}: {value}</title></rect>')
            parts.append(f'<text x="{x + cell / 2 - 1}" y="{y + cell / 2 + 4}" fill="{ink}" '
                         f'text-anchor="middle">{value}</text>')
    parts.append(f'<text x="0" y="{height - 6}">↓ actual</text></svg>')
    return Svg("".join(parts))
