"""Review opens what it asks for: encrypted PDFs with their passwords and scanned ones by OCR,
on the command line (``--password``, ``--password-file``, ``--ocr``) and on the Review screen
(a password field under an encrypted file, an OCR switch); a file still unreadable says what to
do where the user is. The PDFs are made here: an encrypted one (pymupdf) and an image-only one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from streamlit.testing.v1 import AppTest

from rr_core import documents
from rr_core.cli import main
from rr_core.errors import ConfigError
from rr_core.review.corpus import Passwords, parse_password_file
from tests.review_kit import COLUMNS_CSV, contract_pages, write_contracts

APP = str(Path(__file__).resolve().parent.parent / "app.py")
TIMEOUT = 300
SECRET = "pw-alpha-0123-secret"
OTHER_SECRET = "pw-beta-4567-secret"
HAS_TESSERACT = documents.ocr_available() is None


def encrypted_pdf(pages: list[str], password: str) -> bytes:
    """A PDF of these pages, AES-256 encrypted with ``password``."""
    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 770), text, fontsize=11)
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw=password + "-owner")
    doc.close()
    return bytes(data)


def scanned_pdf(pages: list[str]) -> bytes:
    """A PDF whose pages are pictures of these pages' text: no text layer at all."""
    source = pymupdf.open()
    scanned = pymupdf.open()
    for text in pages:
        page = source.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), text, fontsize=14)
        picture = page.get_pixmap(dpi=150)
        scanned.new_page(width=page.rect.width, height=page.rect.height).insert_image(
            page.rect, pixmap=picture
        )
    data = scanned.tobytes()
    source.close()
    scanned.close()
    return bytes(data)


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    """Two text contracts, alpha as an encrypted PDF and beta as a scanned one."""
    folder = tmp_path / "deal"
    write_contracts(folder, ("gamma.txt",))
    (folder / "alpha.pdf").write_bytes(encrypted_pdf(contract_pages("alpha.txt"), SECRET))
    (folder / "beta.pdf").write_bytes(scanned_pdf(contract_pages("beta.txt")[:2]))
    (tmp_path / "questions.csv").write_text(COLUMNS_CSV, encoding="utf-8")
    return {"folder": folder, "questions": tmp_path / "questions.csv"}


def review(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, Path], *extra: str
) -> tuple[dict[str, Any], str]:
    """``review --dry-run`` on the offline engine: the files as read, and stderr."""
    code = main(
        ["--json", "review", str(corpus["folder"]), "--questions", str(corpus["questions"]), "--processes", "1",
         "--dry-run", *extra]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert SECRET not in out + err and OTHER_SECRET not in out + err
    return {d["document"].split("/")[-1]: d for d in data["documents"]}, err


# ---- the command line -------------------------------------------------------------------------


def test_without_options_each_unread_file_names_the_option_that_opens_it(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, Path]
) -> None:
    files, err = review(capsys, corpus)
    assert files["gamma.txt"]["read"] is True
    assert files["alpha.pdf"]["problem"] == "encrypted" and not files["alpha.pdf"]["read"]
    assert (
        "--password PW" in files["alpha.pdf"]["message"]
        and "--password-file" in files["alpha.pdf"]["message"]
    )
    assert files["beta.pdf"]["problem"] == "scanned (no text layer)"
    assert (
        "--ocr" in files["beta.pdf"]["message"]
        and "none of its 2 pages has a text layer" in files["beta.pdf"]["message"]
    )
    # Nothing tells a command-line user to do what only a screen offers.
    assert "enter its password" not in err and "turn on OCR" not in err
    assert "not reviewed: deal/alpha.pdf: the PDF is encrypted" in err


def test_password_opens_every_encrypted_file_and_is_never_stored(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, Path], tmp_path: Path
) -> None:
    files, _ = review(capsys, corpus, "--password", SECRET)
    alpha = files["alpha.pdf"]
    assert alpha["read"] is True and alpha["pages"] == 4 and alpha["tokens"] > 0
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*.sqlite3*"))
    assert stored and SECRET.encode() not in stored
    # Read once: the next review opens its stored reading, with no password.
    again, _ = review(capsys, corpus)
    assert (
        again["alpha.pdf"]["read"] is True
        and again["alpha.pdf"]["document_sha256"] == alpha["document_sha256"]
    )


def test_an_encrypted_files_pages_are_shown_from_its_text_once_read(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, Path]
) -> None:
    """The password opened the file for its reading only: a cell's page is drawn from the
    stored text (typeset), not left unrenderable."""
    from rr_core.tokens import counter_for_model
    from rr_core.workbench import stored_document

    files, _ = review(capsys, corpus, "--password", SECRET)
    document = stored_document(files["alpha.pdf"]["document_sha256"], counter_for_model("gpt-4.1-mini"))
    assert document.pdf_bytes is not None and document.password is None
    page = documents.render_page(document, 2)
    words = {w.text for w in documents.page_words(document, 2)}
    assert page.png.startswith(b"\x89PNG") and {"governed", "Delaware."} <= words


def test_a_wrong_password_says_to_check_it(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, Path]
) -> None:
    files, _ = review(capsys, corpus, "--password", OTHER_SECRET)
    assert files["alpha.pdf"]["problem"] == "encrypted"
    assert "did not open the PDF: check --password" in files["alpha.pdf"]["message"]


def test_a_password_file_gives_each_file_its_own_before_password(
    capsys: pytest.CaptureFixture[str],
    corpus: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (corpus["folder"] / "delta.pdf").write_bytes(encrypted_pdf(contract_pages("beta.txt"), OTHER_SECRET))
    table = tmp_path / "passwords.csv"
    table.write_text(f"file,password\nalpha.pdf,{SECRET}\n", encoding="utf-8")
    files, _ = review(capsys, corpus, "--password-file", str(table), "--password", OTHER_SECRET)
    assert files["alpha.pdf"]["read"] is True and files["delta.pdf"]["read"] is True
    # Without the fallback (and a store that has not read it), the file with no line is still
    # locked, and says how to open it.
    monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / "fresh.sqlite3"))
    files, _ = review(capsys, corpus, "--password-file", str(table))
    assert files["delta.pdf"]["problem"] == "encrypted" and "--password" in files["delta.pdf"]["message"]


def test_a_password_file_line_without_a_password_is_refused_by_its_number() -> None:
    assert parse_password_file("file,password\na.pdf,x\n").for_file("deal/a.pdf") == "x"
    with pytest.raises(ConfigError, match="line 2: give a file and its password"):
        parse_password_file("a.pdf,x\nb.pdf\n")
    assert "x" not in repr(Passwords(by_file={"a.pdf": "x"}, every="x"))


def test_ocr_without_tesseract_says_it_needs_tesseract(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.delenv("TESSDATA_PREFIX", raising=False)
    files, _ = review(capsys, corpus, "--ocr")
    assert files["beta.pdf"]["problem"] == "scanned (no text layer)"
    assert "OCR needs Tesseract, which is not installed" in files["beta.pdf"]["message"]


@pytest.mark.skipif(not HAS_TESSERACT, reason=f"OCR needs Tesseract here: {documents.ocr_available()}")
def test_ocr_reads_a_scanned_file(capsys: pytest.CaptureFixture[str], corpus: dict[str, Path]) -> None:
    files, _ = review(capsys, corpus, "--ocr")
    beta = files["beta.pdf"]
    assert beta["read"] is True and beta["pages"] == 2 and beta["tokens"] > 50
    assert any("read by OCR" in w for w in beta["warnings"])


# ---- the Review screen ------------------------------------------------------------------------


def open_upload(corpus: dict[str, Path]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/review.py").run()
    at.radio(key="w.review_source").set_value("upload").run()
    uploads = [
        (p.name, p.read_bytes(), "application/pdf" if p.suffix == ".pdf" else "text/plain")
        for p in sorted(corpus["folder"].iterdir())
    ]
    at.file_uploader(key="w.review_files").set_value(uploads).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def corpus_table(at: AppTest) -> Any:
    found = [d.value for d in at.dataframe if "Problem" in d.value.columns]
    assert found, "no corpus table on screen"
    return found[-1].set_index("File")


def warnings(at: AppTest) -> str:
    """The warnings on screen, as read (Markdown escapes removed)."""
    return " ".join(w.value for w in at.warning).replace("\\", "")


def test_the_screen_asks_for_the_password_under_the_encrypted_file_and_reads_it_again(
    corpus: dict[str, Path],
) -> None:
    at = open_upload(corpus)
    table = corpus_table(at)
    assert table.loc["alpha.pdf", "Read"] == "no" and table.loc["alpha.pdf", "Problem"] == "encrypted"
    said = warnings(at)
    assert "enter its password below" in said and "--password" not in said
    assert "turn on OCR above" in said and "--ocr" not in said
    (field,) = [t for t in at.text_input if t.label == "Password for alpha.pdf"]
    field.input(OTHER_SECRET).run()
    assert "did not open the PDF: check it and enter it again below" in warnings(at)
    [t for t in at.text_input if t.label == "Password for alpha.pdf"][0].input(SECRET).run()
    assert not at.exception, [e.value for e in at.exception]
    table = corpus_table(at)
    assert table.loc["alpha.pdf", "Read"] == "yes" and table.loc["alpha.pdf", "Pages"] == 4
    assert not [t for t in at.text_input if t.label == "Password for alpha.pdf"]


def test_the_screen_without_tesseract_says_ocr_needs_it(
    corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.delenv("TESSDATA_PREFIX", raising=False)
    at = open_upload(corpus)
    assert any(
        "OCR is not available here: OCR needs Tesseract" in c.value.replace("\\", "") for c in at.caption
    )
    assert not [t for t in at.toggle if t.key == "w.review_ocr"]


@pytest.mark.skipif(not HAS_TESSERACT, reason=f"OCR needs Tesseract here: {documents.ocr_available()}")
def test_the_screens_ocr_switch_reads_the_scanned_file_again(corpus: dict[str, Path]) -> None:
    at = open_upload(corpus)
    assert corpus_table(at).loc["beta.pdf", "Read"] == "no"
    at.toggle(key="w.review_ocr").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    table = corpus_table(at)
    assert table.loc["beta.pdf", "Read"] == "yes" and table.loc["beta.pdf", "Pages"] == 2


def test_the_review_screen_on_gemini_says_batches_are_not_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-test-screen-0123456789")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["provider"] = "gemini"
    at.session_state["model"] = "gemini-2.5-flash"
    at.run()
    at.switch_page("pages/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="w.review_mode").options == ["Now (every call at once, list price)"]
    said = [c.value.replace("\\", "") for c in at.caption] + [m.value.replace("\\", "") for m in at.markdown]
    assert any("Batches are not offered for Google Gemini in this version" in text for text in said)
    assert any("not offered for Google Gemini in this version" in text for text in said if "####" in text)
