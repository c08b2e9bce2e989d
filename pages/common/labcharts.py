"""The Lab's pictures (plotly): accuracy by depth with intervals and bounds, depth × length
heatmaps, cost against accuracy with the frontier, the failure split."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rr_core.lab.stats import Cell, SeriesSummary, wilson

PALETTE = ["#2F5FD0", "#D94F2B", "#4CB391", "#7E57C2", "#F2A541", "#26A69A", "#8D6E63", "#EC407A"]


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def accuracy_by_depth(cells: Sequence[Cell], bounds: Sequence[SeriesSummary]) -> go.Figure:
    """One line per series (averaged over lengths), 95% Wilson intervals, bounds as lines."""
    fig = go.Figure()
    series = list(dict.fromkeys(c.series for c in cells))
    for i, name in enumerate(series):
        by_depth: dict[float, list[Cell]] = {}
        for c in cells:
            if c.series == name:
                by_depth.setdefault(c.depth, []).append(c)
        depths = sorted(by_depth)
        trials = [sum(c.trials for c in by_depth[d]) for d in depths]
        correct = [sum(c.correct for c in by_depth[d]) for d in depths]
        acc = [k / n if n else 0 for k, n in zip(correct, trials, strict=True)]
        ci = [wilson(k, n) for k, n in zip(correct, trials, strict=True)]
        fig.add_scatter(
            x=depths,
            y=[a * 100 for a in acc],
            mode="lines+markers",
            name=name,
            line={"color": _colour(i)},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [(hi - a) * 100 for (lo, hi), a in zip(ci, acc, strict=True)],
                "arrayminus": [(a - lo) * 100 for (lo, hi), a in zip(ci, acc, strict=True)],
                "thickness": 1,
            },
            customdata=[[n] for n in trials],
            hovertemplate="%{fullData.name}<br>depth %{x}%: %{y:.0f}% of %{customdata[0]} trials<extra></extra>",
        )
    for bound, dash in zip(bounds, ("dot", "dash"), strict=False):
        fig.add_hline(
            y=bound.accuracy * 100,
            line={"dash": dash, "color": "#7A7A7A"},
            annotation_text=f"{bound.series}: {bound.accuracy:.0%}",
            annotation_position="top left" if dash == "dot" else "bottom left",
        )
    fig.update_layout(
        height=360,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis_title="where the answer sits (% of the document)",
        yaxis_title="answered right (%)",
        yaxis_range=[-5, 105],
        legend={"orientation": "h", "y": 1.15, "x": 0},
    )
    return fig


def heatmaps(cells: Sequence[Cell]) -> go.Figure:
    """Depth × length accuracy, one panel per series."""
    series = list(dict.fromkeys(c.series for c in cells))
    fig = make_subplots(rows=1, cols=max(len(series), 1), subplot_titles=series, shared_yaxes=True)
    for i, name in enumerate(series, start=1):
        mine = [c for c in cells if c.series == name]
        depths = sorted({c.depth for c in mine})
        lengths = sorted({c.length for c in mine})
        grid = {(c.length, c.depth): c for c in mine}
        z = [
            [grid[(length, d)].accuracy * 100 if (length, d) in grid else None for d in depths]
            for length in lengths
        ]
        fig.add_heatmap(
            x=[f"{d:g}%" for d in depths],
            y=[f"{length:,}" for length in lengths],
            z=z,
            zmin=0,
            zmax=100,
            colorscale="RdYlGn",
            showscale=i == len(series),
            hovertemplate="length %{y}, depth %{x}: %{z:.0f}%<extra></extra>",
            row=1,
            col=i,
        )
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    fig.update_yaxes(title_text="length (tokens)", row=1, col=1)
    return fig


def cost_accuracy(summaries: Sequence[SeriesSummary]) -> go.Figure:
    """Cost per trial against accuracy; the frontier (nothing else is as right for less) joined."""
    fig = go.Figure()
    for i, s in enumerate(summaries):
        fig.add_scatter(
            x=[s.cost_usd / max(s.trials, 1)],
            y=[s.accuracy * 100],
            mode="markers+text",
            text=[s.series],
            textposition="top center",
            marker={
                "size": 14 if s.on_frontier else 10,
                "color": _colour(i),
                "symbol": "circle" if s.on_frontier else "circle-open",
            },
            name=s.series,
            showlegend=False,
            hovertemplate=f"{s.series}<br>$%{{x:.5f}} a trial, %{{y:.0f}}% right<extra></extra>",
        )
    frontier = sorted((s for s in summaries if s.on_frontier), key=lambda s: s.cost_usd / max(s.trials, 1))
    if len(frontier) > 1:
        fig.add_scatter(
            x=[s.cost_usd / max(s.trials, 1) for s in frontier],
            y=[s.accuracy * 100 for s in frontier],
            mode="lines",
            line={"dash": "dot", "color": "#7A7A7A"},
            name="frontier",
            hoverinfo="skip",
        )
    fig.update_layout(
        height=340,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis_title="cost per trial (USD)",
        yaxis_title="answered right (%)",
        yaxis_range=[-5, 110],
    )
    return fig


def failure_split(summaries: Sequence[SeriesSummary]) -> go.Figure:
    """Wrong answers split: the page was never picked (retrieval) or picked and misread (reading)."""
    names = [s.series for s in summaries]
    fig = go.Figure()
    fig.add_bar(
        name="retrieval miss (answer page not picked)",
        x=names,
        y=[s.retrieval_misses for s in summaries],
        marker_color="#D94F2B",
    )
    fig.add_bar(
        name="reading miss (picked, answered wrong)",
        x=names,
        y=[s.reading_misses for s in summaries],
        marker_color="#F2A541",
    )
    fig.update_layout(
        barmode="stack",
        height=300,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        yaxis_title="wrong answers",
        legend={"orientation": "h", "y": 1.15, "x": 0},
    )
    return fig
