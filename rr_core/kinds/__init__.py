"""The kinds of long work, registered like methods, stages and providers: the generic runner
(``rr_core.work``) reads, plans and runs a stored work through its kind here. A new kind of long
work is one module (its spec, its plan, what it records, its summary) and one line below.

A kind is registered by the module that defines it (its ``KIND``), loaded the first time a work of
that kind is read: a review never loads the Lab's modules (~25 ms of every command and worker).
"""

from __future__ import annotations

import importlib

from rr_core.errors import ConfigError
from rr_core.kinds.base import TaskKind

# name -> the kind, or the module whose ``KIND`` it is (replaced by the kind once loaded).
KINDS: dict[str, TaskKind | str] = {
    "review": "rr_core.kinds.review",
    "sweep": "rr_core.kinds.sweep",
}


def get_kind(name: str) -> TaskKind:
    """The kind of this name (``ConfigError`` names the kinds this build runs otherwise)."""
    try:
        entry = KINDS[name]
    except KeyError:
        raise ConfigError(f"this build cannot run a {name!r} work; it runs: {', '.join(KINDS)}") from None
    if isinstance(entry, str):
        kind: TaskKind = importlib.import_module(entry).KIND
        if kind.name != name:
            raise ConfigError(f"{entry} defines the kind {kind.name!r}, registered as {name!r}")
        KINDS[name] = entry = kind
    return entry
