"""Real documents from ../shared/data: each loads, or fails with its own clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from rr_core.documents import load_document, render_page
from rr_core.errors import CorruptDocument, NoTextError, PasswordRequired, WrongPassword
from rr_core.llm import OfflineEngine
from rr_core.methods import get_method, method_names, plan_method
from rr_core.runs import run_plans
from rr_core.settings import RunSettings

pytestmark = pytest.mark.shared_data

PAGE_COUNTS = {
    "scotus_tarrant_regional_water_v_herrmann_2013.pdf": 30,
    "ca1_calvary_chapel_v_mills_2020.pdf": 17,
    "fda_guidance_bioavailability_studies_nda_ind.pdf": 33,
    "micropub_biology_001725_fly_cell_atlas_ovary.pdf": 6,
    "multicolumn_federal_register_2020-17221.pdf": 15,
    "nonlatin_korean_with_tables.pdf": 1,
}
SCANNED = "scanned_court_opinion_image_only.pdf"
ENCRYPTED = "encrypted_user_password_test_4p.pdf"
CORRUPT = "corrupt_invalid_structure_gao_report.pdf"
MICROPUB = "micropub_biology_001725_fly_cell_atlas_ovary.pdf"
CLUSTERS = "How many transcriptionally distinct clusters were identified?"


@pytest.mark.parametrize("name", sorted(PAGE_COUNTS))
def test_text_pdfs_load_with_their_page_counts(shared_documents: Path, name: str, counter) -> None:  # type: ignore[no-untyped-def]
    document = load_document(shared_documents / name, counter=counter)
    assert len(document.pages) == PAGE_COUNTS[name]
    assert document.total_tokens > 0
    assert [p.source_page for p in document.pages] == list(range(1, PAGE_COUNTS[name] + 1))
    # Most pages have text; any that do not are named in a warning.
    assert len(document.empty_pages) < len(document.pages) / 2
    if document.empty_pages:
        assert any("no text layer" in w for w in document.warnings)


def test_every_shared_pdf_loads_or_fails_with_a_specific_error(shared_documents: Path) -> None:
    outcomes: dict[str, str] = {}
    for path in sorted(shared_documents.glob("*.pdf")):
        try:
            load_document(path)
        except (NoTextError, PasswordRequired, CorruptDocument) as exc:
            assert path.name in str(exc)
            outcomes[path.name] = type(exc).__name__
        else:
            outcomes[path.name] = "loaded"
    assert outcomes[SCANNED] == "NoTextError"
    assert outcomes[ENCRYPTED] == "PasswordRequired"
    assert outcomes[CORRUPT] in {"loaded", "CorruptDocument"}
    assert all(outcomes[name] == "loaded" for name in PAGE_COUNTS)


def test_scanned_opinion_is_no_text(shared_documents: Path) -> None:
    with pytest.raises(NoTextError, match="text layer"):
        load_document(shared_documents / SCANNED)


def test_encrypted_pdf_asks_for_and_accepts_its_password(shared_documents: Path) -> None:
    with pytest.raises(PasswordRequired):
        load_document(shared_documents / ENCRYPTED)
    with pytest.raises(WrongPassword):
        load_document(shared_documents / ENCRYPTED, password="not-it")
    document = load_document(shared_documents / ENCRYPTED, password="test")
    assert len(document.pages) == 4
    assert all(p.has_text for p in document.pages)  # needs_pass read before authenticate
    rendered = render_page(document, 1)
    assert rendered.png.startswith(b"\x89PNG")


def test_corrupt_report_is_repaired_or_refused_clearly(shared_documents: Path) -> None:
    try:
        document = load_document(shared_documents / CORRUPT)
    except CorruptDocument as exc:
        assert CORRUPT in str(exc)
    else:
        assert document.total_tokens > 0 and len(document.pages) == 2


def test_korean_text_survives_loading(shared_documents: Path, counter) -> None:  # type: ignore[no-untyped-def]
    document = load_document(shared_documents / "nonlatin_korean_with_tables.pdf", counter=counter)
    text = document.page(1).text
    assert sum("\uac00" <= ch <= "\ud7a3" for ch in text) > 50  # Hangul syllables


def test_offline_ask_in_korean(shared_documents: Path, counter) -> None:  # type: ignore[no-untyped-def]
    document = load_document(shared_documents / "nonlatin_korean_with_tables.pdf", counter=counter)
    question = "빅포인트의 유효기간은?"
    plans = [
        plan_method(document, question, RunSettings(method=m), counter) for m in ("baseline", "rr", "rag")
    ]
    for trace in run_plans(document, plans, OfflineEngine(counter)):
        assert trace.ok and trace.page == 1
        assert "5년" in (trace.answer or "")
        assert trace.outcome.quote_check == "verified"


def test_offline_ask_on_a_real_paper(shared_documents: Path, counter) -> None:  # type: ignore[no-untyped-def]
    document = load_document(shared_documents / MICROPUB, counter=counter)
    settings = RunSettings(reminder_every=1_000, chunk_size=2_000, gold_pages=(1,))
    plans = [
        plan_method(document, CLUSTERS, settings.but(method=m), counter)
        for m in method_names()
        if m != "closed-book"
    ]
    traces = run_plans(document, plans, OfflineEngine(counter))
    for trace in traces:
        assert trace.ok, (trace.method, trace.error)
        assert "eight" in (trace.answer or "").lower(), trace.method
        assert trace.page == 1, trace.method
        if get_method(trace.method).retrieves or trace.method == "oracle":
            assert 1 in trace.retrieved_pages, trace.method


def test_cli_ask_on_a_real_document(shared_documents: Path) -> None:
    env = dict(os.environ)
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    result = subprocess.run(
        [sys.executable, "-m", "rr_core", "--json", "ask", str(shared_documents / MICROPUB), "-q", CLUSTERS,
         "--provider", "offline", "--methods", "baseline,rr,chunked-rr,rag,briefcontext", "--chunk-size", "2000"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [r["method"] for r in data["results"]] == ["baseline", "rr", "chunked-rr", "rag", "briefcontext"]
    for r in data["results"]:
        assert "eight" in r["answer"].lower() and r["page"] == 1


def test_cli_refuses_the_scanned_and_locked_files(shared_documents: Path) -> None:
    env = dict(os.environ)
    for name in (SCANNED, ENCRYPTED):
        result = subprocess.run(
            [sys.executable, "-m", "rr_core", "pages", str(shared_documents / name)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 2
        assert result.stderr.startswith("error:") and name in result.stderr
        assert "Traceback" not in result.stderr
