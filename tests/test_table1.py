"""``benchmarks/table1.py`` end to end on a small grid: the offline engine and the provider stub
(an OpenAI-compatible server, as vLLM would be), every cell the Lab's own sweep, with its interval,
beside the paper's figure when one is given."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from stub_server import StubServer
from test_lab import twenty_document_rows, write_jsonl_gz

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import table1  # noqa: E402

GRID = ["--lengths", "200,300", "--step", "100", "--questions", "3", "--concurrency", "2"]


def _qa(tmp_path: Path) -> Path:
    return write_jsonl_gz(tmp_path / "twenty.jsonl.gz", twenty_document_rows(3))


def test_depths_follow_the_papers_10k_steps() -> None:
    assert table1.depths_for(20_000) == [0.0, 50.0, 100.0]
    assert table1.depths_for(40_000) == [0.0, 25.0, 50.0, 75.0, 100.0]
    assert len(table1.depths_for(80_000)) == 9


def test_the_table_on_the_offline_engine_matches_each_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = _qa(tmp_path)
    figures = tmp_path / "paper.json"
    figures.write_text(json.dumps({"nq": {"200": {"rr": 0.5}}}))
    out, runs_out = tmp_path / "table1.md", tmp_path / "runs.json"
    argv = ["--dataset", f"nq={qa}", "--dataset", f"other={qa}", "--provider", "offline", *GRID,
            "--paper-figures", str(figures), "--out", str(out), "--json-out", str(runs_out), "--protocol", "paper"]  # fmt: skip
    assert table1.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    runs = json.loads(runs_out.read_text(encoding="utf-8"))
    assert [(r["dataset"], r["length"]) for r in runs] == [
        ("nq", 200),
        ("nq", 300),
        ("other", 200),
        ("other", 300),
    ]
    rows = [line for line in text.splitlines() if line.startswith("| nq") or line.startswith("| other")]
    assert len(rows) == 4
    for run, row in zip(runs, rows, strict=True):
        assert run["exit"] == 0, run["error"]
        by_method = {s["method_name"]: s for s in run["data"]["series"]}
        assert set(by_method) == {"baseline", "reprompt", "rr"}
        for method in ("baseline", "reprompt", "rr"):
            assert table1.cell_text(by_method[method]) in row
        # Every position every STEP tokens, every question.
        assert {c["depth"] for c in run["data"]["cells"]} == set(table1.depths_for(run["length"], 100))
        assert {c["questions"] for c in run["data"]["cells"]} == {3}
        assert run["data"]["layout"] == "before-and-after"  # the paper's prompt, not the preset's
    assert rows[0].endswith("| — | — | 50% |")  # the paper's figure where given, else —
    # --protocol is passed on only where the Lab has it.
    assert ("--protocol" in table1.lab_options()) == (
        "protocol" in json.dumps(runs[0]["data"].get("plan", {})) or "--protocol" in table1.lab_options()
    )


def test_the_table_against_an_openai_compatible_server(tmp_path: Path) -> None:
    qa = _qa(tmp_path)
    out = tmp_path / "table1.md"
    with StubServer() as stub:
        argv = ["--dataset", f"nq={qa}", "--provider", "openai-compatible", "--base-url", stub.url,
                "--model", "open-long-context", *GRID[:2], "--step", "100", "--questions", "2",
                "--methods", "baseline,rr", "--out", str(out)]  # fmt: skip
        assert table1.main(argv) == 0
        asked = len(stub.requests)
    text = out.read_text(encoding="utf-8")
    assert asked > 0 and text.count("| nq |") == 2 and table1.PAPER_SAYS in text
    assert "[" in text.split("| nq |")[1]  # an interval in the row


def test_a_dataset_without_a_file_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert table1.main(["--dataset", "nq", "--provider", "offline"]) == 2
    assert "NAME=FILE" in capsys.readouterr().err
