"""The Lab's results in plain words, and sweeps that can show what they claim: one primary
comparison, the others Holm-adjusted, the smallest detectable difference before spending, a
reminding method that gets no reminder saying so — each against a computation by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import word_counter
from test_lab import BASE, _lab, _neutral_file, neutral_document, twenty_document_rows, write_jsonl_gz
from test_lab_stats import trial_score

from rr_core.jobs import plan_job
from rr_core.lab import trial_recipes, trial_spec
from rr_core.lab.haystacks import PageCounts, planted_trials
from rr_core.lab.presets import MIN_QUESTIONS, PRESETS
from rr_core.lab.report import effective_sentence, plan_power, reminder_notes, sweep_json, sweep_markdown
from rr_core.lab.stats import (
    Cell,
    compare,
    comparisons,
    connor_n,
    detectable_difference,
    holm,
    primary_pair,
    smallest_p,
    summarise,
)
from rr_core.lab.sweep import LabJob, SweepResult, plan_sweep, run_sweep, series_name
from rr_core.llm.simulated import SimulatedReader
from rr_core.methods import parse_spec
from rr_core.runs import Executor

# ---- Holm ------------------------------------------------------------------------------------


def test_holm_matches_a_hand_computation() -> None:
    # By hand: sorted 0.005, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1 = 0.02, 0.03, 0.06, 0.04, then
    # each at least the one before: 0.02, 0.03, 0.06, 0.06; back in input order.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == [0.02]


def _two_methods(questions: int, wins: int, *, names: tuple[str, str] = ("R&R", "Baseline")):  # type: ignore[no-untyped-def]
    """``names[0]`` right on every question, ``names[1]`` right on all but ``wins`` of them."""
    scores = []
    for q in range(questions):
        scores.append(trial_score(names[1], f"q{q}", 50.0, q >= wins))
        scores.append(trial_score(names[0], f"q{q}", 50.0, True))
    return scores


def test_the_primary_comparison_comes_first_unadjusted_and_the_others_are_holm_adjusted() -> None:
    scores = []
    for q in range(10):
        scores += [
            trial_score("Baseline", f"q{q}", 50.0, q >= 7),
            trial_score("Question last", f"q{q}", 50.0, q >= 5),
            trial_score("R&R", f"q{q}", 50.0, True),
        ]
    scores = [s.__class__(**{**{f: getattr(s, f) for f in s.__dataclass_fields__}, "method": m}) for s, m in
              ((s, {"Baseline": "baseline", "Question last": "question-last", "R&R": "rr"}[s.series]) for s in scores)]  # fmt: skip
    made = comparisons(scores)
    assert [(c.series, c.against, c.primary) for c in made][0] == ("R&R", "Baseline", True)
    first = made[0]
    assert first.p_adjusted is None and first.p_value == pytest.approx(2 / 2**7)  # 7 wins, 0 losses
    rest = made[1:]
    assert len(rest) == 2 and all(c.family == 2 for c in rest)
    # By hand: Question last vs Baseline: 2 wins (q5, q6) → p = 0.5; R&R vs Question last: 5 wins →
    # p = 2/32 = 0.0625. Holm: 0.0625 × 2 = 0.125, then max(0.125, 0.5 × 1) = 0.5.
    by_pair = {(c.series, c.against): c for c in rest}
    assert by_pair["Question last", "Baseline"].p_value == pytest.approx(0.5)
    assert by_pair["Question last", "Baseline"].p_adjusted == pytest.approx(0.5)
    assert by_pair["R&R", "Question last"].p_adjusted == pytest.approx(0.125)
    assert by_pair["R&R", "Question last"].shown == 0


def test_the_primary_pair_is_the_first_rr_series_against_baseline() -> None:
    pairs = [
        ("Baseline", "baseline"),
        ("Question last", "question-last"),
        ("R&R (k=10)", "rr"),
        ("R&R (k=5)", "rr"),
    ]
    assert primary_pair(pairs) == ("R&R (k=10)", "Baseline")
    assert primary_pair([("Baseline", "baseline"), ("Reprompting", "reprompt")]) == (
        "Reprompting",
        "Baseline",
    )
    assert primary_pair([("ICR", "icr"), ("R&R", "rr")]) is None  # no baseline: none is primary


def test_every_comparison_preset_declares_its_primary_and_puts_it_first() -> None:
    for preset in PRESETS.values():
        named = [
            (series_name(parse_spec(spec, BASE)), parse_spec(spec, BASE).method) for spec in preset.series
        ]
        wanted = tuple(series_name(parse_spec(spec, BASE)) for spec in preset.primary)
        assert primary_pair(named) == wanted, preset.name


# ---- Presets large enough to show a difference --------------------------------------------------


def test_every_comparison_preset_asks_at_least_50_questions(tmp_path: Path) -> None:
    counter = word_counter()
    document = neutral_document(pages=40, words_per_page=500)
    six = twenty_document_rows(6)
    rows = [{**six[i % 6], "question": f"{six[i % 6]['question']} (asked {i})"} for i in range(MIN_QUESTIONS)]
    qa = write_jsonl_gz(tmp_path / "fifty.jsonl.gz", rows)
    for preset in PRESETS.values():
        spec = trial_spec(preset, document, qa_file=qa if preset.task == "passages" else None)
        if preset.task == "planted" and not preset.lengths:
            spec = trial_spec(preset, document, lengths=(4_000, 8_000, 16_000))
        recipes = trial_recipes(spec, preset, document, counter)
        asked = len({r.question_id for r in recipes})
        assert asked >= preset.min_questions >= MIN_QUESTIONS, (preset.name, asked)
        assert detectable_difference(asked) is not None


# ---- The smallest detectable difference ---------------------------------------------------------


def test_connors_sample_size_matches_a_hand_computation() -> None:
    # δ = 0.2, 5% reverse-discordant: ψ = 0.3; n = (1.959964·√0.3 + 0.841621·√(0.3 − 0.04))² / 0.04
    # = (1.073516 + 0.429146)² / 0.04 = 1.502662² / 0.04 = 2.257993 / 0.04 = 56.45.
    assert connor_n(0.2) == pytest.approx(56.45, abs=0.01)
    # δ = 0.5: ψ = 0.6; (1.959964·0.774597 + 0.841621·0.591608)² / 0.25 = (1.518182 + 0.497910)² / 0.25
    # = 4.064627 / 0.25 = 16.26.
    assert connor_n(0.5) == pytest.approx(16.26, abs=0.01)


def test_the_detectable_difference_solves_connors_formula_and_knows_when_none_is_possible() -> None:
    for n in (20, 50, 100, 400):
        delta = detectable_difference(n)
        assert delta is not None and connor_n(delta) == pytest.approx(n, rel=0.01)
    assert detectable_difference(57) < 0.2 < detectable_difference(56)  # type: ignore[operator]
    # Five questions: McNemar's exact test can never reach p < 0.05 (2/2^5 = 0.0625).
    assert smallest_p(5) == pytest.approx(0.0625) and detectable_difference(5) is None
    assert smallest_p(6) == pytest.approx(0.03125)
    assert detectable_difference(1_000) < detectable_difference(100) < detectable_difference(50)  # type: ignore[operator]


def test_the_cli_dry_run_shows_what_the_sweep_can_detect(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _neutral_file(tmp_path)
    grid = ("--methods", "baseline,rr:k=1000", "--lengths", "4000", "--depths", "0,50,100", "--repeats", "2")
    code, dry, err = _lab(capsys, str(path), "--provider", "simulated", *grid, "--dry-run")
    assert code == 0, err
    # Two repeats: two facts (one per repeat at every depth) or six (one per repeat and depth).
    asked = dry["power"]["questions"]
    assert asked == dry["plan"]["planted_facts"] in (2, 6) and dry["power"]["detectable_difference"] is None
    assert "no difference can be shown" in dry["power"]["text"]
    code, more, err = _lab(capsys, str(path), "--provider", "simulated", *grid[:-1], "10", "--dry-run")
    assert code == 0, err
    found = detectable_difference(more["power"]["questions"])
    assert found is not None and more["power"]["detectable_difference"] == round(found, 4)
    from rr_core.cli import main

    assert main(["lab", str(path), "--provider", "simulated", *grid[:-1], "10", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"about {found * 100:.0f} points" in out and "can detect" in out


# ---- Plain words ---------------------------------------------------------------------------------


def test_a_comparison_reads_in_an_analysts_words() -> None:
    shown = compare(_two_methods(10, 7), "R&R", "Baseline")
    assert shown.plain() == (
        "R&R answered 70 points more questions right than Baseline on this document; unlikely to be chance "
        "(p = 0.016, 10 questions)."
    )
    small = compare(_two_methods(5, 5), "R&R", "Baseline")
    assert small.difference == 1.0
    assert small.plain() == (
        "R&R against Baseline: no difference shown: with 5 questions even +100 points could not be told from chance."
    )
    maybe = compare(_two_methods(10, 2), "R&R", "Baseline")
    assert maybe.plain().startswith(
        "R&R answered 20 points more questions right than Baseline, but that could be"
    )
    assert "p = 0.5" in maybe.plain()


def test_a_cell_says_questions_times_repeats() -> None:
    cell = Cell("R&R", "rr", 1_000, 50.0, trials=4, question_ids={"a", "b"})
    assert cell.n_text() == "2 questions × 2 repeats"
    assert (
        Cell("R&R", "rr", 1_000, 50.0, trials=3, question_ids={"a", "b"}).n_text() == "3 trials, 2 questions"
    )


def _sweep(lengths: tuple[int, ...], series: tuple[str, ...]):  # type: ignore[no-untyped-def]
    counter = word_counter()
    trials = planted_trials(
        neutral_document(), PageCounts(counter), lengths=lengths, depths=(0, 50, 100), repeats=2, seed=3
    )
    plan = plan_sweep(trials, [parse_spec(s, BASE) for s in series], counter)
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=2) as executor:
        return plan, run_sweep(plan, executor)


def test_a_reminding_method_with_no_reminder_says_so_in_its_cells() -> None:
    plan, result = _sweep((2_000, 8_000), ("baseline", "rr:k=4000", "reprompt:k=4000"))
    notes = reminder_notes(plan)
    rr = series_name(parse_spec("rr:k=4000", BASE))
    reprompt = series_name(parse_spec("reprompt:k=4000", BASE))
    assert notes[rr, 2_000].startswith("R&R = ICR here: k = 4,000 exceeds the document (")
    assert notes[reprompt, 2_000].startswith("Reprompting = Baseline here")
    assert notes[rr, 8_000].startswith("k = 4,000 gives ")
    # Against the prompts themselves: the planned calls carry reminder tokens exactly where the
    # note says reminders are given.
    counter = word_counter()
    for job in plan.jobs:
        trial = plan.trial(LabJob.of(job).trial)
        note = notes.get((LabJob.of(job).series, trial.length))  # type: ignore[union-attr]
        if note is None:
            continue
        calls = plan_job(job, plan.maker.open(job.source), counter).calls  # type: ignore[union-attr]
        assert (sum(c.reminder_tokens for c in calls) == 0) == (" here:" in note), note
    assert not any(series == "Baseline" for series, _ in notes)
    report = sweep_markdown(plan, result, title="t", engine="simulated", document="d")
    assert "R&R = ICR here: k = 4,000 exceeds the document" in report
    data = sweep_json(plan, result)
    assert any(text.startswith("R&R = ICR here") for text in data["reminders"].values())


def test_effective_length_names_the_weakest_length_and_why() -> None:
    scores = []
    accuracy = {10_000: 10, 20_000: 6, 40_000: 9, 80_000: 9}  # right out of 10 questions
    for length, right in accuracy.items():
        scores += [trial_score("R&R", f"q{q}", 50.0, q < right, length=length) for q in range(10)]
    (summary,) = summarise(scores)
    text = effective_sentence(summary, {("R&R", 20_000): "k = 10,000 gives 1 reminder"})
    assert text == (
        "R&R holds ≥ 85% of its accuracy at 10,000 tokens (100%) up to 10,000 tokens, but only 60% at "
        "20,000, where k = 10,000 gives 1 reminder."
    )


def test_the_report_opens_with_plain_words_and_keeps_the_statistics_after() -> None:
    plan, result = _sweep((4_000, 8_000), ("baseline", "rr:k=1000"))
    report = sweep_markdown(plan, result, title="t", engine="simulated", document="d")
    plain = report.index("## In plain words")
    assert plain < report.index("## Accuracy by method") < report.index("## Paired differences")
    first = result.comparisons[0]
    assert first.primary and first.plain() in report.replace("\\", "")
    assert "n=" not in report and "·2q" not in report
    assert "Can detect" in report and math.isfinite(plan_power(plan)["questions"])


def test_the_cli_prints_plain_words_before_the_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from rr_core.cli import main

    path = _neutral_file(tmp_path)
    grid = (
        "--methods",
        "baseline,rr:k=1000",
        "--lengths",
        "4000,8000",
        "--depths",
        "0,50,100",
        "--repeats",
        "2",
    )
    assert main(["lab", str(path), "--provider", "simulated", *grid]) == 0
    out = capsys.readouterr().out
    assert out.index("In plain words:") < out.index("The statistics:")
    assert "n=" not in out and "q " not in out.split("accuracy by depth")[1].splitlines()[1]


def test_no_result_is_empty() -> None:
    assert SweepResult().comparisons == []


# ---- Every Eval Ever ------------------------------------------------------------------------------


def _eee_schemas() -> tuple[dict, dict]:  # type: ignore[type-arg]
    import importlib.resources
    import json

    eee = pytest.importorskip("every_eval_ever", reason="every-eval-ever is installed by `make test`")
    folder = importlib.resources.files(eee) / "schemas"
    return (
        json.loads((folder / "eval.schema.json").read_text(encoding="utf-8")),
        json.loads((folder / "instance_level_eval.schema.json").read_text(encoding="utf-8")),
    )


def test_a_sweep_exports_to_every_eval_ever_with_a_record_per_trial() -> None:
    import hashlib

    import jsonschema

    from rr_core.lab.report import eee_records, eee_samples_text

    aggregate_schema, instance_schema = _eee_schemas()
    plan, result = _sweep((4_000, 8_000), ("baseline", "rr:k=1000"))
    aggregate, instances = eee_records(
        plan, result, model="simulated", provider="simulated", timestamp=1_700_000_000
    )
    jsonschema.validate(aggregate, aggregate_schema)
    for record in instances:
        jsonschema.validate(record, instance_schema)
    assert len(instances) == len(result.scores) + len(result.bound_scores)
    by_series = {r["score_details"]["details"]["method"]: r for r in aggregate["evaluation_results"]}
    for summary in (*result.summaries, *result.bounds):
        record = by_series[summary.series]
        assert record["score_details"]["score"] == pytest.approx(summary.accuracy, abs=1e-6)
        mine = [i for i in instances if i["evaluation_result_id"] == record["evaluation_result_id"]]
        assert sum(i["evaluation"]["score"] for i in mine) / len(mine) == pytest.approx(summary.accuracy)
    detail = aggregate["detailed_evaluation_results"]
    assert detail["total_rows"] == len(instances)
    assert detail["checksum"] == hashlib.sha256(eee_samples_text(instances).encode()).hexdigest()


def test_the_cli_writes_the_every_eval_ever_export(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import json

    import jsonschema

    aggregate_schema, instance_schema = _eee_schemas()
    path = _neutral_file(tmp_path)
    out = tmp_path / "eee" / "sweep.json"
    grid = ("--methods", "baseline,rr:k=1000", "--lengths", "4000", "--depths", "0,100", "--repeats", "2")
    code, data, err = _lab(capsys, str(path), "--provider", "simulated", *grid, "--eee-out", str(out))
    assert code == 0, err
    aggregate = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(aggregate, aggregate_schema)
    samples = out.parent / aggregate["detailed_evaluation_results"]["file_path"]
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == aggregate["detailed_evaluation_results"]["total_rows"] > 0
    for row in rows:
        jsonschema.validate(row, instance_schema)
    assert data["eee_out"] == str(out)


def test_jobs_written_by_jobs_out_run_with_jobs_in_as_the_sweep_would(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _neutral_file(tmp_path)
    jobs = tmp_path / "jobs.jsonl"
    grid = ("--methods", "baseline,rr:k=1000", "--lengths", "4000", "--depths", "0,50,100", "--repeats", "2")
    code, dry, err = _lab(
        capsys, str(path), "--provider", "simulated", *grid, "--dry-run", "--jobs-out", str(jobs)
    )
    assert code == 0, err
    code, ran, err = _lab(capsys, str(path), "--provider", "simulated", *grid)
    assert code == 0, err
    # Another process: only the jobs file and the document (no grid given).
    code, again, err = _lab(capsys, str(path), "--provider", "simulated", "--jobs-in", str(jobs))
    assert code == 0, err
    assert again["jobs_in"] == str(jobs) and again["plan"]["runs"] == dry["plan"]["runs"]
    assert (
        again["plan"]["calls"] == dry["plan"]["calls"]
        and again["plan"]["input_tokens"] == dry["plan"]["input_tokens"]
    )
    assert [(s["method"], s["trials"], s["accuracy"]) for s in again["series"]] == [
        (s["method"], s["trials"], s["accuracy"]) for s in ran["series"]
    ]
    assert [c["correct"] for c in again["cells"]] == [c["correct"] for c in ran["cells"]]
    assert again["calls_made"] == 0  # every call was in the run store from the run before
    code, _, err = _lab(
        capsys, str(path), "--provider", "simulated", "--jobs-in", str(tmp_path / "none.jsonl")
    )
    assert code == 2 and "cannot read the jobs file" in err


def test_effective_length_at_the_shortest_length_says_why_there() -> None:
    scores = []
    for length, right in {20_000: 6, 40_000: 6, 80_000: 6}.items():
        scores += [trial_score("R&R", f"q{q}", 50.0, q < right, length=length) for q in range(10)]
    scores += [trial_score("R&R", f"q{q}", 60.0, True, length=80_000) for q in range(10)]
    (summary,) = summarise(scores)
    text = effective_sentence(summary, {("R&R", 20_000): "k = 10,000 gives 1 reminder"})
    assert text == (
        "R&R holds ≥ 85% of its accuracy at 20,000 tokens (60%) up to 80,000 tokens (the longest measured); "
        "at 20,000, k = 10,000 gives 1 reminder."
    )


def _priced(series: str, questions: int, right: int, cost: float) -> list:  # type: ignore[type-arg]
    from dataclasses import replace

    return [replace(trial_score(series, f"q{q}", 50.0, q < right), cost_usd=cost) for q in range(questions)]


def test_rr_is_reported_against_the_cheapest_method_not_shown_worse() -> None:
    from rr_core.lab.report import cheapest_match_sentence

    # R&R right on 50 of 50 at $1 a trial; Baseline right on 10 at $0.5 (shown worse); the
    # question-last method right on 48 at $0.2 (2 questions apart: not shown worse).
    scores = (
        _priced("R&R", 50, 50, 1.0) + _priced("Baseline", 50, 10, 0.5) + _priced("Question last", 50, 48, 0.2)
    )
    said = cheapest_match_sentence("R&R", SweepResult(scores=scores, is_llm=True))
    assert said is not None
    assert said.startswith(
        "The cheapest method not shown to answer fewer questions right than R&R: Question last"
    )
    assert "$10 against $50 for the sweep" in said and "96% right against 100%" in said
    assert "Not shown worse is not shown as good: this sweep could show differences of about" in said
    # Every cheaper method shown worse; and R&R the cheapest
    worse = _priced("R&R", 50, 50, 1.0) + _priced("Baseline", 50, 10, 0.5)
    assert "none matches it for less" in (cheapest_match_sentence("R&R", SweepResult(scores=worse)) or "")
    cheapest = _priced("R&R", 50, 50, 0.1) + _priced("Baseline", 50, 10, 0.5)
    assert (
        cheapest_match_sentence("R&R", SweepResult(scores=cheapest))
        == "No method cost less than R&R in this sweep."
    )
