"""Page set-up and the sidebar every screen shows: the engine, and the method parameters."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.common import state as S
from pages.common import user
from pages.common.text import md
from rr_core.costs import known_models, price_data_version
from rr_core.llm import PROVIDERS, PriceAs, ProviderInfo, get_provider
from rr_core.settings import PARAMS, ReminderPlacement, ReminderStyle

LOGO = Path(__file__).with_name("logo.svg")
OFFLINE_NOTE = (
    "**The offline engine is not an LLM**: it ranks pages by the question's words (BM25) and "
    "quotes the passage that matches them, with a short answer of the kind asked (a date, a figure, "
    "a name…) or 'not found' and the pages to read. It shows how each method works and what it would cost; "
    "it cannot show how a model reads. Costs are what the same tokens would cost on the model "
    "chosen below."
)


def page_setup() -> None:
    """Start a screen: the sign-in gate (team mode), page config and the shared sidebar (see
    app.py for why here)."""
    user.require()  # in team mode without a current sign-in, the sign-in screen and a stop
    # Streamlit's own favicon, served by the app: a ":material/…:" one is fetched from a font
    # server (nothing here may leave the machine), an emoji one needs an emoji font.
    st.set_page_config(page_title="R&R Studio", layout="wide")
    # The product's name, above the screens' links (and in the header when the sidebar is closed).
    st.logo(str(LOGO), size="large")
    # Less empty space above the title, so the Run button is on screen at laptop height.
    st.html("<style>[data-testid='stMainBlockContainer'], .block-container {padding-top: 2rem;}</style>")
    sidebar()


def _provider_changed() -> None:
    state = st.session_state
    info = get_provider(state["provider"])
    state["model"] = info.default_model
    state["concurrency"] = info.concurrency
    # A key typed for one provider is never sent to another.
    state["api_key"] = ""
    state["base_url"] = ""


def _model_options(info: ProviderInfo, current: str) -> list[str]:
    # The priced models the provider serves; a server of one's own: its default.
    options = [m for m in known_models() if m.startswith(info.model_prefixes)] if info.model_prefixes else []
    options = options or [info.default_model]
    return list(dict.fromkeys([current, *options] if current else options))


def _reset_parameters() -> None:
    for key, value in S.parameter_defaults().items():
        st.session_state[key] = value


# The settings whose range is wide enough that a slider alone is slow to set exactly
# (k = 5,000 from 10,000 is 50 key presses): a number box beside the slider sets any value.
BOXED = ("reminder_every", "top_k", "chunk_size")


def _param_slider(name: str) -> None:
    param = PARAMS[name]
    unit = f" ({param.unit})" if param.unit else ""
    label = f"{param.label} {param.symbol}{unit}"
    slider_col, box_col = st.columns([3, 2], vertical_alignment="bottom") if name in BOXED else (None, None)
    with slider_col or st.container():
        S.bound(
            st.slider,
            label,
            name,
            min_value=param.minimum,
            max_value=param.maximum,
            step=param.step,
            format="localized",  # 10,000, as the rest of the app writes numbers
            help=param.help,
        )
    if box_col is not None:
        with box_col:
            S.bound(
                st.number_input,
                f"{label}, typed",
                name,
                twin=".box",
                min_value=param.minimum,
                max_value=param.maximum,
                step=param.step,
                label_visibility="collapsed",
            )
    users = S.methods_using(name)
    st.caption(("Used by " + ", ".join(users) + ".") if users else "None of the chosen methods uses this.")


def _engine() -> None:
    st.subheader("Engine")
    S.bound(
        st.selectbox,
        "Provider",
        "provider",
        options=list(PROVIDERS),
        format_func=lambda p: get_provider(p).label,
        on_change=_provider_changed,
    )
    current = S.provider_info()
    if current.price_as is PriceAs.REQUIRED:
        st.info(OFFLINE_NOTE)
        models = known_models()
        if st.session_state["price_model"] not in models:
            models = [st.session_state["price_model"], *models]
        S.bound(
            st.selectbox,
            "Price as",
            "price_model",
            options=models,
            help="The offline engine is free. Costs show what the same tokens would cost on this "
            "model, and its tokenizer counts the document.",
        )
        return
    S.bound(
        st.selectbox,
        "Model",
        "model",
        options=_model_options(current, S.model()),
        accept_new_options=True,
        help="Pick a model or type any model id your provider serves.",
    )
    variable = current.key_variable
    has_configured = bool(variable and S.configured(variable))
    S.bound(
        st.text_input,
        "API key",
        "api_key",
        type="password",
        placeholder=f"using {variable}" if has_configured else ("optional" if not variable else "sk-…"),
        help="Kept in this browser session only: never written to disk, logs, history or exports.",
    )
    url_variable = current.base_url_variable or ""
    S.bound(
        st.text_input,
        "Base URL" if current.needs_base_url else "Base URL (optional)",
        "base_url",
        placeholder=S.configured(url_variable) or current.url_placeholder,
        help=f"Leave empty to use {url_variable} or the provider's default address.",
    )
    if current.price_as is PriceAs.OPTIONAL:
        # A server of one's own has no published price: name the model whose prices it charges,
        # or it is counted as free (and a budget cannot be kept).
        S.bound(
            st.selectbox,
            "Price as",
            "compat_price_model",
            options=["", *known_models()],
            format_func=lambda m: m or "no price (counted as free)",
            help="The model whose published prices this server charges. Without one, costs read "
            "as free and the Lab refuses a budget cap it could not keep.",
        )
    if variable and not S.api_key():
        st.warning(f"No API key: enter one above or set {variable}. Until then, runs will fail.")
    if current.needs_base_url and not S.base_url():
        st.warning("Enter the server's base URL (for Ollama: http://localhost:11434/v1).")


def sidebar() -> None:
    """The engine and method settings shared by every screen."""
    S.init_state()
    with st.sidebar:
        if user.current().signed_in:
            user.sidebar_line()
        # Once per store, in single-user mode; in the sidebar, so that the first screen's Run
        # stays where a small laptop shows it.
        user.first_run_notice()
        _engine()
        st.subheader("Method parameters")
        for name in ("reminder_every", "top_k", "chunk_size"):
            _param_slider(name)
        with st.expander("Passages (RAG, BriefContext)"):
            for name in ("rag_chunk_words", "rag_top_k", "brief_top_n", "brief_partition"):
                _param_slider(name)
        with st.expander("Advanced"):
            st.caption(
                "The paper's reminder ablations (000, Table 6). They change the reminding methods only."
            )
            S.bound(
                st.selectbox,
                "What a reminder says",
                "reminder_style",
                options=[s.value for s in ReminderStyle],
                format_func={
                    "full": "the whole task and question",
                    "tags-only": "only 'follow the instructions'",
                }.get,
            )
            S.bound(
                st.selectbox,
                "Where reminders go",
                "reminder_placement",
                options=[p.value for p in ReminderPlacement],
                format_func={
                    "interval": "every k tokens",
                    "beginning": "all at the start",
                    "before-pages": "right before given pages",
                }.get,
            )
            if st.session_state["reminder_placement"] == ReminderPlacement.BEFORE_PAGES.value:
                S.bound(st.text_input, "Reminders before pages", "reminder_pages", placeholder="e.g. 12, 40")
            S.bound(
                st.slider,
                "Calls at once",
                "concurrency",
                min_value=1,
                max_value=32,
                help="How many calls are in flight together (chunks, groups and methods share them). "
                "The offline engine and the simulated reader take one at a time whatever this says: "
                "their work runs here, in Python, where threads would only slow it down.",
            )
        st.button("Reset parameters to defaults", on_click=_reset_parameters, key="reset_params")
        tokens = S.counter()
        st.caption(f"Tokenizer: {md(tokens.label)}. Prices: {md(price_data_version())}.")
        if tokens.note:
            st.caption(md(tokens.note))
        if not user.current().signed_in:
            user.sidebar_line()
