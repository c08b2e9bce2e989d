"""Shared UI for every screen: settings in session state, the sidebar, documents, drawing.

Not a screen: ``app.py`` lists the screens for ``st.navigation`` explicitly, so this module is
never shown as a page. It may import streamlit and rr_core; rr_core never imports it.

State: each setting lives under a plain key (``"reminder_every"``) that no widget owns, so
it survives screens that do not draw its widget (Streamlit drops a widget's key when the
widget is not rendered). The widget uses ``"w." + key``, is seeded from the plain key before
it is drawn, and copies its value back in ``on_change``. Tests and callers set the plain key.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from rr_core.costs import known_models, price_data_version
from rr_core.documents import Document, RenderedPage, load_document, render_page
from rr_core.errors import MissingKeyError, RRError
from rr_core.llm import DEFAULT_MODELS, KEY_VARIABLES, PROVIDERS, LLMClient, make_client
from rr_core.methods import Method, RunSettings
from rr_core.runs import RunTrace
from rr_core.samples import get_sample, list_samples, questions_middle_first
from rr_core.sources import sample_document
from rr_core.tokens import TokenCounter, counter_for_model
from rr_core.viewer import Support, locate_support

W = "w."  # prefix of widget keys; the plain key holds the value that persists

DEFAULT_SAMPLE = "contract"
DEFAULT_PRICE_MODEL = "gpt-4.1-mini"
DEFAULT_METHODS = [Method.BASELINE.value, Method.RR.value]
BASE_URL_VARIABLES = {
    "openai": "OPENAI_BASE_URL",
    "openai-compatible": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
}
PROVIDER_LABELS = {
    "offline": "Offline engine (no key)",
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "openai-compatible": "OpenAI-compatible server",
}
OFFLINE_NOTE = (
    "**The offline engine is not an LLM**: it ranks pages with BM25 and extracts the sentence that "
    "best matches the question. Token counts are real; costs are what the same tokens would cost "
    "on the model you price it as."
)
UPLOAD_TYPES = ["pdf", "docx", "txt", "text", "md", "markdown", "html", "htm"]

# What to do next, by error kind (the error's own message says what happened).
ERROR_HINTS = {
    "MissingKeyError": "Enter an API key in the sidebar, or set the provider's key variable and restart.",
    "AuthError": "Check the API key in the sidebar (or the environment variable); it was rejected.",
    "RateLimitError": "Wait a minute and run again, or run fewer methods at once.",
    "ContextTooLongError": "Try a chunked method (Chunked R&R), a smaller chunk size c, or a model with a longer context.",
    "ProviderTimeout": "The provider is slow: run again, or try a smaller document or a chunked method.",
    "ProviderError": "Run again in a moment; if it keeps failing, check the model name and the base URL in the sidebar.",
    "ResponseParseError": "The model did not reply in the requested JSON: run again or choose another model.",
    "ConfigError": "Adjust the settings in the sidebar.",
    "InternalError": "This is a bug in R&R Studio; the other methods' results are still valid.",
}


# ---- Settings in session state ---------------------------------------------------------


def _secret(name: str) -> str:
    """A value from .streamlit/secrets.toml, or "" (st.secrets raises without a file)."""
    try:
        value = st.secrets.get(name)
    except Exception:  # noqa: BLE001 - no secrets file, or an unreadable one: same as unset
        return ""
    return str(value) if value else ""


def _configured(variable: str) -> str:
    return os.environ.get(variable) or _secret(variable)


def starting_provider() -> str:
    """A paid provider only when its key is configured; otherwise the offline engine."""
    for provider in ("openai", "anthropic"):
        if _configured(KEY_VARIABLES[provider]):
            return provider
    return "offline"


def init_state() -> None:
    """Give every setting a value once per session (keys already set, e.g. by tests, stay)."""
    state = st.session_state
    state.setdefault("provider", starting_provider())
    state.setdefault("model", DEFAULT_MODELS.get(state["provider"], "offline"))
    state.setdefault("api_key", "")
    state.setdefault("base_url", "")
    state.setdefault("price_model", DEFAULT_PRICE_MODEL)
    state.setdefault("reminder_every", 10_000)
    state.setdefault("top_k", 5)
    state.setdefault("chunk_size", 20_000)
    state.setdefault("source", "sample")
    state.setdefault("sample", DEFAULT_SAMPLE if DEFAULT_SAMPLE in list_samples() else list_samples()[0])
    state.setdefault("question", "")
    state.setdefault("methods", list(DEFAULT_METHODS))
    state.setdefault("upload_password", "")
    state.setdefault("view_page", 1)


def _keep(key: str) -> None:
    st.session_state[key] = st.session_state[W + key]


def bound(widget: Callable[..., Any], label: str, key: str, **kwargs: Any) -> Any:
    """Draw ``widget`` for the persistent setting ``key`` (see the module docstring)."""
    # Written on every run: a widget on another screen is a new widget, and Streamlit's
    # value for its key is gone or stale until this puts the setting back.
    st.session_state[W + key] = st.session_state[key]
    after = kwargs.pop("on_change", None)

    def changed() -> None:
        _keep(key)
        if after is not None:
            after()

    return widget(label, key=W + key, on_change=changed, **kwargs)


def _provider_changed() -> None:
    state = st.session_state
    state["model"] = DEFAULT_MODELS.get(state["provider"], "")
    # A key typed for one provider is never sent to another.
    state["api_key"] = ""
    state["base_url"] = ""


def provider() -> str:
    """The selected provider."""
    return str(st.session_state["provider"])


def model() -> str:
    """The model the provider runs (``offline`` for the offline engine)."""
    return "offline" if provider() == "offline" else str(st.session_state["model"]).strip()


def api_key() -> str | None:
    """The key for the provider: the session's field, else the environment, else secrets."""
    typed = str(st.session_state.get("api_key") or "").strip()
    if typed:
        return typed
    variable = KEY_VARIABLES.get(provider())
    return (_configured(variable) or None) if variable else None


def base_url() -> str | None:
    """The server URL: the session's field, else OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else secrets."""
    typed = str(st.session_state.get("base_url") or "").strip()
    if typed:
        return typed
    variable = BASE_URL_VARIABLES.get(provider())
    return (_configured(variable) or None) if variable else None


def token_model() -> str:
    """The model whose tokenizer counts the document (the priced model when offline)."""
    return str(st.session_state["price_model"]) if provider() == "offline" else model()


def counter() -> TokenCounter:
    """The token counter for the current model."""
    return counter_for_model(token_model())


def settings_for(method: Method | str) -> RunSettings:
    """The run settings of one method from the sidebar."""
    state = st.session_state
    return RunSettings(
        method=Method(method),
        reminder_every=int(state["reminder_every"]),
        top_k=int(state["top_k"]),
        chunk_size=int(state["chunk_size"]),
        model=model(),
        provider=provider(),
        price_model=str(state["price_model"]) if provider() == "offline" else "",
    )


def new_client() -> LLMClient:
    """A fresh client for this run (never cached: clients hold connections).

    A server URL typed in the sidebar only ever gets a key typed in the sidebar: the key
    configured for the deployment (environment, secrets) goes to its own server only.
    """
    typed_url = str(st.session_state.get("base_url") or "").strip()
    typed_key = str(st.session_state.get("api_key") or "").strip()
    if typed_url and not typed_key and provider() in KEY_VARIABLES:
        raise MissingKeyError(
            f"The server URL {typed_url} was typed in the sidebar, so it needs a key typed in the "
            "sidebar too: the configured key is never sent to another server.",
            provider=provider(),
        )
    return make_client(provider(), model=model(), api_key=api_key(), base_url=base_url())


def selected_methods() -> list[Method]:
    """The methods chosen on the Ask screen, in the paper's order."""
    chosen = set(st.session_state.get("methods") or [])
    return [m for m in Method if m.value in chosen]


# ---- Sidebar ---------------------------------------------------------------------------


def _model_options(selected_provider: str, current: str) -> list[str]:
    if selected_provider == "anthropic":
        options = [m for m in known_models() if m.startswith("claude")]
    elif selected_provider == "openai":
        options = [m for m in known_models() if not m.startswith("claude")]
    else:
        options = [DEFAULT_MODELS.get(selected_provider, "")]
    return list(dict.fromkeys([current, *options] if current else options))


def page_setup() -> None:
    """Start a screen: page config and the shared sidebar (see app.py for why here)."""
    st.set_page_config(page_title="R&R Studio", page_icon=":material/description:", layout="wide")
    # Less empty space above the title, so the Run button is on screen at laptop height.
    st.html(
        "<style>[data-testid='stMainBlockContainer'], .block-container "
        "{padding-top: 2.5rem;}</style>"
    )
    sidebar()


def sidebar() -> None:
    """The engine and method settings shared by every screen."""
    init_state()
    with st.sidebar:
        st.subheader("Engine")
        bound(
            st.selectbox,
            "Provider",
            "provider",
            options=list(PROVIDERS),
            format_func=lambda p: PROVIDER_LABELS.get(p, p),
            on_change=_provider_changed,
        )
        current = provider()
        if current == "offline":
            st.info(OFFLINE_NOTE)
            models = known_models()
            if st.session_state["price_model"] not in models:
                models = [st.session_state["price_model"], *models]
            bound(
                st.selectbox,
                "Price as",
                "price_model",
                options=models,
                help="The offline engine is free. Costs show what the same tokens would cost on this "
                "model, and its tokenizer counts the document.",
            )
        else:
            bound(
                st.selectbox,
                "Model",
                "model",
                options=_model_options(current, model()),
                accept_new_options=True,
                help="Pick a model or type any model id your provider serves.",
            )
            variable = KEY_VARIABLES.get(current)
            configured = bool(variable and _configured(variable))
            bound(
                st.text_input,
                "API key",
                "api_key",
                type="password",
                placeholder=f"using {variable}" if configured else ("optional" if not variable else "sk-…"),
                help="Kept in this browser session only: never written to disk, logs, history or exports.",
            )
            url_variable = BASE_URL_VARIABLES[current]
            bound(
                st.text_input,
                "Base URL" if current == "openai-compatible" else "Base URL (optional)",
                "base_url",
                placeholder=_configured(url_variable)
                or (
                    "http://localhost:11434/v1"
                    if current == "openai-compatible"
                    else "the provider's default"
                ),
                help=f"Leave empty to use {url_variable} or the provider's default address.",
            )
            if variable and not api_key():
                st.warning(f"No API key: enter one above or set {variable}. Until then, runs will fail.")
            if current == "openai-compatible" and not base_url():
                st.warning("Enter the server's base URL (for Ollama: http://localhost:11434/v1).")
            if "claude" in model():
                st.caption(
                    "Claude has no public tokenizer: token counts before a run are o200k_base estimates."
                )
        st.subheader("Method parameters")
        bound(
            st.slider,
            "Reprompt interval k (tokens)",
            "reminder_every",
            min_value=500,
            max_value=100_000,
            step=500,
            help="R&R and reprompting repeat the instructions after every k tokens of document.",
        )
        bound(
            st.slider,
            "Pages to retrieve N",
            "top_k",
            min_value=1,
            max_value=20,
            help="How many pages the retrieval phase keeps (per chunk for chunked methods).",
        )
        bound(
            st.slider,
            "Chunk size c (tokens)",
            "chunk_size",
            min_value=1_000,
            max_value=200_000,
            step=1_000,
            help="Chunked methods split the document into chunks of about c tokens, read in parallel.",
        )
        tokens = counter()
        st.caption(f"Tokenizer: {tokens.label}. Prices: {price_data_version()}.")
        if tokens.note:
            st.caption(tokens.note)


# ---- Documents -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Upload:
    """An uploaded file, kept for the session so other screens can reopen it."""

    file_id: str
    name: str
    sha256: str
    data: bytes


@st.cache_resource(max_entries=8, show_spinner="Preparing the sample document…")
def _sample(name: str, tokenizer: str, _counter: TokenCounter) -> Document:
    return sample_document(name, _counter)


@st.cache_resource(max_entries=8, show_spinner="Reading the document…")
def _upload(
    sha256: str, name: str, password: str, tokenizer: str, _data: bytes, _counter: TokenCounter
) -> Document:
    # Keyed by content hash: the bytes themselves are never hashed again.
    return load_document(_data, filename=name, password=password or None, counter=_counter)


def remember_upload(file: Any) -> Upload:
    """Keep an uploaded file (once per upload: hashing 200 MB is not free)."""
    state = st.session_state
    previous: Upload | None = state.get("upload")
    if previous is None or previous.file_id != file.file_id:
        data = file.getvalue()
        state["upload"] = Upload(file.file_id, file.name, hashlib.sha256(data).hexdigest(), data)
        state["upload_password"] = ""
    upload: Upload = state["upload"]
    return upload


def active_document() -> Document:
    """The document the screens work on (raises ``RRError`` when it cannot be read)."""
    state = st.session_state
    tokens = counter()
    upload: Upload | None = state.get("upload")
    if state["source"] == "upload" and upload is not None:
        return _upload(
            upload.sha256, upload.name, state["upload_password"], tokens.label, upload.data, tokens
        )
    return _sample(state["sample"], tokens.label, tokens)


def sample_names() -> list[str]:
    """The generated samples."""
    return list(list_samples())


def sample_title(name: str) -> str:
    """A sample's title for menus."""
    return get_sample(name).title


def sample_description(name: str) -> str:
    """A sample's one-paragraph description."""
    return get_sample(name).description


def sample_questions(name: str) -> list[str]:
    """The questions planted in a sample, those in the middle of the document first."""
    return [q.question for q in questions_middle_first(name)]


def last_results(document: Document | None = None) -> dict[str, Any] | None:
    """The last run on the Ask screen (only if it was on this document, when one is given)."""
    results: dict[str, Any] | None = st.session_state.get("results")
    if results is None:
        return None
    if document is not None and results["document_sha256"] != document.sha256:
        return None
    return results


PAGE_WIDTH = 700  # CSS pixels of the page viewer


@st.cache_data(max_entries=128, show_spinner=False)
def _png(
    sha256: str,
    number: int,
    highlight: str | None,
    frame: tuple[float, float, float] | None,
    tokenizer: str,
    _document: Document,
) -> RenderedPage:
    # Rendered at the width it is shown at: a larger image is resized on every rerun.
    return render_page(_document, number, width=PAGE_WIDTH, highlight=highlight, frame=frame)


def page_png(
    document: Document,
    number: int,
    *,
    highlight: str | None = None,
    frame: tuple[float, float, float] | None = None,
) -> RenderedPage:
    """One page as PNG, rendered once per (document, page, highlight, frame)."""
    return _png(document.sha256, number, highlight, frame, document.tokenizer, document)


# ---- Drawing ---------------------------------------------------------------------------

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~$])")


def md(text: str) -> str:
    """Text safe to put in markdown (model output may contain markup)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def plural(n: int, noun: str) -> str:
    """``1 page``, ``2 pages``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def label(method: str) -> str:
    """A method's human name."""
    try:
        return Method(method).label
    except ValueError:
        return method


def _retrieves(method: str) -> bool:
    try:
        return Method(method).retrieves
    except ValueError:
        return False


def rank_colour(rank: int, total: int) -> tuple[float, float, float]:
    """Dark blue for the first retrieved page, fading to light blue for the last."""
    dark, light = (0.12, 0.25, 0.65), (0.55, 0.72, 0.98)
    t = 0.0 if total <= 1 else (rank - 1) / (total - 1)
    return tuple(round(a + (b - a) * t, 3) for a, b in zip(dark, light, strict=True))  # type: ignore[return-value]


def hex_colour(rgb: Sequence[float]) -> str:
    """``(r, g, b)`` in 0–1 as ``#rrggbb``."""
    return "#" + "".join(f"{round(c * 255):02x}" for c in rgb)


CITED_COLOUR = "#D94F2B"
STAGE_COLOURS = {"retrieval": "#2F5FD0", "answer": "#4CB391", "reminder overhead": "#F2A541"}


def show_error(trace: RunTrace) -> None:
    """A failed method: what happened and what to do next."""
    hint = ERROR_HINTS.get(trace.error_kind or "", "")
    st.error(f"{trace.error}" + (f"\n\n**What to do:** {hint}" if hint else ""))


def show_rr_error(exc: RRError) -> None:
    """An ``RRError`` as an error box with a hint."""
    hint = ERROR_HINTS.get(type(exc).__name__, "")
    st.error(str(exc) + (f"\n\n**What to do:** {hint}" if hint else ""))


def support_for(trace: RunTrace, document: Document | None) -> Support | None:
    """The answer's supporting text on the cited page, when the document is at hand."""
    if document is None or trace.page is None or trace.document_sha256 != document.sha256:
        return None
    if not 1 <= trace.page <= len(document.pages):
        return None
    return locate_support(trace.answer, document.page(trace.page).text)


def result_column(trace: RunTrace, document: Document | None) -> None:
    """One method's outcome: answer, pages, supporting text, tokens, cost and latency."""
    st.markdown(f"#### {label(trace.method)}")
    if trace.error:
        show_error(trace)
    if trace.answer is not None:
        st.markdown(f"**Answer:** {md(trace.answer)}")
    st.markdown(f"**Cited page:** {trace.page if trace.page is not None else '—'}")
    if trace.retrieved_pages:
        st.markdown("**Retrieved pages** (rank order): " + " → ".join(str(p) for p in trace.retrieved_pages))
    elif _retrieves(trace.method) and not trace.error:
        st.markdown("**Retrieved pages:** none")
    support = support_for(trace, document)
    if support is not None and " ".join(support.passage.split()) == " ".join((trace.answer or "").split()):
        # The answer is itself a quote from the page (always so with the offline engine).
        st.caption(f"The answer is quoted word for word from page {trace.page}.")
    elif support is not None:
        st.markdown(
            f"**Supporting text on page {trace.page}** (match {support.score:.0f}%):\n\n> {md(support.passage)}"
        )
    elif trace.page is not None and document is not None and trace.document_sha256 == document.sha256:
        st.caption(f"The answer's words were not found on page {trace.page}.")
    usage = trace.usage
    unknown = "" if trace.price_known else " (no price data for this model)"
    # Prompt caching is the provider's: the offline engine has none to report.
    cached = f" ({usage.cached_tokens:,} cached)" if trace.is_llm else ""
    st.markdown(
        f"**Tokens:** {usage.prompt_tokens:,} in{cached} · {usage.output_tokens:,} out  \n"
        f"**Cost:** ${trace.cost_usd:.4f}{unknown} (estimated ${trace.estimate_usd:.4f})  \n"
        f"**Latency:** {trace.latency_s:.2f} s · {plural(len(trace.calls), 'call')}"
    )
    for warning in trace.warnings:
        st.caption(f":material/warning: {md(warning)}")


def cost_chart(traces: Sequence[RunTrace]) -> go.Figure:
    """Cost by method, stacked by stage: retrieval, answer and reminder overhead."""
    names = [label(t.method) for t in traces]
    stages = [t.cost_by_stage() for t in traces]
    fig = go.Figure()
    for key, name in (("retrieval", "retrieval"), ("answer", "answer"), ("reminders", "reminder overhead")):
        fig.add_bar(
            name=name,
            x=names,
            y=[s[key] for s in stages],
            marker_color=STAGE_COLOURS[name],
            hovertemplate="%{x}: $%{y:.5f}<extra>" + name + "</extra>",
        )
    fig.update_layout(
        barmode="stack",
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        yaxis_title="USD",
        legend={"orientation": "h", "y": 1.12},
    )
    return fig


def calls_rows(trace: RunTrace) -> list[dict[str, Any]]:
    """One row per call of a run, for tables."""
    rows = []
    for call in trace.calls:
        rows.append(
            {
                "stage": "retrieval" if call.stage == "retrieve" else call.stage,
                "chunk": call.chunk or "",
                "pages": len(call.pages),
                "reminders": len(call.reminders_after) + call.leading_reminders,
                "input tokens": call.usage.prompt_tokens,
                "cached": call.usage.cached_tokens,
                "output tokens": call.usage.output_tokens,
                "cost (USD)": round(call.cost_usd, 6),
                "latency (s)": call.latency_s,
                "retrieved": " ".join(str(p) for p in call.retrieved),
                "error": call.error or "",
            }
        )
    return rows


@lru_cache(maxsize=50_000)
def _count(tokens: TokenCounter, text: str) -> int:
    return tokens.count(text)


def count_function(tokens: TokenCounter) -> Callable[[str], int]:
    """A memoised counter: pages repeat across prompts and reruns, so each is counted once."""
    return lambda text: _count(tokens, text)
