"""The Lab: test documents with known answers, sweeps that never pay twice, and numbers that
match a hand computation — checked against a reader whose positional bias is known exactly."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, DroppingServer, word_counter
from stub_server import StubServer

from rr_core.cli import main
from rr_core.documents import document_from_texts
from rr_core.errors import ConfigError
from rr_core.lab import TrialSpec, build_trials, trial_notes, trial_spec
from rr_core.lab.haystacks import (
    MAX_TRIALS,
    PageCounts,
    boundary_at,
    check_unique,
    kv_trials,
    passage_trials,
    planted_trials,
    read_kv_jsonl,
    read_qa_jsonl,
)
from rr_core.lab.presets import PRESETS, get_preset
from rr_core.lab.report import protocol, sweep_csv, sweep_json, sweep_markdown, trial_rows
from rr_core.lab.stats import effective_length, score, wilson
from rr_core.lab.sweep import LabJob, SweepResult, check_budget, plan_sweep, run_sweep
from rr_core.llm import make_client
from rr_core.llm.simulated import SimulatedReader
from rr_core.methods import parse_spec
from rr_core.planting import HostText, build_fact
from rr_core.runs import CallEvent, Executor
from rr_core.samples import get_sample
from rr_core.settings import RunSettings
from rr_core.store import CallCache, SQLiteStore

QA_FILE = ROOT.parent / "shared" / "data" / "qa" / "nq-open-oracle.jsonl.gz"
NEUTRAL = (
    "The committee met on the usual weekday and reviewed the agenda in order. "
    "Members discussed the building works, the garden rota and the newsletter layout. "
    "Nothing was decided that needs recording here beyond the date of the next meeting. "
)


def neutral_document(pages: int = 40, words_per_page: int = 250):  # type: ignore[no-untyped-def]
    """Pages of the same size that say nothing a planted fact's question asks about."""
    words = NEUTRAL.split()
    texts = []
    for n in range(pages):
        body = " ".join(words[(i + n) % len(words)] for i in range(words_per_page))
        texts.append(body)
    return document_from_texts("neutral.txt", texts, counter=word_counter())


BASE = RunSettings(provider="offline", model="offline", price_model="gpt-4.1-mini")
FIVE = (0.0, 25.0, 50.0, 75.0, 100.0)


# ---- Haystacks ---------------------------------------------------------------------------


def test_planted_fact_sits_on_the_page_at_the_depth_and_nowhere_else() -> None:
    document = neutral_document()
    trials = planted_trials(
        document, PageCounts(word_counter()), lengths=(6_000,), depths=(0, 50, 100), repeats=2, seed=3
    )
    assert len(trials) == 6
    for trial in trials:
        pages = trial.document.pages
        gold = trial.gold_pages[0]
        holders = [p.number for p in pages if trial.answers[0] in p.text]
        assert holders == [gold]
        assert abs(sum(p.tokens for p in pages) - 6_000) <= 300  # cut to about the length
        assert (
            boundary_at([p.tokens for p in pages[: len(pages)]], trial.depth) + 1 == gold or trial.depth == 0
        )
    # Repeats plant different facts; depths of one repeat plant the same one.
    questions = {t.repeat: t.question for t in trials}
    assert questions[0] != questions[1]


def test_distracters_differ_per_repeat_and_never_land_on_the_gold_page() -> None:
    document = neutral_document()
    trials = planted_trials(
        document, PageCounts(word_counter()), lengths=(8_000,), depths=(50,), repeats=3, distracters=2, seed=1
    )
    placements = []
    for trial in trials:
        extra = [
            p.number for p in trial.document.pages if "\n\n" in p.text and p.number not in trial.gold_pages
        ]
        assert len(extra) == 2
        assert trial.gold_pages[0] not in extra
        placements.append(tuple(extra))
    assert len(set(placements)) > 1


def test_documents_shorter_than_the_length_are_extended_by_repeating_pages() -> None:
    document = neutral_document(pages=10)
    page = document.pages[0].tokens
    assert document.total_tokens < 6_000
    (trial,) = planted_trials(document, PageCounts(word_counter()), lengths=(6_000,), depths=(50,), repeats=1)
    assert len(trial.document.pages) > 10
    assert (
        6_000 - 2 * page
        <= trial.document.total_tokens - trial.document.pages[trial.gold_pages[0] - 1].tokens + page
    )
    # Page 11 is page 1 again.
    assert trial.document.pages[10].text == document.pages[0].text or trial.gold_pages[0] == 11


def test_planted_facts_are_not_answered_by_the_cut_host_document(counter) -> None:  # type: ignore[no-untyped-def]
    """On the sample contract the first candidates of 3 kinds were answered by the contract
    itself (its own interest rate, notice periods, seat of arbitration); each trial's fact is
    one the cut document cannot answer, its paraphrase names the fact's subject, and the plan
    and the report say how many facts were drawn again."""
    sample = get_sample("contract")
    document = document_from_texts("contract.txt", list(sample.pages), counter=counter)
    lengths = (8_000, 30_000)
    trials = planted_trials(
        document,
        PageCounts(counter),
        lengths=lengths,
        depths=(0, 50, 100),
        repeats=24,
        seed=0,
        paraphrase=True,
        distracters=2,
    )
    assert len(trials) == 24 * 2 * 3
    whole = HostText(sample.pages)
    for trial in trials:
        gold = trial.gold_pages[0] - 1
        shown = [p.text for p in trial.document.pages]
        # Everything the trial shows but the planted sentence (distracters included).
        rest = HostText([*shown[:gold], shown[gold].split("\n\n", 1)[1], *shown[gold + 1 :]])
        assert not [a for a in trial.answers if rest.states(a)], trial.id
        assert HostText([shown[gold]]).states(trial.answers[0])
        # The paraphrase names something the contract never mentions (the fact's subject).
        assert [w for w in re.findall(r"[^\W_]+", trial.question) if w[0].isupper() and not whole.names(w)]
    facts = {t.question_id: t for t in trials}
    regenerated = sum(1 for t in facts.values() if t.replanted)
    assert 1 <= regenerated < len(facts)
    # A fact per repeat, at every depth and length: the first candidate of its seed, unless it was
    # drawn again.
    for t in facts.values():
        repeat = int(t.question_id.rsplit("-", 1)[1])
        first = build_fact(repeat * 1_000)
        assert (t.answers == first.answers) == (t.replanted == 0), t.question_id
    plan = plan_sweep(trials, [parse_spec("baseline", BASE)], counter, bounds=False)
    assert plan.summary()["planted_facts"] == 24
    assert plan.summary()["facts_regenerated"] == regenerated
    report = sweep_markdown(plan, SweepResult(), title="t", engine="e", document="d")
    assert f"**Planted facts:** 24; {regenerated} drawn again" in report


def test_key_value_trials_ask_for_the_value_at_the_depth() -> None:
    trials = kv_trials(PageCounts(word_counter()), pairs=(75,), depths=(0, 50, 100), repeats=1, seed=2)
    assert [len(t.document.pages) for t in trials] == [75, 75, 75]
    for trial in trials:
        page = trial.document.pages[trial.gold_pages[0] - 1].text
        ((key, value),) = json.loads(page).items()
        assert key in trial.question and trial.answers == (value,)
    assert [t.gold_pages[0] for t in trials] == [1, 38, 75]


def write_jsonl_gz(path: Path, rows: list[dict[str, object]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


TOPICS = ("harbour", "glacier", "orchard", "lighthouse", "vineyard", "quarry")


def twenty_document_rows(questions: int = 3) -> list[dict[str, object]]:
    """Rows in the format of the Lost-in-the-Middle release's 20-document files: each question's
    own 20 retrieved ctxs, most relevant first, the gold marked ``isgold`` somewhere other than
    first, and one non-gold ctx that holds the answer (``hasanswer``)."""
    rows = []
    for q in range(questions):
        topic = TOPICS[q]
        answer = f"Captain Ondrej {topic.title()}"
        ctxs = []
        for i in range(20):
            text = (
                f"The {topic} passage {i} of question {q} talks about the {topic} at length and nothing else."
            )
            ctxs.append({"title": f"{topic.title()} {i}", "text": text, "hasanswer": False, "isgold": False})
        ctxs[4] = {
            "title": f"{topic.title()} history",
            "text": f"The {topic} was first charted by {answer} in 1804.",
            "hasanswer": True,
            "isgold": True,
        }
        ctxs[9] = {**ctxs[9], "text": f"Some say {answer} also sailed past the {topic}.", "hasanswer": True}
        rows.append({"question": f"who first charted the {topic}", "answers": [answer], "ctxs": ctxs})
    return rows


def test_a_twenty_document_file_shows_each_questions_own_passages_with_the_gold_moved(tmp_path: Path) -> None:
    rows = twenty_document_rows()
    path = write_jsonl_gz(tmp_path / "nq-open-20_total_documents.jsonl.gz", rows)
    items = read_qa_jsonl(path)
    assert [it.gold.title for it in items] == [
        f"{t.title()} history" for t in TOPICS[:3]
    ]  # isgold, not ctxs[0]
    trials = passage_trials(items, PageCounts(word_counter()), lengths=(0,), depths=(0, 50, 100), repeats=3)
    assert len(trials) == 9
    for trial in trials:
        row = next(r for r in rows if r["question"] == trial.question)
        ctxs = row["ctxs"]
        assert isinstance(ctxs, list)
        own = [c for c in ctxs if not c["hasanswer"]]  # the distracters, in the given order
        gold = next(c for c in ctxs if c["isgold"])
        pages = [p.text for p in trial.document.pages]
        assert len(pages) == 19  # 18 own distracters and the gold; the answer-bearing one is never shown
        position = trial.gold_pages[0] - 1
        assert position == {0.0: 0, 50.0: 9, 100.0: 18}[trial.depth]
        shown = [*own[:position], gold, *own[position:]]
        # As 001 shows search results: "Document [n](Title: ...) text", one per page.
        assert pages == [
            f"Document [{n}](Title: {c['title']}) {c['text']}" for n, c in enumerate(shown, start=1)
        ]
        answer = trial.answers[0]
        assert [i for i, text in enumerate(pages) if answer in text] == [position]
        assert trial.construction == "own-ctxs"


def test_an_oracle_file_ranks_other_rows_passages_by_bm25_and_drops_answer_bearing_ones(
    tmp_path: Path,
) -> None:
    rows: list[dict[str, object]] = [
        {
            "question": "who designed the copper lighthouse at Varnholm",
            "answers": ["Elsa Morrow"],
            "ctxs": [
                {
                    "title": "Varnholm lighthouse",
                    "text": "The copper lighthouse at Varnholm was designed by Elsa Morrow.",
                    "hasanswer": True,
                    "isgold": True,
                }
            ],
        },
        {
            "question": "when was the Varnholm ferry opened",
            "answers": ["1921"],
            "ctxs": [
                {
                    "title": "Varnholm ferry",
                    "text": "The ferry to Varnholm opened in 1921 beside the copper lighthouse.",
                    "isgold": True,
                }
            ],
        },
        {
            "question": "who painted the lighthouse keeper",
            "answers": ["Jon Sal"],
            "ctxs": [
                {
                    "title": "Keeper portrait",
                    "text": "A portrait of the lighthouse keeper, praised by Elsa Morrow, was painted by Jon Sal.",
                    "isgold": True,
                }
            ],
        },
    ]
    rows += [
        {
            "question": f"what is filler {i}",
            "answers": [f"thing {i}"],
            "ctxs": [
                {
                    "title": f"Filler {i}",
                    "text": f"Filler paragraph {i} describes weather and thing {i}.",
                    "isgold": True,
                }
            ],
        }
        for i in range(6)
    ]
    path = write_jsonl_gz(tmp_path / "oracle.jsonl.gz", rows)
    items = read_qa_jsonl(path)
    trials = passage_trials(
        items, PageCounts(word_counter()), lengths=(0,), depths=(100,), repeats=len(items)
    )
    trial = next(t for t in trials if t.question.startswith("who designed"))
    assert trial.construction == "bm25-from-other-rows"
    pages = [p.text for p in trial.document.pages]
    assert trial.gold_pages == (len(pages),) and "Elsa Morrow" in pages[-1]
    # The most relevant other passage comes first; the one naming the answer is never shown.
    assert "Varnholm ferry" in pages[0]
    assert not any("Elsa Morrow" in text for text in pages[:-1]) and len(pages) == 8


def test_the_lost_in_the_middle_preset_reads_the_file_and_says_how_it_built_the_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twenty = write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows())
    args = ["lab", "--preset", "lost-in-the-middle", "--provider", "simulated", "--repeats", "2"]
    assert main(["--json", *args, "--qa-file", str(twenty)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["protocol"]["construction"] == ["own-ctxs"]
    assert data["layout"] == "question-after" and "001" in data["layout_why"]
    made = data["protocol"]
    assert set(made["question_placement"].values()) == {
        "question-after",
        "document-first",
        "repeated",
        "before-and-after",  # R&R: its reminders carry the question, it keeps its own layout
    }
    why = {series.split(" (")[0]: text for series, text in made["question_placement_why"].items()}
    assert why["Baseline"] == "the sweep's layout"
    assert why["Question last"].startswith("its own (document-first)")
    assert why["R&R"].startswith("its own (before-and-after), it does not take question-after")
    methods = {s["method_name"] for s in data["series"]}
    assert {"question-last", "repeat"} <= methods
    oracle = write_jsonl_gz(
        tmp_path / "oracle.jsonl.gz",
        [{**r, "ctxs": [c for c in r["ctxs"] if c["isgold"]]} for r in twenty_document_rows()],  # type: ignore[union-attr]
    )
    assert main([*args, "--qa-file", str(oracle), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "bm25-from-other-rows" in out
        and "ranked by BM25" in out
        and "question placement: question-after" in out
        and "it does not take question-after" in out
    )


def test_the_cli_and_the_report_say_where_each_series_puts_the_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = tmp_path / "doc.txt"
    document.write_text("\f".join(NEUTRAL * 8 for _ in range(6)))
    args = ["lab", str(document), "--preset", "quick", "--provider", "simulated", "--repeats", "1",
            "--depths", "50", "--lengths", "1000", "--dry-run"]  # fmt: skip
    assert main([*args, "--methods", "baseline:layout=query-aware,rr,question-last"]) == 0
    out = capsys.readouterr().out
    assert "question placement: before-and-after" in out
    assert "query-aware — set for this series (layout=query-aware)" in out
    assert "document-first — its own (document-first)" in out
    # R&R takes the sweep's layout: no line for it.
    assert "the method's own layout" not in out and not any(
        line.strip().startswith("R&R") for line in out.splitlines()
    )
    assert main([*args, "--methods", "question-last:layout=query-aware"]) == 2
    err = capsys.readouterr().err
    assert "question-last has its own prompt layout" in err and len(err.strip().splitlines()) == 1
    # The Markdown report lists every series' layout.
    trials = planted_trials(
        neutral_document(), PageCounts(word_counter()), lengths=(2_000,), depths=(50,), repeats=1
    )
    series = [parse_spec(m, BASE) for m in ("baseline:layout=query-aware", "rr", "repeat")]
    plan = plan_sweep(trials, series, word_counter(), bounds=False, layout=BASE.question_placement)
    with Executor(make_client("offline", model="offline")) as executor:
        result = run_sweep(plan, executor)
    report = sweep_markdown(plan, result, title="t", engine="e", document="d").replace("\\", "")
    assert "- **Question placement:** before-and-after (the sweep's); by series:" in report
    assert "query-aware — set for this series" in report and "repeated — its own (repeated)" in report
    assert "before-and-after — the sweep's layout" in report


@pytest.mark.shared_data
def test_the_papers_protocol_from_the_oracle_file() -> None:
    if not QA_FILE.exists():
        pytest.skip("../shared/data is absent (a user's clone has no shared/)")
    items = read_qa_jsonl(QA_FILE, limit=200)
    trials = passage_trials(
        items, PageCounts(word_counter()), lengths=(2_000,), depths=(0, 50, 100), repeats=2
    )
    for trial in trials:
        item = next(i for i in items if i.question == trial.question)
        gold = trial.document.pages[trial.gold_pages[0] - 1].text
        assert gold == item.gold.shown(trial.gold_pages[0])  # the gold passage is on the gold page, whole
        others = [p.text for p in trial.document.pages if p.number != trial.gold_pages[0]]
        assert not any(item.gold.text in text for text in others)
        assert trial.construction == "bm25-from-other-rows"
    assert [t.gold_pages[0] for t in trials[:3]][0] == 1
    assert trials[2].gold_pages[0] == len(trials[2].document.pages)


KV_ROWS = [
    {
        "ordered_kv_records": [[f"key-{r}-{i:03d}", f"value-{r}-{i:03d}"] for i in range(140)],
        "key": f"key-{r}-007",
        "value": f"value-{r}-007",
    }
    for r in range(3)
]


def test_key_value_retrieval_reads_the_users_file(tmp_path: Path) -> None:
    path = write_jsonl_gz(tmp_path / "kv-retrieval-140_keys.jsonl.gz", KV_ROWS)
    preset = get_preset("key-value")
    spec = trial_spec(preset, None, qa_file=path, repeats=2)
    trials = build_trials(spec, preset, None, word_counter())
    assert len(trials) == 10
    for trial in trials:
        row = next(r for r in KV_ROWS if r["key"] in trial.question)  # the file's key, not a generated one
        assert trial.answers == (row["value"],) and trial.length == 140 and trial.exact
        pages = [json.loads(p.text) for p in trial.document.pages]
        position = trial.gold_pages[0] - 1
        assert pages[position] == {row["key"]: row["value"]}
        others = [[k, v] for k, v in row["ordered_kv_records"] if k != row["key"]]  # type: ignore[union-attr]
        assert [list(p.items())[0] for p in pages[:position] + pages[position + 1 :]] == [
            tuple(o) for o in others
        ]
        assert position == {0.0: 0, 25.0: 35, 50.0: 69, 75.0: 104, 100.0: 139}[trial.depth]
    # --lengths cuts a row to fewer pairs, the asked pair kept.
    short = build_trials(
        trial_spec(preset, None, qa_file=path, lengths=(75,), repeats=1), preset, None, word_counter()
    )
    assert {len(t.document.pages) for t in short} == {75}
    assert read_kv_jsonl(path)[0].key == "key-0-007"


def test_key_value_is_scored_by_exact_match_on_the_value() -> None:
    value = "d1ff29be-4e2a-4208-a182-0cea716be3d4"
    common = dict(
        series="s", method="baseline", length=75, depth=0.0, trial="t", question_id="q", answers=(value,),
        gold_pages=(1,), retrieved=(), cited=None, retrieves=False, cost_usd=0.0, calls=1, input_tokens=1,
        output_tokens=1, failed=False,
    )  # fmt: skip
    assert score(answer=f"The value is {value}.", exact=True, **common).correct  # type: ignore[arg-type]
    assert not score(answer="d1ff29be", exact=True, **common).correct  # type: ignore[arg-type]
    assert not score(answer="d1ff29be-4e2a-4208-a182", exact=True, **common).correct  # type: ignore[arg-type]


def test_a_file_of_the_wrong_kind_or_neither_gets_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kv = write_jsonl_gz(tmp_path / "kv.jsonl.gz", KV_ROWS)
    qa = write_jsonl_gz(tmp_path / "qa.jsonl.gz", twenty_document_rows(2))
    neither = tmp_path / "other.jsonl"
    neither.write_text('{"prompt": "x", "completion": "y"}\n')
    cases = [("key-value", qa, "is a QA file"), ("lost-in-the-middle", kv, "key–value retrieval file"),
             ("key-value", neither, "neither"), ("lost-in-the-middle", neither, "neither"),
             ("quick", kv, "would not be read")]  # fmt: skip
    for preset, path, message in cases:
        code = main(
            ["lab", "--preset", preset, "--qa-file", str(path), "--provider", "simulated", "--dry-run"]
        )
        _, err = capsys.readouterr()
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_a_qa_file_that_is_not_in_the_format_says_which_line(tmp_path: Path) -> None:
    bad = tmp_path / "qa.jsonl"
    bad.write_text(
        '{"question": "q", "answers": ["a"], "ctxs": [{"title": "t", "text": "x"}]}\n{"question": 3}\n'
    )
    with pytest.raises(ConfigError, match="line 2"):
        read_qa_jsonl(bad)


def test_a_key_value_file_with_fewer_pairs_than_asked_is_refused_and_no_trial_id_repeats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl_gz(tmp_path / "kv-retrieval-140_keys.jsonl.gz", KV_ROWS)
    # Asking 300 pairs of 140-pair rows used to build the 140-pair documents twice under one id.
    code = main(["lab", "--preset", "key-value", "--qa-file", str(path), "--lengths", "140,300",
                 "--depths", "0,100", "--repeats", "2", "--methods", "baseline", "--provider", "simulated",
                 "--dry-run"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "300 pairs asked" in err and "140" in err and len(err.strip().splitlines()) == 1
    rows = read_kv_jsonl(path)
    # 0 (each row's own) and 140 are the same document: built once.
    trials = kv_trials(
        PageCounts(word_counter()), pairs=(0, 140, 75), depths=(0, 100, 100), repeats=2, rows=rows
    )
    ids = [t.id for t in trials]
    assert len(ids) == len(set(ids)) == 2 * 2 * 2
    assert sorted({t.length for t in trials}) == [75, 140]
    with pytest.raises(ConfigError, match="at least 2 pairs"):
        kv_trials(PageCounts(word_counter()), pairs=(1,), depths=(0,), repeats=1)
    with pytest.raises(RuntimeError, match="share the trial id"):
        check_unique([trials[0], trials[0]])


def test_each_trial_records_the_tokens_built_and_where_the_answer_really_sits(tmp_path: Path) -> None:
    path = write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows())
    items = read_qa_jsonl(path)
    trials = passage_trials(items, PageCounts(word_counter()), lengths=(120,), depths=(0, 40, 100), repeats=1)
    for trial in trials:
        counts = trial.document.page_tokens
        assert trial.tokens == sum(counts) and trial.tokens != trial.length
        assert abs(trial.tokens - trial.length) <= 0.1 * trial.length
        start = sum(counts[: trial.gold_pages[0] - 1])
        assert trial.gold_depth == round(100 * start / sum(counts), 1)
    assert trials[1].gold_depth != trials[1].depth  # 40% asked; a page boundary moved it
    plan = plan_sweep(trials, [parse_spec("baseline", BASE)], word_counter(), bounds=False)
    with Executor(make_client("offline", model="offline")) as executor:
        result = run_sweep(plan, executor)
    rows = trial_rows(plan, result)
    assert [(r["length"], r["depth"]) for r in rows] == [(120, t.depth) for t in trials]
    assert [(r["built_tokens"], r["gold_depth"]) for r in rows] == [(t.tokens, t.gold_depth) for t in trials]
    cell = sweep_json(plan, result)["cells"][1]
    assert cell["depth"] == 40.0 and cell["gold_depth"] == trials[1].gold_depth
    assert cell["built_tokens"] == trials[1].tokens
    assert "| Built tokens | Actual depth |" in sweep_markdown(
        plan, result, title="t", engine="e", document="d"
    )


def test_a_document_with_no_distracter_is_refused(tmp_path: Path) -> None:
    rows = [
        {"question": f"who built bridge {q}", "answers": ["Mira Osk"],
         "ctxs": [{"title": f"Bridge {q}", "text": f"Bridge {q} was built by Mira Osk.", "isgold": True}]}
        for q in range(2)
    ]  # fmt: skip
    items = read_qa_jsonl(write_jsonl_gz(tmp_path / "oracle2.jsonl.gz", rows))
    with pytest.raises(ConfigError, match="no passage without its answer"):
        passage_trials(items, PageCounts(word_counter()), lengths=(20,), depths=(50,), repeats=1)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"answers": "Zorblax"}, '"answers" must be a non-empty list'),
        ({"answers": []}, '"answers" must be a non-empty list'),
        ({"answers": [""]}, "each answer must be a non-empty string"),
        ({"ctxs": [{"title": "t", "text": None, "isgold": True}]}, "text must be a non-empty string"),
        ({"question": None}, '"question" must be a non-empty string'),
    ],
)
def test_the_qa_reader_refuses_bad_rows_in_one_line(
    tmp_path: Path, row: dict[str, object], message: str
) -> None:
    good = {
        "question": "q",
        "answers": ["Zorblax"],
        "ctxs": [{"title": "t", "text": "Zorblax here", "isgold": True}],
    }
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **row}) + "\n")
    with pytest.raises(ConfigError, match="line 2") as caught:
        read_qa_jsonl(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_an_empty_file_says_it_has_no_rows(tmp_path: Path, text: str) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(text)
    for read in (read_qa_jsonl, read_kv_jsonl):
        with pytest.raises(ConfigError, match="has no rows"):
            read(path)


class CountingCounter:
    """A word counter that says whether anything was counted (anything built)."""

    def __init__(self) -> None:
        self.inner = word_counter()
        self.label, self.approximate, self.counted = self.inner.label, True, 0

    def count_many(self, texts):  # type: ignore[no-untyped-def]
        self.counted += len(texts)
        return self.inner.count_many(texts)


def test_oversized_repeats_are_refused_before_anything_is_built(tmp_path: Path) -> None:
    counter = CountingCounter()
    for task_repeats in (10**6, MAX_TRIALS // 5 + 1):
        with pytest.raises(ConfigError, match="at most 20,000"):
            kv_trials(PageCounts(counter), pairs=(75,), depths=FIVE, repeats=task_repeats)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="at most 20,000"):
            planted_trials(
                neutral_document(), PageCounts(counter), lengths=(2_000,), depths=FIVE, repeats=task_repeats
            )  # type: ignore[arg-type]
    assert counter.counted == 0
    # With a file, repeats above its questions are capped, and the cap is said.
    path = write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows(3))
    preset = get_preset("lost-in-the-middle")
    spec = trial_spec(preset, None, qa_file=path, repeats=7)
    trials = build_trials(spec, preset, None, word_counter())
    assert len({t.repeat for t in trials}) == 3
    (note,) = trial_notes(spec, trials)
    assert "7 repeats asked" in note and "3 questions" in note


def test_answer_bearing_passages_left_out_are_counted_and_titles_are_checked(tmp_path: Path) -> None:
    rows = twenty_document_rows(2)
    ctxs = rows[0]["ctxs"]
    assert isinstance(ctxs, list)
    ctxs[12] = {**ctxs[12], "title": "Captain Ondrej Harbour"}  # the answer in a title, not flagged
    items = read_qa_jsonl(write_jsonl_gz(tmp_path / "twenty.jsonl.gz", rows))
    assert [it.left_out for it in items] == [2, 1]
    assert not any("Captain Ondrej Harbour" in p.title for p in items[0].distracters)
    trials = passage_trials(items, PageCounts(word_counter()), lengths=(0,), depths=(50,), repeats=2)
    plan = plan_sweep(trials, [parse_spec("baseline", BASE)], word_counter(), bounds=False)
    assert protocol(plan)["answer_passages_dropped"] == {"passages": 3, "questions": 2}


# ---- Statistics, by hand ---------------------------------------------------------------------


def test_wilson_interval_matches_a_hand_computation() -> None:
    # 2 of 2: p = 1, n = 2, z = 1.959964.
    z = 1.959964
    denom = 1 + z * z / 2
    centre = (1 + z * z / 4) / denom
    half = z * math.sqrt(z * z / 16) / denom
    low, high = wilson(2, 2)
    assert low == pytest.approx(centre - half, abs=1e-9) and high == pytest.approx(1.0)
    assert wilson(0, 4)[0] == 0.0 and wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(7, 10)
    assert low == pytest.approx(0.3968, abs=1e-3) and high == pytest.approx(0.8922, abs=1e-3)


def test_effective_length_is_the_longest_length_keeping_85_percent() -> None:
    # ``base_low``: the lower end of the shortest length's 95% interval, read against the floor.
    assert (
        effective_length({10_000: 0.9, 20_000: 0.8, 40_000: 0.7, 80_000: 0.8}, base_low=0.6).length == 20_000
    )
    assert effective_length({10_000: 1.0, 20_000: 1.0}, base_low=0.7).length == 20_000
    assert effective_length({10_000: 0.0, 20_000: 0.5}, base_low=0.0).length is None


# ---- The known curve --------------------------------------------------------------------------


def _sweep(document, series, reach: int, depths=(0, 50, 100), repeats: int = 2):  # type: ignore[no-untyped-def]
    counter = word_counter()
    trials = planted_trials(
        document, PageCounts(counter), lengths=(10_000,), depths=depths, repeats=repeats, seed=5
    )
    plan = plan_sweep(trials, [parse_spec(s, BASE) for s in series], counter)
    with Executor(SimulatedReader(reach=reach, counter=counter), concurrency=2) as executor:
        return plan, run_sweep(plan, executor)


class _LastFirst:
    """An executor whose runs finish in the reverse of the plan's order."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def stream_jobs(self, jobs, **opening):  # type: ignore[no-untyped-def]
        yield from reversed(
            [i for i in self.inner.stream_jobs(jobs, **opening) if not isinstance(i, CallEvent)]
        )

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)


def test_results_read_in_the_plans_order_whatever_order_runs_finish_in() -> None:
    # Series were listed in the order their first run finished: a second, identical sweep
    # (every call from the store, so faster runs first) could list its cells differently.
    counter = word_counter()
    trials = planted_trials(
        neutral_document(), PageCounts(counter), lengths=(4_000,), depths=(0, 100), repeats=1
    )
    series = [parse_spec(s, BASE) for s in ("baseline", "rr:k=1000", "reprompt:k=1000")]
    plan = plan_sweep(trials, series, counter)
    with Executor(SimulatedReader(reach=1_500, counter=counter), concurrency=2) as executor:
        result = run_sweep(plan, _LastFirst(executor))  # type: ignore[arg-type]
    assert [s.series.split(" (")[0] for s in result.summaries] == ["Baseline", "R&R", "Reprompting"]
    views = [LabJob.of(j) for j in plan.jobs]
    assert not result.failures
    assert [(s.series, s.trial) for s in result.scores] == [(j.series, j.trial) for j in views if not j.bound]
    assert [(s.series, s.trial) for s in result.bound_scores] == [
        (j.series, j.trial) for j in views if j.bound
    ]


def test_the_lab_recovers_a_known_positional_bias_exactly() -> None:
    """The simulated reader sees only pages within 1,500 tokens of instructions. Without
    reminders it loses the middle of a 10,000-token document; reminders every 1,000 tokens
    keep every page in view. The Lab must draw exactly that."""
    plan, result = _sweep(
        neutral_document(), ("baseline", "reprompt:k=1000", "icr", "rr:k=1000"), reach=1_500
    )
    curve = {(c.series.split(" (")[0], c.depth): (c.correct, c.trials) for c in result.cells}
    assert curve[("Baseline", 0.0)] == (2, 2)
    assert curve[("Baseline", 50.0)] == (0, 2)  # lost in the middle
    assert curve[("Baseline", 100.0)] == (2, 2)
    for depth in (0.0, 50.0, 100.0):
        assert curve[("Reprompting", depth)] == (2, 2)  # flat
        assert curve[("R&R", depth)] == (2, 2)
    assert curve[("ICR", 50.0)] == (0, 2)  # retrieval without reminders misses the middle too
    summaries = {s.series.split(" (")[0]: s for s in result.summaries}
    assert summaries["Baseline"].accuracy == pytest.approx(4 / 6)
    # A fact per repeat, at every depth: six trials, two distinct questions (the interval counts
    # them: the Wilson interval of 4/6 with two observations).
    assert (summaries["Baseline"].trials, summaries["Baseline"].questions) == (6, 2)
    assert summaries["Baseline"].ci == pytest.approx(wilson(4 / 6 * 2, 2))
    # The failure split: ICR's misses are retrieval misses (the page was never picked),
    # the baseline's are reading misses (it had the page and did not find it).
    assert summaries["ICR"].retrieval_misses == 2 and summaries["ICR"].reading_misses == 0
    assert summaries["Baseline"].reading_misses == 2
    bounds = {b.series: b for b in result.bounds}
    assert bounds["Closed-book"].accuracy == 0.0 and bounds["Oracle"].accuracy == 1.0
    assert (
        bounds["Oracle"].trials == 2
    )  # once per question (here a fact per repeat, at every depth), not per cell
    data = sweep_json(plan, result)
    assert {"calls", "input_tokens", "usd"} <= set(data["plan"])
    cell = data["cells"][0]
    assert {
        "method",
        "length",
        "depth",
        "trials",
        "correct",
        "accuracy",
        "ci_low",
        "ci_high",
        "would_cost_usd",
    } <= set(cell)
    assert 0 <= cell["depth"] <= 100 and cell["length"] == 10_000
    assert "Baseline" in sweep_markdown(plan, result, title="t", engine="e", document="d")
    assert sweep_csv(result).splitlines()[0].startswith("engine,method,")


def test_a_free_engine_never_reports_a_cost_as_paid() -> None:
    plan, result = _sweep(neutral_document(), ("baseline",), reach=1_500, depths=(50,), repeats=1)
    data = sweep_json(plan, result)
    assert data["paid_usd"] == 0 and data["would_cost_usd"] > 0  # priced as gpt-4.1-mini, not paid
    assert "cost_usd" not in data and data["engine"] == "simulated (not an LLM)"
    assert all("cost_usd" not in s and s["would_cost_usd"] >= 0 for s in data["series"])
    header, *rows = sweep_csv(result).splitlines()
    assert header.startswith("engine,") and "would_cost_usd" in header.split(",")
    assert "cost_usd" not in header.split(",") and rows[0].startswith("simulated (not an LLM),")
    report = sweep_markdown(plan, result, title="t", engine="simulated", document="d")
    assert "paid $0" in report and "would cost $" in report and "Would cost (USD)" in report
    assert "| Cost (USD) |" not in report


# ---- Never pay twice ---------------------------------------------------------------------------


def _stub_sweep(  # type: ignore[no-untyped-def]
    stub: StubServer, store: CallCache, cancel_after: int | None = None, protocol: str = "json"
):
    counter = word_counter()
    document = neutral_document(pages=12, words_per_page=150)
    trials = planted_trials(document, PageCounts(counter), lengths=(1_500,), depths=(0, 50, 100), repeats=1)
    base = BASE.but(provider="openai-compatible", model="local-model", price_model="")
    series = [parse_spec(f"{s}:protocol={protocol}", base) for s in ("baseline", "rr")]
    plan = plan_sweep(trials, series, counter)
    client = make_client("openai-compatible", model="local-model", base_url=stub.url, max_retries=0)
    with Executor(client, concurrency=1, cache=store) as executor:

        def progress(done: int, total: int, _: object) -> None:
            if cancel_after is not None and done >= cancel_after:
                executor.cancel()

        return plan, run_sweep(plan, executor, on_progress=progress)


def test_an_interrupted_sweep_pays_only_for_what_is_missing_and_a_repeat_pays_nothing(
    stub: StubServer, tmp_path: Path
) -> None:
    store = SQLiteStore(tmp_path / "lab.sqlite3")
    plan, first = _stub_sweep(stub, store, cancel_after=2)
    sent_first = len(stub.requests)
    assert first.cancelled and 0 < sent_first < plan.calls
    assert first.calls_made == sent_first
    plan, second = _stub_sweep(stub, store)
    sent_second = len(stub.requests) - sent_first
    assert second.calls_made == sent_second
    assert second.calls_cached >= sent_first  # everything paid before came from the store
    assert sent_first + sent_second <= plan.calls
    plan, third = _stub_sweep(stub, store)
    assert len(stub.requests) == sent_first + sent_second  # a repeated sweep sends nothing
    assert third.calls_made == 0 and third.calls_cached == plan.calls
    assert third.cost_usd() == 0.0


def test_the_budget_cap_refuses_before_any_call(stub: StubServer) -> None:
    counter = word_counter()
    trials = planted_trials(
        neutral_document(), PageCounts(counter), lengths=(10_000,), depths=(0, 50), repeats=1
    )
    priced = BASE.but(provider="openai", model="gpt-4.1", price_model="")
    plan = plan_sweep(trials, [parse_spec("baseline", priced)], counter)
    assert plan.usd > 0.01
    with pytest.raises(ConfigError, match="above the budget"):
        check_budget(plan, 0.01)
    check_budget(plan, plan.usd + 1)  # under the cap: allowed
    assert stub.requests == []


def test_a_provider_failure_mid_sweep_keeps_every_result_and_names_the_missing_cells(
    stub: StubServer, tmp_path: Path
) -> None:
    from stub_server import server_error

    stub.enqueue(None, None, server_error(500))  # the third request fails
    store = SQLiteStore(tmp_path / "lab.sqlite3")
    plan, result = _stub_sweep(stub, store)
    assert len(result.failures) == 1
    assert len(result.missing_cells) == 1
    counted = sum(c.trials for c in result.cells) + len(result.bound_scores)
    assert counted == len(plan.jobs) - 1  # every other run kept


def test_the_paper_protocol_sends_plain_prompts_and_counts_a_failure_as_wrong(
    stub: StubServer, tmp_path: Path
) -> None:
    import csv
    import io

    from stub_server import prompt_of, server_error

    from rr_core.lab.report import trials_csv

    stub.enqueue(None, None, server_error(500))  # the third request fails
    plan, result = _stub_sweep(stub, SQLiteStore(tmp_path / "lab.sqlite3"), protocol="paper")
    bodies = stub.bodies("chat")
    assert bodies and all("response_format" not in b for b in bodies)  # plain text: no structured output
    assert all("Reply in plain text, not JSON" in prompt_of(b) for b in bodies)
    assert all(b.get("temperature") == 0 for b in bodies)
    assert len(result.failures) == 1 and result.failure_reasons  # the failure is still named...
    counted = sum(c.trials for c in result.cells) + len(result.bound_scores)
    assert counted == len(plan.jobs)  # ...and kept in its cell's denominator, as wrong
    failed = next(c for c in result.cells if c.failed)
    assert failed.correct < failed.trials and result.missing_cells == []  # complete: the failure is in it
    data = sweep_json(plan, result)
    made = data["protocol"]
    assert (
        made["prompt_protocol"] == "paper"
        and made["failed_runs"] == "counted as wrong (the paper's protocol)"
    )
    assert set(made["prompt_protocol_by_series"].values()) == {"paper"}  # the bounds too
    assert all("accuracy_paper_metric" in s for s in data["series"])
    assert all("protocol: paper" in s["method"] for s in data["series"])
    rows = list(csv.DictReader(io.StringIO(trials_csv(plan, result))))
    assert {r["protocol"] for r in rows} == {"paper"}
    broken = next(r for r in rows if r["failed"] == "1")
    assert broken["correct"] == "0" and broken["correct_paper_metric"] == "0"
    report = sweep_markdown(plan, result, title="t", engine="e", document="d")
    assert "**Prompt protocol:** paper" in report and "Reference metric" in report
    assert "**Failed runs:** counted as wrong" in report


def test_the_json_protocol_leaves_a_failure_out_and_says_so(stub: StubServer, tmp_path: Path) -> None:
    from stub_server import server_error

    stub.enqueue(None, None, server_error(500))
    plan, result = _stub_sweep(stub, SQLiteStore(tmp_path / "lab.sqlite3"))
    made = sweep_json(plan, result)["protocol"]
    assert made["prompt_protocol"] == "json" and made["failed_runs"] == "left out of their cell"
    assert sum(c.trials for c in result.cells) + len(result.bound_scores) == len(plan.jobs) - 1


def test_lab_cli_takes_the_paper_protocol(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "neutral.txt"
    path.write_text("\f".join(p.text for p in neutral_document().pages))
    args = ["lab", str(path), "--provider", "simulated", "--methods", "baseline,self-route,rr:k=1000"]
    args += ["--lengths", "8000", "--depths", "0,100", "--repeats", "1", "--protocol", "paper"]
    code = main(["--json", *args, "--trials-csv", str(tmp_path / "t.csv")])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["prompt_protocol"] == "paper" and data["protocol"]["prompt_protocol"] == "paper"
    assert [s["method"] for s in data["series"]] == [
        "Baseline (protocol: paper)",
        "Self-Route (w = 300 · top = 5 · protocol: paper)",
        "R&R (k = 1,000 · N = 5 · protocol: paper)",
    ]
    assert all(s["accuracy_paper_metric"] is not None for s in data["series"])
    assert "protocol" in (tmp_path / "t.csv").read_text().splitlines()[0].split(",")
    jobs_file = tmp_path / "jobs.jsonl"
    assert main([*args, "--dry-run", "--jobs-out", str(jobs_file)]) == 0
    text = capsys.readouterr().out
    assert "prompt protocol: paper" in text and "failed runs counted as wrong" in text
    from rr_core.lab.sweep import read_jobs

    jobs = read_jobs(jobs_file.read_text())  # a worker elsewhere runs them in the same protocol
    assert jobs and {j.settings.protocol.value for j in jobs} == {"paper"}


# ---- Presets and the CLI ----------------------------------------------------------------------


def test_every_preset_plans(counter) -> None:  # type: ignore[no-untyped-def]
    document = neutral_document()
    for preset in PRESETS.values():
        if preset.task == "passages":
            continue  # needs a QA file (covered with the shared one above)
        spec = TrialSpec(task=preset.task, lengths=(2_000,) if preset.task != "kv" else (75,), repeats=1)
        trials = build_trials(spec, preset, document, word_counter())
        plan = plan_sweep(
            trials, [parse_spec(s, BASE) for s in preset.series], word_counter(), bounds=preset.bounds
        )
        assert plan.calls >= len(trials)


def test_the_paper_grid_places_facts_every_10k_tokens() -> None:
    preset = get_preset("paper-grid")
    document = neutral_document(pages=40, words_per_page=500)  # 20,000 tokens, extended as needed
    trials = build_trials(
        TrialSpec(task="planted", lengths=(20_000,), repeats=1), preset, document, word_counter()
    )
    assert sorted(t.depth for t in trials) == [0.0, 50.0, 100.0]


def test_lab_cli_prints_the_plan_then_the_grid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "neutral.txt"
    path.write_text("\f".join(p.text for p in neutral_document().pages))
    code = main(
        [
            "--json",
            "lab",
            str(path),
            "--provider",
            "simulated",
            "--reach",
            "1500",
            "--methods",
            "baseline,rr:k=1000",
            "--lengths",
            "8000",
            "--depths",
            "0,50,100",
            "--repeats",
            "1",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["plan"]["calls"] > 0 and data["calls_made"] > 0
    cells = {(c["method"].split(" (")[0], c["depth"]): c["accuracy"] for c in data["cells"]}
    assert cells[("Baseline", 50.0)] == 0.0 and cells[("R&R", 50.0)] == 1.0
    code = main(
        ["--json", "lab", str(path), "--provider", "openai", "--model", "gpt-4.1", "--max-usd", "0.0001"]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "above the budget" in err
    code = main(["--json", "lab", str(path), "--provider", "openai", "--model", "gpt-4.1", "--dry-run"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["dry_run"] is True


def test_not_stated_is_scored_as_n_a_whatever_words_the_model_used() -> None:
    """found = false is no answer: wrong where the trial's document holds the answer, even when
    the model's words for "not stated" contain the answer's."""
    from rr_core.llm import ScriptedClient

    counter = word_counter()
    trials = planted_trials(neutral_document(pages=12, words_per_page=150), PageCounts(counter),
                            lengths=(1_500,), depths=(50,), repeats=1)  # fmt: skip
    gold = trials[0].answers[0]

    def reply(request: object) -> str:
        said = f"The document does not state {gold}"
        return json.dumps({"question": "q", "answer": said, "found": False, "citations": []})

    plan = plan_sweep(trials, [parse_spec("baseline", BASE)], counter)
    with Executor(ScriptedClient(responder=reply), concurrency=1) as executor:
        result = run_sweep(plan, executor)
    assert [(c.correct, c.trials) for c in result.cells] == [(0, 1)]


# ---- Money and faults during a sweep (the CLI, as a user runs it) -------------------------------


def _neutral_file(tmp_path: Path) -> Path:
    path = tmp_path / "neutral.txt"
    path.write_text("\f".join(p.text for p in neutral_document().pages))
    return path


def _lab(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    code = main(["--json", "lab", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


SMALL_GRID = (
    "--methods",
    "baseline,rr:k=1000",
    "--lengths",
    "8000",
    "--depths",
    "0,50,100",
    "--repeats",
    "1",
)


def test_a_sweep_at_another_reach_makes_real_calls_and_matches_a_fresh_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(_neutral_file(tmp_path))
    # (a reach of 5,000 tokens sees the middle of the 8,000-token document from either end)
    code, wide, err = _lab(capsys, path, "--provider", "simulated", "--reach", "5000", *SMALL_GRID)
    assert code == 0, err
    code, near, err = _lab(capsys, path, "--provider", "simulated", "--reach", "500", *SMALL_GRID)
    assert code == 0, err
    monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / "fresh.sqlite3"))
    code, fresh, err = _lab(capsys, path, "--provider", "simulated", "--reach", "500", *SMALL_GRID)
    assert code == 0, err
    # As many real calls as on a fresh store (only prompts repeated within the sweep are shared).
    assert near["calls_made"] == fresh["calls_made"] == wide["calls_made"] > 0
    # Repeats of a prompt within the sweep are not paid twice: found in the store or waited
    # for while in flight, whichever their timing makes them.
    assert near["calls_cached"] + near["calls_shared"] == fresh["calls_cached"] + fresh["calls_shared"]
    assert near["cells"] == fresh["cells"] and near["series"] == fresh["series"]
    assert near["cells"] != wide["cells"]  # the reach changes the reading: the replies differ


def _paid_provider(monkeypatch: pytest.MonkeyPatch, stub: StubServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-lab")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url)


def test_the_budget_cap_holds_while_running_against_a_server_billing_far_above_the_estimate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: StubServer
) -> None:
    from tests.stub_server import Reply

    _paid_provider(monkeypatch, stub)
    # Each reply bills 200,000 input tokens: $0.40 on gpt-4.1, for a prompt of about 8,000.
    huge = {"input_tokens": 200_000, "output_tokens": 20, "total_tokens": 200_020}
    stub.responder = lambda path, body: Reply(usage=huge)
    argv = (str(_neutral_file(tmp_path)), "--provider", "openai", "--model", "gpt-4.1", *SMALL_GRID)
    code, data, err = _lab(capsys, *argv, "--max-usd", "1.00", "--concurrency", "4")
    assert data["plan"]["usd"] < 1.00  # the estimate fits: only the bills pass it
    assert data["paid_usd"] <= 1.00
    assert 0 < len(stub.requests) < data["plan"]["calls"], (err, [r.path for r in stub.requests])
    assert data["paid_usd"] == pytest.approx(0.40 * len(stub.requests), rel=0.01)
    assert "budget cap of $1.00 was reached" in data["stopped"] and "budget cap" in err
    assert code == 4  # some runs were not sent


def test_a_provider_that_cannot_be_reached_under_a_cap_exits_3_not_4(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    refused_port: int,
    dropping_server: DroppingServer,
) -> None:
    """Every call failed at the provider: a provider's failure (3), not a sweep the cap stopped part
    way (4), whether nothing was sent (refused: nothing possibly billed, the cap untouched) or every
    call was sent and its answer lost (counted possibly billed, which fills a small cap)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-lab")
    argv = (str(_neutral_file(tmp_path)), "--provider", "openai", "--model", "gpt-4.1", *SMALL_GRID)
    _, dry, _ = _lab(capsys, *argv, "--dry-run")
    cap = f"{dry['plan']['usd'] * 1.05:.4f}"  # room for the estimate; the possibly billed fill it

    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{refused_port}/v1")
    code, data, err = _lab(capsys, *argv, "--max-usd", cap, "--concurrency", "2")
    assert data["failed_runs"] == data["plan"]["runs"] > 0 and "Could not reach" in err
    assert data["possibly_usd"] == 0 and data["stopped"] is None, data["stopped"]
    assert code == 3, err

    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{dropping_server.port}/v1")
    monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / "dropped.sqlite3"))
    code, data, err = _lab(capsys, *argv, "--max-usd", cap, "--concurrency", "2")
    assert data["failed_runs"] == data["plan"]["runs"] and data["possibly_usd"] > 0
    assert "budget cap" in (data["stopped"] or "") and "Could not reach" in err
    assert code == 3, err


def test_a_budget_with_no_known_price_is_refused_until_a_price_model_is_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stub: StubServer
) -> None:
    path = str(_neutral_file(tmp_path))
    server = (
        "--provider",
        "openai-compatible",
        "--base-url",
        stub.url,
        "--model",
        "gpt-4.1-mini",
        *SMALL_GRID,
    )
    code, _, err = _lab(capsys, path, *server, "--max-usd", "6", "--dry-run")
    assert code == 2 and "no price known" in err and "--price-model" in err
    code, data, err = _lab(capsys, path, *server, "--dry-run")
    assert (
        code == 0 and data["plan"]["price_known"] is False and "no price known" in data["plan"]["priced_as"]
    )
    code, data, err = _lab(
        capsys, path, *server, "--max-usd", "6", "--price-model", "gpt-4.1-mini", "--dry-run"
    )
    assert code == 0, err
    assert data["plan"]["usd"] > 0 and data["plan"]["price_known"] is True
    # ask too
    code = main(["--json", "ask", path, "-q", "x", "--methods", "baseline", *server[:6], "--max-usd", "6"])
    _, err = capsys.readouterr()
    assert code == 2 and "no price is known" in err
    assert stub.requests == []


def test_a_store_that_cannot_keep_a_reply_stops_the_sweep_says_what_was_paid_and_exits_5(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: StubServer
) -> None:
    from rr_core.errors import LedgerError

    def disk_full(self: SQLiteStore, key: str, call: object) -> None:
        raise LedgerError("The run history could not be written (database or disk is full).")

    monkeypatch.setattr(SQLiteStore, "put", disk_full)
    _paid_provider(monkeypatch, stub)
    argv = (str(_neutral_file(tmp_path)), "--provider", "openai", "--model", "gpt-4.1", *SMALL_GRID)
    code, data, err = _lab(capsys, *argv, "--concurrency", "1")
    assert code == 5
    assert len(stub.requests) == 1  # nothing more sent once a reply could not be kept
    assert data["save_error"] and "disk is full" in data["save_error"]
    assert data["paid_usd"] > 0 and f"Paid ${data['paid_usd']:.4f}" in err


def test_lab_exit_codes_follow_ask(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: StubServer
) -> None:
    from tests.stub_server import Reply, server_error

    _paid_provider(monkeypatch, stub)
    argv = (str(_neutral_file(tmp_path)), "--provider", "openai", "--model", "gpt-4.1", *SMALL_GRID)
    stub.responder = lambda path, body: server_error(400, "bad request")
    code, data, _ = _lab(capsys, *argv, "--concurrency", "1")
    assert code == 3 and data["failed_runs"] == data["plan"]["runs"]
    stub.enqueue(Reply(text="Sorry, no JSON here."))  # one malformed answer
    stub.responder = None
    code, second, _ = _lab(capsys, *argv, "--concurrency", "1")
    assert code == 4 and 0 < second["failed_runs"] < second["plan"]["runs"]
    kept = second["calls_made"] - 1  # every reply but the malformed one was kept
    code, data, _ = _lab(capsys, *argv, "--concurrency", "1")  # the malformed one is asked again
    assert code == 0 and data["failed_runs"] == 0
    # Only what the second sweep did not keep is paid: the malformed call (and, when it was a
    # retrieval, the answer call its run could not make then); nothing kept is asked again. (Runs
    # of one fact at two depths may send one identical call: made once, found by both.)
    assert data["calls_cached"] >= kept
    assert 1 <= data["calls_made"] <= 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--lengths", "-5"), "Length -5"),
        (("--lengths", "0"), "Length 0"),
        (("--depths", "150"), "Depth 150"),
        (("--depths", "-1"), "Depth -1"),
        (("--repeats", "1000000", "--dry-run"), "Repeats 1,000,000"),
        (("--repeats", "0"), "Repeats 0"),
        (("--reach", "-5"), "--reach -5"),
        (("--reach", "0"), "--reach 0"),
        (
            ("--lengths", "2000000", "--repeats", "100", "--methods", "baseline", "--dry-run"),
            "at most 50,000,000",
        ),
        (
            (
                "--lengths",
                "1000,2000,4000,8000",
                "--depths",
                ",".join(str(d) for d in range(101)),
                "--repeats",
                "60",
                "--dry-run",
            ),
            "at most 20,000",
        ),
    ],
)
def test_a_grid_that_cannot_work_is_one_line_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    code, _, err = _lab(capsys, str(_neutral_file(tmp_path)), "--provider", "simulated", *flags)
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_grid_bounds_are_checked_in_the_engine_for_every_screen() -> None:
    preset = get_preset("quick")
    for spec, message in (
        (TrialSpec(task="planted", lengths=(-5,), repeats=1), "Length -5"),
        (TrialSpec(task="planted", lengths=(2_000,), repeats=10**6), "Repeats"),
        (TrialSpec(task="kv", lengths=(10**6,), repeats=1), "key–value pairs"),
        (TrialSpec(task="planted", lengths=(2_000_000,), repeats=100), "tokens of test documents"),
        (TrialSpec(task="kv", lengths=(10_000,), repeats=100), "tokens of test documents"),
    ):
        with pytest.raises(ConfigError, match=message):
            build_trials(spec, preset, neutral_document(), word_counter())
    with pytest.raises(ConfigError, match="Depth 150"):
        build_trials(
            TrialSpec(task="planted", lengths=(2_000,), repeats=1),
            preset,
            neutral_document(),
            word_counter(),
            depths=(150,),
        )


def test_replies_made_after_a_rejected_temperature_are_found_again_by_a_fresh_client(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: StubServer
) -> None:
    """A server that rejects the temperature: the call is repeated without it. The cache key
    is the client's configuration, so a rerun (a fresh client) finds every reply; the per-trial
    records say per call what was sent."""
    import csv

    from tests.stub_server import Reply

    def no_temperature(path: str, body: Any) -> Reply:
        if isinstance(body, dict) and "temperature" in body:
            return Reply(
                status=400,
                error_message="Unsupported parameter: 'temperature' is not supported with this model.",
                error_type="invalid_request_error",
            )
        return Reply()

    stub.responder = no_temperature
    _paid_provider(monkeypatch, stub)
    argv = (str(_neutral_file(tmp_path)), "--provider", "openai", "--model", "gpt-4.1", *SMALL_GRID)
    first_csv, second_csv = tmp_path / "first.csv", tmp_path / "second.csv"
    code, first, err = _lab(capsys, *argv, "--concurrency", "1", "--trials-csv", str(first_csv))
    assert code == 0, err
    assert stub.requests[0].body["temperature"] == 0  # asked once, rejected, then never sent
    assert all("temperature" not in r.body for r in stub.requests[1:])
    sent = len(stub.requests)
    code, second, err = _lab(capsys, *argv, "--concurrency", "1", "--trials-csv", str(second_csv))
    assert code == 0, err
    assert len(stub.requests) == sent and second["calls_made"] == 0  # every call found in the store
    # One fact at every depth: two runs may send one identical call (made once, found by both).
    assert second["calls_cached"] >= first["calls_made"] + first["calls_cached"]
    for path in (first_csv, second_csv):
        rows = list(csv.DictReader(path.open(encoding="utf-8")))
        assert rows and {r["temperature"] for r in rows} == {"not sent"}


def test_lab_says_on_stderr_why_runs_failed_grouped_and_counted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stub: StubServer
) -> None:
    from tests.stub_server import malformed

    _paid_provider(monkeypatch, stub)
    stub.responder = lambda path, body: malformed()
    argv = (str(_neutral_file(tmp_path)), "--provider", "openai", "--model", "gpt-4.1", *SMALL_GRID)
    code, data, err = _lab(capsys, *argv, "--concurrency", "2")
    assert code == 3
    runs = data["plan"]["runs"]
    assert f"{runs:,} of {runs:,} runs failed" in err
    groups = data["failure_reasons"]
    assert groups and sum(g["runs"] for g in groups) == runs
    for group in groups:  # each reason once, with its count
        assert err.count(group["reason"]) == 1 and f"{group['runs']:,} × {group['reason']}" in err


@pytest.mark.parametrize("reach", [0, -5])
def test_the_simulated_reader_refuses_a_reach_below_one(reach: int) -> None:
    with pytest.raises(ConfigError, match=f"Reach {reach}"):
        SimulatedReader(reach=reach)


def test_an_unpriced_server_says_price_unknown_not_paid_zero(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stub: StubServer
) -> None:
    path = str(_neutral_file(tmp_path))
    server = ("--provider", "openai-compatible", "--base-url", stub.url, "--model", "my-local-model")
    code = main(["lab", path, *server, *SMALL_GRID, "--no-bounds"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(x for x in out.splitlines() if "calls made" in x)
    assert "price unknown" in line and "$0.0000" not in line


def test_an_uploaded_qa_file_keeps_its_own_content_beside_another_of_the_same_name(tmp_path: Path) -> None:
    from rr_core.lab import keep_qa_file

    mine, my_digest = keep_qa_file("nq.jsonl", b'{"question": "mine"}\n', tmp_path)
    theirs, their_digest = keep_qa_file("nq.jsonl", b'{"question": "theirs"}\n', tmp_path)
    assert mine != theirs and mine.name == theirs.name == "nq.jsonl"  # the name a user sees
    assert mine.read_bytes() == b'{"question": "mine"}\n'  # not overwritten by the second upload
    assert theirs.read_bytes() == b'{"question": "theirs"}\n'
    assert my_digest != their_digest
    again, digest = keep_qa_file("../../nq.jsonl", b'{"question": "mine"}\n', tmp_path)
    assert (again, digest) == (mine, my_digest)  # the same upload again: the same file, inside the folder
    for hostile in ("..", ".", ""):
        path, _ = keep_qa_file(hostile, b"rows", tmp_path)
        assert path.name == "questions" and path.read_bytes() == b"rows" and path.parent.parent == tmp_path
    # A kept file that differs from the upload (cut short by a crash, or changed: even to the same
    # size) is written again, whole: nothing else is left in the folder, and only its user reads it.
    for damaged in (b'{"question"', b'{"question": "MINE"}\n'):
        mine.write_bytes(damaged)
        assert keep_qa_file("nq.jsonl", b'{"question": "mine"}\n', tmp_path)[0].read_bytes() == (
            b'{"question": "mine"}\n'
        )
        assert [p.name for p in mine.parent.iterdir()] == ["nq.jsonl"]
        assert mine.stat().st_mode & 0o077 == 0


def test_uploads_are_kept_in_a_folder_of_this_users_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import tempfile

    from rr_core.lab import keep_qa_file, uploads_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = uploads_folder()
    assert folder.parent == tmp_path and folder.stat().st_mode & 0o777 == 0o700
    path, _ = keep_qa_file("nq.jsonl", b"rows")
    assert path.parent.parent == folder
    folder.chmod(0o777)  # opened up since: closed again
    assert uploads_folder().stat().st_mode & 0o777 == 0o700
    theirs = tmp_path / "elsewhere"
    theirs.mkdir()
    folder.rename(tmp_path / "mine-before")
    folder.symlink_to(theirs)  # a link set up in its place: not this user's folder
    with pytest.raises(ConfigError, match="not a folder of this user's"):
        uploads_folder()
    real_uid = os.getuid()
    folder.unlink()
    folder.mkdir()
    monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)  # a folder another user made first
    with pytest.raises(ConfigError, match="not a folder of this user's"):
        uploads_folder()
