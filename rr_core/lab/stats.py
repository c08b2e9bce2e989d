"""The Lab's numbers: per-trial scores, cells with intervals that respect clustering, paired
comparisons between methods, effective length, the failure split and the cost–accuracy
frontier (METHOD.md §11, §13). Pure.

Trials are clustered: a preset asks few questions (two planted facts, five QA items) at many
depths and lengths, and the trials of one question are not independent (a hard question is
wrong everywhere). Every interval here treats the question as the unit (``clustered_wilson``,
``paired_interval``), every cell says how many trials and distinct questions it holds, and a
difference between two methods is only called a difference when its interval excludes 0 *and*
McNemar's exact test over the questions gives p < 0.05 (``VERDICT_ALPHA``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from rr_core.metrics import best_subspan_em, fuzzy_match, page_accuracy, page_recall, paper_match

Z95 = 1.959964
VERDICT_ALPHA = 0.05  # a difference is claimed only below this McNemar p (and an interval without 0)


def points_text(difference: float) -> str:
    """A difference in accuracy (−1 … 1) as signed percentage points: whole points, but never
    a nonzero value shown as ``+0``: one decimal under half a point, two significant digits
    under 0.05 points (``+0.3``, ``-0.012``)."""
    value = difference * 100
    size = abs(value)
    if size >= 0.5 or value == 0:
        return f"{value:+.0f}"
    return f"{value:+.1f}" if size >= 0.05 else f"{value:+.2g}"


def percent(share: float | None) -> str:
    """A share as a whole percentage, or ``n/a`` when nothing was counted."""
    return "n/a" if share is None else f"{share:.0%}"


def percent_range(share: float | None, interval: tuple[float, float]) -> str:
    """``34–100%``-style interval text (``34%–100%``), ``n/a`` when nothing was counted."""
    return "n/a" if share is None else f"{interval[0]:.0%}–{interval[1]:.0%}"


def wilson(successes: float, trials: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) with no trials.
    ``successes`` may be fractional (an effective count, see ``clustered_wilson``)."""
    if trials <= 0:
        return 0.0, 1.0
    p = min(max(successes / trials, 0.0), 1.0)
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def clustered_wilson(correct: int, trials: int, questions: int) -> tuple[float, float]:
    """The 95% interval of an accuracy whose trials share questions: the Wilson interval of
    the observed accuracy with the number of distinct questions as its sample size.

    Why: the trials of one question (one planted fact at five depths, one QA item at five
    positions) are correlated, so the sweep holds between ``questions`` and ``trials``
    independent observations — Kish's design effect ``1 + (trials/questions − 1)·ρ`` spans
    exactly that range as the intra-question correlation ρ goes from 0 to 1. The presets ask
    two to five questions, too few to estimate ρ, so this takes the worst case ρ = 1. The
    alternative, a bootstrap over questions, fails where the Lab lives: two facts give three
    distinct resamples, and when both facts agree it returns a zero-width interval (100% ±
    0 from two facts). Wilson stays honest at one question and at 0% or 100%.

    When every trial asks its own question this is the ordinary Wilson interval; when every
    question has the same number of trials (every preset's grid) it is the Wilson interval of
    the question-level mean accuracy over ``questions`` observations.
    """
    m = min(questions, trials)
    if trials <= 0 or m <= 0:
        return 0.0, 1.0
    return wilson(correct / trials * m, m)


def mcnemar_exact(wins: int, losses: int) -> float:
    """McNemar's exact test (two-sided): the probability, if neither side is better, of a
    split of the ``wins + losses`` discordant pairs at least as uneven as this one
    (binomial with p = ½). 1.0 with no discordant pair."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_interval(
    both: float, first_only: float, second_only: float, neither: float, *, effective: float | None = None
) -> tuple[float, float]:
    """95% interval of the difference first − second of two accuracies measured on the same
    trials: Newcombe's paired score interval (Newcombe 1998, method 10), the two Wilson
    intervals combined with the pairs' correlation φ. The four counts are the paired table
    (both right, only the first right, only the second right, neither). ``effective`` is the
    sample size the Wilson intervals use: the number of distinct questions for clustered
    trials (as in ``clustered_wilson``), the number of pairs by default.

    φ is Newcombe's corrected one, not the raw correlation: with ``N`` pairs, the numerator
    ``AD − BC`` loses ``N/2`` when it exceeds ``N/2``, is 0 when it lies in [0, N/2], and is
    kept when negative. A positive φ narrows the interval, and the raw φ narrows it too much
    (on (3, 3, 0, 4) it gives +0.015 to +0.508, Newcombe's gives −0.047 to +0.551). With an
    ``effective`` size below ``N`` the correction is applied to the table scaled to that
    size (the counts times ``effective / N``), so fewer independent questions widen it."""
    n = both + first_only + second_only + neither
    if n <= 0:
        return -1.0, 1.0
    m = n if effective is None else min(effective, n)
    p1 = (both + first_only) / n
    p2 = (both + second_only) / n
    l1, u1 = wilson(p1 * m, m)
    l2, u2 = wilson(p2 * m, m)
    phi = newcombe_phi(*(count * m / n for count in (both, first_only, second_only, neither)))
    below = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    above = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    difference = p1 - p2
    return max(-1.0, difference - below), min(1.0, difference + above)


def newcombe_phi(both: float, first_only: float, second_only: float, neither: float) -> float:
    """Newcombe's corrected correlation of a paired table (method 10): the numerator
    ``AD − BC`` is reduced by ``N/2`` when above ``N/2``, set to 0 in [0, N/2], kept when
    negative; 0 when a margin is empty."""
    n = both + first_only + second_only + neither
    margins = (both + first_only) * (second_only + neither) * (both + second_only) * (first_only + neither)
    if margins <= 0:
        return 0.0
    cross = both * neither - first_only * second_only
    corrected = cross - n / 2 if cross > n / 2 else 0.0 if cross >= 0 else cross
    return corrected / math.sqrt(margins)


@dataclass(frozen=True, slots=True)
class Score:
    """How one run did on one trial."""

    series: str  # the method at its settings, e.g. "R&R (k = 10,000 · N = 5)"
    method: str
    length: int
    depth: float
    trial: str
    question_id: str
    correct: bool  # fuzzy match (000 §4.3)
    em: bool  # best-subspan exact match (001)
    retrieves: bool  # the method picks pages before answering
    recalled: bool  # the gold page was among the pages it picked (or read)
    cited_gold: bool  # the cited page is the gold page
    cost_usd: float  # what the method's calls cost (compare methods by this)
    calls: int
    input_tokens: int
    output_tokens: int
    failed: bool = False  # the run failed (provider error): not counted, unless ``failures_count``
    repeat: int = 0
    answer: str = ""
    cited: int | None = None
    retrieved: tuple[int, ...] = ()
    tokens_after: int = 0  # tokens from the answer's page to the end of the document
    job: int = -1  # the job's position in its sweep plan
    error: str = ""
    paid_usd: float = 0.0  # what this sweep paid for them (calls already made, free engines: 0)
    would_cost_usd: float = 0.0  # what its new calls cost at the price, paid or not
    built_tokens: int = 0  # the tokens of the document built (``length`` is the one asked for)
    gold_depth: float = 0.0  # where the answer really sits, percent (``depth`` is the one asked for)
    # The temperatures its calls that came back were sent with, each once in call order (None:
    # none sent, the provider's default).
    temperatures: tuple[float | None, ...] = ()
    # The reference metric of the paper's Table 1 (``metrics.paper_match``), beside ``correct``.
    paper_correct: bool = False
    # The paper's protocol: a failed run is counted, as wrong (the reference code scores it 0).
    failures_count: bool = False
    protocol: str = "json"  # the prompt protocol that made the run (``settings.PromptProtocol``)

    @property
    def counted(self) -> bool:
        """Whether the run is in its cell's denominator: every run that did not fail, and a
        failed one where failures count as wrong (the paper's protocol)."""
        return not self.failed or self.failures_count


def score(
    *,
    series: str,
    method: str,
    length: int,
    depth: float,
    trial: str,
    question_id: str,
    answer: str | None,
    answers: Sequence[str],
    gold_pages: Sequence[int],
    retrieved: Sequence[int],
    cited: int | None,
    retrieves: bool,
    cost_usd: float,
    calls: int,
    input_tokens: int,
    output_tokens: int,
    failed: bool,
    paid_usd: float = 0.0,
    exact: bool = False,
    repeat: int = 0,
    tokens_after: int = 0,
    job: int = -1,
    error: str = "",
    would_cost_usd: float = 0.0,
    built_tokens: int = 0,
    gold_depth: float | None = None,
    protocol: str = "json",
) -> Score:
    """One run on one trial, scored: right by fuzzy match, or by exact match where the trial
    says so (a key–value value must come back whole)."""
    text = answer or "n/a"
    gold = gold_pages[0] if gold_pages else -1
    em = bool(best_subspan_em(text, answers)) and not failed
    # The reference metric: the value itself for key-value retrieval, as the strict one.
    paper = em if exact else bool(paper_match(text, answers)) and not failed
    return Score(
        series=series,
        method=method,
        length=length,
        depth=depth,
        trial=trial,
        question_id=question_id,
        correct=em if exact else bool(fuzzy_match(text, answers)) and not failed,
        em=em,
        retrieves=retrieves,
        recalled=any(page_recall(retrieved, g) for g in gold_pages) if retrieved else False,
        cited_gold=bool(page_accuracy(cited, gold)),
        cost_usd=cost_usd,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        failed=failed,
        paid_usd=paid_usd,
        repeat=repeat,
        answer=answer or "",
        cited=cited,
        retrieved=tuple(retrieved),
        tokens_after=tokens_after,
        job=job,
        error=error,
        would_cost_usd=would_cost_usd,
        built_tokens=built_tokens,
        gold_depth=depth if gold_depth is None else gold_depth,
        paper_correct=paper,
        failures_count=protocol == "paper",
        protocol=protocol,
    )


@dataclass(slots=True)
class Cell:
    """All trials of one series at one length and depth."""

    series: str
    method: str
    length: int
    depth: float
    trials: int = 0
    correct: int = 0
    paper_correct: int = 0  # right by the reference metric of the paper's Table 1
    em: int = 0
    recalled: int = 0
    cited_gold: int = 0
    retrieval_misses: int = 0
    reading_misses: int = 0
    failed: int = 0
    cost_usd: float = 0.0
    tokens_after: int = 0  # summed over the counted trials (``distance`` is the mean)
    built_tokens: int = 0  # summed over the counted trials (``tokens`` is the mean)
    gold_depths: float = 0.0  # summed over the counted trials (``actual_depth`` is the mean)
    question_ids: set[str] = field(default_factory=set)

    @property
    def questions(self) -> int:
        """Distinct questions (facts, QA items, keys) among the counted trials."""
        return len(self.question_ids)

    @property
    def accuracy(self) -> float | None:
        """Share answered right (fuzzy match); None when no trial was counted (every run
        failed): shown "n/a", never 0%."""
        return self.correct / self.trials if self.trials else None

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval of the accuracy, the question as the unit (``clustered_wilson``)."""
        return clustered_wilson(self.correct, self.trials, self.questions)

    @property
    def distance(self) -> float:
        """Mean tokens from the answer to the end of the document."""
        return self.tokens_after / self.trials if self.trials else 0.0

    @property
    def tokens(self) -> float:
        """Mean tokens of the documents built for this cell (``length`` is the one asked for)."""
        return self.built_tokens / self.trials if self.trials else 0.0

    @property
    def actual_depth(self) -> float:
        """Mean depth at which the answer really sat, percent (``depth`` is the one asked for)."""
        return self.gold_depths / self.trials if self.trials else self.depth

    def n_text(self) -> str:
        """What the cell counts, in words: ``2 questions × 2 repeats`` (``5 trials, 3
        questions`` when questions were asked unevenly)."""
        q = self.questions
        if not self.trials or not q:
            return "no trial counted"
        if self.trials % q == 0:
            each = self.trials // q
            return f"{_questions(q)} × {each} repeat{'s' if each != 1 else ''}"
        return f"{self.trials} trials, {_questions(q)}"

    def as_dict(self) -> dict[str, object]:
        """The JSON shape scripts read (depth in percent, length in tokens): the cell is named
        by the length and depth asked for; ``built_tokens`` and ``gold_depth`` say what was built."""
        low, high = self.interval
        accuracy = self.accuracy
        return {
            "method": self.series,
            "method_name": self.method,
            "length": self.length,
            "depth": self.depth,
            "built_tokens": round(self.tokens),
            "gold_depth": round(self.actual_depth, 1),
            "trials": self.trials,
            "questions": self.questions,
            "correct": self.correct,
            "accuracy": None if accuracy is None else round(accuracy, 4),
            "accuracy_paper_metric": round(self.paper_correct / self.trials, 4) if self.trials else None,
            "ci_low": None if accuracy is None else round(low, 4),
            "ci_high": None if accuracy is None else round(high, 4),
            "exact_match": self.em,
            "page_recall": self.recalled,
            "page_accuracy": self.cited_gold,
            "retrieval_misses": self.retrieval_misses,
            "reading_misses": self.reading_misses,
            "failed": self.failed,
            "tokens_to_end": round(self.distance),
            "cost_usd": round(self.cost_usd, 6),
        }


def cells(scores: Iterable[Score]) -> list[Cell]:
    """Scores grouped into cells (series × length × depth), in first-seen series order."""
    grouped: dict[tuple[str, int, float], Cell] = {}
    for s in scores:
        key = (s.series, s.length, s.depth)
        cell = grouped.get(key)
        if cell is None:
            cell = grouped[key] = Cell(s.series, s.method, s.length, s.depth)
        cell.cost_usd += s.cost_usd
        if s.failed:
            cell.failed += 1
        if not s.counted:
            continue
        cell.trials += 1
        cell.question_ids.add(s.question_id)
        cell.tokens_after += s.tokens_after
        cell.built_tokens += s.built_tokens
        cell.gold_depths += s.gold_depth
        cell.correct += s.correct
        cell.paper_correct += s.paper_correct
        cell.em += s.em
        cell.recalled += s.recalled
        cell.cited_gold += s.cited_gold
        if not s.correct and not s.failed:  # a failed run counted as wrong is no miss of either kind
            if s.retrieves and not s.recalled:
                cell.retrieval_misses += 1
            else:
                cell.reading_misses += 1
    order = {series: i for i, series in enumerate(dict.fromkeys(k[0] for k in grouped))}
    return sorted(grouped.values(), key=lambda c: (order[c.series], c.length, c.depth))


@dataclass(frozen=True, slots=True)
class Point:
    """One series' accuracy at one x (a depth, or a distance to the end), over the trials there."""

    series: str
    x: float
    trials: int
    correct: int
    questions: int

    @property
    def accuracy(self) -> float:
        """Share answered right."""
        return self.correct / self.trials if self.trials else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval, the question as the unit."""
        return clustered_wilson(self.correct, self.trials, self.questions)


def _points(
    scores: Iterable[Score], key: Callable[[Score], object], x: Callable[[list[Score]], float]
) -> list[Point]:
    groups: dict[tuple[str, object], list[Score]] = defaultdict(list)
    for s in scores:
        if s.counted:
            groups[(s.series, key(s))].append(s)
    order = {series: i for i, series in enumerate(dict.fromkeys(k[0] for k in groups))}
    points = [
        Point(series, x(rows), len(rows), sum(r.correct for r in rows), len({r.question_id for r in rows}))
        for (series, _), rows in groups.items()
    ]
    return sorted(points, key=lambda p: (order[p.series], p.x))


def by_depth(scores: Iterable[Score]) -> list[Point]:
    """Accuracy per series and depth, over every length."""
    return _points(scores, lambda s: s.depth, lambda rows: rows[0].depth)


def by_distance(scores: Iterable[Score], bins: int = 6) -> list[Point]:
    """Accuracy per series against the tokens between the answer and the end of the document.
    One point per length × depth where there are at most ``bins`` of them; otherwise the
    distances are grouped into ``bins`` log-spaced bins (a point sits at its trials' mean
    distance), so a grid of many lengths and depths still draws a readable curve."""
    counted = [s for s in scores if s.counted]
    if len({(s.length, s.depth) for s in counted}) <= bins:
        return _points(
            counted,
            lambda s: (s.length, s.depth),
            lambda rows: sum(r.tokens_after for r in rows) / len(rows),
        )
    logs = [math.log10(max(s.tokens_after, 1)) for s in counted]
    low, high = min(logs), max(logs)
    width = (high - low) / bins or 1.0

    def bin_of(s: Score) -> int:
        return min(int((math.log10(max(s.tokens_after, 1)) - low) / width), bins - 1)

    return _points(counted, bin_of, lambda rows: sum(r.tokens_after for r in rows) / len(rows))


# ---- Effective length ----------------------------------------------------------------------

EFFECTIVE_KEEP = 0.85
EFFECTIVE_MARGIN = 0.20
EFFECTIVE_RULE = (
    "Effective length: the longest length up to which a method keeps at least 85% of its accuracy at the "
    "shortest length, counted only when the lower end of that accuracy's 95% interval (question as the "
    "unit) is at least 20 points above closed-book, or at least 20% when closed-book was not measured "
    "(otherwise 'not reached': a method poor everywhere, or measured on too few questions to tell, has "
    "none); '≥' when it held at the longest length measured. Shown only when more than one length was "
    "measured."
)


@dataclass(frozen=True, slots=True)
class EffectiveLength:
    """A series' effective length (NoLiMa's, with a floor), and what it was measured against."""

    length: int | None  # None: not reached (or a single length)
    lengths: int  # how many lengths were measured
    base: float  # accuracy at the shortest length
    floor: float  # the base's lower 95% bound must reach this: closed-book (or 0) + 20 points
    held_to_longest: bool = False  # kept ≥ 85% at every length measured
    base_low: float = 0.0  # the lower end of the base's 95% interval (question as the unit)

    @property
    def measured(self) -> bool:
        """More than one length: the number means something."""
        return self.lengths > 1

    def text(self) -> str:
        """``40,000``, ``≥ 80,000``, ``not reached`` or ``—`` (one length)."""
        if not self.measured:
            return "—"
        if self.length is None:
            return "not reached"
        return f"≥ {self.length:,}" if self.held_to_longest else f"{self.length:,}"

    def why(self) -> str:
        """What the number was checked against: ``shortest length 90% (95% interval from 66%),
        floor 20%``."""
        return (
            f"shortest length {self.base:.0%} (95% interval from {self.base_low:.0%}), floor {self.floor:.0%}"
        )


def effective_length(
    by_length: dict[int, float],
    *,
    base_low: float,
    closed_book: float | None = None,
    keep: float = EFFECTIVE_KEEP,
    margin: float = EFFECTIVE_MARGIN,
) -> EffectiveLength:
    """The longest length up to which the accuracy stays ≥ ``keep`` × the shortest length's,
    provided the lower end of the shortest length's 95% interval (``base_low``) is at least
    ``closed_book + margin`` — closed-book taken as 0 when it was not measured. Comparing the
    bound, not the point estimate, keeps a method poor everywhere (20% at every length over a
    closed-book 0%) or measured on too few questions from an effective length (METHOD.md §13)."""
    lengths = sorted(by_length)
    floor = (closed_book or 0.0) + margin
    if not lengths:
        return EffectiveLength(None, 0, 0.0, floor, base_low=base_low)
    base = by_length[lengths[0]]
    if len(lengths) < 2 or base_low < floor - 1e-12 or base <= 0:
        return EffectiveLength(None, len(lengths), base, floor, base_low=base_low)
    longest = lengths[0]
    for length in lengths:
        if by_length[length] < keep * base - 1e-12:
            break
        longest = length
    return EffectiveLength(
        longest, len(lengths), base, floor, held_to_longest=longest == lengths[-1], base_low=base_low
    )


# ---- Series and paired comparisons -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeriesSummary:
    """One series over the whole sweep: accuracy, cost, effective length, failure split."""

    series: str
    method: str
    trials: int
    accuracy: float | None  # None: no trial counted (every run failed), shown "n/a"
    ci: tuple[float, float]
    cost_usd: float
    calls_per_trial: float
    input_per_trial: float
    output_per_trial: float
    effective: EffectiveLength | None
    retrieval_misses: int
    reading_misses: int
    on_frontier: bool = False
    by_length: dict[int, float] = field(default_factory=dict)
    questions: int = 0
    retrieves: bool = False  # the method picks pages first: the failure split applies
    # Share right by the reference metric of the paper's Table 1 (None: no trial counted).
    paper_accuracy: float | None = None

    @property
    def effective_length(self) -> int | None:
        """The effective length in tokens, where one was reached over several lengths."""
        return self.effective.length if self.effective is not None and self.effective.measured else None


def summarise(scores: Sequence[Score], *, closed_book: float | None = None) -> list[SeriesSummary]:
    """One summary per series, with the cost–accuracy frontier marked. ``closed_book`` is
    the closed-book accuracy the effective length's floor is set from (0 when not measured:
    the floor is then 20%)."""
    by_series: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        by_series[s.series].append(s)
    out: list[SeriesSummary] = []
    for series, rows in by_series.items():
        counted = [r for r in rows if r.counted]
        correct = sum(r.correct for r in counted)
        questions = len({r.question_id for r in counted})
        per_length: dict[int, list[Score]] = defaultdict(list)
        for r in counted:
            per_length[r.length].append(r)
        by_length = {length: sum(r.correct for r in v) / len(v) for length, v in sorted(per_length.items())}
        shortest = per_length[min(per_length)] if per_length else []
        base_low = clustered_wilson(
            sum(r.correct for r in shortest), len(shortest), len({r.question_id for r in shortest})
        )[0]
        n = max(len(counted), 1)
        wrong = [r for r in counted if not r.correct and not r.failed]
        out.append(
            SeriesSummary(
                series=series,
                method=rows[0].method,
                trials=len(counted),
                accuracy=correct / len(counted) if counted else None,
                ci=clustered_wilson(correct, len(counted), questions),
                cost_usd=sum(r.cost_usd for r in rows),
                calls_per_trial=sum(r.calls for r in counted) / n,
                input_per_trial=sum(r.input_tokens for r in counted) / n,
                output_per_trial=sum(r.output_tokens for r in counted) / n,
                effective=effective_length(by_length, base_low=base_low, closed_book=closed_book),
                retrieval_misses=sum(1 for r in wrong if r.retrieves and not r.recalled),
                reading_misses=sum(1 for r in wrong if not (r.retrieves and not r.recalled)),
                by_length=by_length,
                questions=questions,
                retrieves=rows[0].retrieves,
                paper_accuracy=sum(r.paper_correct for r in counted) / len(counted) if counted else None,
            )
        )

    # The frontier: no other series scored at least as high for less (point estimates). A
    # series with no counted trial has no accuracy: never on it, and it dominates nothing.
    def point(summary: SeriesSummary) -> tuple[float, float] | None:
        if summary.accuracy is None:
            return None
        return summary.accuracy, summary.cost_usd / summary.trials

    points = [(one, point(one)) for one in out]
    marked = []
    for one, mine in points:
        dominated = mine is None or any(
            other is not one
            and theirs is not None
            and theirs[0] >= mine[0]
            and theirs[1] <= mine[1]
            and (theirs[0] > mine[0] or theirs[1] < mine[1])
            for other, theirs in points
        )
        marked.append(replace(one, on_frontier=not dominated))
    return marked


@dataclass(frozen=True, slots=True)
class Comparison:
    """One series against another on the trials both answered: the difference in accuracy
    (``series`` − ``against``) with its 95% interval, the question as the unit."""

    series: str
    against: str
    trials: int  # paired trials (both runs counted)
    questions: int  # distinct questions among them
    accuracy: float  # of ``series`` on the paired trials
    against_accuracy: float
    only_series: int  # trials ``series`` got right and ``against`` wrong
    only_against: int
    ci: tuple[float, float]
    question_wins: int  # questions on which ``series`` did better on average
    question_losses: int
    p_value: float  # McNemar's exact test over those questions
    primary: bool = False  # the sweep's one primary comparison (tested at 0.05 on its own)
    # Holm-adjusted p among the sweep's other comparisons (None: not adjusted, the primary or
    # a comparison made alone); ``family``: how many comparisons share the adjustment.
    p_adjusted: float | None = None
    family: int = 1

    @property
    def p_verdict(self) -> float:
        """The p a verdict is read from: Holm-adjusted for a secondary comparison."""
        return self.p_value if self.p_adjusted is None else self.p_adjusted

    @property
    def difference(self) -> float:
        """``series`` − ``against``, in accuracy (−1 … 1)."""
        return self.accuracy - self.against_accuracy

    @property
    def excludes_zero(self) -> bool:
        """The 95% interval lies wholly above or wholly below 0."""
        low, high = self.ci
        return self.trials > 0 and (low > 0 or high < 0)

    @property
    def shown(self) -> int:
        """+1: ``series`` is shown more accurate; −1: less accurate; 0: no difference shown.
        Shown needs both the interval to exclude 0 and McNemar's exact p < 0.05: with two
        questions split 2–0 the interval can exclude 0 while p = 0.5."""
        if not self.excludes_zero or self.p_verdict >= VERDICT_ALPHA:
            return 0
        return 1 if self.ci[0] > 0 else -1

    def difference_points(self) -> str:
        """``+40 points``, ``n/a`` with no paired trial."""
        return f"{points_text(self.difference)} points" if self.trials else "n/a"

    def interval_points(self) -> str:
        """``+12 to +61``; a bound under half a point keeps a decimal (``+0.3``), so a
        verdict never prints ``+0``; ``n/a`` with no paired trial."""
        return f"{points_text(self.ci[0])} to {points_text(self.ci[1])}" if self.trials else "n/a"

    def interval_text(self) -> str:
        """``+40 points (95% interval +12 to +61)``."""
        return f"{self.difference_points()} (95% interval {self.interval_points()})"

    def p_text(self) -> str:
        """``McNemar's exact p = 0.0625 over 5 questions`` (and its Holm-adjusted value for a
        secondary comparison)."""
        held = (
            f" (Holm-adjusted over {self.family} secondary comparisons: {self.p_adjusted:.3g})"
            if self.p_adjusted is not None
            else ""
        )
        return (
            f"McNemar's exact p = {self.p_value:.3g} over {self.questions} "
            f"question{'s' if self.questions != 1 else ''}{held}"
        )

    def plain(self) -> str:
        """The comparison in an analyst's words, one sentence: what happened, and whether it
        could be chance (``plain_sentence``)."""
        return plain_sentence(self)

    def sentence(self) -> str:
        """The verdict, as the report and the screen write it: a method is said to answer
        more right than another only when the interval excludes 0 and McNemar's p < 0.05."""
        n = f"{self.trials} paired trials, {self.questions} question{'s' if self.questions != 1 else ''}"
        if self.trials == 0:
            return f"{self.series} and {self.against} share no answered trial: no comparison."
        if self.shown > 0:
            return (
                f"{self.series} answered more right than {self.against}: {self.interval_text()}, "
                f"{self.p_text()}; {n}."
            )
        if self.shown < 0:
            return (
                f"{self.series} answered fewer right than {self.against}: {self.interval_text()}, "
                f"{self.p_text()}; {n}."
            )
        if self.excludes_zero:
            return (
                f"No difference shown between {self.series} and {self.against}: {self.interval_text()} "
                f"excludes 0 but {self.p_text()} is not below {VERDICT_ALPHA:g} (a difference is claimed "
                f"only when both hold); {n}."
            )
        return (
            f"No difference shown between {self.series} and {self.against}: {self.interval_text()} "
            f"includes 0; {self.p_text()}; {n}."
        )

    def as_dict(self) -> dict[str, object]:
        """The JSON shape."""
        return {
            "method": self.series,
            "against": self.against,
            "paired_trials": self.trials,
            "questions": self.questions,
            "accuracy": round(self.accuracy, 4) if self.trials else None,
            "against_accuracy": round(self.against_accuracy, 4) if self.trials else None,
            "difference": round(self.difference, 4) if self.trials else None,
            "ci_low": round(self.ci[0], 4) if self.trials else None,
            "ci_high": round(self.ci[1], 4) if self.trials else None,
            "only_method_right": self.only_series,
            "only_against_right": self.only_against,
            "questions_better": self.question_wins,
            "questions_worse": self.question_losses,
            "mcnemar_p_questions": round(self.p_value, 4),
            "primary": self.primary,
            "p_holm": None if self.p_adjusted is None else round(self.p_adjusted, 4),
            "difference_shown": self.shown,
            "plain": self.plain(),
            "verdict": self.sentence(),
        }


def compare(scores: Sequence[Score], series: str, against: str) -> Comparison:
    """``series`` against ``against`` on the trials both answered (paired by trial)."""
    mine = {s.trial: s for s in scores if s.series == series and s.counted}
    theirs = {s.trial: s for s in scores if s.series == against and s.counted}
    shared = [t for t in mine if t in theirs]
    table = [0, 0, 0, 0]  # both, only series, only against, neither
    per_question: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # trials, series, against
    for t in shared:
        a, b = mine[t].correct, theirs[t].correct
        table[0 if a and b else 1 if a else 2 if b else 3] += 1
        q = per_question[mine[t].question_id]
        q[0] += 1
        q[1] += a
        q[2] += b
    n = len(shared)
    wins = sum(1 for _, a, b in per_question.values() if a > b)
    losses = sum(1 for _, a, b in per_question.values() if a < b)
    return Comparison(
        series=series,
        against=against,
        trials=n,
        questions=len(per_question),
        accuracy=(table[0] + table[1]) / n if n else 0.0,
        against_accuracy=(table[0] + table[2]) / n if n else 0.0,
        only_series=table[1],
        only_against=table[2],
        ci=paired_interval(*table, effective=len(per_question)) if n else (-1.0, 1.0),
        question_wins=wins,
        question_losses=losses,
        p_value=mcnemar_exact(wins, losses),
    )


def comparisons(scores: Sequence[Score]) -> list[Comparison]:
    """Every series against every series before it (the first is usually the baseline), the
    primary comparison first (``primary_pair``) and the others Holm-adjusted (``holm``)."""
    names = list(dict.fromkeys(s.series for s in scores))
    made = [compare(scores, later, earlier) for j, later in enumerate(names) for earlier in names[:j]]
    methods = {s.series: s.method for s in scores}
    return adjust(made, primary_pair([(name, methods[name]) for name in names]))


# ---- One primary comparison, the others Holm-adjusted ------------------------------------------

# The method a sweep's primary comparison measures, in order of preference, against Baseline:
# R&R (000), else chunked R&R, else reprompting (the ablations preset has no R&R).
PRIMARY_METHODS = ("rr", "chunked-rr", "reprompt")
PRIMARY_AGAINST = "baseline"
PRIMARY_RULE = (
    "One comparison is primary: the first R&R series against Baseline (chunked R&R, or reprompting, where "
    "the sweep has no R&R), tested at p < 0.05 on its own. Every other comparison is secondary: its "
    "McNemar p is adjusted with Holm's method over the secondary comparisons before a difference is claimed."
)


def primary_pair(series: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The primary comparison among ``(series, method)`` pairs, in sweep order: the first
    series of the first method of ``PRIMARY_METHODS`` present, against the first Baseline
    series; None when the sweep has no such pair."""
    against = next((name for name, method in series if method == PRIMARY_AGAINST), None)
    if against is None:
        return None
    for wanted in PRIMARY_METHODS:
        found = next((name for name, method in series if method == wanted), None)
        if found is not None:
            return found, against
    return None


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``m`` p-values, in their input order: sorted ascending,
    the i-th smallest (1-based) becomes ``max over j ≤ i of min(1, (m − j + 1) · p_(j))``.
    A hypothesis is rejected at level α when its adjusted p is below α."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def adjust(made: Sequence[Comparison], primary: tuple[str, str] | None) -> list[Comparison]:
    """The comparisons with the primary one first (marked, p unadjusted) and the others
    Holm-adjusted among themselves (a primary pair asked the other way round is flipped)."""
    first: Comparison | None = None
    rest: list[Comparison] = []
    for c in made:
        if primary is not None and (c.series, c.against) == primary:
            first = replace(c, primary=True)
        elif primary is not None and (c.against, c.series) == primary:
            first = replace(flipped(c), primary=True)
        else:
            rest.append(c)
    if len(rest) > 1 or (rest and first is not None):
        rest = [
            replace(c, p_adjusted=p, family=len(rest))
            for c, p in zip(rest, holm([c.p_value for c in rest]), strict=True)
        ]
    return ([first] if first is not None else []) + rest


def flipped(c: Comparison) -> Comparison:
    """The same comparison read the other way round (``against`` − ``series``)."""
    return replace(
        c,
        series=c.against,
        against=c.series,
        accuracy=c.against_accuracy,
        against_accuracy=c.accuracy,
        only_series=c.only_against,
        only_against=c.only_series,
        ci=(-c.ci[1], -c.ci[0]),
        question_wins=c.question_losses,
        question_losses=c.question_wins,
    )


# ---- Plain words -----------------------------------------------------------------------------


def smallest_p(questions: int) -> float:
    """The smallest two-sided p McNemar's exact test can give over ``questions`` questions
    (all of them going one way): ``2 / 2**n``, capped at 1."""
    return min(1.0, 2 / 2**questions) if questions > 0 else 1.0


def _questions(n: int) -> str:
    return f"{n} question{'s' if n != 1 else ''}"


def _p(value: float) -> str:
    return f"p = {value:.2g}" if value >= 0.001 else "p < 0.001"


def plain_sentence(c: Comparison) -> str:
    """One sentence an analyst reads: "R&R answered 47 points more questions right than
    Baseline on this document; unlikely to be chance (p = 0.03, 10 questions)." A sweep too
    small to ever show a difference says so ("with 5 questions even +100 points could not be
    told from chance")."""
    if c.trials == 0:
        return f"{c.series} and {c.against} were never both answered on one trial: nothing to compare."
    points = abs(round(c.difference * 100))
    held = f"{_p(c.p_verdict)}, {_questions(c.questions)}"
    if c.p_adjusted is not None:
        held = f"{_p(c.p_verdict)} after adjusting for {c.family} comparisons, {_questions(c.questions)}"
    if smallest_p(c.questions) >= VERDICT_ALPHA:
        return (
            f"{c.series} against {c.against}: no difference shown: with {_questions(c.questions)} even "
            f"{'+' if c.difference >= 0 else '-'}100 points could not be told from chance."
        )
    if c.shown:
        way = "more" if c.shown > 0 else "fewer"
        return (
            f"{c.series} answered {points} points {way} questions right than {c.against} on this document; "
            f"unlikely to be chance ({held})."
        )
    if points == 0:
        return f"{c.series} and {c.against} answered the same share right ({held})."
    way = "more" if c.difference > 0 else "fewer"
    return (
        f"{c.series} answered {points} points {way} questions right than {c.against}, but that could be "
        f"chance ({held}): no difference shown."
    )


# ---- The smallest difference a sweep can detect ------------------------------------------------

Z_POWER80 = 0.841621  # the standard normal's 80th percentile
# The share of questions on which the compared method does worse than the other (the
# discordant pairs going "the wrong way"), assumed when planning: with none, the McNemar
# design is at its most optimistic.
REVERSE_DISCORDANT = 0.05
MDD_RULE = (
    "Smallest detectable difference: the smallest gain in accuracy (points, over the questions) that "
    "McNemar's test at p < 0.05, two-sided, finds 4 times in 5 (80% power) with this many questions — "
    "Connor's (1987) sample size for paired proportions, n = (1.96·√ψ + 0.84·√(ψ − δ²))² / δ², solved "
    "for δ, assuming the compared method is worse on 5% of questions (ψ = δ + 2 × 5% discordant). Below "
    "6 questions McNemar's exact test can never reach p < 0.05, so no difference can be shown at all."
)


def connor_n(delta: float, reverse: float = REVERSE_DISCORDANT) -> float:
    """Questions needed to detect a paired difference ``delta`` at 80% power, two-sided α =
    0.05 (Connor 1987): ψ = δ + 2·reverse is the discordant share,
    ``n = (z_α/2·√ψ + z_β·√(ψ − δ²))² / δ²``."""
    psi = delta + 2 * reverse
    return (Z95 * math.sqrt(psi) + Z_POWER80 * math.sqrt(max(0.0, psi - delta * delta))) ** 2 / delta**2


def detectable_difference(questions: int, reverse: float = REVERSE_DISCORDANT) -> float | None:
    """The smallest difference in accuracy (0 … 1) detectable at 80% power over ``questions``
    questions (``connor_n`` solved for δ by bisection, to 0.1 point); None when none can be
    (too few questions for McNemar's exact test to reach p < 0.05, or more than the largest
    possible difference, 1 − 2·reverse, would be needed)."""
    largest = 1.0 - 2 * reverse
    if smallest_p(questions) >= VERDICT_ALPHA or connor_n(largest, reverse) > questions:
        return None
    low, high = 1e-6, largest
    while high - low > 1e-4:
        mid = (low + high) / 2
        if connor_n(mid, reverse) > questions:
            low = mid
        else:
            high = mid
    return high


def detectable_text(questions: int) -> str:
    """``With 50 questions this sweep can detect a difference of about 21 points (80% power).``"""
    found = detectable_difference(questions)
    if found is None:
        return (
            f"With {_questions(questions)} no difference can be shown: McNemar's test cannot reach p < 0.05 "
            f"{'at all' if smallest_p(questions) >= VERDICT_ALPHA else 'for any realistic gain'}; ask at least "
            "50 questions or facts."
        )
    return (
        f"With {_questions(questions)} this sweep can detect a difference of about {found * 100:.0f} points "
        "between two methods (80% power); a smaller real gain will often read 'no difference shown'."
    )
