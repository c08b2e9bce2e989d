"""The Lab's numbers: per-trial scores, cells with Wilson intervals, effective length,
the failure split and the cost–accuracy frontier (METHOD.md §11, §13). Pure."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from rr_core.metrics import best_subspan_em, fuzzy_match, page_accuracy, page_recall

Z95 = 1.959964


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) with no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


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
    retrieves: bool  # the method picked pages before answering
    recalled: bool  # the gold page was among the pages it picked (or read)
    cited_gold: bool  # the cited page is the gold page
    cost_usd: float  # what the method's calls cost (compare methods by this)
    calls: int
    input_tokens: int
    output_tokens: int
    failed: bool = False  # the run failed (provider error): not counted
    paid_usd: float = 0.0  # what this sweep paid for them (calls already made are free)


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
) -> Score:
    """One run on one trial, scored: right by fuzzy match, or by exact match where the trial
    says so (a key–value value must come back whole)."""
    text = answer or "n/a"
    gold = gold_pages[0] if gold_pages else -1
    em = bool(best_subspan_em(text, answers)) and not failed
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
    em: int = 0
    recalled: int = 0
    cited_gold: int = 0
    retrieval_misses: int = 0
    reading_misses: int = 0
    failed: int = 0
    cost_usd: float = 0.0

    @property
    def accuracy(self) -> float:
        """Share answered right (fuzzy match)."""
        return self.correct / self.trials if self.trials else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of the accuracy."""
        return wilson(self.correct, self.trials)

    def as_dict(self) -> dict[str, object]:
        """The JSON shape scripts read (depth in percent, length in tokens)."""
        low, high = self.interval
        return {
            "method": self.series,
            "method_name": self.method,
            "length": self.length,
            "depth": self.depth,
            "trials": self.trials,
            "correct": self.correct,
            "accuracy": round(self.accuracy, 4),
            "ci_low": round(low, 4),
            "ci_high": round(high, 4),
            "exact_match": self.em,
            "page_recall": self.recalled,
            "page_accuracy": self.cited_gold,
            "retrieval_misses": self.retrieval_misses,
            "reading_misses": self.reading_misses,
            "failed": self.failed,
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
            continue
        cell.trials += 1
        cell.correct += s.correct
        cell.em += s.em
        cell.recalled += s.recalled
        cell.cited_gold += s.cited_gold
        if not s.correct:
            if s.retrieves and not s.recalled:
                cell.retrieval_misses += 1
            else:
                cell.reading_misses += 1
    order = {series: i for i, series in enumerate(dict.fromkeys(k[0] for k in grouped))}
    return sorted(grouped.values(), key=lambda c: (order[c.series], c.length, c.depth))


@dataclass(frozen=True, slots=True)
class SeriesSummary:
    """One series over the whole sweep: accuracy, cost, effective length, failure split."""

    series: str
    method: str
    trials: int
    accuracy: float
    ci: tuple[float, float]
    cost_usd: float
    calls_per_trial: float
    input_per_trial: float
    output_per_trial: float
    effective_length: int | None
    retrieval_misses: int
    reading_misses: int
    on_frontier: bool = False
    by_length: dict[int, float] = field(default_factory=dict)


def effective_length(by_length: dict[int, float], keep: float = 0.85) -> int | None:
    """The longest length up to which the accuracy stays ≥ ``keep`` × the shortest length's
    (NoLiMa's definition); None when even the shortest scores 0."""
    if not by_length:
        return None
    lengths = sorted(by_length)
    base = by_length[lengths[0]]
    if base <= 0:
        return None
    longest = lengths[0]
    for length in lengths:
        if by_length[length] < keep * base:
            break
        longest = length
    return longest


def summarise(scores: Sequence[Score]) -> list[SeriesSummary]:
    """One summary per series, with the cost–accuracy frontier marked."""
    by_series: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        by_series[s.series].append(s)
    out: list[SeriesSummary] = []
    for series, rows in by_series.items():
        counted = [r for r in rows if not r.failed]
        correct = sum(r.correct for r in counted)
        per_length: dict[int, list[bool]] = defaultdict(list)
        for r in counted:
            per_length[r.length].append(r.correct)
        by_length = {length: sum(v) / len(v) for length, v in sorted(per_length.items())}
        n = max(len(counted), 1)
        wrong = [r for r in counted if not r.correct]
        out.append(
            SeriesSummary(
                series=series,
                method=rows[0].method,
                trials=len(counted),
                accuracy=correct / n if counted else 0.0,
                ci=wilson(correct, len(counted)),
                cost_usd=sum(r.cost_usd for r in rows),
                calls_per_trial=sum(r.calls for r in counted) / n,
                input_per_trial=sum(r.input_tokens for r in counted) / n,
                output_per_trial=sum(r.output_tokens for r in counted) / n,
                effective_length=effective_length(by_length),
                retrieval_misses=sum(1 for r in wrong if r.retrieves and not r.recalled),
                reading_misses=sum(1 for r in wrong if not (r.retrieves and not r.recalled)),
                by_length=by_length,
            )
        )

    # The frontier: no other series is at least as accurate for less (per-trial cost).
    def per_trial(summary: SeriesSummary) -> float:
        return summary.cost_usd / max(summary.trials, 1)

    marked = []
    for one in out:
        dominated = any(
            other is not one
            and other.accuracy >= one.accuracy
            and per_trial(other) <= per_trial(one)
            and (other.accuracy > one.accuracy or per_trial(other) < per_trial(one))
            for other in out
        )
        marked.append(replace(one, on_frontier=not dominated))
    return marked
