"""Ready-made measurements: the questions an analyst asks first, and the papers' grids."""

from __future__ import annotations

from dataclasses import dataclass

from rr_core.errors import ConfigError
from rr_core.settings import QuestionPlacement

FIVE_DEPTHS = (0.0, 25.0, 50.0, 75.0, 100.0)
# A comparison preset asks at least this many distinct questions (facts, QA items, keys): with 5,
# McNemar's smallest p is 0.0625 and no difference can ever be shown; with 50 a gain of about
# 22 points is found 4 times in 5 (``stats.detectable_difference``). Planted presets take 50
# repeats: a fact per repeat (each at every depth) makes 50 facts; a fact per repeat and depth
# makes more.
MIN_QUESTIONS = 50


@dataclass(frozen=True, slots=True)
class Preset:
    """A sweep's shape: task, series (method specs), lengths, depths, repeats, bounds, and where
    the question goes in every prompt (``layout``), with the reason (``why``)."""

    name: str
    title: str
    description: str
    task: str = "planted"
    series: tuple[str, ...] = ("baseline", "question-last", "repeat", "self-route", "rr")
    lengths: tuple[int, ...] = ()  # empty: a quarter, half and all of the document
    depths: tuple[float, ...] = FIVE_DEPTHS
    depth_step_tokens: int = 0  # the paper's grid: depths every N tokens instead of percents
    repeats: int = 2
    bounds: bool = True
    layout: QuestionPlacement = QuestionPlacement.BEFORE_AND_AFTER
    why: str = (
        "Instructions before and after the document, as the R&R paper lays out every prompt (000 §3.1), "
        "so R&R is measured as published."
    )
    # The one primary comparison (method specs: series against the other); every other
    # comparison is secondary and Holm-adjusted. ``stats.primary_pair`` finds it in the results
    # (the first R&R series against Baseline), so the series order puts this one first.
    primary: tuple[str, str] = ("rr", "baseline")
    min_questions: int = MIN_QUESTIONS  # distinct questions the preset's grid asks, at least


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "quick",
            "Quick check of this document",
            "Baseline against R&R, and the cheap baselines (question last, prompt repeated, Self-Route), on your document "
            "cut to a quarter, half and all of its length, with fictional facts planted at five depths, 50 "
            "repeats (at least 50 facts: enough to show a gain of about 22 points).",
            repeats=50,
        ),
        Preset(
            "paper-grid",
            "The R&R paper's grid",
            "Documents of 10k, 20k, 40k and 80k tokens with the fact every 10k tokens (000 §4.1), for the "
            "paper's four main methods and the cheap baselines; 50 repeats (at least 50 facts).",
            series=("baseline", "question-last", "repeat", "self-route", "reprompt", "icr", "rr"),
            lengths=(10_000, 20_000, 40_000, 80_000),
            depths=(),
            depth_step_tokens=10_000,
            repeats=50,
        ),
        Preset(
            "lost-in-the-middle",
            "Lost in the middle",
            "Passages one per page, all of each question's own (length 0: a 20-document file's 20 passages, "
            "about 2,500 tokens), the one holding the answer moved to five positions among the question's own "
            "distracters (001 §3), with the closed-book and oracle bounds. Needs a QA file of the "
            "Lost-in-the-Middle release; an oracle-only file needs lengths in tokens (--lengths 2000): its "
            "distracters are other questions' passages ranked by BM25.",
            task="passages",
            lengths=(0,),
            repeats=50,
            layout=QuestionPlacement.QUESTION_AFTER,
            why="The question after the passages, as in 001's headline results (001 §3): the model reads the "
            "passages before it knows what to look for. Before and after (query-aware) barely changes this "
            "curve in 001 §5.2; the R&R layout would measure a different task.",
        ),
        Preset(
            "key-value",
            "Key–value retrieval",
            "75 generated UUID pairs, one per page, or the pairs of a key–value file of the Lost-in-the-Middle "
            "release (75, 140 or 300 keys); find the value of one key placed at five positions (001 §4), "
            "scored by exact match on the value; 50 keys.",
            task="kv",
            lengths=(75,),
            repeats=50,
            layout=QuestionPlacement.QUESTION_AFTER,
            why="The key after the pairs, as in 001 §4: with the key before and after (query-aware) models find "
            "it almost perfectly (001 §5.2), so the task would measure nothing.",
        ),
        Preset(
            "reprompt-interval",
            "Reprompt interval",
            "R&R with reminders every 5k, 10k and 20k tokens against the baseline and question last (000 Table 5).",
            series=("baseline", "question-last", "rr:k=10000", "rr:k=5000", "rr:k=20000"),
            repeats=50,
            primary=("rr:k=10000", "baseline"),
        ),
        Preset(
            "chunk-size",
            "Chunk size",
            "Chunked R&R with chunks of 10k, 20k, 40k and 80k tokens (000 Table 3) against the baseline: "
            "accuracy against calls and cost.",
            series=(
                "baseline",
                "chunked-rr:c=20000",
                "chunked-rr:c=10000",
                "chunked-rr:c=40000",
                "chunked-rr:c=80000",
            ),
            repeats=50,
            primary=("chunked-rr:c=20000", "baseline"),
        ),
        Preset(
            "ablations",
            "Reminder ablations",
            "What the reminder says and where it goes (000 Table 6): full reminders every k, tags only, "
            "all at the beginning, one before the answer only (an oracle: it is told the answer's page), against "
            "the baseline and the cheap baselines.",
            series=(
                "baseline",
                "question-last",
                "repeat",
                "reprompt",
                "reprompt:style=tags-only",
                "reprompt:placement=beginning",
                "reprompt-before-answer",
            ),
            repeats=50,
            primary=("reprompt", "baseline"),
        ),
        Preset(
            "cache-aware",
            "Cache-aware layout against the paper's",
            "Reprompting and R&R as the paper lays them out (the question in the instructions before the "
            "document and in every reminder) against the same methods in the cache-aware layout (tags-only "
            "reminders, the question only after the document), with the baseline and question last, on the "
            "same trials. The cache-aware layout is the paper's tags-only ablation (000 Table 6) with the "
            "question last, not the paper's R&R: this measures what it costs in accuracy.",
            series=(
                "baseline",
                "question-last",
                "reprompt",
                "reprompt:layout=cache-aware",
                "rr",
                "rr:layout=cache-aware",
            ),
            repeats=50,
            why="Instructions before and after the document, as the R&R paper lays out every prompt (000 §3.1), "
            "so the paper's methods are measured as published; the cache-aware series name their own layout. "
            "In it everything before the question is the same for every question over a document, so the "
            "providers' prompt caches bill it once at the full rate and then at a tenth (Anthropic) or less.",
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
