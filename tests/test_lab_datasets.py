"""The R&R paper's datasets, built the paper's way (000 §4.1): NQ from the retrieval results
(each question's own passages, most relevant first, the annotated gold moved among them),
SQuAD v2, HotpotQA (distractor setting) and PubMed; lengths that are what they say; and planted
facts that sit at every depth. The fixtures are small slices under tests/data/qa (SOURCES.md)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, word_counter

from rr_core.cli import main
from rr_core.errors import ConfigError
from rr_core.lab import build_trials, trial_notes, trial_spec
from rr_core.lab.haystacks import (
    LENGTH_TOLERANCE,
    OTHER_ABSTRACTS,
    OTHER_ARTICLES,
    OTHER_QUESTIONS_SPREAD,
    OWN_CTXS,
    PageCounts,
    file_format,
    forget_shared,
    passage_trials,
    planted_trials,
    read_qa_jsonl,
)
from rr_core.lab.presets import get_preset
from rr_core.metrics import contains_answer

DATA = ROOT / "tests" / "data" / "qa"
NQ_RETRIEVAL = DATA / "nq-retrieval-results-sample.jsonl.gz"
NQ_TEN = DATA / "nq-open-10_total_documents_gold_at_4-sample.jsonl.gz"
SQUAD = DATA / "squad-v2-sample.json"
HOTPOT = DATA / "hotpotqa-distractor-sample.json"
PUBMED = DATA / "pubmed-questions-sample.jsonl"
PUBMEDQA = DATA / "pubmedqa-sample.json"


def _rows(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _shown(title: str, text: str, number: int) -> str:
    return f"Document [{number}](Title: {title}) {text}" if title else f"Document [{number}] {text}"


def test_each_fixture_is_read_in_its_own_format() -> None:
    assert {p.name: file_format(p) for p in (NQ_RETRIEVAL, NQ_TEN, SQUAD, HOTPOT, PUBMED, PUBMEDQA)} == {
        NQ_RETRIEVAL.name: "qa",
        NQ_TEN.name: "qa",
        SQUAD.name: "squad",
        HOTPOT.name: "hotpotqa",
        PUBMED.name: "pubmed",
        PUBMEDQA.name: "pubmed",
    }


def test_nq_retrieval_results_build_each_questions_document_from_its_own_ranked_passages() -> None:
    """The file the Lab used to refuse ("0 ctxs marked isgold"): the gold is the annotated
    paragraph, the distracters the question's own ctxs in the file's order, never a hasanswer one."""
    rows = _rows(NQ_RETRIEVAL)
    items = read_qa_jsonl(NQ_RETRIEVAL)
    assert len(items) == len(rows)
    trials = passage_trials(
        items, PageCounts(word_counter()), lengths=(700,), depths=(0, 50, 100), repeats=4, file=NQ_RETRIEVAL
    )
    assert len(trials) == 12
    for trial in trials:
        row = next(r for r in rows if r["question"] == trial.question)
        gold = row["nq_annotated_gold"]
        own = [c for c in row["ctxs"] if not c["hasanswer"]]
        pages = [p.text for p in trial.document.pages]
        position = trial.gold_pages[0] - 1
        assert pages[position] == _shown(gold["title"], gold["chunked_long_answer"].strip(), position + 1)
        others = pages[:position] + pages[position + 1 :]
        # The question's own passages, most relevant first, a prefix of them (the length cut).
        assert others == [
            _shown(c["title"], c["text"], n if n <= position else n + 1)
            for n, c in enumerate(own[: len(others)], start=1)
        ]
        assert not any(
            c["hasanswer"] and _shown(c["title"], c["text"], 0)[12:] in p for c in row["ctxs"] for p in others
        )
        assert trial.construction == OWN_CTXS
        assert abs(trial.tokens - trial.length) <= LENGTH_TOLERANCE * trial.length
    assert {t.gold_pages[0] for t in trials if t.depth == 0} == {1}
    assert all(t.gold_pages[0] == len(t.document.pages) for t in trials if t.depth == 100)


def test_the_k_document_files_and_the_retrieval_results_give_the_same_gold() -> None:
    ten = read_qa_jsonl(NQ_TEN)
    results = read_qa_jsonl(NQ_RETRIEVAL)
    assert [i.gold for i in ten] == [i.gold for i in results]
    assert all(
        it.distracters == r.distracters[: len(it.distracters)] for it, r in zip(ten, results, strict=True)
    )


def test_paper_grid_takes_a_qa_file_at_its_lengths_and_depths(capsys: pytest.CaptureFixture[str]) -> None:
    preset = get_preset("paper-grid")
    spec = trial_spec(preset, None, qa_file=NQ_RETRIEVAL, lengths=(700, 1_400), repeats=3)
    assert spec.task == "passages"
    trials = build_trials(spec, preset, None, word_counter(), depths=(0, 50, 100))
    assert {(t.length, t.depth) for t in trials} == {(n, d) for n in (700, 1_400) for d in (0.0, 50.0, 100.0)}
    assert {t.construction for t in trials} == {OWN_CTXS}
    for trial in trials:
        assert abs(trial.tokens - trial.length) <= LENGTH_TOLERANCE * trial.length, trial.id
    code = main(
        ["--json", "lab", "--preset", "paper-grid", "--qa-file", str(NQ_RETRIEVAL), "--lengths", "700,1400",
         "--repeats", "2", "--provider", "simulated", "--dry-run"]
    )  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["protocol"]["construction"] == [OWN_CTXS]


def test_a_file_too_short_for_a_length_is_refused_naming_the_longest_it_can_build(
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = read_qa_jsonl(NQ_RETRIEVAL)
    with pytest.raises(ConfigError) as caught:
        passage_trials(items, PageCounts(word_counter()), lengths=(10_000,), depths=(50,), repeats=2)
    message = str(caught.value)
    assert "\n" not in message and "10,000" in message and "longest document is" in message
    longest = int(message.split("longest document is ")[1].split(" ")[0].replace(",", ""))
    # ... and that length is built, within the tolerance.
    trials = passage_trials(items, PageCounts(word_counter()), lengths=(longest,), depths=(50,), repeats=1)
    assert abs(trials[0].tokens - longest) <= LENGTH_TOLERANCE * longest
    code = main(
        [
            "lab",
            "--preset",
            "paper-grid",
            "--qa-file",
            str(NQ_RETRIEVAL),
            "--provider",
            "simulated",
            "--dry-run",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "longest document is" in err and len(err.strip().splitlines()) == 1


def test_questions_too_short_are_replaced_and_the_cap_is_said() -> None:
    """Rows of very different sizes: a length only some can make asks those, and says so."""
    rows = _rows(NQ_RETRIEVAL)
    preset = get_preset("lost-in-the-middle")
    items = read_qa_jsonl(NQ_RETRIEVAL)
    pools = passage_trials(items, PageCounts(word_counter()), lengths=(0,), depths=(0,), repeats=len(items))
    sizes = sorted(t.tokens for t in pools)
    length = sizes[-3]  # only about three questions make it
    spec = trial_spec(preset, None, qa_file=NQ_RETRIEVAL, lengths=(length,), repeats=len(rows))
    trials = build_trials(spec, preset, None, word_counter(), depths=(50,))
    assert 1 <= len(trials) < len(rows)
    for trial in trials:
        assert abs(trial.tokens - length) <= LENGTH_TOLERANCE * length
    (note,) = trial_notes(spec, trials)
    assert "questions that make these lengths" in note


def test_every_passage_trial_records_its_built_tokens_beside_its_label() -> None:
    for path, lengths in ((NQ_RETRIEVAL, (500, 900, 1_300)), (SQUAD, (150, 250)), (PUBMEDQA, (600, 1_500))):
        items = read_qa_jsonl(path)
        trials = passage_trials(
            items, PageCounts(word_counter()), lengths=lengths, depths=(0, 100), repeats=3
        )
        for trial in trials:
            facts = trial.facts
            assert facts.tokens == trial.document.total_tokens and facts.length in lengths
            assert abs(facts.tokens - facts.length) <= LENGTH_TOLERANCE * facts.length, (path.name, trial.id)


def test_squad_gold_is_the_questions_paragraph_and_distracters_never_its_article() -> None:
    data = json.loads(SQUAD.read_text())
    article_of = {p["context"]: a["title"].replace("_", " ") for a in data["data"] for p in a["paragraphs"]}
    items = read_qa_jsonl(SQUAD)
    assert len(items) == 8 and not any(it.abstains for it in items)  # the unanswerable one left out
    trials = passage_trials(items, PageCounts(word_counter()), lengths=(200,), depths=(0, 50, 100), repeats=8)
    for trial in trials:
        item = next(i for i in items if i.question == trial.question)
        article = article_of[item.gold.text]
        pages = [p.text for p in trial.document.pages]
        assert pages[trial.gold_pages[0] - 1] == _shown(article, item.gold.text, trial.gold_pages[0])
        for n, text in enumerate(pages, start=1):
            if n != trial.gold_pages[0]:
                assert f"(Title: {article})" not in text  # never the gold's own article
                assert not contains_answer(text, trial.answers)
        assert trial.construction == OTHER_ARTICLES
    kept = read_qa_jsonl(SQUAD, unanswerable=True)
    (abstain,) = [it for it in kept if it.abstains]
    assert abstain.answers == ("n/a",) and "repaired" in abstain.question


def test_squad_unanswerable_questions_are_scored_as_abstention_when_asked(tmp_path: Path) -> None:
    preset = get_preset("paper-grid")
    spec = trial_spec(preset, None, qa_file=SQUAD, lengths=(200,), repeats=9, unanswerable=True)
    trials = build_trials(spec, preset, None, word_counter(), depths=(50,))
    assert len({t.question for t in trials}) == 9
    (abstain,) = [t for t in trials if "repaired" in t.question]
    assert abstain.answers == ("n/a",) and abstain.recipe is not None and abstain.recipe.unanswerable
    forget_shared()  # built again from its recipe alone, as a sweep's worker does
    assert abstain.recipe.build(word_counter()).document.sha256 == abstain.document.sha256


def test_hotpotqa_spreads_the_supporting_paragraphs_among_other_questions_paragraphs() -> None:
    rows = json.loads(HOTPOT.read_text())
    items = read_qa_jsonl(HOTPOT)
    trials = passage_trials(items, PageCounts(word_counter()), lengths=(250,), depths=(0, 50, 100), repeats=4)
    assert len(trials) == 4 and {t.depth for t in trials} == {0.0}  # depth is not varied
    for trial in trials:
        row = next(r for r in rows if r["question"] == trial.question)
        supporting = {title for title, _ in row["supporting_facts"]}
        paragraphs = {title: "".join(sentences).strip() for title, sentences in row["context"]}
        pages = [p.text for p in trial.document.pages]
        assert len(trial.gold_pages) == 2 and trial.gold_pages[0] == 1
        assert sorted(pages[g - 1] for g in trial.gold_pages) == sorted(
            _shown(title, paragraphs[title], g) for title, g in zip(sorted(supporting, key=lambda t: [
                title for title, _ in row["supporting_facts"]].index(t)), trial.gold_pages, strict=True)
        )  # fmt: skip
        # The second gold near the middle (regular intervals); no paragraph of its own question,
        # nor one of the same article, among the distracters.
        assert 30 <= _depth(trial, 1) <= 70
        for n, text in enumerate(pages, start=1):
            if n not in trial.gold_pages:
                assert not any(body in text or f"(Title: {t})" in text for t, body in paragraphs.items())
        assert trial.construction == OTHER_QUESTIONS_SPREAD


def _depth(trial: Any, which: int) -> float:
    counts = trial.document.page_tokens
    return 100 * sum(counts[: trial.gold_pages[which] - 1]) / sum(counts)


def test_pubmed_reads_both_layouts_and_hides_each_abstract_among_the_others() -> None:
    ours, pubmedqa = read_qa_jsonl(PUBMED), read_qa_jsonl(PUBMEDQA)
    assert [(i.question, i.answers, i.gold.text, i.group) for i in ours] == [
        (i.question, i.answers, i.gold.text, i.group) for i in pubmedqa
    ]
    trials = passage_trials(ours, PageCounts(word_counter()), lengths=(1_200,), depths=(0, 100), repeats=5)
    for trial in trials:
        item = next(i for i in ours if i.question == trial.question)
        pages = [p.text for p in trial.document.pages]
        assert [n for n, text in enumerate(pages, start=1) if item.gold.text in text] == list(
            trial.gold_pages
        )
        assert trial.construction == OTHER_ABSTRACTS
        assert len(pages) >= 3


def test_a_file_in_no_known_format_is_one_line(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('[{"prompt": "x"}]')
    with pytest.raises(ConfigError, match="none of the formats") as caught:
        read_qa_jsonl(odd)
    assert "\n" not in str(caught.value)


def test_every_planted_fact_sits_at_every_depth_and_length() -> None:
    """Depth and fact are not confounded: each repeat's fact at every depth of every length
    (the paper grid's depth lists differ per length)."""
    from test_lab import neutral_document

    depth_lists = {2_000: (0.0, 100.0), 4_000: (0.0, 50.0, 100.0)}
    trials = planted_trials(
        neutral_document(), PageCounts(word_counter()), lengths=(2_000, 4_000),
        depths=lambda n: depth_lists[n], repeats=3,
    )  # fmt: skip
    by_fact: dict[str, set[tuple[int, float]]] = {}
    for trial in trials:
        by_fact.setdefault(trial.question_id, set()).add((trial.length, trial.depth))
        assert trial.answers == next(t.answers for t in trials if t.question_id == trial.question_id)
    assert len(by_fact) == 3
    assert all(cells == {(n, d) for n, ds in depth_lists.items() for d in ds} for cells in by_fact.values())


def test_hotpotqa_says_its_depths_are_not_varied() -> None:
    preset = get_preset("paper-grid")
    spec = trial_spec(preset, None, qa_file=HOTPOT, lengths=(250,), repeats=2)
    trials = build_trials(spec, preset, None, word_counter(), depths=(0, 50, 100))
    assert len(trials) == 2 and all(len(t.gold_pages) == 2 for t in trials)
    (note,) = trial_notes(spec, trials)
    assert "HotpotQA" in note and "not varied" in note


def test_a_file_of_many_passages_a_question_is_read_only_as_far_as_memory_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rr_core.lab import haystacks

    monkeypatch.setattr(haystacks, "MAX_HELD_PASSAGES", 30)
    items = read_qa_jsonl(NQ_RETRIEVAL)
    assert len(items) == 3  # 13 own passages a question: the third row passes 30
    assert sum(len(i.distracters) for i in items) >= 30


def test_planted_documents_are_cut_nearest_their_length_and_a_cell_that_cannot_be_is_said() -> None:
    from test_lab import neutral_document

    from rr_core.documents import document_from_texts

    preset = get_preset("quick")
    document = neutral_document()  # 40 pages of 250 tokens
    spec = trial_spec(preset, document, lengths=(2_000, 4_100, 6_900), repeats=1)
    trials = build_trials(spec, preset, document, word_counter(), depths=(0, 50, 100))
    for trial in trials:
        assert abs(trial.tokens - trial.length) <= LENGTH_TOLERANCE * trial.length, trial.id
    assert trial_notes(spec, trials) == []
    big = document_from_texts("big.txt", [" ".join(["word"] * 1_500)] * 4, counter=word_counter())
    spec = trial_spec(preset, big, lengths=(1_000, 3_000), repeats=1)
    trials = build_trials(spec, preset, big, word_counter(), depths=(50,))
    assert {t.length: round(t.tokens, -2) for t in trials} == {1_000: 1_500, 3_000: 3_000}
    (note,) = trial_notes(spec, trials)
    assert "never split" in note and "for 1,000" in note and "for 3,000" not in note


def test_the_cli_says_when_a_cell_is_not_the_length_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "big.txt"  # a text file's pages are blocks of about 450 tokens
    big.write_text("\f".join(" ".join(["word"] * 1_500) for _ in range(4)))
    code = main(["--json", "lab", str(big), "--preset", "quick", "--lengths", "700,2700", "--depths", "50",
                 "--repeats", "1", "--provider", "simulated", "--dry-run"])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    (note,) = data["notes"]
    assert code == 0 and "never split" in note and "for 700" in note and "for 2,700" not in note
    code = main(["--json", "lab", "--preset", "paper-grid", "--qa-file", str(HOTPOT), "--lengths", "250",
                 "--repeats", "2", "--provider", "simulated", "--dry-run"])  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and any("HotpotQA" in n for n in data["notes"])


def test_an_unanswerable_squad_question_is_right_only_when_the_reader_abstains() -> None:
    from rr_core.lab.stats import score

    (abstain,) = [it for it in read_qa_jsonl(SQUAD, unanswerable=True) if it.abstains]
    common = dict(
        series="s", method="baseline", length=200, depth=50.0, trial="t", question_id="q",
        answers=abstain.answers, gold_pages=(3,), retrieved=(), cited=None, retrieves=False, cost_usd=0.0,
        calls=1, input_tokens=1, output_tokens=1, failed=False,
    )  # fmt: skip
    assert score(answer="n/a", **common).correct  # type: ignore[arg-type]
    assert score(answer=None, **common).correct  # type: ignore[arg-type]  # nothing found: abstained
    assert not score(answer="Tessa Lind", **common).correct  # type: ignore[arg-type]
