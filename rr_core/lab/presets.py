"""Ready-made measurements: the questions an analyst asks first, and the papers' grids."""

from __future__ import annotations

from dataclasses import dataclass

from rr_core.errors import ConfigError

FIVE_DEPTHS = (0.0, 25.0, 50.0, 75.0, 100.0)


@dataclass(frozen=True, slots=True)
class Preset:
    """A sweep's shape: task, series (method specs), lengths, depths, repeats, bounds."""

    name: str
    title: str
    description: str
    task: str = "planted"
    series: tuple[str, ...] = ("baseline", "rr")
    lengths: tuple[int, ...] = ()  # empty: a quarter, half and all of the document
    depths: tuple[float, ...] = FIVE_DEPTHS
    depth_step_tokens: int = 0  # the paper's grid: depths every N tokens instead of percents
    repeats: int = 2
    bounds: bool = True


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "quick",
            "Quick check of this document",
            "Baseline against R&R on your document cut to a quarter, half and all of its length, with a "
            "fictional fact planted at five depths, twice each.",
        ),
        Preset(
            "paper-grid",
            "The R&R paper's grid",
            "Documents of 10k, 20k, 40k and 80k tokens with the fact every 10k tokens (000 §4.1), for the "
            "paper's four main methods.",
            series=("baseline", "reprompt", "icr", "rr"),
            lengths=(10_000, 20_000, 40_000, 80_000),
            depths=(),
            depth_step_tokens=10_000,
            repeats=1,
        ),
        Preset(
            "lost-in-the-middle",
            "Lost in the middle",
            "Twenty passages, one per page, the one holding the answer at five positions (001 §3), with the "
            "closed-book and oracle bounds. Needs a QA file in the Lost-in-the-Middle format.",
            task="passages",
            lengths=(3_000,),
            repeats=5,
        ),
        Preset(
            "key-value",
            "Key–value retrieval",
            "75 generated UUID pairs, one per page; find the value of one key placed at five positions (001 §4).",
            task="kv",
            lengths=(75,),
            repeats=2,
        ),
        Preset(
            "reprompt-interval",
            "Reprompt interval",
            "R&R with reminders every 5k, 10k and 20k tokens against the baseline (000 Table 5).",
            series=("baseline", "rr:k=5000", "rr:k=10000", "rr:k=20000"),
            repeats=1,
        ),
        Preset(
            "chunk-size",
            "Chunk size",
            "Chunked R&R with chunks of 10k, 20k, 40k and 80k tokens (000 Table 3): accuracy against calls and cost.",
            series=("chunked-rr:c=10000", "chunked-rr:c=20000", "chunked-rr:c=40000", "chunked-rr:c=80000"),
            repeats=1,
        ),
        Preset(
            "ablations",
            "Reminder ablations",
            "What the reminder says and where it goes (000 Table 6): full reminders every k, tags only, "
            "all at the beginning, against the baseline.",
            series=("baseline", "reprompt", "reprompt:style=tags-only", "reprompt:placement=beginning"),
            repeats=1,
        ),
    )
}


def get_preset(name: str) -> Preset:
    """The preset of this name (``ConfigError`` lists them otherwise)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; choose from: {', '.join(PRESETS)}") from None


def default_lengths(total_tokens: int) -> tuple[int, ...]:
    """A quarter, half and all of a document, in whole thousands of tokens (at least 1,000),
    never longer than the document itself."""
    lengths = sorted({max(1_000, int(total_tokens * f) // 1_000 * 1_000) for f in (0.25, 0.5, 1.0)})
    return tuple(lengths)


def depths_for(preset: Preset, length: int) -> tuple[float, ...]:
    """The depths (percent) of a preset at one length."""
    if preset.depth_step_tokens:
        steps = range(0, length + 1, preset.depth_step_tokens)
        return tuple(round(100 * p / length, 1) for p in steps)
    return preset.depths
