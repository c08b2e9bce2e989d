"""Drawing runs: a method's card, errors with what to do, its calls, the cost chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from pages.common.docs import page_ref
from pages.common.text import md, plural, table
from rr_core import errors, quotes, stages
from rr_core.documents import Document
from rr_core.errors import RRError
from rr_core.llm import describe_provider
from rr_core.methods import get_method
from rr_core.plans import Citation, Outcome
from rr_core.traces import RunTrace

# What to do next, by kind of error (the error's own message says what happened).
_HINTS: dict[type[Exception], str] = {
    errors.MissingKeyError: "Enter an API key in the sidebar, or set the provider's key variable and restart.",
    errors.AuthError: "Check the API key in the sidebar (or the environment variable); it was rejected.",
    errors.RateLimitError: "Wait a minute and run again, or lower 'Calls at once' in the sidebar's Advanced part.",
    errors.ContextTooLongError: "Try a chunked method (Chunked R&R) with a smaller chunk size c, or a model with a longer context.",
    errors.ProviderTimeout: "The provider is slow: run again, or try a smaller document or a chunked method.",
    errors.ProviderError: "Run again in a moment; if it keeps failing, check the model name and the base URL in the sidebar.",
    errors.ResponseParseError: "The model did not reply in the requested JSON: run again or choose another model.",
    errors.ConfigError: "Adjust the settings in the sidebar.",
    errors.RunCancelled: "Run again when you are ready.",
}
HINTS: dict[str, str] = {cls.__name__: hint for cls, hint in _HINTS.items()} | {
    "InternalError": "This is a bug in R&R Studio; the other methods' results are still valid."
}
# Cited pages (a violet: not the green or red of right and wrong, not the blue of retrieval).
CITED_COLOUR = "#7B3FB5"
CITED_RGB = (0x7B / 255, 0x3F / 255, 0xB5 / 255)


def title(trace: RunTrace) -> str:
    """A run's name with the settings that tell it apart: ``R&R (k = 5,000 · N = 5)``."""
    return trace.label + (f" ({trace.describe})" if trace.describe else "")


def method_title(trace: RunTrace) -> str:
    """A run's method at its settings, leaving out what changes question by question (the
    Oracle's gold pages): the one column, or bar, of a method over several questions."""
    try:
        describe = get_method(trace.method).describe(trace.settings.but(gold_pages=()))
    except RRError:  # a method no longer registered: its title as recorded
        return title(trace)
    return trace.label + (f" ({describe})" if describe else "")


def show_rr_error(exc: RRError) -> None:
    """An ``RRError`` as an error box with what to do."""
    hint = HINTS.get(type(exc).__name__, "")
    st.error(md(str(exc)) + (f"\n\n**What to do:** {hint}" if hint else ""))


def show_trace_error(trace: RunTrace) -> None:
    """A failed method: what happened and what to do next."""
    hint = HINTS.get(trace.error_kind or "", "")
    st.error(md(trace.error or "") + (f"\n\n**What to do:** {hint}" if hint else ""))


# Where a quote stands is provenance, not correctness: located is said in a neutral grey, with
# no tick (nothing that looks like approval), doubtful verdicts in amber; green and red are kept
# for right and wrong against a known answer.
_CHECK_ICONS = {
    quotes.VERIFIED: ":gray[:material/location_on:]",
    quotes.APPROXIMATE: ":orange[:material/approximately_equal:]",
    quotes.NOT_FOUND: ":orange[:material/warning:]",
    quotes.NO_PAGE: ":orange[:material/warning:]",
    quotes.NO_QUOTE: ":gray[:material/remove:]",
}


def check_words(citation: Citation, document: Document | None) -> str:
    """Where a quote stands, in the screens' words: ``quote located on p. 6`` (provenance: the
    sentence is on the page; it does not say the sentence supports the answer)."""
    words = quotes.check_words(citation.quote_check, page_ref(document, citation.page), citation.quote_score)
    if citation.quote_check in (quotes.VERIFIED, quotes.APPROXIMATE):
        words = words.replace("quote found on", "quote located on", 1)
    return words


def confidence_line(confidence: str, reason: str, support_reason: str = "") -> str:
    """How far to trust an answer, as Markdown: "check this" in amber with the reason; "" for
    ``high`` (it looks settled: nothing added) and for "" (not assessed: nothing special)."""
    if confidence != "check":
        return ""
    why = reason or support_reason or "the engine is not sure of this answer"
    return f":orange-background[:material/flag: **check this**] :orange[{md(why)}]"


def quote_caption(citation: Citation, document: Document | None, *, explain: bool = True) -> str:
    """Where a citation's quote stands, said plainly (and, with ``explain``, what that does not say)."""
    words = check_words(citation, document)
    if not words:
        return ""
    icon = _CHECK_ICONS.get(citation.quote_check, "")
    said = words[0].upper() + words[1:]
    if citation.quote_check == quotes.NOT_FOUND:
        said += ": check the page before relying on it"
    if explain and citation.quote_check in (quotes.VERIFIED, quotes.APPROXIMATE):
        said += " (where the sentence stands, not whether the answer is right)"
    if citation.quote_check in quotes.DOUBTFUL:  # amber: look at the page before relying on it
        return f"{icon} :orange[{md(said)}.]"
    return f"{icon} {md(said)}."


def citation_checks(outcome: Outcome, document: Document | None) -> str:
    """Where each quote stands, in plain words: ``quote located on p. 6; quote not found on p. 9``."""
    if not outcome.stated:
        return "—"
    checks = (check_words(c, document) for c in outcome.citations)
    return "; ".join(checks) or "no passage cited"


def cited_pages(outcome: Outcome, document: Document | None) -> str:
    """The cited pages, in citation order: ``p. 6 · p. 7``."""
    return " · ".join(page_ref(document, p) for p in outcome.cited_pages) or "—"


def correctness(outcome: Outcome) -> str | None:
    """Right or wrong against a known answer (sample questions, the Lab); None when unknown."""
    if outcome.correct is None:
        return None
    known = " / ".join(outcome.gold_answers)
    where = f" on p. {', '.join(map(str, outcome.gold_pages))}" if outcome.gold_pages else ""
    if outcome.correct:
        return f":green[:material/check_circle: **Right**]: matches the known answer ({md(known)}){where}."
    return f":red[:material/cancel: **Wrong**]: the known answer is {md(known)}{where}."


def retrieved_summary(outcome: Outcome) -> str:
    """The retrieved pages, short: best first, or a count by chunk when there are many."""
    pages = outcome.retrieved_pages
    if not pages:
        return "none"
    if outcome.retrieved_groups and len(pages) > 8:
        return f"{plural(len(pages), 'page')} from {plural(len(outcome.retrieved_groups), 'chunk')}"
    return f"{plural(len(pages), 'page')}, best first: " + " → ".join(str(p) for p in pages)


def reader(trace: RunTrace) -> str:
    """Who answered, in a sentence: ``the model``, or (no LLM) ``the offline engine``."""
    if trace.is_llm:
        return "the model"
    info = describe_provider(trace.provider)
    return info.reader if not info.is_llm else f"the {trace.provider} engine"


def outcome_block(trace: RunTrace, outcome: Outcome, document: Document | None) -> None:
    """One question's answer (or that the document does not state it), right/wrong, each
    citation with its quote and where the quote stands, and the retrieved pages."""
    if outcome.error:
        st.error(md(outcome.error))
    if outcome.answer is not None and not outcome.found and outcome.pages_to_read:
        # A reader that found nothing says where to look, not that the document is silent.
        to_read = ", ".join(page_ref(document, p) for p in outcome.pages_to_read)
        st.markdown(
            f":gray[:material/search_off:] **Not found** ({reader(trace)} found no answer). Pages to read, "
            f"best first: {to_read}."
        )
    elif (
        outcome.answer is not None
        and not outcome.found
        and (outcome.absent_by == "model" or not outcome.absent_by and trace.is_llm)
    ):
        st.markdown(
            ":gray[:material/chat_bubble:] **The model says the document does not state it** (its claim, "
            "not checked)."
        )
    elif outcome.answer is not None and not outcome.found:
        # Nothing found is a claim about the search, never about the document.
        st.markdown(f":gray[:material/search_off:] **Not found** ({reader(trace)} found no answer).")
    elif outcome.answer is not None:
        st.markdown(f"**Answer:** {md(outcome.answer)}")
        flag = confidence_line(outcome.confidence, outcome.confidence_reason, outcome.support_reason)
        if flag:
            st.markdown(flag)
    verdict = correctness(outcome)
    if verdict:
        st.markdown(verdict)
    if outcome.stated:
        several = len(outcome.citations) > 1
        st.markdown(
            f"**Cited page{'s' if len(outcome.cited_pages) > 1 else ''}:** {cited_pages(outcome, document)}"
        )
        for number, citation in enumerate(outcome.citations, start=1):
            quote = " ".join(citation.quote.split())
            if quote and (several or quote != " ".join((outcome.answer or "").split())):
                where = f"{number}. {page_ref(document, citation.page)}: " if several else ""
                st.markdown(f"> {md(where)}{md(quote)}")
            caption = quote_caption(citation, document, explain=not several)
            if caption:
                st.caption(caption)
        if several:
            st.caption(md(quotes.CHECK_MEANING))
        if not outcome.citations:
            st.caption(
                f":gray[:material/remove:] {reader(trace)[0].upper() + reader(trace)[1:]} cited no passage."
            )
    # Methods that pick pages first run in more than one phase (stages): say what they picked.
    if outcome.retrieved_pages or trace.steps or len({c.stage for c in trace.calls}) > 1:
        st.markdown(f"**Retrieved:** {retrieved_summary(outcome)}")
    if outcome.retrieved_groups and len(outcome.retrieved_pages) > 8:
        with st.expander("Retrieved pages by chunk"):
            for i, group in enumerate(outcome.retrieved_groups, start=1):
                st.caption(f"Chunk {i}: " + (", ".join(str(p) for p in group) or "none"))


def result_card(trace: RunTrace, document: Document | None) -> None:
    """One method's run: outcome(s), tokens, cost, latency, warnings and the method's own details."""
    st.markdown(f"#### {md(trace.label)}")
    if trace.describe:
        st.caption(md(trace.describe))
    if trace.error:
        show_trace_error(trace)
    for outcome in trace.outcomes:
        if len(trace.outcomes) > 1:
            st.markdown(f"**Q:** {md(outcome.question)}")
        outcome_block(trace, outcome, document)
    if not trace.outcomes:
        # Failed after retrieving: the pages it picked (and paid for) are still worth seeing.
        picked = dict.fromkeys(p for c in trace.calls for p in c.retrieved)
        if picked:
            st.markdown("**Retrieved before the failure:** " + " → ".join(str(p) for p in picked))
    run_facts(trace)


def run_facts(trace: RunTrace) -> None:
    """What a run used and said besides its answers: tokens, cost, latency, notes, its details."""
    usage = trace.usage
    unknown = "" if trace.price_known else " (no price data for this model)"
    cached = f" ({usage.cached_tokens:,} cached)" if trace.is_llm else ""
    reused = (
        f"  \n{plural(trace.cached_calls, 'call')} of it had already been made (by another method here, or "
        f"before): ${trace.cost_usd - trace.would_cost_usd:.4f} not paid again."
        if trace.cached_calls
        else ""
    )
    st.markdown(
        f"**Tokens:** {usage.prompt_tokens:,} in{cached} · {usage.output_tokens:,} out  \n"
        + (
            f"**Cost:** ${trace.cost_usd:.4f}{unknown} (estimated ${trace.estimate_usd:.4f})  \n"
            if trace.is_llm
            # A free engine paid nothing: what the same tokens would cost on the model priced.
            else f"**Would cost:** ${trace.cost_usd:.4f}{unknown} on the priced model (nothing paid)  \n"
        )
        + f"**Latency:** {trace.latency_s:.2f} s · {plural(len(trace.calls), 'call')}{reused}"
    )
    for note in trace.notes:
        st.caption(f":material/info: {md(note)}")
    for warning in trace.warnings:
        st.caption(f":material/warning: {md(warning)}")
    partitions = trace.details.get("partitions")
    if partitions:
        with st.expander("What each group of passages found"):
            for part in partitions:
                flag = " · :orange[disagrees]" if part.get("disagrees") else ""
                pages = ", ".join(str(p) for p in part.get("pages", []))
                said = part.get("error") or (
                    part.get("answer") if part.get("relevant") else "nothing relevant"
                )
                st.markdown(f"**Group {part.get('partition')}** (pages {pages}){flag}: {md(said)}")
    passages = trace.details.get("passages")
    if passages and not partitions:
        with st.expander(f"The {len(passages)} passages it read"):
            for p in passages:
                st.caption(f"#{p['rank']} · p. {p['page']} · BM25 {p['score']}: {md(str(p['text'])[:300])}")


# ---- Several questions: a question × method table, and each answer under its question -----


def asked(traces: Sequence[RunTrace]) -> list[str]:
    """The questions a set of runs asked, in the order they were asked."""
    return list(dict.fromkeys(q for t in traces for q in t.questions))


def outcome_cell(trace: RunTrace, outcome: Outcome | None) -> str:
    """One answer as a table cell, what must stay visible first: right or wrong (where the answer
    is known), then the cited page, then the answer (a narrow column cuts the answer, not those)."""
    if outcome is None or outcome.error or (trace.error and outcome.answer is None):
        why = (outcome.error if outcome is not None else None) or trace.error or "no answer"
        return "failed: " + " ".join(why.split())
    mark = "" if outcome.correct is None else ("✓ right · " if outcome.correct else "✗ wrong · ")
    if not outcome.found:
        where = ""  # "not stated in the document" cites nothing
    elif not outcome.cited_pages:
        where = "no page · "
    else:
        unsure = [c for c in outcome.citations if c.quote_check not in ("verified", "no-quote")]
        check = f" ({plural(len(unsure), 'quote')} not found word for word)" if unsure else ""
        where = f"p. {', '.join(map(str, outcome.cited_pages))}{check} · "
    if not outcome.found and outcome.absent_by == "reader":
        to_read = (
            f" · read p. {', '.join(map(str, outcome.pages_to_read[:3]))}" if outcome.pages_to_read else ""
        )
        return f"{mark}Not found{to_read}"
    flag = "check this · " if outcome.confidence == "check" else ""
    return f"{mark}{flag}{where}{' '.join((outcome.answer_text or '—').split())}"


def answers_rows(traces: Sequence[RunTrace], questions: Sequence[str]) -> list[dict[str, str]]:
    """One row a question, one column a method (at its settings): the cells of ``outcome_cell``."""
    rows = []
    for question in questions:
        row = {"Question": question}
        for t in traces:
            if question not in t.questions:
                continue
            outcome = next((o for o in t.outcomes if o.question == question), None)
            row[method_title(t)] = outcome_cell(t, outcome)
        rows.append(row)
    return rows


def scores(traces: Sequence[RunTrace], questions: Sequence[str]) -> list[tuple[str, int, int]]:
    """(method, right, known) per method: its answers right against the known answers."""
    tally: dict[str, list[int]] = {}
    for t in traces:
        counts = tally.setdefault(method_title(t), [0, 0])
        for question in t.questions:
            if question not in questions:
                continue
            outcome = next((o for o in t.outcomes if o.question == question), None)
            if outcome is not None and outcome.correct is not None:
                counts[0] += int(outcome.correct)
                counts[1] += 1
    return [(name, right, known) for name, (right, known) in tally.items() if known]


# Column widths of the question × method table, in pixels: the question and three methods fit
# the 1024-px screen's main column (about 560 px beside the sidebar), six or more at 1440 px; a
# cell leads with right/wrong and the page, and opens in full when selected.
QUESTION_WIDTH = 140
METHOD_WIDTH = 130
# Whole questions: the rows are made tall enough for the longest question to wrap in full in its
# column (a taller row wraps its text; the answers wrap too). A line of a column holds about one
# character per 7 px after its 16 px of padding (17 in the 140-px column), 18 px a line; a long
# question widens its column instead of growing rows past MAX_QUESTION_LINES.
PX_PER_CHAR = 7
CELL_PAD_PX = 16
LINE_PX = 18
ROW_PAD_PX = 14
MAX_QUESTION_LINES = 6


def line_chars(width: int) -> int:
    """How many characters a line of a column ``width`` pixels wide holds (a safe estimate)."""
    return (width - CELL_PAD_PX) // PX_PER_CHAR


def question_layout(questions: Sequence[str]) -> tuple[int, int]:
    """(column width, row height) in pixels that show every question whole."""
    import textwrap

    def lines(width: int) -> int:
        return max((len(textwrap.wrap(q, line_chars(width))) for q in questions), default=1)

    width = QUESTION_WIDTH
    while lines(width) > MAX_QUESTION_LINES and width < 3 * QUESTION_WIDTH:
        width += QUESTION_WIDTH // 2
    return width, max(35, ROW_PAD_PX + LINE_PX * lines(width))


ALL_METHODS = "All methods, side by side"
METHODS_SHOWN_HELP = (
    "One method shows its answers in a wide column; all methods show the start of each answer."
)


def answers_table(traces: Sequence[RunTrace], questions: Sequence[str], *, key: str) -> None:
    """The question × method table, with a score row per method where answers are known."""
    import pandas as pd  # only here: the first screen draws without pandas and pyarrow

    score_rows = scores(traces, questions)
    if score_rows:
        st.markdown("**Right against the known answers**")
        st.markdown(
            table(
                ["Method and settings", "Right"],
                [[name, f"{right}/{known}"] for name, right, known in score_rows],
            )
        )
    rows = answers_rows(traces, questions)
    st.markdown(
        "**Answers by question and method**: "
        + ("✓ right or ✗ wrong against the known answer, then " if score_rows else "")
        + "the cited page, then the answer (select a cell to read all of it)"
    )
    columns = list(dict.fromkeys(c for row in rows for c in row))
    methods = columns[1:]
    shown = ALL_METHODS
    if len(methods) > 1:  # narrow columns show many methods at once; one method reads in full
        shown = st.selectbox(
            "Methods shown", [ALL_METHODS, *methods], key=f"w.{key}_methods", help=METHODS_SHOWN_HELP
        )
    focused = shown != ALL_METHODS and shown in methods
    columns = ["Question", shown] if focused else columns
    question_width, row_height = question_layout([row["Question"] for row in rows])
    st.dataframe(
        pd.DataFrame(rows, columns=columns).fillna(""),
        hide_index=True,
        width="stretch",
        height=min(38 + row_height * len(rows), 600),
        row_height=row_height,
        key=key,
        column_config={
            "Question": st.column_config.TextColumn(width=question_width, pinned=True),
            **{
                name: st.column_config.TextColumn(width="large" if focused else METHOD_WIDTH)
                for name in columns[1:]
            },
        },
    )


def answers_by_question(
    traces: Sequence[RunTrace], questions: Sequence[str], document: Document | None
) -> None:
    """Each question with every method's answer to it, side by side (three to a row)."""
    for number, question in enumerate(questions, start=1):
        answered = [
            (t, next((o for o in t.outcomes if o.question == question), None))
            for t in traces
            if question in t.questions
        ]
        with st.container(border=True):
            st.markdown(f"**Q{number}.** {md(question)}")
            per_row = min(len(answered), 3) or 1
            for start in range(0, len(answered), per_row):
                columns = st.columns(per_row)
                for column, (trace, outcome) in zip(columns, answered[start : start + per_row], strict=False):
                    with column:
                        st.markdown(f"##### {md(title(trace))}")
                        if outcome is None:
                            show_trace_error(trace)
                        else:
                            outcome_block(trace, outcome, document)


def cost_bars(traces: Sequence[RunTrace]) -> tuple[list[str], list[stages.StageBars]]:
    """The cost chart's data: one bar per method at its settings (several questions asked one
    at a time add up), stacked by stage in the stage registry's order."""
    by_name: dict[str, dict[str, float]] = {}
    for t in traces:
        total = by_name.setdefault(method_title(t), {})
        for stage, usd in t.cost_by_stage().items():
            total[stage] = total.get(stage, 0.0) + usd
    return list(by_name), stages.stacked(list(by_name.values()))


def cost_chart(traces: Sequence[RunTrace]) -> go.Figure:
    """Cost by method and stage (ranking, retrieval, map, reduce, answer, reminder overhead)."""
    names, bars = cost_bars(traces)
    fig = go.Figure()
    for bar in bars:
        fig.add_bar(
            name=bar.label,
            x=names,
            y=list(bar.values),
            marker_color=bar.colour,
            hovertemplate="%{x}: $%{y:.5f}<extra>" + bar.label + "</extra>",
        )
    fig.update_layout(
        barmode="stack",
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis_title="USD" if any(t.is_llm for t in traces) else "USD it would cost",
        legend={"orientation": "h", "y": 1.18, "x": 0},
    )
    return fig


# Input read from the provider's prompt cache (RunTrace.cost_by_stage's "cached"): a stage of
# the registry, drawn on top of the others.
CACHED_COLOUR = stages.CACHED.colour
CACHED_NAME = stages.CACHED.label


def calls_rows(trace: RunTrace) -> list[dict[str, Any]]:
    """One row per call of a run, for tables (text cells only where a column is text)."""
    rows = []
    for call in trace.calls:
        rows.append(
            {
                "call": call.id,
                "stage": stages.stage_label(call.stage),
                "chunk": str(call.chunk or ""),
                "pages": len(call.pages),
                "reminders": len(call.reminders_after) + call.leading_reminders,
                "input tokens": call.usage.prompt_tokens,
                "cached": call.usage.cached_tokens,
                "output tokens": call.usage.output_tokens,
                "cost (USD)": round(call.cost_usd, 6),
                "latency (s)": call.latency_s,
                "from store": "yes" if call.cached else "",
                "error": call.error or "",
            }
        )
    return rows


def rank_colour(rank: int, total: int) -> tuple[float, float, float]:
    """Dark blue for the first retrieved page, fading to light blue for the last."""
    dark, light = (0.12, 0.25, 0.65), (0.55, 0.72, 0.98)
    t = 0.0 if total <= 1 else (rank - 1) / (total - 1)
    r, g, b = (round(a + (b - a) * t, 3) for a, b in zip(dark, light, strict=True))
    return (r, g, b)


def hex_colour(rgb: Sequence[float]) -> str:
    """``(r, g, b)`` in 0–1 as ``#rrggbb``."""
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)
