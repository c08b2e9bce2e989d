"""The Lab's statistics as a reviewer checks them: intervals with the question as the unit,
paired differences before any verdict, effective length against a floor, per-trial records,
each against a computation by hand."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from conftest import word_counter
from test_lab import BASE, neutral_document

from rr_core.cli import main
from rr_core.exports import md_escape
from rr_core.lab.haystacks import PageCounts, planted_trials
from rr_core.lab.report import TRIAL_COLUMNS, sweep_csv, sweep_json, sweep_markdown, trials_csv
from rr_core.lab.stats import (
    Score,
    by_depth,
    cells,
    clustered_wilson,
    compare,
    comparisons,
    effective_length,
    mcnemar_exact,
    paired_interval,
    score,
    summarise,
    wilson,
)
from rr_core.lab.sweep import plan_sweep, run_sweep
from rr_core.llm.simulated import SimulatedReader
from rr_core.methods import all_methods, parse_spec
from rr_core.runs import Executor

Z = 1.959964


def hand_wilson(p: float, n: float) -> tuple[float, float]:
    """The Wilson interval written out, for checking."""
    denom = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denom
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denom
    return centre - half, centre + half


def trial_score(series: str, question: str, depth: float, correct: bool, *, length: int = 1_000) -> Score:
    return Score(
        series=series,
        method=series.lower(),
        length=length,
        depth=depth,
        trial=f"{question}-d{length}-p{depth:g}",
        question_id=question,
        correct=correct,
        em=correct,
        retrieves=False,
        recalled=False,
        cited_gold=False,
        cost_usd=0.0,
        calls=1,
        input_tokens=100,
        output_tokens=10,
    )


DEPTHS = (0.0, 25.0, 50.0, 75.0, 100.0)


def two_facts_five_depths() -> list[Score]:
    """The quick preset's shape: two facts, each at five depths. A is right everywhere; B
    only at the ends (it loses the middle)."""
    scores = []
    for fact in ("fact-0", "fact-1"):
        for depth in DEPTHS:
            scores.append(trial_score("A", fact, depth, True))
            scores.append(trial_score("B", fact, depth, depth in (0.0, 100.0)))
    return scores


# ---- Intervals with the question as the unit ---------------------------------------------------


def test_the_clustered_interval_is_wilson_at_the_number_of_questions() -> None:
    # 20 of 30 trials right, from 2 facts: p = 2/3 with a sample size of 2, not 30.
    low, high = clustered_wilson(20, 30, 2)
    assert (low, high) == pytest.approx(hand_wilson(2 / 3, 2), abs=1e-9)
    # By hand: denominator 1 + z²/2 = 2.92074, centre 1.62704 / 2.92074 = 0.55706,
    # half-width 1.96 × √(0.11111 + 0.24009) / 2.92074 = 0.39767.
    assert low == pytest.approx(0.1594, abs=1e-4) and high == pytest.approx(0.9547, abs=1e-4)
    # Every trial its own question: the ordinary Wilson interval.
    assert clustered_wilson(7, 10, 10) == pytest.approx(wilson(7, 10))
    assert clustered_wilson(0, 0, 0) == (0.0, 1.0)


def test_a_method_right_everywhere_on_two_facts_is_not_certain() -> None:
    """Ten trials right from two facts: the interval is that of 2 of 2 (lower bound 34%),
    not of 10 of 10 (72%), and never zero-width as a bootstrap over two facts would be."""
    summary = {s.series: s for s in summarise(two_facts_five_depths())}["A"]
    assert (summary.trials, summary.questions) == (10, 2)
    assert summary.ci == pytest.approx(hand_wilson(1.0, 2))
    assert summary.ci[0] == pytest.approx(0.342, abs=1e-3)
    assert summary.ci[0] < wilson(10, 10)[0] - 0.3


def test_every_cell_and_point_says_its_trials_and_questions() -> None:
    scores = two_facts_five_depths()
    grid = cells(scores)
    assert {(c.trials, c.questions) for c in grid} == {(2, 2)}
    as_json = grid[0].as_dict()
    assert as_json["trials"] == 2 and as_json["questions"] == 2
    header = sweep_csv_header(scores)
    assert "trials" in header and "questions" in header
    # One fact asked twice in one cell (two repeats of one question): one question.
    repeated = [trial_score("A", "fact-0", 50.0, True), trial_score("A", "fact-0", 50.0, False)]
    repeated[1] = Score(**{**_fields(repeated[1]), "trial": "other"})
    cell = cells(repeated)[0]
    assert (cell.trials, cell.questions) == (2, 1)
    assert cell.interval == pytest.approx(hand_wilson(0.5, 1))
    points = {p.x: p for p in by_depth(scores) if p.series == "B"}
    assert (points[50.0].trials, points[50.0].questions, points[50.0].correct) == (2, 2, 0)


def _fields(score: Score) -> dict[str, object]:
    return {name: getattr(score, name) for name in Score.__dataclass_fields__}


def sweep_csv_header(scores: list[Score]) -> list[str]:
    from rr_core.lab.sweep import SweepResult

    return sweep_csv(SweepResult(scores=scores)).splitlines()[0].split(",")


# ---- Paired comparisons ------------------------------------------------------------------------


def test_mcnemar_exact_matches_the_binomial_by_hand() -> None:
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 1) == pytest.approx(2 * (1 + 4) / 16)
    assert mcnemar_exact(1, 3) == mcnemar_exact(3, 1)
    assert mcnemar_exact(2, 2) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 2) == pytest.approx(2 * (1 + 12 + 66) / 4096)


def hand_newcombe(a: float, b: float, c: float, d: float, m: float) -> tuple[float, float]:
    """Newcombe's method 10 written out, with his corrected φ: the numerator AD − BC loses
    N/2 above N/2, is 0 in [0, N/2], is kept below 0 (on the table scaled to ``m`` pairs)."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = hand_wilson(p1, m)
    l2, u2 = hand_wilson(p2, m)
    a, b, c, d = (x * m / n for x in (a, b, c, d))
    cross = a * d - b * c
    corrected = cross - m / 2 if cross > m / 2 else 0.0 if cross >= 0 else cross
    phi = corrected / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    low = (p1 - p2) - math.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    high = (p1 - p2) + math.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return low, high


def test_the_paired_interval_is_newcombes_method_10_by_hand() -> None:
    # Both right 10, only the first 6, only the second 1, neither 3 (n = 20): AD − BC = 24 > 10,
    # so φ's numerator is 14, not 24, and the interval is wider than the raw φ's.
    a, b, c, d = 10, 6, 1, 3
    low, high = hand_newcombe(a, b, c, d, 20)
    assert paired_interval(a, b, c, d) == pytest.approx((low, high), abs=1e-12)
    assert (low, high) == pytest.approx((-0.0124, 0.4708), abs=1e-4)
    # Clustered: the same table from 4 questions uses Wilson at n = 4 and the scaled table.
    low4, high4 = hand_newcombe(a, b, c, d, 4)
    assert paired_interval(a, b, c, d, effective=4) == pytest.approx((low4, high4), abs=1e-12)
    assert low4 < low and high4 > high  # fewer independent questions: wider


def test_the_paired_interval_matches_the_published_values() -> None:
    """Reference values of Newcombe's paired interval with the corrected φ (Fagerland, Lydersen
    and Laake's implementation; Altman's Statistics with Confidence)."""
    # Newcombe 1998 Table II: AD − BC = −24 (kept) and 0 (in [0, N/2]): the correction leaves them.
    assert paired_interval(36, 12, 2, 0) == pytest.approx((0.0569, 0.3404), abs=1e-4)
    assert paired_interval(28, 4, 0, 0) == pytest.approx((-0.0060, 0.2807), abs=1e-4)
    # Cavo et al. 2012 (Fagerland et al., chapter 8): AD − BC = 4624 > N/2 = 80.5.
    assert paired_interval(59, 6, 16, 80) == pytest.approx((-0.1186, -0.0046), abs=1e-4)
    # (3, 3, 0, 4): the raw φ gave +0.015 to +0.508, a difference McNemar (p = 0.25) does not see.
    assert paired_interval(3, 3, 0, 4) == pytest.approx((-0.047, 0.551), abs=1e-3)
    assert mcnemar_exact(3, 0) == pytest.approx(0.25)


def test_a_verdict_needs_mcnemar_below_005_as_well_as_the_interval() -> None:
    """Two questions split 2–0 (A right at every depth, B wrong): the interval is +7 to +100
    but McNemar's exact p over the questions is 0.5, so no difference is claimed."""
    scores = []
    for fact in ("fact-0", "fact-1"):
        for depth in DEPTHS:
            scores.append(trial_score("A", fact, depth, True))
            scores.append(trial_score("B", fact, depth, False))
    pair = compare(scores, "A", "B")
    assert pair.ci[0] == pytest.approx(0.07, abs=0.01) and pair.ci[1] == 1.0
    assert pair.p_value == 0.5 and pair.excludes_zero and pair.shown == 0
    said = pair.sentence()
    assert said.startswith("No difference shown between A and B: +100 points (95% interval +7 to +100)")
    assert "excludes 0 but McNemar's exact p = 0.5 over 2 questions is not below 0.05" in said
    assert "more right" not in said and "fewer right" not in said
    assert pair.as_dict()["difference_shown"] == 0


def test_a_verdict_never_prints_a_bound_of_zero() -> None:
    from rr_core.lab.stats import Comparison, points_text

    pair = Comparison("A", "B", 40, 40, 0.6, 0.45, 8, 2, (0.004, 0.30), 8, 2, 0.01)
    assert pair.shown == 1
    assert pair.sentence().startswith("A answered more right than B: +15 points (95% interval +0.4 to +30)")
    assert "McNemar's exact p = 0.01 over 40 questions" in pair.sentence()
    assert points_text(-0.004) == "-0.4" and points_text(0.0002) == "+0.02" and points_text(0.0) == "+0"
    assert points_text(0.123) == "+12"


def test_two_methods_on_two_facts_show_no_difference_and_the_report_says_so() -> None:
    scores = two_facts_five_depths()
    pair = compare(scores, "A", "B")
    assert (pair.trials, pair.questions) == (10, 2)
    assert (pair.only_series, pair.only_against) == (6, 0)
    assert pair.difference == pytest.approx(0.6)
    assert pair.ci == pytest.approx(paired_interval(4, 6, 0, 0, effective=2))
    assert pair.ci[0] < 0 < pair.ci[1]
    assert (pair.question_wins, pair.question_losses) == (2, 0) and pair.p_value == 0.5
    assert pair.shown == 0
    assert pair.sentence().startswith("No difference shown between A and B: +60 points")
    assert "includes 0" in pair.sentence()
    from rr_core.lab.sweep import SweepResult

    data = sweep_json(_empty_plan(), SweepResult(scores=scores))
    # The later method against the earlier: B − A.
    assert data["comparisons"][0]["verdict"] == compare(scores, "B", "A").sentence()
    assert data["comparisons"][0]["difference"] == pytest.approx(-0.6)
    assert data["comparisons"][0]["questions"] == 2


def test_with_many_questions_the_same_gap_is_shown() -> None:
    scores = []
    for q in range(30):
        scores.append(trial_score("A", f"q{q}", 50.0, True))
        scores.append(trial_score("B", f"q{q}", 50.0, q < 10))
    pair = compare(scores, "A", "B")
    assert pair.questions == 30 and pair.ci[0] > 0
    assert pair.p_value == pytest.approx(mcnemar_exact(20, 0))
    assert pair.sentence().startswith("A answered more right than B: +67 points (95% interval +")
    assert compare(scores, "B", "A").sentence().startswith("B answered fewer right than A")


def test_no_sentence_calls_a_winner_when_the_interval_includes_zero() -> None:
    """Every table of 12 paired trials on 3 or 12 questions: a verdict only when the
    interval excludes 0 and McNemar's p < 0.05."""
    for only_a in range(0, 7):
        for only_b in range(0, 7 - only_a):
            for questions in (3, 12):
                scores = []
                for t in range(12):
                    q = f"q{t % questions}"
                    scores.append(Score(**{**_fields(trial_score("A", q, t, t < only_a)), "trial": str(t)}))
                    b_right = only_a <= t < only_a + only_b
                    scores.append(Score(**{**_fields(trial_score("B", q, t, b_right)), "trial": str(t)}))
                pair = compare(scores, "A", "B")
                low, high = pair.ci
                said = pair.sentence()
                if low <= 0 <= high or pair.p_value >= 0.05:
                    assert said.startswith("No difference shown"), said
                else:
                    assert "more right" in said or "fewer right" in said


def test_every_method_is_compared_with_every_method_before_it() -> None:
    scores = two_facts_five_depths()
    for fact in ("fact-0", "fact-1"):
        for depth in DEPTHS:
            scores.append(trial_score("C", fact, depth, False))
    assert [(c.series, c.against) for c in comparisons(scores)] == [("B", "A"), ("C", "A"), ("C", "B")]


# ---- Effective length ----------------------------------------------------------------------------


def test_effective_length_needs_a_floor_and_more_than_one_length() -> None:
    held = effective_length({10_000: 0.9, 20_000: 0.8, 40_000: 0.7, 80_000: 0.8}, base_low=0.6)
    assert held.length == 20_000 and held.text() == "20,000"
    assert effective_length({10_000: 1.0, 20_000: 1.0}, base_low=0.7).text() == "≥ 20,000"
    # 40% everywhere, closed-book 30%: 40% < 30% + 20 points, so never effective.
    bad = effective_length({20_000: 0.4, 40_000: 0.4, 80_000: 0.4}, base_low=0.3, closed_book=0.3)
    assert bad.length is None and bad.text() == "not reached" and bad.floor == pytest.approx(0.5)
    good = effective_length({20_000: 0.87, 40_000: 0.87, 80_000: 0.87}, base_low=0.6, closed_book=0.3)
    assert good.text() == "≥ 80,000"
    # The point estimate clears the floor but its interval's lower end does not: not reached.
    thin = effective_length({20_000: 0.87, 40_000: 0.87}, base_low=0.45, closed_book=0.3)
    assert thin.text() == "not reached" and "95% interval from 45%" in thin.why()
    assert effective_length({10_000: 0.0, 20_000: 0.5}, base_low=0.0).text() == "not reached"
    one = effective_length({10_000: 1.0}, base_low=0.8)
    assert not one.measured and one.text() == "—" and one.length is None
    # Closed-book not measured: the floor is 0 + 20 points.
    assert effective_length({10_000: 1.0, 20_000: 1.0}, base_low=0.5).floor == pytest.approx(0.2)


def test_a_method_poor_everywhere_has_no_effective_length() -> None:
    """ "Question last" at 20% at every length, closed-book 0%: 20% is not 20 points above
    closed-book once its interval is read (lower end 13% on 100 questions), so "not reached",
    with or without a closed-book measured; a method right on 10 of 10 questions at every
    length keeps its effective length."""
    scores = []
    for length in (21_000, 42_000, 84_000):
        for q in range(100):
            scores.append(trial_score("Question last", f"q{q}", 50.0, q % 5 == 0, length=length))
            scores.append(trial_score("Good", f"q{q}", 50.0, q < 100, length=length))
    for closed_book in (0.0, None):
        summaries = {s.series: s for s in summarise(scores, closed_book=closed_book)}
        poor = summaries["Question last"]
        assert poor.by_length[21_000] == pytest.approx(0.2)
        assert poor.effective is not None and poor.effective.text() == "not reached"
        assert poor.effective.base_low == pytest.approx(wilson(20, 100)[0])
        assert summaries["Good"].effective is not None and summaries["Good"].effective.text() == "≥ 84,000"


# ---- Cells and series with no counted trial ----------------------------------------------------


def test_a_cell_or_series_with_no_counted_trial_reads_n_a_and_is_never_on_the_frontier() -> None:
    from rr_core.lab.sweep import SweepResult

    scores = [trial_score("A", f"q{q}", 50.0, q < 3) for q in range(5)]
    for q in range(5):  # B failed every run: free, and "0%" would be a lie
        scores.append(Score(**{**_fields(trial_score("B", f"q{q}", 50.0, False)), "failed": True}))
    cell_b = next(c for c in cells(scores) if c.series == "B")
    assert cell_b.trials == 0 and cell_b.accuracy is None
    assert cell_b.as_dict()["accuracy"] is None and cell_b.as_dict()["ci_low"] is None
    summaries = {s.series: s for s in summarise(scores)}
    assert summaries["B"].accuracy is None and not summaries["B"].on_frontier
    assert summaries["A"].on_frontier  # B, with no accuracy and no cost, dominates nothing
    result = SweepResult(scores=scores)
    data = sweep_json(_empty_plan(), result)
    b = next(s for s in data["series"] if s["method"] == "B")
    assert b["accuracy"] is None and b["ci_low"] is None and b["on_cost_accuracy_frontier"] is False
    assert next(c for c in data["cells"] if c["method"] == "B")["accuracy"] is None
    report = sweep_markdown(_empty_plan(), result, title="t", engine="e", document="d")
    rows = [line for line in report.splitlines() if line.startswith("| B |")]
    # the accuracy table, the strict-and-reference table, the paired differences, the cells
    assert len(rows) == 4 and all("| n/a | n/a |" in line for line in rows), rows
    assert "share no answered trial" in report and data["comparisons"][0]["difference"] is None
    csv_b = [r for r in csv.DictReader(io.StringIO(sweep_csv(result))) if r["method"] == "B"]
    assert csv_b and csv_b[0]["accuracy"] == "" and csv_b[0]["ci_low"] == ""  # empty, not 0.0
    assert "0%–100%" not in report


def test_the_cli_prints_n_a_for_a_method_with_no_counted_trial(capsys: pytest.CaptureFixture[str]) -> None:
    from rr_core.cli import _print_table
    from rr_core.lab.sweep import SweepResult

    scores = [trial_score("A", "q0", 50.0, True)]
    scores.append(Score(**{**_fields(trial_score("B", "q0", 50.0, False)), "failed": True}))
    context = {"task": "planted", "preset": "quick", "file": "d", "layout": "x", "layout_why": "y"}
    _print_table("lab", sweep_json(_empty_plan(), SweepResult(scores=scores), context=context))
    line = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("B  "))
    assert "n/a [n/a] 0 trials" in line and "0%" not in line


# ---- A sweep end to end: records, report, charts' data ----------------------------------------


def _empty_plan():  # type: ignore[no-untyped-def]
    counter = word_counter()
    trials = planted_trials(
        neutral_document(pages=8, words_per_page=100),
        PageCounts(counter),
        lengths=(400,),
        depths=(0,),
        repeats=1,
    )
    return plan_sweep(trials, [parse_spec("baseline", BASE)], counter, bounds=False)


def small_sweep():  # type: ignore[no-untyped-def]
    counter = word_counter()
    document = neutral_document()
    trials = planted_trials(
        document, PageCounts(counter), lengths=(4_000, 8_000), depths=(0, 50, 100), repeats=2, seed=3
    )
    series = [parse_spec(s, BASE) for s in ("baseline", "rr:k=1000")]
    plan = plan_sweep(trials, series, counter)
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=2) as executor:
        return plan, run_sweep(plan, executor)


def test_the_method_says_whether_it_retrieves() -> None:
    picking = {m.name for m in all_methods() if m.retrieves}
    assert {"icr", "rr", "chunked-icr", "chunked-rr", "rag", "briefcontext"} <= picking
    assert not picking & {"baseline", "reprompt", "closed-book", "oracle"}
    plan, result = small_sweep()
    summaries = {s.method: s for s in result.summaries}
    assert summaries["rr"].retrieves and not summaries["baseline"].retrieves
    data = sweep_json(plan, result)
    baseline = next(s for s in data["series"] if s["method_name"] == "baseline")
    assert baseline["retrieval_misses"] is None and baseline["wrong"] >= 1


def test_distance_to_the_end_is_counted_from_the_answers_page() -> None:
    plan, result = small_sweep()
    for s in result.scores:
        trial = plan.maker.build(plan.jobs[s.job].source)  # built again from the job's recipe
        gold = trial.gold_pages[0]
        assert s.tokens_after == sum(p.tokens for p in trial.document.pages[gold - 1 :])
    at_end = [s for s in result.scores if s.depth == 100.0]
    at_start = [s for s in result.scores if s.depth == 0.0]
    assert max(s.tokens_after for s in at_end) < min(s.tokens_after for s in at_start)
    points = result.by_distance
    assert len(points) == len(result.cells)  # one point per length × depth and series


def test_per_trial_records_have_one_row_per_trial_and_method() -> None:
    plan, result = small_sweep()
    text = trials_csv(
        plan, result, context={"engine": "simulated", "is_llm": 0, "seed": 3, "temperature": "n/a"}
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == TRIAL_COLUMNS
    assert len(rows) == len(plan.jobs)
    rr = [r for r in rows if r["method_spec"] == "rr:k=1000"]
    assert len(rr) == len(plan.trials)
    first = rr[0]
    trial = next(t for t in plan.trials if t.id == first["trial_id"])
    assert first["question_id"] == trial.question_id and first["question"] == trial.question
    assert first["seed"] == "3" and first["model"] == BASE.model and first["provider"] == BASE.provider
    assert first["max_output_tokens"] == str(BASE.max_output_tokens)
    assert first["correct"] in ("0", "1") and first["retrieved_pages"]
    # The records add up to the cells.
    by_cell: dict[tuple[str, str, str], int] = {}
    for r in rows:
        if r["bound"] == "0":
            key = (r["series"], r["length"], r["depth"])
            by_cell[key] = by_cell.get(key, 0) + int(r["correct"])
    assert {(c.series, str(c.length), str(c.depth)): c.correct for c in result.cells} == by_cell
    bounds = [r for r in rows if r["bound"] == "1"]
    assert {r["method_spec"] for r in bounds} == {"closed-book", "oracle"}


def test_the_report_states_n_intervals_rules_and_paired_verdicts() -> None:
    plan, result = small_sweep()
    report = sweep_markdown(plan, result, title="t", engine="simulated reader — not an LLM", document="d")
    assert "| Method | Trials | Questions | Accuracy | 95% interval | Effective length |" in report
    assert "## Paired differences" in report
    assert "question (planted fact, QA item, key) as the unit" in report
    assert "Effective length: the longest length" in report
    pair = result.comparisons[0]
    assert md_escape(pair.sentence()) in report
    if pair.ci[0] <= 0:
        assert "answered more right than" not in report and "answered fewer right than" not in report
    cell_rows = [line for line in report.splitlines() if line.startswith("| Baseline | 4,000 |")]
    assert len(cell_rows) == 3 and all("| 2 | 2 |" in line for line in cell_rows)


def test_one_length_shows_no_effective_length() -> None:
    counter = word_counter()
    trials = planted_trials(
        neutral_document(), PageCounts(counter), lengths=(4_000,), depths=(0, 100), repeats=1
    )
    plan = plan_sweep(trials, [parse_spec("baseline", BASE)], counter, bounds=False)
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=1) as executor:
        result = run_sweep(plan, executor)
    assert "Effective length" not in sweep_markdown(plan, result, title="t", engine="e", document="d")
    assert sweep_json(plan, result)["series"][0]["effective_length"] is None


def test_lab_cli_writes_the_per_trial_records(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "neutral.txt"
    path.write_text("\f".join(p.text for p in neutral_document().pages))
    out_csv = tmp_path / "trials.csv"
    args = ["lab", str(path), "--provider", "simulated", "--reach", "1500", "--methods", "baseline,rr:k=1000"]
    args += ["--lengths", "4000,8000", "--depths", "0,50,100", "--repeats", "1", "--seed", "7"]
    code = main([*args, "--trials-csv", str(out_csv)])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    # Two methods × six trials, and the two bounds once per fact (a fact per repeat, at every depth).
    assert len(rows) == 2 * 6 + 2 * 1
    assert {r["seed"] for r in rows} == {"7"} and {r["is_llm"] for r in rows} == {"0"}
    assert f"per-trial records written to {out_csv}" in out
    assert "6 trials, 1 questions" in out  # one fact (repeat), at every depth
    assert "Effective length: the longest length" in out
    # Beside each effective length: the shortest length's accuracy, its lower bound, the floor.
    assert "(shortest length " in out and "95% interval from" in out and ", floor " in out
    assert "No difference shown between R&R" in out
    code = main(["--json", *args])
    data = json.loads(capsys.readouterr().out)
    assert data["comparisons"][0]["paired_trials"] == 6
    assert {"trials", "questions", "ci_low", "ci_high"} <= set(data["cells"][0])
    code = main([*args, "--trials-csv", str(tmp_path / "missing" / "trials.csv")])
    said = capsys.readouterr().err  # checked before anything is read or sent
    assert code == 2 and "--trials-csv" in said and "cannot write there" in said and "Nothing was" in said


def test_per_trial_records_keep_a_models_formula_as_text() -> None:
    from rr_core.lab.sweep import SweepResult

    hostile = Score(**{**_fields(trial_score("A", "q0", 0.0, False)), "answer": '=HYPERLINK("http://x")'})
    rows = list(csv.DictReader(io.StringIO(trials_csv(_empty_plan(), SweepResult(scores=[hostile])))))
    assert rows[0]["answer"] == '\'=HYPERLINK("http://x")' and rows[0]["correct"] == "0"


def test_per_trial_records_name_the_layout_and_the_scoring_rule() -> None:
    plan, result = small_sweep()
    rows = list(csv.DictReader(io.StringIO(trials_csv(plan, result))))
    assert {r["question_placement"] for r in rows} == {BASE.question_placement.value}
    assert {r["scored_by"] for r in rows} == {"fuzzy match"}


# ---- The reference metric of the paper's Table 1 ------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "strict", "reference"),
    [
        ("Paris", "Paris", 1.0, 1.0),
        ("the city of Paris, France", "Paris", 1.0, 1.0),  # word subset: both
        ("1", "1901", 0.0, 1.0),  # a substring: only the reference code
        ("Parisian", "Paris", 0.0, 1.0),
        ("4.2m euros", "4.2 million euros", 0.0, 0.0),
        ("n/a", "Paris", 0.0, 0.0),
        ("n/a", "n/a", 1.0, 1.0),
        ("", "Paris", 0.0, 0.0),  # an empty reply matches nothing (the one difference, stated)
    ],
)
def test_the_reference_metric_is_the_lenient_one_of_the_papers_code(
    prediction: str, gold: str, strict: float, reference: float
) -> None:
    from rr_core.metrics import fuzzy_match, paper_match

    assert (fuzzy_match(prediction, [gold]), paper_match(prediction, [gold])) == (strict, reference)
    assert paper_match(prediction, ["nothing alike", gold]) == reference  # the best over the answers


def test_scores_carry_both_metrics_and_the_paper_protocol_counts_failures() -> None:
    common = dict(
        series="S", method="baseline", length=1_000, depth=50.0, question_id="q", answers=("1901",),
        gold_pages=(1,), retrieved=(), cited=None, retrieves=False, cost_usd=0.0, calls=1,
        input_tokens=1, output_tokens=1,
    )  # fmt: skip
    right = score(trial="a", answer="1", failed=False, protocol="paper", **common)  # type: ignore[arg-type]
    failed = score(trial="b", answer=None, failed=True, protocol="paper", **common)  # type: ignore[arg-type]
    left_out = score(trial="c", answer=None, failed=True, **common)  # type: ignore[arg-type]
    assert (right.correct, right.paper_correct, right.counted) == (False, True, True)
    assert (failed.paper_correct, failed.counted, left_out.counted) == (False, True, False)
    (cell,) = cells([right, failed])
    assert (cell.trials, cell.failed, cell.correct, cell.paper_correct) == (2, 1, 0, 1)
    assert (
        cell.as_dict()["accuracy_paper_metric"] == 0.5 and cell.reading_misses == 1
    )  # the failure is no miss
    (summary,) = summarise([right, failed])
    assert (summary.trials, summary.accuracy, summary.paper_accuracy) == (2, 0.0, 0.5)
