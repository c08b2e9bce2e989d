"""Settings in session state, and what they make: run settings, plans' inputs, a client.

Two kinds of state live here:

- the **session**: the screens' own state (the sample or upload being read, the viewer's
  place, the Lab's grid, a pending delete…), one typed ``Session`` value under one key;
- the **settings** callers may set from outside (the engine, the method parameters, the
  question and methods, the results): each under a plain key (``"reminder_every"``), as
  tests and callers set them.

Either survives screens that do not draw its widget (Streamlit drops a widget's key when the
widget is not rendered): the widget uses ``"w." + key``, is seeded from the value before it is
drawn, and copies its value back in ``on_change`` (``bound`` for a plain key, ``bind`` for a
field of the session).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from rr_core.errors import ConfigError, RRError
from rr_core.lab.haystacks import TrialRecipe
from rr_core.lab.sweep import SweepPlan
from rr_core.llm import (
    DEFAULT_PRICE_MODEL,
    LLMClient,
    PriceAs,
    ProviderInfo,
    get_provider,
    starting_provider,
)
from rr_core.methods import GROUP_LABELS, all_methods, get_method, parse_spec
from rr_core.review import Cell, Column, CorpusFile, ReviewPlan
from rr_core.review.sample import COLUMNS as SAMPLE_COLUMNS
from rr_core.samples import list_samples
from rr_core.settings import PARAMS, ReminderPlacement, ReminderStyle, RunSettings
from rr_core.tokens import TokenCounter, counter_for_model
from rr_core.traces import RunTrace
from rr_core.workbench import Engine

W = "w."  # prefix of widget keys; the plain key holds the value that persists

DEFAULT_SAMPLE = "contract"
DEFAULT_METHODS = ["baseline", "rr"]


SESSION_KEY = "rr.session"


@dataclass(frozen=True, slots=True)
class Upload:
    """An uploaded file, kept for the session so other screens can reopen it."""

    file_id: str
    name: str
    sha256: str
    data: bytes


@dataclass(slots=True)
class LabChoices:
    """The Lab screen's choices (the grid is refilled from a preset when the preset changes)."""

    engine: str = ""  # "provider" (the sidebar's model) or a free engine of the registry
    preset: str = "quick"
    grid_for: str = ""  # the preset the grid was filled from
    kv_file: str = ""  # the key–value file the lengths were cleared for
    layout: str = ""
    protocol: str = "json"  # the prompts: "json" (the analyst's) or "paper" (the R&R paper's)
    methods: str = ""
    lengths: str = ""
    depths: str = ""
    repeats: int = 1
    budget: float = 5.0
    mode: str = "now"  # "now" or "batch" (an engine that can batch, or a free one in-process)


@dataclass(frozen=True, slots=True)
class LabPlanned:
    """The Lab's last estimate and everything it was planned from: a rerun with the same
    choices (a click elsewhere on the screen, a chart tab) shows it again instead of building
    and planning every trial anew (2-5 s for a paper-sized grid)."""

    made_from: tuple[Any, ...]
    trials: list[TrialRecipe]
    plan: SweepPlan


def column_rows(columns: Sequence[Column]) -> list[dict[str, str]]:
    """Columns as the Review screen's editor holds them (text, as typed)."""
    return [
        {
            "question": c.question,
            "type": c.type.value,
            "instruction": c.instruction,
            "choices": " | ".join(c.choices),
        }
        for c in columns
    ]


@dataclass(slots=True)
class ReviewRun:
    """A grid run (or the part of it done so far): its plan, the cells as they arrived, their
    traces, and what the run said of itself."""

    plan: ReviewPlan
    cells: list[Cell] = field(default_factory=list)
    traces: list[RunTrace] = field(default_factory=list)
    engine: str = ""  # the engine as the screen named it
    is_llm: bool = True
    mode: str = "now"
    done: bool = False  # False: running, or stopped before the end
    paid_usd: float = 0.0
    # "up to $X possibly billed for N calls …": sent with no answer back (or left in flight by
    # an interrupted run); "" when none may be.
    possibly_billed: str = ""
    save_error: str = ""
    key_name: str = ""  # the answer key the cells were marked against ("" for none)
    # Where each cell (by its place in the grid, ``Cell.key``) is in ``cells``: a cell that
    # arrives replaces its place's in constant time (a 10,000-cell grid is not rescanned per cell).
    _places: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _trace_places: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def put_cell(self, cell: Cell) -> None:
        """Add a cell as it arrives, in place of an earlier one for the same place (a retry's)."""
        _put(self.cells, self._places, cell, cell.key, lambda c: c.key)

    def put_trace(self, trace: RunTrace) -> None:
        """Add a run's trace as it arrives, in place of an earlier one of the same run."""
        _put(self.traces, self._trace_places, trace, trace.run_id, lambda t: t.run_id)


def _put(items: list[Any], places: dict[str, int], item: Any, key: str, key_of: Callable[[Any], str]) -> None:
    """Put ``item`` in ``items`` in place of the one with its key, else at the end; ``places``
    indexes them (rebuilt when ``items`` was changed without it)."""
    where = places.get(key)
    if len(places) != len(items) or (
        where is not None and (where >= len(items) or key_of(items[where]) != key)
    ):
        places.clear()
        places.update((key_of(x), i) for i, x in enumerate(items))
        where = places.get(key)
    if where is None:
        places[key] = len(items)
        items.append(item)
    else:
        items[where] = item


@dataclass(slots=True)
class ReviewChoices:
    """The Review screen's state: the corpus as read (summaries only: the documents are in the
    document store by hash), the columns, the method, and the last grid run."""

    source: str = "sample"  # "sample" (generated) or "upload"
    files: tuple[CorpusFile, ...] = ()
    read_for: str = ""  # what the files were read from (the uploads' ids, or "sample")
    # The questions as the editor holds them (question, type, instruction, choices: text, as
    # typed; read into columns on every run, their faults shown), and the editor's generation
    # (a new one after an import or a loaded playbook: the editor starts again from the rows).
    column_rows: list[dict[str, str]] = field(default_factory=lambda: column_rows(SAMPLE_COLUMNS))
    editor_version: int = 0
    columns_for: str = "sample"  # the corpus the questions were last filled in for
    playbooks: dict[str, tuple[Column, ...]] = field(default_factory=dict)  # saved in this session
    playbook_name: str = ""
    playbook_for: str = ""  # the imported playbook file last read
    key_csv: str = ""  # the answer key (CSV) the cells are marked against
    key_name: str = ""
    key_for: str = ""  # the uploaded answer key last read
    method: str = "rr"
    compare: str = ""  # "" for no comparison
    compare_rows: int = 3
    mode: str = "now"
    budget: float = 5.0
    plan: ReviewPlan | None = None
    plan_for: str = ""  # what the plan was made from (a change plans again)
    run: ReviewRun | None = None
    role: str = "main"  # the grid shown: the main method's, or the comparison's
    selected: tuple[str, int, str] | None = None  # (document sha256, column, role) of the open cell
    # The cell's details open in a dialog when a grid cell is newly selected, and stay open over
    # reruns until dismissed (a rerun that did not draw the dialog would close it).
    details_open: bool = False
    picked: tuple[int, str] | None = None  # the grid selection last seen (row, header)
    message: tuple[str, str] | None = None  # (kind, text) said after a rerun
    # Opening the corpus: OCR on or off, and each encrypted file's password as last tried (a
    # hash: the password itself stays in its field for this session only; it is never stored).
    ocr: bool = False
    tried: dict[str, str] = field(default_factory=dict)  # file name -> sha256 of the password tried
    ocr_tried: set[str] = field(default_factory=set)  # the scanned files read again with OCR on
    queue_at: int | None = None  # where the To-check queue stands (None: at its first undecided cell)
    resend: str = ""  # a finished work with the same calls as the grid just sent: open it, or run again?
    queue_note: str = ""  # what the queue says after a rerun (a decision not kept, and why)


@dataclass(frozen=True, slots=True)
class DocFocus:
    """A stored document the Document screen opens on instead of the active one (from a Review
    cell): by content hash, at a page, with the run that cited it and the quote to highlight."""

    sha256: str
    name: str
    page: int | None = None
    quote: str = ""
    trace: RunTrace | None = None
    question: int = 0  # the outcome of ``trace`` the cell is
    key: str = ""  # names the opening (the viewer opens on its citation once)
    origin: str = "the Review grid"  # the screen it was opened from, as the notice names it


@dataclass(slots=True)
class Session:
    """The screens' own state, typed, kept under one key of Streamlit's session state."""

    sample: str = ""  # the sample read when the source is "sample"
    upload: Upload | None = None
    upload_password: str = ""
    upload_ocr: bool = False
    question_prefilled: bool = False  # the first visit filled in a sample's question
    scroll_to_results: bool = False  # a run just finished: bring its results into view
    doc_batch: str | None = None  # the run the Document screen opened on
    doc_viewing: tuple[Any, ...] | None = None  # (batch, run, question) the viewer opened on
    view_citation: int = 0
    confirm_delete: list[str] | None = None  # the history batches a delete waits to confirm
    delete_message: tuple[str, str] | None = None  # (kind, text) of the last delete
    history_page: int = 0  # the page of a long history shown (0: the newest runs)
    store_url: str | None = None  # a store chosen for this session (a per-project file); None: RR_STUDIO_DB's
    notice_seen: bool = False  # the first-run notice was dismissed (or not due) in this session
    notice_error: str = ""  # why the per-project store could not be made (shown once)
    lab: LabChoices = field(default_factory=LabChoices)
    lab_planned: LabPlanned | None = None  # the Lab's last estimate (one: a session's memory)
    review: ReviewChoices = field(default_factory=ReviewChoices)
    doc_focus: DocFocus | None = None  # a stored document the Document screen shows instead


def session() -> Session:
    """The session's state (made on first use)."""
    value = st.session_state.get(SESSION_KEY)
    if not isinstance(value, Session):
        samples = list_samples()
        value = Session(sample=DEFAULT_SAMPLE if DEFAULT_SAMPLE in samples else samples[0])
        st.session_state[SESSION_KEY] = value
    return value


def _secret(name: str) -> str:
    """A value from .streamlit/secrets.toml, or "" (st.secrets raises without a file)."""
    try:
        value = st.secrets.get(name)
    except Exception:  # noqa: BLE001 - no secrets file, or an unreadable one: same as unset
        return ""
    return str(value) if value else ""


def configured(variable: str) -> str:
    """A setting from the environment, else from secrets."""
    return os.environ.get(variable) or _secret(variable)


def first_provider() -> str:
    """A paid provider only when its key is configured; otherwise the offline engine."""
    return starting_provider(configured).name


def parameter_defaults() -> dict[str, Any]:
    """Every method parameter at its default (the sidebar's reset)."""
    return {name: param.default for name, param in PARAMS.items()} | {
        "reminder_style": ReminderStyle.FULL.value,
        "reminder_placement": ReminderPlacement.INTERVAL.value,
        "reminder_pages": "",
    }


def init_state() -> None:
    """Give every setting a value once per session (keys already set, e.g. by tests, stay)."""
    state = st.session_state
    state.setdefault("provider", first_provider())
    state.setdefault("model", get_provider(state["provider"]).default_model)
    state.setdefault("api_key", "")
    state.setdefault("base_url", "")
    state.setdefault("price_model", DEFAULT_PRICE_MODEL)
    state.setdefault("compat_price_model", "")
    state.setdefault("verify", False)  # check each answer against its quotes (Ask, Review)
    state.setdefault("verify_model", "")
    for key, value in parameter_defaults().items():
        state.setdefault(key, value)
    # Calls in flight at once: the offline engine is CPU-bound (two cores); hosted APIs take
    # many; a local server usually serves one or two at a time (the registry's numbers).
    state.setdefault("concurrency", get_provider(state["provider"]).concurrency)
    state.setdefault("source", "sample")
    session()
    state.setdefault("question", "")
    state.setdefault("ask_mode", "one")
    state.setdefault("questions_text", "")
    state.setdefault("methods", list(DEFAULT_METHODS))
    for group in GROUP_LABELS:
        # Each group's multiselect owns a key; ``methods`` only seeds them.
        state.setdefault(
            method_key(group),
            [m.name for m in all_methods() if m.group == group and m.name in state["methods"]],
        )
    state.setdefault("variants", [])
    state.setdefault("gold_pages", "")
    state.setdefault("view_page", 1)


def bound(widget: Callable[..., Any], label: str, key: str, *, twin: str = "", **kwargs: Any) -> Any:
    """Draw ``widget`` for the persistent setting ``key`` (see the module docstring).

    ``twin`` names a second widget of the same setting (a number box beside a slider): its key
    is ``"w." + key + twin``; both are seeded from the setting, so each shows what the other set.
    """
    widget_key = W + key + twin
    # Written on every run: a widget on another screen is a new widget, and Streamlit's
    # value for its key is gone or stale until this puts the setting back.
    st.session_state[widget_key] = st.session_state[key]
    after = kwargs.pop("on_change", None)

    def changed() -> None:
        st.session_state[key] = st.session_state[widget_key]
        if after is not None:
            after()

    return widget(label, key=widget_key, on_change=changed, **kwargs)


def bind(widget: Callable[..., Any], label: str, owner: object, name: str, *, key: str, **kwargs: Any) -> Any:
    """Draw ``widget`` for the field ``name`` of a session value (``owner``): the widget's key
    is ``"w." + key``, seeded from the field before it is drawn and copied back on change."""
    widget_key = W + key
    st.session_state[widget_key] = getattr(owner, name)
    after = kwargs.pop("on_change", None)

    def changed() -> None:
        setattr(owner, name, st.session_state[widget_key])
        if after is not None:
            after()

    return widget(label, key=widget_key, on_change=changed, **kwargs)


def provider() -> str:
    """The selected provider."""
    return str(st.session_state["provider"])


def verify_choice() -> dict[str, Any]:
    """ "Check each answer against its quotes", as the ``RunSettings`` fields it sets."""
    on = bool(st.session_state.get("verify"))
    chosen = str(st.session_state.get("verify_model") or "").strip()
    return {"verify": on, "verify_model": chosen if on else ""}


def verify_widgets() -> dict[str, Any]:
    """The check's toggle and, on an LLM, the model that checks (a cheaper one may be named);
    what they set (``verify_choice``)."""
    info = provider_info()
    toggle, named = st.columns([3, 2], vertical_alignment="bottom")
    on = bound(
        toggle.checkbox,
        "Check each answer against its quotes",
        "verify",
        help="One more small call per answer found: the question, the answer and its quotes only, never the "
        "pages. The verdict (supported, partial or unsupported) and its reason are kept with the answer."
        if info.is_llm
        else "The offline engine's reader judges whether a quote supports an answer itself: nothing more is sent.",
    )
    if info.is_llm:
        bound(
            named.text_input,
            "Checked by (model)",
            "verify_model",
            placeholder=model(),
            disabled=not on,
            help=f"A cheaper model of {info.label} may check the answers; empty: {model()}.",
        )
    return verify_choice()


def provider_info() -> ProviderInfo:
    """The selected provider, as the registry describes it."""
    return get_provider(provider())


def engine() -> Engine:
    """The engine chosen in the sidebar, with the key and server URL typed there (if any).

    The key rule is the engine's (``rr_core.llm.config``), shared with the CLI: a server URL
    typed in the sidebar only ever gets a key typed in the sidebar; the key configured for the
    deployment (environment, secrets) goes to its own server only.
    """
    typed_url = str(st.session_state.get("base_url") or "").strip()
    typed_key = str(st.session_state.get("api_key") or "").strip()
    return Engine(provider(), model(), price_model(), api_key=typed_key or None, base_url=typed_url or None)


def model() -> str:
    """The model the provider runs (``offline`` for the offline engine: a free engine runs its own)."""
    info = provider_info()
    return info.default_model if info.free else str(st.session_state["model"]).strip()


def api_key() -> str | None:
    """The key for the provider: the session's field, else the environment, else secrets."""
    typed = str(st.session_state.get("api_key") or "").strip()
    if typed:
        return typed
    variable = provider_info().key_variable
    return (configured(variable) or None) if variable else None


def base_url() -> str | None:
    """The server URL: the session's field, else OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else secrets."""
    typed = str(st.session_state.get("base_url") or "").strip()
    if typed:
        return typed
    variable = provider_info().base_url_variable
    return (configured(variable) or None) if variable else None


def token_model() -> str:
    """The model whose tokenizer counts the document (the priced model when offline)."""
    return str(st.session_state["price_model"]) if provider_info().free else model()


def counter() -> TokenCounter:
    """The token counter for the current model."""
    return counter_for_model(token_model())


def _pages(text: str, what: str) -> tuple[int, ...]:
    parts = [p.strip() for p in str(text).replace(";", ",").split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        raise ConfigError(f"{what}: write page numbers separated by commas, e.g. 12, 14.")
    return tuple(int(p) for p in parts)


def base_settings() -> RunSettings:
    """The sidebar's settings as one value (the method is filled in per method)."""
    state = st.session_state
    values = {
        name: (int(state[name]) if isinstance(p.default, int) else float(state[name]))
        for name, p in PARAMS.items()
    }
    return RunSettings(
        reminder_style=ReminderStyle(state["reminder_style"]),
        reminder_placement=ReminderPlacement(state["reminder_placement"]),
        reminder_pages=_pages(state["reminder_pages"], "Reminder pages"),
        gold_pages=_pages(state["gold_pages"], "Gold pages"),
        model=model(),
        provider=provider(),
        price_model=price_model(),
    ).but(**values)


def price_model() -> str:
    """The model that prices a run when it is not the model itself: the offline engine's "Price
    as", or the one named for an OpenAI-compatible server ("" for none)."""
    state = st.session_state
    price_as = provider_info().price_as
    if price_as is PriceAs.REQUIRED:
        return str(state["price_model"])
    if price_as is PriceAs.OPTIONAL:
        return str(state.get("compat_price_model") or "")
    return ""


def method_key(group: str) -> str:
    """The setting holding the methods chosen in one group (``methods_paper``, ...)."""
    return f"methods_{group}"


def chosen_methods() -> list[str]:
    """The methods chosen in every group, in the registry's order.

    The groups' keys are the truth once set: a caller that sets ``methods_other`` sees the
    screen and the plans agree. ``methods`` seeds them on a session's first run.
    """
    state = st.session_state
    if not any(method_key(g) in state for g in GROUP_LABELS):
        return list(state.get("methods", []))
    picked = {name for g in GROUP_LABELS for name in state.get(method_key(g), [])}
    return [m.name for m in all_methods() if m.name in picked]


def chosen_specs() -> list[str]:
    """The methods chosen on the Ask screen, then the variants added with their own settings."""
    return [*chosen_methods(), *st.session_state.get("variants", [])]


def variant_problem(spec: str) -> RRError | None:
    """What is wrong with a variant's own part (its method, its settings), or None.

    Checked against the defaults: a variant's fault does not depend on the sidebar, and a
    sidebar fault is not the variant's."""
    try:
        parse_spec(spec, RunSettings())
    except RRError as exc:
        return exc
    return None


def runnable_specs() -> list[str]:
    """The chosen methods, then the variants that can run: one with bad settings is left out
    (the Ask screen points at it) rather than stopping every method."""
    variants = [v for v in st.session_state.get("variants", []) if variant_problem(v) is None]
    return [*chosen_methods(), *variants]


def chosen_settings() -> list[RunSettings]:
    """One ``RunSettings`` per chosen method and runnable variant (``ConfigError`` for a sidebar fault)."""
    base = base_settings()
    return [parse_spec(spec, base) for spec in runnable_specs()]


def methods_using(param: str) -> list[str]:
    """Labels of the chosen methods that read a parameter."""
    labels = []
    for spec in chosen_specs():
        try:
            method = get_method(spec.split(":", 1)[0])
        except RRError:
            continue
        if param in method.params or (param in ("reminder_style", "reminder_placement") and method.reminds):
            labels.append(method.label)
    return list(dict.fromkeys(labels))


def new_client() -> LLMClient:
    """A fresh client for this run (never cached: clients hold connections), made by the
    sidebar's engine with the configured key lookup (environment, then secrets)."""
    return engine().client(configured=configured)


def concurrency() -> int:
    """Calls in flight at once."""
    return max(1, int(st.session_state.get("concurrency") or 1))
