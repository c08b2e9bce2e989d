"""The kinds of long work, registered like methods, stages and providers: the generic runner
(``rr_core.work``) reads, plans and runs a stored work through its kind here. A new kind of long
work is one module (its spec, its plan, what it records, its summary) and one line below.
"""

from __future__ import annotations

from rr_core.errors import ConfigError
from rr_core.kinds import review, sweep
from rr_core.kinds.base import TaskKind

KINDS: dict[str, TaskKind] = {kind.name: kind for kind in (review.KIND, sweep.KIND)}


def get_kind(name: str) -> TaskKind:
    """The kind of this name (``ConfigError`` names the kinds this build runs otherwise)."""
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"this build cannot run a {name!r} work; it runs: {', '.join(KINDS)}") from None
