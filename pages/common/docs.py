"""The active document (a sample or the user's upload), its pages rendered, its samples' questions."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from pages.common import state as S
from pages.common import user
from pages.common.state import Upload
from rr_core.documents import Document, RenderedPage, load_document, ocr_available, page_words, render_page
from rr_core.samples import get_sample, list_samples, questions_middle_first
from rr_core.sources import sample_document
from rr_core.tokens import TokenCounter
from rr_core.untrusted import plain_name
from rr_core.viewer import Placement, place_quote, sentence_at, word_centres
from rr_core.workbench import stored_document

UPLOAD_TYPES = ["pdf", "docx", "txt", "text", "md", "markdown", "html", "htm"]
PAGE_WIDTH = 640  # CSS pixels of the page viewer: fits a half-width column at 1280 px


@st.cache_resource(max_entries=8, show_spinner="Preparing the sample document…")
def _sample(name: str, tokenizer: str, _counter: TokenCounter) -> Document:
    return sample_document(name, _counter)


@st.cache_resource(max_entries=8, show_spinner="Reading the document…")
def _upload(
    sha256: str, name: str, password: str, tokenizer: str, ocr: bool, _data: bytes, _counter: TokenCounter
) -> Document:
    # Keyed by content hash: the bytes themselves are never hashed again.
    return load_document(_data, filename=name, password=password or None, counter=_counter, ocr=ocr)


def remember_upload(file: Any) -> Upload:
    """Keep an uploaded file (once per upload: hashing 200 MB is not free)."""
    session = S.session()
    previous = session.upload
    if previous is None or previous.file_id != file.file_id:
        data = file.getvalue()
        previous = session.upload = Upload(
            file.file_id, plain_name(file.name), hashlib.sha256(data).hexdigest(), data
        )
        session.upload_password = ""
        session.upload_ocr = False
    return previous


def active_document() -> Document:
    """The document the screens work on (raises ``RRError`` when it cannot be read)."""
    session = S.session()
    tokens = S.counter()
    upload = session.upload
    if st.session_state["source"] == "upload" and upload is not None:
        return _upload(
            upload.sha256,
            upload.name,
            session.upload_password,
            tokens.label,
            session.upload_ocr,
            upload.data,
            tokens,
        )
    return _sample(session.sample, tokens.label, tokens)


@st.cache_resource(max_entries=8, show_spinner="Opening the document from the store…")
def _stored(sha256: str, tokenizer: str, scope: str, _counter: TokenCounter) -> Document:
    # ``scope``: whose store (the cache is shared by every session of the process).
    return stored_document(sha256, _counter, store=user.history())


def stored(sha256: str) -> Document:
    """A document of the store by content hash, read once per user (raises ``RRError`` when the
    store no longer holds it)."""
    tokens = S.counter()
    return _stored(sha256, tokens.label, user.cache_scope(), tokens)


def focused_document() -> Document | None:
    """The stored document the Document screen was opened on from another screen (a Review
    cell), by content hash; None when it shows the active document (raises ``RRError`` when
    the store no longer holds it)."""
    focus = S.session().doc_focus
    if focus is None:
        return None
    tokens = S.counter()
    return _stored(focus.sha256, tokens.label, user.cache_scope(), tokens)


def ocr_missing() -> str | None:
    """Why OCR cannot run here (Tesseract not installed), or None when it can."""
    return ocr_available()


def sample_names() -> list[str]:
    """The bundled samples."""
    return list(list_samples())


def sample_title(name: str) -> str:
    """A sample's title for menus."""
    return get_sample(name).title


def sample_description(name: str) -> str:
    """A sample's one-paragraph description."""
    return get_sample(name).description


@dataclass(frozen=True, slots=True)
class KnownQuestion:
    """A sample's question with its accepted answers and the page that holds them."""

    text: str
    answers: tuple[str, ...]
    page: int


def sample_questions(name: str) -> list[KnownQuestion]:
    """The questions planted in a sample, those in the middle of the document first."""
    return [KnownQuestion(q.question, tuple(q.answers), q.page) for q in questions_middle_first(name)]


def prefill_question() -> None:
    """A session's first visit to Ask or Document opens ready: on a sample, the sample's
    question nearest the middle is filled in, with its gold page for the Oracle."""
    state = st.session_state
    session = S.session()
    if session.question_prefilled or state["source"] != "sample":
        return
    session.question_prefilled = True
    known = sample_questions(session.sample)
    if known and not str(state["question"]).strip():
        state["question"] = known[0].text
        state["gold_pages"] = str(known[0].page)


def known_answers(document: Document) -> dict[str, KnownQuestion]:
    """The right answers known for questions on this document (a sample's), by question text."""
    state = st.session_state
    if state["source"] != "sample":
        return {}
    return {" ".join(q.text.split()): q for q in sample_questions(S.session().sample)}


@dataclass(frozen=True, slots=True)
class ShownPage:
    """A rendered page, and where the quote asked for was placed on it (None: not placed)."""

    rendered: RenderedPage
    placed: Placement | None


@st.cache_data(max_entries=128, show_spinner=False)
def _png(
    sha256: str,
    number: int,
    quote: str,
    frame: tuple[float, float, float] | None,
    tokenizer: str,
    _document: Document,
) -> ShownPage:
    placed = place_quote(quote, page_words(_document, number)) if quote.strip() else None
    # Rendered at the width it is shown at: a larger image is resized on every rerun.
    rendered = render_page(
        _document, number, width=PAGE_WIDTH, marks=placed.boxes if placed else (), frame=frame
    )
    return ShownPage(rendered, placed)


def page_png(
    document: Document,
    number: int,
    *,
    quote: str = "",
    frame: tuple[float, float, float] | None = None,
) -> ShownPage:
    """One page as PNG with exactly the quote's words highlighted (when they stand on it),
    rendered once per (document, page, quote, frame)."""
    return _png(document.sha256, number, quote, frame, document.tokenizer, document)


def printed_label(document: Document | None, number: int) -> str:
    """The page's printed label where the PDF has one that differs from its index, else ""."""
    label = ""
    if document is not None and 1 <= number <= len(document.pages):
        label = getattr(document.pages[number - 1], "label", "") or ""
    return label if label != str(number) else ""


def page_ref(document: Document | None, number: int | None) -> str:
    """``p. 12``; where the PDF prints another label, that label with the index beside it:
    ``p. 8 (PDF page 10)``."""
    if number is None:
        return "—"
    label = printed_label(document, number)
    return f"p. {label} (PDF page {number})" if label else f"p. {number}"


def page_position(document: Document, number: int) -> str:
    """``p. 12 of 40``, or ``p. 8 (PDF page 10 of 40)`` where the PDF prints another label."""
    label, pages = printed_label(document, number), len(document.pages)
    return f"p. {label} (PDF page {number} of {pages:,})" if label else f"p. {number} of {pages:,}"


@st.cache_data(max_entries=32, show_spinner=False)
def _words(sha256: str, number: int, tokenizer: str, _document: Document) -> tuple[Any, ...]:
    return page_words(_document, number)


def clickable_page(
    document: Document, number: int, shown: ShownPage, *, key: str, on_pick: Callable[[int, str], None]
) -> None:
    """The rendered page, on which a click on a word picks its sentence: ``on_pick(page,
    sentence)`` runs (a widget callback) before the rerun. Each word carries an invisible
    point at its centre; the picture under them is the same PNG ``st.image`` shows."""
    words = _words(document.sha256, number, document.tokenizer, document)
    rendered = shown.rendered
    centres = word_centres(words, rendered.zoom)
    figure = go.Figure(
        go.Scatter(
            x=[x for x, _ in centres],
            y=[y for _, y in centres],
            mode="markers",
            marker={"size": 14, "opacity": 0},
            customdata=list(range(len(words))),
            hovertemplate="Click to pick this sentence<extra></extra>",
        )
    )
    source = "data:image/png;base64," + base64.b64encode(rendered.png).decode("ascii")
    figure.add_layout_image(
        source=source, x=0, y=0, xref="x", yref="y", sizex=rendered.width, sizey=rendered.height,
        xanchor="left", yanchor="top", sizing="stretch", layer="below",
    )  # fmt: skip
    figure.update_xaxes(range=[0, rendered.width], visible=False, fixedrange=True)
    # One scale on both axes keeps the points on their words when the column is narrower than
    # the picture; the page then keeps to the top (the space it leaves falls below it).
    figure.update_yaxes(
        range=[rendered.height, 0], visible=False, fixedrange=True, scaleanchor="x",
        constrain="domain", constraintoward="top",
    )  # fmt: skip
    figure.update_layout(
        width=rendered.width, height=rendered.height, margin={"l": 0, "r": 0, "t": 0, "b": 0},
        showlegend=False, hovermode="closest", dragmode=False,
        plot_bgcolor="rgba(0,0,0,0)", paper_bgcolor="rgba(0,0,0,0)",
    )  # fmt: skip

    def picked() -> None:
        event = st.session_state.get(key)
        points = (event or {}).get("selection", {}).get("points", []) if isinstance(event, dict) else []
        if not points:
            points = getattr(getattr(event, "selection", None), "points", []) or []
        if points:
            index = points[0].get("customdata")
            index = index[0] if isinstance(index, list) else index
            if isinstance(index, int):
                on_pick(number, sentence_at(words, index))

    st.plotly_chart(
        figure, key=key, on_select=picked, selection_mode="points", width="content",
        config={"displayModeBar": False, "scrollZoom": False},
    )  # fmt: skip
