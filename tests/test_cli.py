"""``python -m rr_core``: the JSON contract of each command, and how user mistakes end."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
from conftest import PLANTED_FACT, PLANTED_PAGE, PLANTED_QUESTION, ROOT, offline_traces, planted_texts

from rr_core import samples
from rr_core.cli import main
from rr_core.methods import get_method, method_names
from rr_core.runs import RunTrace
from rr_core.store import open_store
from tests.stub_server import StubServer

FACT = "4.2 million euros"


def run_cli(
    *args: str, timeout: float = 300, env_changes: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: a fresh interpreter in the project folder."""
    env = dict(os.environ) | (env_changes or {})  # the autouse fixture already removed every provider key
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    return subprocess.run(
        [sys.executable, "-m", "rr_core", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,  # a safety net against a hang, not a speed requirement
    )


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    code = main(["--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def assert_user_error(code: int, stderr: str, *needles: str) -> None:
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error:")
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.fixture
def planted_txt(tmp_path: Path) -> Path:
    """The planted 40-page document as a text file, one page per form feed."""
    path = tmp_path / "planted.txt"
    path.write_text("\f".join(planted_texts()), encoding="utf-8")
    return path


@pytest.fixture
def encrypted_pdf(tmp_path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), f"Locked page. {PLANTED_FACT}")
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")
    doc.close()
    return path


# ---- pages ---------------------------------------------------------------------------------


def test_pages_json(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    data = cli_json(capsys, "pages", str(planted_txt))
    assert data["file"] == "planted.txt" and data["kind"] == "txt"
    assert len(data["pages"]) == 40
    assert [p["number"] for p in data["pages"]] == list(range(1, 41))
    assert all(p["tokens"] > 0 and p["chars"] > 0 and p["has_text"] for p in data["pages"])
    assert data["total_tokens"] == sum(p["tokens"] for p in data["pages"])
    assert isinstance(data["warnings"], list) and data["tokenizer"]


def test_pages_json_in_a_fresh_process(planted_txt: Path) -> None:
    result = run_cli("pages", str(planted_txt), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["pages"]) == 40 and data["total_tokens"] > 0


def damaged_pdf(path: Path) -> Path:
    """A PDF whose first page's compressed content stream is garbled (MuPDF reports a zlib error
    reading it and keeps the second page)."""
    doc = pymupdf.open()
    for text in ("The first page, garbled below.", "The second page survives intact."):
        doc.new_page().insert_text((72, 72), text * 3)
    data = bytearray(doc.tobytes(deflate=True))
    doc.close()
    start = data.index(b"stream\n") + len(b"stream\n")
    for i in range(start + 5, start + 25):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("command", [["pages"], ["ask", "-q", "What survives?"]])
def test_json_output_of_a_damaged_pdf_is_json_only(tmp_path: Path, command: list[str]) -> None:
    # MuPDF printed "MuPDF error: library error: zlib error: ..." on stdout, before the JSON.
    result = run_cli(command[0], str(damaged_pdf(tmp_path / "damaged.pdf")), *command[1:], "--json")
    assert result.returncode == 0, result.stderr
    assert "MuPDF" not in result.stdout
    data = json.loads(result.stdout)
    assert data["file"] == "damaged.pdf"


@pytest.mark.shared_data
def test_json_output_of_the_corrupt_gao_report_is_json_only(shared_documents: Path) -> None:
    result = run_cli("pages", str(shared_documents / "corrupt_invalid_structure_gao_report.pdf"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["file"] == "corrupt_invalid_structure_gao_report.pdf"


def test_pages_table(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    assert main(["pages", str(planted_txt)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("planted.txt: 40 pages")
    assert "page   40" in out


def test_pages_of_an_encrypted_pdf_with_its_password(
    capsys: pytest.CaptureFixture[str], encrypted_pdf: Path
) -> None:
    data = cli_json(capsys, "pages", str(encrypted_pdf), "--password", "pw")
    assert data["kind"] == "pdf" and len(data["pages"]) == 1 and data["pages"][0]["has_text"]


# ---- plan ----------------------------------------------------------------------------------

ALL_METHODS = method_names()
RETRIEVING = ("icr", "rr", "chunked-icr", "chunked-rr")
REMINDING = ("reprompt", "rr", "chunked-rr")


def plan_json(capsys: pytest.CaptureFixture[str], doc: Path, method: str, *extra: str) -> dict:  # type: ignore[type-arg]
    data = cli_json(
        capsys, "plan", str(doc), "-m", method, "-q", PLANTED_QUESTION,
        "--interval", "1000", "--chunk-size", "3000", "--gold-pages", "27", *extra,
    )  # fmt: skip
    assert data["file"] == doc.name and data["total_tokens"] > 0
    (plan,) = data["plans"]
    return plan  # type: ignore[no-any-return]


@pytest.mark.parametrize("method", ALL_METHODS)
def test_plan_json_contract(capsys: pytest.CaptureFixture[str], planted_txt: Path, method: str) -> None:
    plan = plan_json(capsys, planted_txt, method)
    assert plan["method"] == method and plan["label"] == get_method(method).label
    assert plan["questions"] == [PLANTED_QUESTION]
    calls = []
    for phase in plan["phases"]:
        assert {"stage", "estimated", "note", "steps"} <= set(phase)
        for step in phase["steps"]:
            if "local" in step:  # a ranking: no LLM call
                assert not phase["estimated"] and "BM25" in step["local"]
                continue
            calls.append((phase, step))
            assert {
                "id", "stage", "chunk", "pages", "reminders_after_pages", "leading_reminders",
                "prompt_tokens", "reminder_tokens", "prompt",
            } <= set(step)  # fmt: skip
            assert step["prompt_tokens"] > 0
            if phase["estimated"]:
                assert step["prompt"] is None and step["pages"] == []
            else:
                # Instructions first, except where the method is a layout that puts the document first.
                first = "<DOCUMENT>" if method == "question-last" else "<INSTRUCTIONS>"
                assert step["prompt"].startswith(first) and PLANTED_QUESTION in step["prompt"]
                for page in step["reminders_after_pages"]:
                    assert f"</PAGE {page}>\n\n<INSTRUCTIONS_REMINDER>" in step["prompt"]
    estimate = plan["estimate"]
    assert estimate["calls"] == len(calls)
    assert estimate["input_tokens"] == sum(step["prompt_tokens"] for _, step in calls)
    assert estimate["usd"] > 0 and estimate["priced_as"] == "gpt-4.1-mini" and estimate["price_data"]
    stages = [phase["stage"] for phase in plan["phases"]]
    if method in RETRIEVING:
        assert stages == ["retrieve", "answer"] and plan["phases"][1]["estimated"]
        retrievals = plan["phases"][0]["steps"]
        if method.startswith("chunked"):
            assert len(retrievals) == len(plan["chunks"]) > 2
            assert [c["chunk"] for c in retrievals] == list(range(1, len(retrievals) + 1))
            assert [c["pages"][0] for c in retrievals] == [c[0] for c in plan["chunks"]]
        else:
            assert len(retrievals) == 1 and retrievals[0]["pages"] == list(range(1, 41))
    elif method == "rag":
        assert stages == ["rank", "answer"]
    elif method == "self-route":  # RAG, then the whole document only when it must (estimated as sent)
        assert stages == ["rank", "answer", "answer"] and plan["phases"][2]["estimated"]
    elif method == "briefcontext":
        assert stages == ["rank", "map", "reduce"] and plan["notes"]
    else:
        assert stages == ["answer"] and not plan["phases"][0]["estimated"]
    if method == "closed-book":
        assert calls[0][1]["pages"] == [] and "<PAGE" not in calls[0][1]["prompt"].split("</INSTRUCTIONS>")[1]
    if method == "oracle":
        assert calls[0][1]["pages"] == [27] and plan["settings"] == "gold pages 27"
    has_reminders = any(step["reminders_after_pages"] for _, step in calls)
    # The before-answer ablation's one reminder stands before the gold page 27 (after page 26).
    assert has_reminders == (method in (*REMINDING, "reprompt-before-answer"))


def test_plan_table(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    assert (
        main(["plan", str(planted_txt), "-m", "chunked-rr", "-q", PLANTED_QUESTION, "--chunk-size", "3000"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("Chunked R&R (k = 10,000 · N = 5 · c = 3,000) on planted.txt")
    assert "chunk 1" in out and "(estimated)" in out and "total:" in out
    assert main(["plan", str(planted_txt), "-m", "rag", "-q", PLANTED_QUESTION]) == 0
    assert "(local, no LLM call)" in capsys.readouterr().out


def test_plan_with_several_questions(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    data = cli_json(capsys, "plan", str(planted_txt), "-m", "rr", "-q", "Q one?", "-q", "Q two?")
    (plan,) = data["plans"]  # one retrieval pass for both
    assert plan["questions"] == ["Q one?", "Q two?"]
    (retrieve,) = plan["phases"][0]["steps"]
    assert "Question 1: Q one?" in retrieve["prompt"] and "Question 2: Q two?" in retrieve["prompt"]
    assert [s["id"] for s in plan["phases"][1]["steps"]] == ["answer.1", "answer.2"]
    one_each = cli_json(capsys, "plan", str(planted_txt), "-m", "baseline", "-q", "Q one?", "-q", "Q two?")
    assert [p["questions"] for p in one_each["plans"]] == [["Q one?"], ["Q two?"]]


@pytest.mark.parametrize(
    ("flags", "check"),
    [
        (["--reminder-style", "tags-only"], "tags"),
        (["--reminder-placement", "beginning"], "beginning"),
        (["--reminder-placement", "before-pages", "--reminder-pages", "1,27"], "before"),
    ],
)
def test_ablation_flags(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, flags: list[str], check: str
) -> None:
    interval = plan_json(capsys, planted_txt, "reprompt")["phases"][0]["steps"][0]
    plan = plan_json(capsys, planted_txt, "reprompt", *flags)
    step = plan["phases"][0]["steps"][0]
    if check == "tags":
        assert "reminder: tags-only" in plan["settings"]
        assert step["reminders_after_pages"] == interval["reminders_after_pages"]
        assert step["reminder_tokens"] < interval["reminder_tokens"]
        reminder = step["prompt"].split("<INSTRUCTIONS_REMINDER>")[1]
        assert PLANTED_QUESTION not in reminder
    elif check == "beginning":
        assert step["reminders_after_pages"] == [] and step["leading_reminders"] == len(
            interval["reminders_after_pages"]
        )
    else:
        assert step["leading_reminders"] == 1 and step["reminders_after_pages"] == [26]
    icr = plan_json(capsys, planted_txt, "icr", *flags)
    assert icr["phases"][0]["steps"][0]["reminders_after_pages"] == [] and "reminder" not in icr["settings"]


# ---- ask -----------------------------------------------------------------------------------


RESULT_KEYS = {
    "run_id", "method", "label", "describe", "questions", "settings", "schema_version", "cache_key",
    "answer", "page", "retrieved_pages", "outcomes", "calls", "steps", "usage", "cost_usd",
    "cost_by_stage", "latency_s", "warnings", "notes", "details", "error",
}  # fmt: skip
ASK_KEYS = {
    "file",
    "questions",
    "question",
    "batch",
    "save_error",
    "stopped_by",
    "provider",
    "model",
    "is_llm",
    "priced_as",
    "price_data",
    "possibly_billed",  # "up to $X possibly billed for N calls …", "" when none may be
    "possibly_usd",
    "results",
}


def test_ask_offline_json_contract(planted_txt: Path) -> None:
    result = run_cli(
        "--json", "ask", str(planted_txt), "-q", PLANTED_QUESTION, "--provider", "offline",
        "--methods", ",".join(ALL_METHODS), "--interval", "1000", "--chunk-size", "3000", "--gold-pages", "27",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == ASK_KEYS
    assert data["provider"] == "offline" and data["is_llm"] is False and data["batch"] is None
    assert data["question"] == PLANTED_QUESTION and data["questions"] == [PLANTED_QUESTION]
    assert [r["method"] for r in data["results"]] == ALL_METHODS
    for r in data["results"]:
        assert set(r) >= RESULT_KEYS
        assert r["error"] is None and r["cost_usd"] > 0 and r["latency_s"] >= 0
        assert r["schema_version"] == 3 and r["settings"]["method"] == r["method"]
        assert r["usage"]["input_tokens"] == sum(c["usage"]["input_tokens"] for c in r["calls"])
        for call in r["calls"]:
            assert {"id", "stage", "chunk", "pages", "usage", "cost_usd", "latency_s", "cache_key"} <= set(
                call
            )
            assert call["prompt"] is None  # prompts stay out of the CLI's JSON
        (outcome,) = r["outcomes"]
        assert outcome["question"] == PLANTED_QUESTION and outcome["answer"] == r["answer"]
        if r["method"] == "closed-book":
            assert r["answer"] == "n/a" and r["page"] is None
            continue
        assert FACT in r["answer"] and r["page"] == PLANTED_PAGE, r["method"]
        assert outcome["quote_check"] == "verified"
        if r["method"] in RETRIEVING:
            assert PLANTED_PAGE in r["retrieved_pages"]
        # The same JSON reads back as a trace (one shape for the CLI, the exports and the store).
        assert RunTrace.from_dict(r).answer == r["answer"]


def test_ask_defaults_to_offline_without_keys(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    data = cli_json(capsys, "ask", str(planted_txt), "-q", PLANTED_QUESTION)
    assert data["provider"] == "offline"
    assert [r["method"] for r in data["results"]] == ["baseline", "rr"]  # the default pair


def test_ask_the_same_method_at_two_settings_side_by_side(
    capsys: pytest.CaptureFixture[str], planted_txt: Path
) -> None:
    data = cli_json(
        capsys, "ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "rr:k=2000,rr:k=20000,rr:N=3"
    )
    results = data["results"]
    assert [r["method"] for r in results] == ["rr", "rr", "rr"]
    assert [r["settings"]["reminder_every"] for r in results] == [2_000, 20_000, 10_000]
    assert [r["describe"] for r in results] == [
        "k = 2,000 · N = 5",
        "k = 20,000 · N = 5",
        "k = 10,000 · N = 3",
    ]
    assert results[0]["calls"][0]["reminders_after"] and not results[1]["calls"][0]["reminders_after"]
    assert all(r["page"] == PLANTED_PAGE for r in results)
    assert len({r["run_id"] for r in results}) == 3


def test_a_method_setting_names_the_setting_its_symbol_says(
    capsys: pytest.CaptureFixture[str], planted_txt: Path
) -> None:
    # N is the pages an R&R retrieval keeps; n is BriefContext's passages. "rr:N=3" once set n.
    data = cli_json(capsys, "plan", str(planted_txt), "-q", PLANTED_QUESTION, "-m", "rr:N=3")
    assert data["plans"][0]["settings"] == "k = 10,000 · N = 3"
    brief = cli_json(capsys, "plan", str(planted_txt), "-q", PLANTED_QUESTION, "-m", "briefcontext:n=12:g=3")
    assert brief["plans"][0]["settings"] == "w = 300 · n = 12 · g = 3"
    spelled = cli_json(
        capsys, "plan", str(planted_txt), "-q", PLANTED_QUESTION, "-m", "chunked-rr:top_k=2:c=5000"
    )
    assert spelled["plans"][0]["settings"] == "k = 10,000 · N = 2 · c = 5,000"


def test_ask_several_questions(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    second = "What does the harbor crane shelter?"
    data = cli_json(
        capsys, "ask", str(planted_txt), "-q", PLANTED_QUESTION, "-q", second, "--methods", "rr,baseline"
    )
    assert data["questions"] == [PLANTED_QUESTION, second] and data["question"] == PLANTED_QUESTION
    rr, *baselines = data["results"]
    # R&R retrieves for both questions in one pass; the baseline runs once per question.
    assert rr["questions"] == [PLANTED_QUESTION, second]
    assert [c["stage"] for c in rr["calls"]] == ["retrieve", "answer", "answer"]
    assert [o["question"] for o in rr["outcomes"]] == [PLANTED_QUESTION, second]
    assert rr["outcomes"][0]["page"] == PLANTED_PAGE and "crane" in rr["outcomes"][1]["answer"].lower()
    assert [b["questions"] for b in baselines] == [[PLANTED_QUESTION], [second]]


def test_ask_questions_from_a_file_of_lines(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text(f"{PLANTED_QUESTION}\n\nWhat does the harbor crane shelter?\n", encoding="utf-8")
    data = cli_json(
        capsys,
        "ask",
        str(planted_txt),
        "--questions",
        str(questions),
        "-q",
        "Who keeps the zebras?",
        "--methods",
        "icr",
    )
    assert data["questions"] == [
        "Who keeps the zebras?",
        PLANTED_QUESTION,
        "What does the harbor crane shelter?",
    ]
    (icr,) = data["results"]
    assert len(icr["outcomes"]) == 3 and all(o["correct"] is None for o in icr["outcomes"])


def test_ask_questions_from_a_csv_marks_each_outcome_right_or_wrong(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, tmp_path: Path
) -> None:
    questions = tmp_path / "qa.csv"
    questions.write_text(
        "question,answers,gold_pages\n"
        f"{PLANTED_QUESTION},4.2 million euros|EUR 4.2m,{PLANTED_PAGE}\n"
        "What does the harbor crane shelter?,a dragon,5\n",
        encoding="utf-8",
    )
    data = cli_json(capsys, "ask", str(planted_txt), "--questions", str(questions), "--methods", "rr,oracle")
    rr, oracle_fee, oracle_crane = data["results"]
    assert [o["correct"] for o in rr["outcomes"]] == [True, False]
    assert rr["outcomes"][0]["gold_answers"] == ["4.2 million euros", "EUR 4.2m"]
    assert rr["outcomes"][0]["gold_pages"] == [PLANTED_PAGE]
    # The oracle reads each question's own gold page(s) from the file.
    assert oracle_fee["calls"][0]["pages"] == [PLANTED_PAGE] and oracle_fee["outcomes"][0]["correct"] is True
    assert oracle_crane["calls"][0]["pages"] == [5] and oracle_crane["settings"]["gold_pages"] == [5]
    assert main(["ask", str(planted_txt), "--questions", str(questions), "--methods", "rr"]) == 0
    out = capsys.readouterr().out
    assert "[right]" in out and "[wrong]" in out


def test_ask_oracle_with_gold_pages(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    data = cli_json(
        capsys,
        "ask",
        str(planted_txt),
        "-q",
        PLANTED_QUESTION,
        "--methods",
        "oracle,closed-book",
        "--gold-pages",
        "27, 3",
    )
    oracle, closed = data["results"]
    assert oracle["calls"][0]["pages"] == [3, 27] and oracle["page"] == PLANTED_PAGE
    assert closed["calls"][0]["pages"] == [] and closed["answer"] == "n/a"


def test_ask_table_says_offline_is_not_an_llm(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    assert main(["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "icr"]) == 0
    captured = capsys.readouterr()
    assert "not an LLM" in captured.out and FACT in captured.out and f"p. {PLANTED_PAGE}" in captured.out
    assert f"quote located on p. {PLANTED_PAGE}" in captured.out and "verified" not in captured.out
    assert "high, support supported" in captured.out  # how sure, beside the answer
    assert "ICR: retrieve done" in captured.err  # progress goes to stderr


def test_ask_says_not_found_with_pages_to_read_never_not_stated(
    capsys: pytest.CaptureFixture[str], planted_txt: Path
) -> None:
    """A question the offline reader finds nothing for: "Not found" (its search), with the pages
    to read, in the table and in JSON; never "not stated in the document" nor "No"."""
    question = "Who keeps the zebra enclosure of the lantern museum?"
    assert main(["ask", str(planted_txt), "-q", question, "--methods", "baseline"]) == 0
    out = capsys.readouterr().out
    assert "A: Not found" in out and "not stated" not in out
    data = cli_json(capsys, "ask", str(planted_txt), "-q", question, "--methods", "baseline")
    (outcome,) = data["results"][0]["outcomes"]
    assert outcome["found"] is False and outcome["absent_by"] == "reader" and outcome["confidence"] == "none"
    assert isinstance(outcome["pages_to_read"], list) and outcome["citations"] == []


def test_ask_encrypted_pdf_with_password(capsys: pytest.CaptureFixture[str], encrypted_pdf: Path) -> None:
    data = cli_json(
        capsys, "ask", str(encrypted_pdf), "--password", "pw", "-q", PLANTED_QUESTION, "--methods", "baseline"
    )
    assert FACT in data["results"][0]["answer"] and data["results"][0]["page"] == 1


# ---- user mistakes ----------------------------------------------------------------------------


def test_missing_file_is_exit_2_in_a_fresh_process(tmp_path: Path) -> None:
    result = run_cli("ask", str(tmp_path / "nowhere.pdf"), "-q", "x")
    assert_user_error(result.returncode, result.stderr, "nowhere.pdf")
    assert result.stdout == ""


def test_encrypted_without_password_is_exit_2_in_a_fresh_process(encrypted_pdf: Path) -> None:
    result = run_cli("--json", "ask", str(encrypted_pdf), "-q", "x", "--provider", "offline")
    assert_user_error(result.returncode, result.stderr, "locked.pdf", "password")


def test_wrong_password_is_exit_2(capsys: pytest.CaptureFixture[str], encrypted_pdf: Path) -> None:
    code = main(["pages", str(encrypted_pdf), "--password", "nope"])
    assert_user_error(code, capsys.readouterr().err, "locked.pdf")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["ask", "{doc}", "-q", "x", "--methods", "baseline,telepathy"], "telepathy"),
        (["plan", "{doc}", "-q", "x", "-m", "telepathy"], "telepathy"),
        (["ask", "{doc}", "-q", "x", "--methods", " , "], "method"),
        (["ask", "{doc}", "-q", "   ", "--methods", "rr"], "question"),
        (["plan", "{doc}", "-q", "x", "-m", "rr", "--top-k", "0"], "(N)"),
        (["plan", "{doc}", "-q", "x", "-m", "reprompt", "--interval", "5"], "interval"),
        (["plan", "{doc}", "-q", "x", "-m", "chunked-icr", "--chunk-size", "10"], "Chunk size"),
        (["plan", "{doc}", "-q", "x", "-m", "rr:z=3"], "k=5000"),
        (["plan", "{doc}", "-q", "x", "-m", "rr:k=lots"], "not a number"),
        (["plan", "{doc}", "-q", "x", "-m", "rr:k=50"], "Reprompt interval"),
        (["ask", "{doc}", "-q", "x", "--methods", "oracle"], "gold pages"),
        (["ask", "{doc}", "-q", "x", "--methods", "oracle", "--gold-pages", "3,x"], "--gold-pages"),
        (["ask", "{doc}", "-q", "x", "--methods", "oracle", "--gold-pages", "99"], "99"),
        (["ask", "{doc}", "--methods", "rr"], "-q"),
        (["ask", "{doc}", "--questions", "{nofile}"], "cannot read"),
        (["pages", "{bad}"], "bad.xyz"),
        (["pages", "{empty}"], "empty.txt"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    bad = tmp_path / "bad.xyz"
    bad.write_bytes(b"\x00\x01 not a document")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    argv = [a.format(doc=planted_txt, bad=bad, empty=empty, nofile=tmp_path / "none.csv") for a in args]
    code = main(argv)
    captured = capsys.readouterr()
    assert_user_error(code, captured.err, needle)
    assert captured.out == ""


def test_a_paid_provider_without_a_key_is_a_user_mistake_exit_2_not_a_traceback(planted_txt: Path) -> None:
    result = run_cli("ask", str(planted_txt), "-q", "x", "--provider", "openai", "--methods", "baseline")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "OPENAI_API_KEY" in result.stdout + result.stderr


# ---- samples -------------------------------------------------------------------------------------


def test_samples_json_lists_questions_with_gold_pages(capsys: pytest.CaptureFixture[str]) -> None:
    data = cli_json(capsys, "samples")
    names = [s["name"] for s in data["samples"]]
    assert names == samples.list_samples() and "contract" in names
    for entry in data["samples"]:
        sample = samples.get_sample(entry["name"])
        assert entry["pages"] == len(sample.pages) > 1 and entry["title"] == sample.title
        assert entry["questions"]
        for q in entry["questions"]:
            assert q["question"] and q["answers"] and 1 <= q["page"] <= entry["pages"]
            # The gold page states the first answer.
            assert q["answers"][0].lower() in sample.pages[q["page"] - 1].lower()


def test_samples_write(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = cli_json(capsys, "samples", "--write", str(tmp_path / "out"))
    for entry in data["samples"]:
        pdf = tmp_path / "out" / f"{entry['name']}.pdf"
        qa = tmp_path / "out" / f"{entry['name']}.qa.json"
        assert pdf.read_bytes().startswith(b"%PDF")
        assert json.loads(qa.read_text()) == entry["questions"]
        with pymupdf.open(pdf) as doc:
            assert doc.page_count == entry["pages"]


def test_ask_a_sample_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    sample = samples.get_sample("contract")
    question = sample.questions[0]
    data = cli_json(
        capsys,
        "ask",
        "contract",
        "-q",
        question.question,
        "--methods",
        "baseline,rr",
        "--provider",
        "offline",
    )
    assert data["file"] == sample.title
    for result in data["results"]:
        assert result["error"] is None and result["answer"]
        assert result["page"] is None or 1 <= result["page"] <= len(sample.pages)
    rr = data["results"][1]
    assert 1 <= len(rr["retrieved_pages"]) <= 5
    # The same sample is also reachable with the explicit prefix.
    pages = cli_json(capsys, "pages", "sample:contract")
    assert len(pages["pages"]) == len(sample.pages)


def test_ask_save_stores_the_runs_in_the_history_the_app_shows(
    capsys: pytest.CaptureFixture[str], planted_txt: Path
) -> None:
    assert main(["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline,rr", "--save"]) == 0
    out = capsys.readouterr().out
    store = open_store()  # RR_STUDIO_DB points at this test's own file
    rows = store.list()
    assert sorted(r.method for r in rows) == ["baseline", "rr"]
    assert len({r.batch for r in rows}) == 1 and f"batch {rows[0].batch}" in out
    stored = store.get(rows[0].run_id)
    assert stored is not None and stored.calls[0].prompt  # the history keeps the prompts as sent
    assert main(["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline"]) == 0
    assert len(store.list()) == 2  # without --save nothing more is stored


# ---- settings that cannot work, writes that cannot happen, stores that cannot keep (issue 10) ----


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--timeout", "0"], "--timeout 0"),
        (["--timeout", "-1"], "--timeout -1"),
        (["--timeout", "nan"], "--timeout nan"),
        (["--timeout", "inf"], "--timeout inf"),
        (["--concurrency", "0"], "--concurrency 0"),
        (["--concurrency", "-3"], "--concurrency -3"),
        (["--api-key-env", "sk-abc-123"], "NAME of an environment variable"),
    ],
)
def test_impossible_ask_settings_are_one_line_mistakes(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, args: list[str], needle: str
) -> None:
    code = main(["ask", str(planted_txt), "-q", "x", "--methods", "baseline", *args])
    captured = capsys.readouterr()
    assert_user_error(code, captured.err, needle)
    assert captured.out == "" and "sk-abc-123" not in captured.err


@pytest.mark.parametrize("target", ["/proc/forbidden", "/etc/passwd", "/dev/null/x"])
def test_samples_write_where_it_cannot_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], target: str
) -> None:
    code = main(["samples", "--write", target])
    captured = capsys.readouterr()
    assert_user_error(code, captured.err, "cannot write the samples", target)


def test_ask_save_with_an_unusable_store_prints_the_results_and_warns(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RR_STUDIO_DB", "/proc/forbidden/runs.sqlite3")
    code = main(
        ["--json", "ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline,rr", "--save"]
    )
    captured = capsys.readouterr()
    assert code == 5
    data = json.loads(captured.out)
    assert [r["method"] for r in data["results"]] == ["baseline", "rr"]
    assert all(r["answer"] for r in data["results"])
    assert data["batch"] is None and "/proc/forbidden" in data["save_error"]
    assert "NOT saved to the history" in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize("command", ["ask", "lab"])
def test_a_postgresql_history_without_a_user_is_refused_before_any_call_and_makes_no_folder(
    capsys: pytest.CaptureFixture[str],
    planted_txt: Path,
    stub: StubServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """``RR_STUDIO_DB=postgresql://…`` once made a SQLite file in a folder named ``postgresql:``;
    now it is the team's shared store, and acting in it without saying who you are is a one-line
    error, before anything is paid."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RR_STUDIO_DB", "postgresql://analyst:pw-0123@db.example.com/rr")
    engine = ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "llama"]
    if command == "ask":
        argv = ["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline", "--save", *engine]
    else:
        argv = ["lab", str(planted_txt), "--lengths", "1000", "--depths", "50", "--repeats", "1", *engine,
                "--price-model", "gpt-4.1-mini"]  # fmt: skip
    code = main(argv)
    captured = capsys.readouterr()
    assert_user_error(
        code, captured.err, "is a PostgreSQL store, shared by a team", "--user NAME or RR_STUDIO_USER",
        "RR_STUDIO_DB=postgresql://***@db",
    )  # fmt: skip
    assert "pw-0123" not in captured.err + captured.out
    assert stub.requests == [] and not (tmp_path / "postgresql:").exists()


def test_ask_with_some_methods_failed_exits_4(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, stub: StubServer
) -> None:
    from tests.stub_server import Reply, server_error

    # Baseline (one call over all 40 pages) fails; R&R (retrieval, then answer) succeeds.
    def respond(path: str, body: object) -> Reply:
        prompt = str(body)
        baseline = "<PAGE 40>" in prompt and "most relevant" not in prompt
        return server_error(500) if baseline else Reply()

    stub.responder = respond
    code = main(
        ["--json", "ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline,rr",
         "--provider", "openai-compatible", "--base-url", stub.url, "--model", "llama"]
    )  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    errors = {r["method"]: r["error"] for r in data["results"]}
    assert errors["baseline"] and not errors["rr"]
    assert code == 4


def test_ask_with_every_method_failed_exits_3(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, stub: StubServer
) -> None:
    from tests.stub_server import server_error

    stub.responder = lambda path, body: server_error(500)
    code = main(
        ["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline,rr",
         "--provider", "openai-compatible", "--base-url", stub.url, "--model", "llama", "--timeout", "30"]
    )  # fmt: skip
    assert code == 3


def test_the_openai_key_never_goes_to_a_base_url_from_the_cli(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-DO-NOT-SEND-123456")
    argv = [
        "ask",
        str(planted_txt),
        "-q",
        "x",
        "--methods",
        "baseline",
        "--provider",
        "openai",
        "--base-url",
        stub.url,
    ]
    code = main(argv)
    assert_user_error(code, capsys.readouterr().err, "never sent to another server")
    assert stub.requests == []
    # Named explicitly, the key for that server goes there.
    monkeypatch.setenv("MY_SERVER_KEY", "sk-for-that-server-123456")
    assert main([*argv, "--api-key-env", "MY_SERVER_KEY"]) == 0
    assert {r.headers["authorization"] for r in stub.requests} == {"Bearer sk-for-that-server-123456"}


def test_a_compatible_server_gets_rr_compat_api_key_and_never_the_openai_key(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-DO-NOT-SEND-123456")
    argv = ["ask", str(planted_txt), "-q", "x", "--methods", "baseline", "--provider", "openai-compatible",
            "--base-url", stub.url, "--model", "llama"]  # fmt: skip
    assert main(argv) == 0
    assert "authorization" not in stub.last.headers
    monkeypatch.setenv("RR_COMPAT_API_KEY", "compat-key-123456")
    assert main(argv) == 0
    assert stub.last.headers["authorization"] == "Bearer compat-key-123456"
    capsys.readouterr()
    code = main([*argv, "--api-key-env", "UNSET_VARIABLE_XYZ"])
    assert_user_error(code, capsys.readouterr().err, "UNSET_VARIABLE_XYZ", "not set")


def test_rr_compat_api_key_goes_only_to_the_server_it_was_configured_for(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RR_COMPAT_API_KEY", "compat-key-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://configured.example:8000/v1")
    argv = ["ask", str(planted_txt), "-q", "x", "--methods", "baseline", "--provider", "openai-compatible",
            "--base-url", stub.url, "--model", "llama"]  # fmt: skip
    # The key is configured beside another server's URL: --base-url does not get it.
    assert main(argv) == 0
    assert "authorization" not in stub.last.headers
    # The same server (written differently) gets it; so does a key named for the run.
    monkeypatch.setenv("OPENAI_BASE_URL", stub.url + "/")
    assert main(argv) == 0
    assert stub.last.headers["authorization"] == "Bearer compat-key-123456"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://configured.example:8000/v1")
    monkeypatch.setenv("MY_STUB_KEY", "run-key-654321")
    assert main([*argv, "--api-key-env", "MY_STUB_KEY"]) == 0
    assert stub.last.headers["authorization"] == "Bearer run-key-654321"
    capsys.readouterr()


def test_pages_with_ocr_off_says_how_to_turn_it_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = pymupdf.open()
    doc.new_page()
    path = tmp_path / "scan.pdf"
    doc.save(path)
    code = main(["pages", str(path)])
    assert_user_error(code, capsys.readouterr().err, "scan.pdf", "--ocr")


def test_sigterm_stops_sending_and_keeps_the_replies_in_flight(tmp_path: Path, stub: StubServer) -> None:
    """SIGTERM is Ctrl-C: no further call, and the calls in flight are waited for and kept in
    the run store (paid once; a resumed sweep does not pay for them again)."""
    import signal
    import threading
    import time

    from rr_core.store import SQLiteStore
    from tests.stub_server import Reply

    release = threading.Event()

    def gated(path: str, body: object) -> Reply:
        release.wait(120)  # held until the process has been told to stop
        return Reply()

    stub.responder = gated
    document = tmp_path / "planted.txt"
    document.write_text("\f".join(planted_texts()))
    db = tmp_path / "runs.sqlite3"
    env = dict(os.environ, OPENAI_API_KEY="sk-test-term", OPENAI_BASE_URL=stub.url, RR_STUDIO_DB=str(db))
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    argv = [sys.executable, "-m", "rr_core", "--json", "lab", str(document), "--provider", "openai"]
    argv += ["--model", "gpt-4.1", "--methods", "baseline,rr", "--depths", "0,50,100", "--repeats", "1"]
    argv += ["--lengths", "3000", "--concurrency", "2"]
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        limit = time.monotonic() + 120
        while len(stub.requests) < 2 and process.poll() is None and time.monotonic() < limit:
            time.sleep(0.05)
        assert len(stub.requests) == 2, process.communicate(timeout=5)
        process.send_signal(signal.SIGTERM)
        assert process.stderr is not None
        said = process.stderr.readline()  # the process says it stopped, before the replies come
        release.set()
        process.wait(timeout=120)
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, said
    assert "terminated" in said
    assert len(stub.requests) == 2  # nothing sent after SIGTERM
    assert SQLiteStore(db).calls_cached() == 2  # both replies in flight were kept


def test_sigterm_on_ask_save_waits_for_the_calls_in_flight_prints_and_saves_them(
    tmp_path: Path, stub: StubServer
) -> None:
    """SIGTERM on ``ask --save``: nothing more is sent, the calls in flight are waited for,
    and what returned is printed, stored in the history and kept in the run store; exit 143."""
    import signal
    import threading
    import time

    from rr_core.store import SQLiteStore
    from tests.stub_server import Reply

    release = threading.Event()

    def gated(path: str, body: object) -> Reply:
        release.wait(120)  # held until the process has been told to stop
        return Reply()

    stub.responder = gated
    document = tmp_path / "planted.txt"
    document.write_text("\f".join(planted_texts()))
    db = tmp_path / "runs.sqlite3"
    env = dict(os.environ, OPENAI_API_KEY="sk-test-term", OPENAI_BASE_URL=stub.url, RR_STUDIO_DB=str(db))
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    argv = [sys.executable, "-m", "rr_core", "--json", "ask", str(document), "-q", PLANTED_QUESTION]
    argv += ["--provider", "openai", "--model", "gpt-4.1", "--methods", "baseline,rr", "--save"]
    process = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        limit = time.monotonic() + 120
        while len(stub.requests) < 2 and process.poll() is None and time.monotonic() < limit:
            time.sleep(0.05)
        assert len(stub.requests) == 2, process.communicate(timeout=5)  # baseline, R&R's retrieval
        process.send_signal(signal.SIGTERM)
        assert process.stderr is not None
        said = process.stderr.readline()  # said before the replies come
        release.set()
        out, err = process.communicate(timeout=120)
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, (said, err)
    assert "terminated" in said and "waiting for the calls in flight" in said
    assert len(stub.requests) == 2  # R&R's answer call was not sent
    data = json.loads(out)
    by_method = {r["method"]: r for r in data["results"]}
    assert by_method["baseline"]["error"] is None and by_method["baseline"]["answer"]
    assert by_method["rr"]["error"] and "stopped" in by_method["rr"]["error"]
    store = SQLiteStore(db)
    assert data["batch"] and sorted(r.method for r in store.list()) == ["baseline", "rr"]
    assert store.calls_cached() == 2  # both replies in flight kept: not paid again
    assert f"batch {data['batch']}" in err


def test_a_lab_sweep_on_a_postgresql_server_that_is_down_sends_nothing_and_shows_no_password(
    capsys: pytest.CaptureFixture[str],
    planted_txt: Path,
    stub: StubServer,
    monkeypatch: pytest.MonkeyPatch,
    refused_port: int,
) -> None:
    monkeypatch.setenv("RR_STUDIO_DB", f"postgresql://analyst:pw-0123@127.0.0.1:{refused_port}/rr")
    code = main(
        ["--user", "alice", "lab", str(planted_txt), "--lengths", "1000", "--depths", "50", "--repeats", "1",
         "--provider", "openai-compatible", "--base-url", stub.url, "--model", "llama", "--price-model", "gpt-4.1-mini"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert_user_error(code, captured.err, "could not be opened", f"127.0.0.1:{refused_port}/rr")
    assert "pw-0123" not in captured.err + captured.out and "analyst" not in captured.err
    assert stub.requests == []


# ---- history: one user's runs (issue 18) -----------------------------------------------------------

HISTORY_FIELDS = {
    "run_id", "batch", "created_at", "document", "question", "method", "label", "provider", "model", "answer",
    "page", "input_tokens", "output_tokens", "cost_usd", "latency_s", "error", "questions", "is_llm", "paid_usd",
}  # fmt: skip


def _ask_saved(planted_txt: Path, *user: str) -> None:
    argv = [*user, "ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline,rr", "--save"]
    assert main(argv) == 0


def test_history_lists_the_users_runs_newest_first_as_a_table_and_as_json(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["history"]) == 0
    assert "History of local in" in capsys.readouterr().out.splitlines()[0]  # an empty store: said so
    assert cli_json(capsys, "history") == []
    _ask_saved(planted_txt)
    capsys.readouterr()
    runs = cli_json(capsys, "history")
    assert [r["method"] for r in runs] == ["rr", "baseline"]  # newest first (saved in plan order)
    assert all(set(r) == HISTORY_FIELDS for r in runs)
    assert {r["run_id"] for r in runs} == {r.run_id for r in open_store().list()}
    rr = runs[0]
    assert (rr["document"], rr["question"], rr["label"], rr["provider"]) == (
        "planted.txt", PLANTED_QUESTION, "R&R", "offline",
    )  # fmt: skip
    assert FACT in rr["answer"] and rr["page"] == PLANTED_PAGE
    # The offline engine paid nothing: its cost is what the same tokens would cost.
    assert rr["is_llm"] is False and rr["paid_usd"] == 0 and rr["cost_usd"] > 0
    assert [r["run_id"] for r in cli_json(capsys, "history", "--limit", "1")] == [rr["run_id"]]
    assert main(["history"]) == 0
    table = capsys.readouterr().out
    assert "History of local in" in table and "2 runs, newest first" in table
    assert main(["history", "--limit", "1"]) == 0  # a limited list says how many there are
    assert "showing 1 of 2 runs, newest first" in capsys.readouterr().out
    assert "planted.txt" in table and "R&R" in table and "Baseline" in table
    assert f"$0 (would cost ${rr['cost_usd']:.4f})" in table


def test_each_user_sees_only_their_own_runs_in_a_sqlite_history(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ask_saved(planted_txt, "--user", "alice")
    capsys.readouterr()
    alice = cli_json(capsys, "history", "--user", "alice")
    assert len(alice) == 2
    assert cli_json(capsys, "history") == []  # the local user is someone else
    assert cli_json(capsys, "--user", "bob", "history") == []
    monkeypatch.setenv("RR_STUDIO_USER", "alice")
    assert cli_json(capsys, "history") == alice
    assert cli_json(capsys, "history", "--user", "bob") == []  # --user overrides the variable
    assert cli_json(capsys, "batches") == {"batches": []}


def test_history_says_the_true_total_and_pages_past_a_thousand_runs(
    capsys: pytest.CaptureFixture[str],
    planted_document,  # type: ignore[no-untyped-def]
) -> None:
    """A generated history of 2,600 runs: the default list says how many there are, and
    ``--skip`` reaches every page of them, a thousand at a time, newest first."""
    (trace,) = offline_traces(planted_document, "rr")
    store = open_store()
    store.save_batch([dataclasses.replace(trace, run_id=f"run-{i:04d}") for i in range(2600)])
    store.close()
    newest_first = [f"run-{i:04d}" for i in reversed(range(2600))]
    assert main(["history"]) == 0
    assert "showing 50 of 2,600 runs, newest first" in capsys.readouterr().out
    pages = [cli_json(capsys, "history", "--limit", "1000", "--skip", str(skip)) for skip in (0, 1000, 2000)]
    assert [len(page) for page in pages] == [1000, 1000, 600]
    assert [r["run_id"] for page in pages for r in page] == newest_first
    assert main(["history", "--limit", "1000", "--skip", "1000"]) == 0
    assert "showing 1,001–2,000 of 2,600 runs, newest first" in capsys.readouterr().out
    assert main(["history", "--skip", "2590"]) == 0
    assert "showing 2,591–2,600 of 2,600 runs" in capsys.readouterr().out
    assert main(["history", "--skip", "3000"]) == 0
    assert "none past the newest 3,000 of 2,600 runs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["history", "--limit", "0"], "--limit 0"),
        (["history", "--skip", "-1"], "--skip -1"),
        (["history", "--user", " alice"], "spaces around it"),
    ],
)
def test_history_mistakes_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code = main(argv)
    assert_user_error(code, capsys.readouterr().err, needle)


def test_history_on_a_postgresql_store_needs_a_user_and_shows_only_theirs(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    monkeypatch.setenv("RR_STUDIO_DB", pg_url)
    code = main(["history"])
    assert_user_error(code, capsys.readouterr().err, "shared by a team", "--user NAME")
    _ask_saved(planted_txt, "--user", "alice")
    capsys.readouterr()
    mine = cli_json(capsys, "history", "--user", "alice")
    assert [r["method"] for r in mine] == ["rr", "baseline"] and all(set(r) == HISTORY_FIELDS for r in mine)
    assert cli_json(capsys, "history", "--user", "bob") == []
    # A fresh process, as a user runs it, with the user from the environment.
    done = run_cli("history", "--json", env_changes={"RR_STUDIO_USER": "alice"})
    assert done.returncode == 0, done.stderr
    assert [r["run_id"] for r in json.loads(done.stdout)] == [r["run_id"] for r in mine]
    done = run_cli("history", env_changes={"RR_STUDIO_USER": "alice"})
    assert "History of alice in postgresql://***@127.0.0.1" in done.stdout and "2 runs" in done.stdout
    assert "app-pw" not in done.stdout + done.stderr


def test_a_lab_sweep_keeps_its_replies_in_the_run_store_of_its_user(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["lab", "contract", "--provider", "offline", "--lengths", "1000", "--depths", "50", "--repeats", "1",
            "--methods", "baseline", "--no-bounds"]  # fmt: skip
    assert main(["--user", "alice", *argv]) == 0
    capsys.readouterr()
    assert open_store(owner="alice").calls_cached() == 1 and open_store().calls_cached() == 0
    assert main(argv) == 0  # the local user's sweep finds none of alice's replies: it makes its own call
    assert "calls made 1, found in the store 0" in capsys.readouterr().out
    assert main(["lab", "--user", "alice", *argv[1:]]) == 0  # --user after the command too
    assert "calls made 0, found in the store 1" in capsys.readouterr().out


def test_a_review_reads_its_documents_into_the_store_of_its_user(
    capsys: pytest.CaptureFixture[str], planted_txt: Path, tmp_path: Path
) -> None:
    columns = tmp_path / "columns.csv"
    columns.write_text(f"question,type\n{PLANTED_QUESTION},text\n", encoding="utf-8")
    argv = [
        "review",
        str(planted_txt),
        "--questions",
        str(columns),
        "--provider",
        "offline",
        "--processes",
        "1",
    ]
    assert main(["--json", "--user", "alice", *argv]) == 0
    capsys.readouterr()
    digest = __import__("hashlib").sha256(planted_txt.read_bytes()).hexdigest()
    assert open_store(owner="alice").document_name(digest) == "planted.txt"
    assert open_store().document_name(digest) is None  # the local user's store holds none of it
    assert [r["document"] for r in cli_json(capsys, "history", "--user", "alice")] == ["planted.txt"]


@pytest.mark.parametrize("option", ["--trials-csv", "--jobs-out"])
def test_a_lab_output_that_cannot_be_written_exits_2_before_the_sweep(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str
) -> None:
    (tmp_path / "a-file").write_text("x")
    argv = ["lab", "contract", "--provider", "offline", "--lengths", "1000", "--depths", "50", "--repeats", "1",
            "--methods", "baseline", "--no-bounds", option, str(tmp_path / "a-file" / "out")]  # fmt: skip
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {option} ") and "Nothing was read or sent" in err
    assert open_store().calls_cached() == 0
