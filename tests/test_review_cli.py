"""``python -m rr_core review``: the documented JSON, the plan on stderr, exports, exit codes,
the budget and dry run (nothing sent), batch mode — in a fresh interpreter and in-process
(``main([...])``) against the loopback stubs of the providers."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from rr_core.cli import main
from tests.review_kit import (
    ANSWERS_CSV,
    COLUMNS_CSV,
    created_batches,
    responder,
    sync_calls,
    write_contracts,
)
from tests.stub_server import StubServer, prompt_of, server_error

CELL_KEYS = {"document", "document_sha256", "question", "answer", "found", "citations", "correct", "cost_usd"}
SHARED_REVIEW = ROOT.parent / "shared" / "data" / "review"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    write_contracts(tmp_path / "contracts")
    (tmp_path / "questions.csv").write_text(COLUMNS_CSV, encoding="utf-8")
    (tmp_path / "answers.csv").write_text(ANSWERS_CSV, encoding="utf-8")
    return {
        "contracts": tmp_path / "contracts",
        "questions": tmp_path / "questions.csv",
        "answers": tmp_path / "answers.csv",
    }


def review_argv(files: dict[str, Path], *extra: str) -> list[str]:
    return [
        "review", str(files["contracts"]), "--questions", str(files["questions"]),
        "--answers", str(files["answers"]), "--processes", "1", *extra,
    ]  # fmt: skip


def run_json(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int = 0
) -> tuple[dict[str, Any], str]:
    got = main(["--json", *argv])
    out, err = capsys.readouterr()
    assert got == code, err
    return json.loads(out), err


def point_at(stub: StubServer, provider: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The CLI options (and environment) that send ``provider``'s calls to the stub."""
    monkeypatch.setenv("RR_BATCH_POLL_S", "0.2")
    if provider == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-review-cli")
        monkeypatch.setenv("OPENAI_BASE_URL", stub.url)
        return ["--provider", "openai", "--model", "gpt-4.1-mini"]
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-review-cli")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.anthropic_url)
        return ["--provider", "anthropic", "--model", "claude-sonnet-5-5"]
    if provider == "gemini":
        monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-review-cli-0123456789")
        monkeypatch.setenv("GEMINI_BASE_URL", stub.root)
        return ["--provider", "gemini", "--model", "gemini-2.5-flash"]
    return ["--provider", "openai-compatible", "--base-url", stub.url, "--model", "llama-local"]


def assert_documented_shape(data: dict[str, Any], documents: int, columns: int) -> None:
    assert {"documents", "columns", "cells", "scores"} <= set(data)
    assert len([d for d in data["documents"] if d["read"]]) == documents
    assert [c["index"] for c in data["columns"]] == list(range(columns))
    for cell in data["cells"]:
        assert set(cell) >= CELL_KEYS
        assert len(cell["document_sha256"]) == 64 and isinstance(cell["found"], bool)
        assert cell["correct"] in (True, False, None) and isinstance(cell["cost_usd"], float | int)
        for cited in cell["citations"]:
            assert {"page", "page_label", "quote", "quote_check"} <= set(cited)
    assert isinstance(data["scores"], dict) and "main" in data["scores"]
    for group in data["scores"].values():
        assert {"method", "columns", "all"} <= set(group)
        assert [c["column"] for c in group["columns"]] == list(range(columns))
        assert group["all"]["question"] == "all columns"


# ---- a fresh interpreter, the offline engine ------------------------------------------------------


def test_offline_review_in_a_fresh_interpreter_prints_the_plan_then_the_documented_json(
    files: dict[str, Path], tmp_path: Path
) -> None:
    store = tmp_path / "history.sqlite3"
    env = {**os.environ, "RR_STUDIO_DB": str(store)}
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    done = subprocess.run(
        [sys.executable, "-m", "rr_core", "--json", *review_argv(files, "--compare", "baseline", "--compare-rows", "2")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert_documented_shape(data, documents=3, columns=4)
    assert "review: 3 documents × 4 questions" in done.stderr and "in batches" in done.stderr
    assert data["is_llm"] is False and data["paid_usd"] == 0 and data["failed_cells"] == 0
    assert len(data["cells"]) == 3 * 4 + 2 * 4 and data["history_batch"]
    assert list(data["scores"]) == ["main", "compare", "main-on-sample"]
    main_all = data["scores"]["main"]["all"]
    assert main_all["marked"] == 11 and main_all["cells"] == 12  # gamma's cap has no key row
    assert main_all["right"] == sum(1 for c in data["cells"] if c["role"] == "main" and c["correct"] is True)
    assert data["estimate"]["calls"] == 3 * 5 + 2 * 4 and data["estimate"]["usd_batch"] > 0
    # The process froze its objects before exiting (no last collection pass): its store was
    # closed first all the same, the WAL written back into the file.
    assert store.is_file() and not Path(f"{store}-wal").exists()


# ---- in-process, through the stubs ----------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "openai-compatible"])
def test_review_through_each_provider_answers_cites_and_scores(
    provider: str, capsys: pytest.CaptureFixture[str], files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with StubServer(responder) as stub:
        data, err = run_json(capsys, review_argv(files, *point_at(stub, provider, monkeypatch)))
        assert sync_calls(stub) == data["estimate"]["calls"] == 15
    assert_documented_shape(data, documents=3, columns=4)
    by = {(c["document"].split("/")[-1], c["column"]): c for c in data["cells"]}
    assert [by[("alpha.txt", i)]["answer"] for i in range(4)] == [
        "Delaware",
        "2020-03-01",
        "Yes",
        "$2,000,000",
    ]
    assert (
        by[("beta.txt", 2)]["answer"] == "the model says the document does not state it"
        and by[("beta.txt", 2)]["found"] is False
        and by[("beta.txt", 2)]["absent_by"] == "model"
    )
    assert by[("alpha.txt", 0)]["citations"] == [
        {"page": 2, "page_label": "", "quote": "This Agreement shall be governed by the laws of the State of Delaware",
         "quote_check": "verified"}
    ]  # fmt: skip
    assert data["scores"]["main"]["all"]["right"] == 9 and data["scores"]["main"]["all"]["marked"] == 11
    assert data["scores"]["main"]["all"]["answered"] == 10  # beta's yes/no, without a clause, is unanswered
    assert data["failed_cells"] == 0 and data["is_llm"] is True
    assert (data["paid_usd"] > 0) is (provider != "openai-compatible")
    assert data["paid_usd"] == pytest.approx(sum(c["cost_usd"] for c in data["cells"]), abs=1e-5)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_mode_sends_one_batch_per_phase_at_half_the_now_price(
    provider: str, capsys: pytest.CaptureFixture[str], files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:  # fmt: skip
    with StubServer(responder) as stub:
        stub.batch_auto_complete = True
        batched, _ = run_json(
            capsys, review_argv(files, *point_at(stub, provider, monkeypatch), "--mode", "batch")
        )
        assert created_batches(stub) == 2 and sync_calls(stub) == 0
        assert sum(stub.batch_submissions.values()) == 15 and max(stub.batch_submissions.values()) == 1
    monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / "now.sqlite3"))
    with StubServer(responder) as stub:
        now, _ = run_json(capsys, review_argv(files, *point_at(stub, provider, monkeypatch)))
    assert batched["mode"] == "batch" and now["mode"] == "now"
    assert batched["paid_usd"] > 0 and batched["paid_usd"] == pytest.approx(now["paid_usd"] / 2, abs=2e-6)
    assert [(c["answer"], c["correct"]) for c in sorted(batched["cells"], key=cell_order)] == [
        (c["answer"], c["correct"]) for c in sorted(now["cells"], key=cell_order)
    ]


def cell_order(c: dict[str, Any]) -> tuple[str, int]:
    return c["document"], c["column"]


def test_dry_run_sends_nothing_and_prints_the_estimate(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = files["contracts"] / "zz copy of alpha.txt"
    copy.write_bytes((files["contracts"] / "alpha.txt").read_bytes())
    with StubServer(responder) as stub:
        data, err = run_json(capsys, review_argv(files, *point_at(stub, "openai", monkeypatch), "--dry-run"))
        assert not stub.requests
    assert data["dry_run"] is True and data["cells"] == [] and data["estimate"]["calls"] == 15
    # the copy is read once and listed once, as a copy
    listed = [d for d in data["documents"] if d["document_sha256"] == data["documents"][0]["document_sha256"]]
    assert [(d["document"], d["read"], d["duplicate_of"]) for d in listed] == [
        ("contracts/alpha.txt", True, None), ("contracts/zz copy of alpha.txt", False, "contracts/alpha.txt")
    ]  # fmt: skip
    assert "same content as contracts/alpha.txt" in err
    assert data["estimate"]["usd_now"] > 0 and data["estimate"]["usd_batch"] < data["estimate"]["usd_now"]
    assert "estimate:" in err and "documents × 4 questions" in err


def test_a_budget_below_the_estimate_exits_2_with_nothing_sent(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with StubServer(responder) as stub:
        code = main(
            ["--json", *review_argv(files, *point_at(stub, "openai", monkeypatch), "--max-usd", "0.000001")]
        )
        out, err = capsys.readouterr()
        assert not stub.requests
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("error:") and "Nothing was sent" in lines[-1] and "Traceback" not in err
    # a server with no known price cannot be held to a budget
    with StubServer(responder) as stub:
        code = main(review_argv(files, *point_at(stub, "openai-compatible", monkeypatch), "--max-usd", "5"))
        _, err = capsys.readouterr()
        assert code == 2 and "no price is known" in err and not stub.requests


@pytest.mark.parametrize("option", ["--csv", "--xlsx"])
def test_an_output_that_cannot_be_written_exits_2_before_anything_is_read_or_sent(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    (files["contracts"].parent / "a-file").write_text("x")
    for bad in (
        files["contracts"].parent / "a-file" / "out",
        files["contracts"].parent / "no-folder" / "out",
    ):
        with StubServer(responder) as stub:
            code = main(
                ["--json", *review_argv(files, *point_at(stub, "openai", monkeypatch), option, str(bad))]
            )
            out, err = capsys.readouterr()
            assert not stub.requests
        assert code == 2 and out == "" and "Traceback" not in err
        (line,) = err.strip().splitlines()  # nothing read: one line
        assert (
            line.startswith(f"error: {option} {bad}: cannot write there")
            and "Nothing was read or sent" in line
        )
    assert not list(files["contracts"].parent.glob("*/out"))
    # a folder is not a file
    code = main(review_argv(files, option, str(files["contracts"])))
    assert code == 2 and "that is a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("failing", "code"),
    [("GAMMA SUPPLY AGREEMENT", 4), ("SUPPLY AGREEMENT", 3)],  # one row fails; every row fails
)
def test_failed_cells_exit_4_or_3_and_say_why(
    failing: str,
    code: int,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def respond(path: str, body: Any) -> Any:
        if failing in prompt_of(body):
            return server_error(400, "The model refused this document.")
        return responder(path, body)

    with StubServer(respond) as stub:
        data, err = run_json(capsys, review_argv(files, *point_at(stub, "openai", monkeypatch)), code=code)
    failed = [c for c in data["cells"] if c["error"]]
    assert data["failed_cells"] == len(failed) == (4 if code == 4 else 12)
    assert all("refused this document" in c["error"] and c["correct"] is None for c in failed)
    assert f"{len(failed):,} of 12 cells failed" in err and "refused this document" in err


def test_exports_csv_xlsx_and_traces(
    capsys: pytest.CaptureFixture[str],
    files: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from openpyxl import load_workbook

    out_csv, out_xlsx = tmp_path / "grid.csv", tmp_path / "grid.xlsx"
    # a document whose name would run as a formula in a spreadsheet, given as files
    folder = files["contracts"]
    (folder / "alpha.txt").rename(folder / "=alpha.txt")
    given = [str(folder / n) for n in ("=alpha.txt", "beta.txt", "gamma.txt")]
    argv = ["review", *given, "--questions", str(files["questions"]), "--answers", str(files["answers"])]
    with StubServer(responder) as stub:
        engine = point_at(stub, "openai", monkeypatch)
        data, _ = run_json(capsys, [*argv, *engine, "--processes", "1", "--csv", str(out_csv),
                                    "--xlsx", str(out_xlsx), "--traces"])  # fmt: skip
    assert len(data["traces"]) == 3 and all(t["calls"] for t in data["traces"])
    assert not any("prompt" in call and call["prompt"] for t in data["traces"] for call in t["calls"])
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text(encoding="utf-8"))))
    assert len(rows) == 12
    for row in rows:
        assert row["question"] and len(row["document_sha256"]) == 64 and row["method"].startswith("R&R")
        assert not any(v.startswith(("=", "+", "-", "@")) for v in row.values() if v)
    assert {r["document"] for r in rows} == {"'=alpha.txt", "beta.txt", "gamma.txt"}
    cited = [r for r in rows if r["quote"]]
    assert cited and all(r["quote_check"].startswith("quote located on p. ") and r["page"] for r in cited)
    assert {r["correct"] for r in rows} == {"right", "wrong", ""}  # "" where the key has no row
    book = load_workbook(out_xlsx)
    assert book.sheetnames == ["Answers", "Quotes", "Scores", "Costs and settings"]
    answers = [[c.value for c in row] for row in book["Answers"].iter_rows()]
    assert answers[0][:3] == ["Document", "SHA-256", "Method"]
    assert (
        "Which jurisdiction's law governs this agreement? [text]" in answers[0] and "Citation" in answers[0]
    )
    assert len([r for r in answers[1:] if r and r[0]]) == 3
    # verbatim, typed as text: never a formula
    assert "=alpha.txt" in [row[0] for row in answers]
    assert all(c.data_type != "f" for sheet in book for row in sheet.iter_rows() for c in row)
    quotes = [[c.value for c in row] for row in book["Quotes"].iter_rows()]
    assert len(quotes) - 1 == sum(len(c["citations"]) for c in data["cells"]) > 0
    costs = [[c.value for c in row] for row in book["Costs and settings"].iter_rows()]
    assert costs[0][0] == "Document" and any(r[0] == "usd_batch" for r in costs if r)
    assert any(r and str(r[0]).startswith("settings (main)") for r in costs)


def test_the_table_without_json_says_answers_scores_and_what_was_paid(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    (files["contracts"] / "scan.pdf").write_bytes(b"%PDF-1.7\n% cut short")
    code = main(review_argv(files))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "scan.pdf: not reviewed" in out and "not reviewed:" in err
    assert "scores against the answer key" in out and "all columns:" in out
    assert "base rate" in out and "coverage" in out and "precision" in out
    assert "(not an LLM: nothing paid)" in out


def test_user_mistakes_exit_2_in_one_line(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("question,type\nWhat?,colour\n")
    cases = [
        (["review", str(files["contracts"]), "--questions", str(tmp_path / "none.csv")], "none.csv"),
        (["review", str(files["contracts"]), "--questions", str(bad)], "bad.csv, line 2"),
        (review_argv(files, "--compare-rows", "0"), "--compare-rows"),
        (["review", str(tmp_path / "empty"), "--questions", str(files["questions"])], "No document"),
    ]
    (tmp_path / "empty").mkdir()
    for argv, needle in cases:
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and needle in err and "Traceback" not in err, (argv, err)
        assert err.strip().splitlines()[-1].startswith("error:")


# ---- the shared corpus -------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_the_shared_contracts_offline_scores_are_at_least_a_sane_floor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """24 CUAD contracts × 6 checklist questions on the offline engine, against CUAD's answers.
    The figures when written (R&R, all columns 71/144 right, 74 answered, 96% precision, the
    high band 47 cells all right; nothing found is unanswered, not a "No"): a floor only."""
    if not (SHARED_REVIEW / "contracts").is_dir():
        pytest.skip("../shared/data/review is absent")
    data, _ = run_json(capsys, [
        "review", str(SHARED_REVIEW / "contracts"), "--questions", str(SHARED_REVIEW / "questions.csv"),
        "--answers", str(SHARED_REVIEW / "answers.csv"),
    ])  # fmt: skip
    assert len([d for d in data["documents"] if d["read"]]) == 24 and len(data["cells"]) == 24 * 6
    main_scores = data["scores"]["main"]
    assert main_scores["all"]["marked"] == 144
    assert main_scores["all"]["accuracy"] >= 0.45
    for column in main_scores["columns"]:
        assert column["marked"] == 24 and column["answered"] >= 3 and column["precision"] >= 0.6, column
        assert column["base_rate"] is not None and column["coverage"] is not None
    # the high band (calibrated on these contracts: 47 cells, all right when written) stays
    # mostly right and a real share of the grid
    every = main_scores["all"]
    assert every["high_precision"] >= 0.9 and every["high"] >= 0.2 * every["marked"]
    for c in data["cells"]:
        if not c["found"]:
            assert c["answer"].startswith("Not found") and c["correct"] is None
    assert data["estimate"]["several_questions_input_share"] < 1
