"""The methods, as registered values (METHOD.md §3–§10).

Each method lives in one module of this package and is a ``Method`` value: its name, a plain
sentence, the settings it reads and a planner that turns (document, question(s), settings)
into a ``Plan``. The registry below is the only list of methods; nothing outside a method's
own definition asks which method it is. Adding a method: one module here (or a value in an
existing one) and one line in ``_ALL``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.methods import bounds, briefcontext, cheap, paper, rag, selfroute
from rr_core.methods.building import Group, Method
from rr_core.plans import Plan
from rr_core.questions import Question
from rr_core.settings import (
    LAYOUTS,
    PARAMS,
    PromptProtocol,
    QuestionPlacement,
    ReminderPlacement,
    ReminderStyle,
    RunSettings,
)
from rr_core.tokens import TokenCounter

_ALL: tuple[Method, ...] = (
    *paper.METHODS,
    *rag.METHODS,
    *selfroute.METHODS,
    *briefcontext.METHODS,
    *cheap.METHODS,
    *bounds.METHODS,
)
REGISTRY: dict[str, Method] = {m.name: m for m in _ALL}

GROUP_LABELS: dict[Group, str] = {
    "paper": "The R&R paper",
    "other": "Other approaches",
    "bounds": "Bounds",
}

__all__ = [
    "GROUP_LABELS",
    "REGISTRY",
    "Method",
    "all_methods",
    "get_method",
    "methods_in",
    "method_names",
    "parse_spec",
    "plan_method",
    "plan_questions",
    "spec_of",
]

# Symbols are case-sensitive (N pages, n passages); full names work too.
_FIELDS = {p.symbol: p.name for p in PARAMS.values()} | {p.name: p.name for p in PARAMS.values()}


def all_methods() -> tuple[Method, ...]:
    """Every method, in the order they are shown."""
    return _ALL


def method_names() -> list[str]:
    """Every method's name."""
    return [m.name for m in _ALL]


def methods_in(group: Group) -> tuple[Method, ...]:
    """The methods of one group, in the order they are shown (``"bounds"``: the Lab's bounds)."""
    return tuple(m for m in _ALL if m.group == group)


def get_method(name: str) -> Method:
    """The method of this name; ``ConfigError`` names the choices otherwise."""
    try:
        return REGISTRY[name.strip()]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; choose from: {', '.join(REGISTRY)}") from None


def plan_method(
    document: Document, questions: str | Sequence[str], settings: RunSettings, counter: TokenCounter
) -> Plan:
    """Plan ``settings.method`` on the document."""
    return get_method(settings.method).plan(document, questions, settings, counter)


def parse_spec(spec: str, base: RunSettings) -> RunSettings:
    """``rr`` or ``rr:k=5000:N=3``: a method, and the settings it changes from ``base``.

    ``ConfigError`` names the part of the spec at fault: an unknown method or setting, a value
    that is not a number, or one outside the setting's bounds (checked here, so that a spec is
    refused where it is written rather than when it is planned)."""
    name, *overrides = spec.strip().split(":")
    method = get_method(name)
    settings = base.but(method=method.name)
    for item in overrides:
        key, _, value = item.partition("=")
        where = f"{item.strip()!r} for {method.label}"  # by the method's label, as screens name it
        if key.strip() == "layout" and value.strip():
            settings = settings.but(question_placement=_layout(method, value.strip(), where))
            continue
        if key.strip() == "protocol" and value.strip():
            try:
                settings = settings.but(protocol=PromptProtocol(value.strip()))
            except ValueError:
                raise ConfigError(f"{where}: the protocol is json or paper") from None
            continue
        if key.strip() in ("style", "placement") and value.strip():
            try:
                settings = (
                    settings.but(reminder_style=ReminderStyle(value.strip()))
                    if key.strip() == "style"
                    else settings.but(reminder_placement=ReminderPlacement(value.strip()))
                )
            except ValueError:
                raise ConfigError(f"{where}: not a reminder {key.strip()}") from None
            continue
        field = _FIELDS.get(key.strip()) or _FIELDS.get(key.strip().lower().replace("-", "_"))
        if field is None or not value.strip():
            symbols = ", ".join(p.symbol for p in PARAMS.values())
            raise ConfigError(f"{where}: write a setting as k=5000 (one of: {symbols})")
        kind = type(getattr(base, field))
        try:
            number = kind(value.strip().replace(",", "").replace("_", ""))
        except ValueError:
            raise ConfigError(f"{where}: {value!r} is not a number") from None
        param = PARAMS[field]
        if not param.minimum <= number <= param.maximum:  # NaN fails this too
            unit = f" {param.unit}" if param.unit else ""
            raise ConfigError(
                f"{where}: {param.label} ({param.symbol}) must be between "
                f"{param.minimum:,} and {param.maximum:,}{unit}"
            )
        settings = settings.but(**{field: number})
    return settings


def _layout(method: Method, value: str, where: str) -> QuestionPlacement:
    """The layout ``value`` names, if ``method`` can take it (``ConfigError`` says why not)."""
    if method.own_layout:
        raise ConfigError(
            f"{where}: {method.name} has its own prompt layout ({method.layouts[0].value}) and takes no layout="
        )
    try:
        layout = QuestionPlacement(value)
    except ValueError:
        layout = None
    if layout not in LAYOUTS:
        raise ConfigError(f"{where}: the layout is one of {', '.join(p.value for p in LAYOUTS)}")
    if layout not in method.layouts:
        raise ConfigError(
            f"{where}: {method.name} takes only {', '.join(p.value for p in method.layouts)} ({method.layout_note})"
        )
    return layout


def spec_of(settings: RunSettings, base: RunSettings) -> str:
    """The spec ``parse_spec`` reads back: the method and the settings it reads that differ from ``base``."""
    method = get_method(settings.method)
    changed = [
        f"{PARAMS[name].symbol}={getattr(settings, name):g}"
        for name in method.params
        if getattr(settings, name) != getattr(base, name)
    ]
    if settings.reminder_style is not base.reminder_style:
        changed.append(f"style={settings.reminder_style.value}")
    if settings.reminder_placement is not base.reminder_placement:
        changed.append(f"placement={settings.reminder_placement.value}")
    if settings.protocol is not base.protocol:
        changed.append(f"protocol={settings.protocol.value}")
    layout = method.layout_for(settings)
    if not method.own_layout and layout is not method.layout_for(base):
        changed.append(f"layout={layout.value}")
    return ":".join([method.name, *changed])


def plan_questions(
    document: Document, questions: Sequence[Question], settings: RunSettings, counter: TokenCounter
) -> list[Plan]:
    """Plans of one method over several questions: one plan for all of them where the method
    retrieves for several questions in one pass, else one plan per question (each with its
    own gold pages, where the question names them and the settings do not)."""
    method = get_method(settings.method)
    if len(questions) > 1 and method.takes_several(settings):
        return [method.plan(document, [q.text for q in questions], settings, counter)]
    return [
        method.plan(document, q.text, settings.but(gold_pages=settings.gold_pages or q.gold_pages), counter)
        for q in questions
    ]
