"""``python -m rr_core``: the JSON contract of each command, and how user mistakes end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
from conftest import PLANTED_FACT, PLANTED_PAGE, PLANTED_QUESTION, ROOT, planted_texts

from rr_core import samples
from rr_core.cli import main
from rr_core.methods import Method
from tests.stub_server import StubServer

FACT = "4.2 million euros"


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it: a fresh interpreter in the project folder."""
    env = dict(os.environ)  # the autouse fixture already removed every provider key
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


@pytest.mark.parametrize("method", list(Method))
def test_plan_json_contract(capsys: pytest.CaptureFixture[str], planted_txt: Path, method: Method) -> None:
    data = cli_json(
        capsys, "plan", str(planted_txt), "-m", method.value, "-q", PLANTED_QUESTION,
        "--interval", "1000", "--chunk-size", "3000",
    )  # fmt: skip
    assert data["method"] == method.value
    calls = data["calls"]
    for call in calls:
        assert {
            "stage",
            "chunk",
            "pages",
            "reminders_after_pages",
            "prompt_tokens",
            "prompt",
            "pending",
        } <= set(call)
        assert call["prompt_tokens"] > 0
        if call["pending"]:
            assert call["prompt"] is None and call["pages"] == []
        else:
            assert call["prompt"].startswith("<INSTRUCTIONS>") and PLANTED_QUESTION in call["prompt"]
            for page in call["reminders_after_pages"]:
                assert f"</PAGE {page}>\n\n<INSTRUCTIONS_REMINDER>" in call["prompt"]
    estimate = data["estimate"]
    assert estimate["calls"] == len(calls)
    assert estimate["input_tokens"] == sum(c["prompt_tokens"] for c in calls)
    assert estimate["usd"] > 0 and estimate["priced_as"] == "gpt-4.1-mini"
    stages = [c["stage"] for c in calls]
    if method.retrieves:
        assert stages[-1] == "answer" and calls[-1]["pending"]
        assert all(s == "retrieve" and not c["pending"] for s, c in zip(stages[:-1], calls))
        if method.chunked:
            assert len(calls) == len(data["chunks"]) + 1 > 2
            assert [c["chunk"] for c in calls[:-1]] == list(range(1, len(calls)))
    else:
        assert stages == ["answer"] and not calls[0]["pending"]
    has_reminders = any(c["reminders_after_pages"] for c in calls)
    assert has_reminders == method.reminds


def test_plan_table(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    assert (
        main(["plan", str(planted_txt), "-m", "chunked-rr", "-q", PLANTED_QUESTION, "--chunk-size", "3000"])
        == 0
    )
    out = capsys.readouterr().out
    assert "chunk 1" in out and "pending" in out and "total:" in out


# ---- ask -----------------------------------------------------------------------------------


RESULT_KEYS = {
    "method",
    "answer",
    "page",
    "retrieved_pages",
    "calls",
    "usage",
    "cost_usd",
    "latency_s",
    "warnings",
}


def test_ask_offline_json_contract(planted_txt: Path) -> None:
    methods = ",".join(m.value for m in Method)
    result = run_cli(
        "--json", "ask", str(planted_txt), "-q", PLANTED_QUESTION, "--provider", "offline",
        "--methods", methods, "--interval", "1000", "--chunk-size", "3000",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["provider"] == "offline" and data["is_llm"] is False
    assert data["question"] == PLANTED_QUESTION
    assert [r["method"] for r in data["results"]] == [m.value for m in Method]
    for r in data["results"]:
        assert set(r) >= RESULT_KEYS
        assert FACT in r["answer"] and r["page"] == PLANTED_PAGE, r["method"]
        assert r["error"] is None and r["cost_usd"] > 0 and r["latency_s"] >= 0
        assert r["usage"]["input_tokens"] == sum(c["usage"]["input_tokens"] for c in r["calls"])
        for call in r["calls"]:
            assert {"stage", "chunk", "pages", "usage", "cost_usd", "latency_s"} <= set(call)
        if Method(r["method"]).retrieves:
            assert PLANTED_PAGE in r["retrieved_pages"]


def test_ask_defaults_to_offline_without_keys(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    data = cli_json(capsys, "ask", str(planted_txt), "-q", PLANTED_QUESTION)
    assert data["provider"] == "offline"
    assert [r["method"] for r in data["results"]] == ["baseline", "rr"]  # the default pair


def test_ask_table_says_offline_is_not_an_llm(capsys: pytest.CaptureFixture[str], planted_txt: Path) -> None:
    assert main(["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "icr"]) == 0
    captured = capsys.readouterr()
    assert "not an LLM" in captured.out and FACT in captured.out and f"p.{PLANTED_PAGE}" in captured.out
    assert "icr: retrieve done" in captured.err  # progress goes to stderr


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
        (["plan", "{doc}", "-q", "x", "-m", "rr", "--top-k", "0"], "N"),
        (["plan", "{doc}", "-q", "x", "-m", "reprompt", "--interval", "5"], "interval"),
        (["plan", "{doc}", "-q", "x", "-m", "chunked-icr", "--chunk-size", "10"], "chunk size"),
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
    argv = [a.format(doc=planted_txt, bad=bad, empty=empty) for a in args]
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
    from rr_core.ledger import Ledger

    assert main(["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline,rr", "--save"]) == 0
    out = capsys.readouterr().out
    rows = Ledger().list()  # RR_STUDIO_DB points at this test's own file
    assert sorted(r.method for r in rows) == ["baseline", "rr"]
    assert len({r.batch for r in rows}) == 1 and f"batch {rows[0].batch}" in out
    assert main(["ask", str(planted_txt), "-q", PLANTED_QUESTION, "--methods", "baseline"]) == 0
    assert len(Ledger().list()) == 2  # without --save nothing more is stored


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


def test_pages_with_ocr_off_says_how_to_turn_it_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = pymupdf.open()
    doc.new_page()
    path = tmp_path / "scan.pdf"
    doc.save(path)
    code = main(["pages", str(path)])
    assert_user_error(code, capsys.readouterr().err, "scan.pdf", "--ocr")
