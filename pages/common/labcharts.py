"""The Lab's pictures (plotly), drawn to go into a paper: accuracy by depth beside accuracy by
distance to the end of the document (intervals dodged so they never overlap, the bounds as
lines), depth × length heatmaps with categorical axes and each cell's value and n, cost
against accuracy with the frontier, and the failure split of the methods that pick pages.

Every figure has a title whose second line says what answered: a free engine's says it is
not an LLM, so a saved PNG cannot pass for a model's result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rr_core.lab.stats import Cell, Point, SeriesSummary, percent

PALETTE = ["#2F5FD0", "#D94F2B", "#4CB391", "#7E57C2", "#F2A541", "#26A69A", "#8D6E63", "#EC407A"]
FONT = {"family": "Inter, Arial, sans-serif", "size": 12}
DODGE = 0.03  # how far apart the series sit at one x, as a share of the axis span


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _title(text: str, note: str) -> dict[str, object]:
    """A two-line title at the top of the figure: what the chart shows, then what answered
    (``note``)."""
    second = f"<br><span style='font-size:11px;color:#555'>{note}</span>" if note else ""
    return {
        "text": f"{text}{second}",
        "x": 0,
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8},
        "font": {"size": 14},
    }


def _layout(fig: go.Figure, *, title: str, note: str, height: int, panels: bool = False) -> go.Figure:
    """Title, size, font, margins (room for the two-line title, and the panels' own titles
    below it), legend under the plot."""
    top = (58 if note else 40) + (26 if panels else 0)
    fig.update_layout(
        title=_title(title, note),
        height=height,
        font=FONT,
        margin={"l": 10, "r": 10, "t": top, "b": 10},
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0, "xanchor": "left"},
        plot_bgcolor="white",
    )
    fig.update_annotations(font={"size": 12, "color": "#333"})  # the panels' titles
    fig.update_xaxes(automargin=True, showline=True, linecolor="#999", gridcolor="#eee")
    fig.update_yaxes(automargin=True, showline=True, linecolor="#999", gridcolor="#eee")
    return fig


def _dodged(xs: Sequence[float], index: int, count: int, *, log: bool) -> list[float]:
    """The x of series ``index`` of ``count``, moved sideways by a few percent of the axis
    (in log units on a log axis), so error bars at the same x stand apart."""
    if count <= 1 or not xs:
        return list(xs)
    values = [float(np.log10(max(x, 1.0))) if log else x for x in xs]
    span = (max(values) - min(values)) or (1.0 if log else 100.0)
    shift = (index - (count - 1) / 2) * span * DODGE
    if log:
        return [10 ** (v + shift) for v in values]
    return [v + shift for v in values]


def _round_ticks(values: Sequence[float]) -> list[float]:
    """1, 2 and 5 times the powers of ten between the smallest and largest value."""
    low, high = max(min(values), 1.0), max(values)
    ticks = [m * 10**e for e in range(0, 8) for m in (1, 2, 5)]
    inside = [t for t in ticks if low / 1.5 <= t <= high * 1.5]
    return inside if len(inside) <= 7 else [t for t in inside if str(int(t))[0] in "15"]


def _short(tokens: float) -> str:
    """``500``, ``2k``, ``10k``, ``1M``."""
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:g}M"
    return f"{tokens / 1_000:g}k" if tokens >= 1_000 else f"{tokens:g}"


def _error(points: Sequence[Point]) -> dict[str, object]:
    return {
        "type": "data",
        "symmetric": False,
        "array": [(p.interval[1] - p.accuracy) * 100 for p in points],
        "arrayminus": [(p.accuracy - p.interval[0]) * 100 for p in points],
        "thickness": 1.2,
        "width": 3,
    }


def accuracy_by_position(
    depth: Sequence[Point],
    distance: Sequence[Point],
    bounds: Sequence[SeriesSummary],
    *,
    note: str,
) -> go.Figure:
    """Two panels sharing the accuracy axis: by depth (% of the document) and by tokens from
    the answer to the end of the document; one line per series with 95% intervals (the
    question as the unit), the bounds as grey lines."""
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.06,
        subplot_titles=("by depth", "by distance to the end"),
    )
    names = list(dict.fromkeys(p.series for p in depth))
    distances = [p.x for p in distance]
    log = bool(distances) and max(distances) / max(min(distances), 1.0) > 20
    for i, name in enumerate(names):
        for col, points, is_log in ((1, [p for p in depth if p.series == name], False),
                                    (2, [p for p in distance if p.series == name], log)):  # fmt: skip
            xs = [p.x for p in points]
            fig.add_scatter(
                x=_dodged(xs, i, len(names), log=is_log),
                y=[p.accuracy * 100 for p in points],
                mode="lines+markers",
                name=name,
                legendgroup=name,
                showlegend=col == 1,
                line={"color": _colour(i), "width": 2},
                marker={"size": 7},
                error_y=_error(points),
                customdata=[
                    [x, p.trials, p.questions, p.interval[0] * 100, p.interval[1] * 100]
                    for x, p in zip(xs, points, strict=True)
                ],
                hovertemplate=(
                    "%{fullData.name}<br>"
                    + ("depth %{customdata[0]:g}%" if col == 1 else "%{customdata[0]:,.0f} tokens to the end")
                    + ": %{y:.0f}% right (95%: %{customdata[3]:.0f}–%{customdata[4]:.0f}%)"
                    "<br>n = %{customdata[1]} trials, %{customdata[2]} questions<extra></extra>"
                ),
                row=1,
                col=col,
            )
    for bound, dash in zip(bounds, ("dot", "dash"), strict=False):
        if bound.accuracy is None:  # every run of the bound failed: nothing to draw
            continue
        fig.add_hline(
            y=bound.accuracy * 100,
            line={"dash": dash, "color": "#7A7A7A", "width": 1},
            row="all",
            col="all",
        )
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="lines",
            line={"dash": dash, "color": "#7A7A7A", "width": 1},
            name=f"{bound.series}: {bound.accuracy:.0%} (n = {bound.trials})",
            row=1,
            col=1,
        )
    depths = sorted({p.x for p in depth})
    fig.update_xaxes(
        title_text="depth (% of the document)",
        tickvals=depths,
        ticktext=[f"{d:g}%" for d in depths],
        range=[-6, 106],
        row=1,
        col=1,
    )
    ticks = _round_ticks(distances) if log else None
    fig.update_xaxes(
        title_text="tokens to the end" + (" (log scale)" if log else ""),
        type="log" if log else "linear",
        tickvals=ticks,
        ticktext=[_short(t) for t in ticks] if ticks else None,
        row=1,
        col=2,
    )
    fig.update_yaxes(title_text="answered right (%)", range=[-5, 105], row=1, col=1)
    return _layout(
        fig,
        title="Accuracy by where the answer sits (95% intervals, question as the unit)",
        note=note,
        height=440,
        panels=True,
    )


def heatmaps(
    cells: Sequence[Cell], *, note: str, reminders: Mapping[tuple[str, int], str] | None = None
) -> go.Figure:
    """Depth × length accuracy, one panel per series (two to a row), categorical axes, each
    cell with its accuracy and what it counts (questions × repeats); a reminding method that
    gets no reminder at a length says so in its cells ("R&R = ICR here", from ``reminders``)."""
    notes = {key: text.split(":")[0] for key, text in (reminders or {}).items() if " here:" in text}
    series = list(dict.fromkeys(c.series for c in cells))
    cols = 1 if len(series) == 1 else 2
    rows = max(1, -(-len(series) // cols))
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=series,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        vertical_spacing=0.3 / rows if rows > 1 else 0.1,
    )
    depths = sorted({c.depth for c in cells})
    lengths = sorted({c.length for c in cells})
    x = [f"{d:g}%" for d in depths]
    y = [f"{length:,}" for length in lengths]
    for i, name in enumerate(series):
        grid = {(c.length, c.depth): c for c in cells if c.series == name}
        z: list[list[float | None]] = []
        text: list[list[str]] = []
        for length in lengths:
            found = [grid.get((length, d)) for d in depths]
            z.append([None if c is None or c.accuracy is None else c.accuracy * 100 for c in found])
            text.append(
                [
                    ""
                    if c is None
                    else f"{percent(c.accuracy)}<br>{c.n_text()}"
                    + (f"<br>{notes[c.series, c.length]}" if (c.series, c.length) in notes else "")
                    if c.trials
                    else f"n/a<br>{c.failed} failed"
                    for c in found
                ]
            )
        fig.add_heatmap(
            x=x,
            y=y,
            z=z,
            text=text,
            texttemplate="%{text}",
            textfont={"size": 10},
            zmin=0,
            zmax=100,
            xgap=2,
            ygap=2,
            colorscale="RdYlGn",
            showscale=i == 0,
            colorbar={"title": {"text": "% right"}, "len": 0.8, "thickness": 12},
            hovertemplate="length %{y} tokens, depth %{x}: %{z:.0f}% right<extra></extra>",
            row=i // cols + 1,
            col=i % cols + 1,
        )
    fig.update_xaxes(type="category", title_text="depth (% of the document)", title_standoff=4)
    fig.update_yaxes(type="category")
    for row in range(1, rows + 1):
        fig.update_yaxes(title_text="length (tokens)", title_standoff=4, row=row, col=1)
    _layout(
        fig,
        title="Accuracy by length and depth (each cell: % right, questions × repeats)",
        note=note,
        height=130 + 250 * rows,
        panels=True,
    )
    fig.update_layout(plot_bgcolor="#f4f4f4")
    return fig


def cost_accuracy(summaries: Sequence[SeriesSummary], *, note: str) -> go.Figure:
    """Cost per trial against accuracy (95% intervals); the frontier (no other method scored
    at least as high for less) joined."""
    fig = go.Figure()
    # A series with no counted trial (every run failed) has no accuracy to place.
    summaries = [s for s in summaries if s.accuracy is not None]
    costs = [s.cost_usd / max(s.trials, 1) for s in summaries]
    # Methods of the same cost would hide each other's intervals: each is moved a hair
    # sideways (1% of the axis per method; the hover gives the true cost).
    nudge = (max(costs, default=0.0) or 1.0) * 0.01
    xs = {s.series: costs[i] + (i - (len(summaries) - 1) / 2) * nudge for i, s in enumerate(summaries)}
    for i, s in enumerate(summaries):
        accuracy = s.accuracy or 0.0  # never None here: filtered above
        fig.add_scatter(
            x=[xs[s.series]],
            y=[accuracy * 100],
            customdata=[costs[i]],
            mode="markers",
            marker={
                "size": 13 if s.on_frontier else 10,
                "color": _colour(i),
                "symbol": "circle" if s.on_frontier else "circle-open",
                "line": {"width": 2, "color": _colour(i)},
            },
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [(s.ci[1] - accuracy) * 100],
                "arrayminus": [(accuracy - s.ci[0]) * 100],
                "thickness": 1.2,
            },
            name=s.series,
            hovertemplate=f"{s.series}<br>$%{{customdata:.5f}} a trial, %{{y:.0f}}% right; n = {s.trials} trials, "
            f"{s.questions} questions<extra></extra>",
        )
    frontier = sorted((s for s in summaries if s.on_frontier), key=lambda s: s.cost_usd / max(s.trials, 1))
    if len(frontier) > 1:
        fig.add_scatter(
            x=[xs[s.series] for s in frontier],
            y=[(s.accuracy or 0.0) * 100 for s in frontier],
            mode="lines",
            line={"dash": "dot", "color": "#7A7A7A"},
            name="frontier (point estimates)",
            hoverinfo="skip",
        )
    fig.update_xaxes(title_text="cost per trial (USD)", rangemode="tozero")
    fig.update_yaxes(title_text="answered right (%)", range=[-5, 105])
    return _layout(fig, title="Cost per trial against accuracy", note=note, height=380)


def failure_split(summaries: Sequence[SeriesSummary], *, note: str) -> go.Figure:
    """Wrong answers of the methods that pick pages first: the answer's page was never picked
    (retrieval) or picked and misread (reading). Methods that pick nothing are left out."""
    picking = [s for s in summaries if s.retrieves]
    names = [s.series for s in picking]
    fig = go.Figure()
    fig.add_bar(
        name="retrieval miss (answer page not picked)",
        x=names,
        y=[s.retrieval_misses for s in picking],
        marker_color="#D94F2B",
        texttemplate="%{y}",
        textposition="inside",
    )
    fig.add_bar(
        name="reading miss (picked, answered wrong)",
        x=names,
        y=[s.reading_misses for s in picking],
        marker_color="#F2A541",
        texttemplate="%{y}",
        textposition="inside",
    )
    fig.update_traces(width=0.4 if len(picking) < 3 else None)
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_xaxes(tickangle=0)
    fig.update_yaxes(title_text="wrong answers", rangemode="tozero")
    return _layout(fig, title="Why the wrong answers were wrong", note=note, height=320)
