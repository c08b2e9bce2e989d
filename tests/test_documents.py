"""Loading documents into pages: PDFs built here with pymupdf, text formats, every bad file."""

from __future__ import annotations

import io
import random
import re
import threading
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from conftest import word_counter
from hypothesis import given
from hypothesis import strategies as st

from rr_core import documents
from rr_core.documents import (
    MAX_BLOCK_CHARS,
    MAX_BYTES,
    WORDS_PER_BLOCK,
    Box,
    Document,
    _clean,
    detect_kind,
    document_from_texts,
    load_document,
    page_words,
    pdf_from_texts,
    render_page,
    split_blocks,
)
from rr_core.errors import (
    ConfigError,
    CorruptDocument,
    DocumentError,
    DocumentTooLarge,
    EmptyDocument,
    NoTextError,
    PasswordRequired,
    UnsupportedType,
    WrongPassword,
)
from rr_core.viewer import place_quote

FEE = "The termination fee is 4.2 million euros."


def make_pdf(texts: Sequence[str], **save_options: object) -> bytes:
    """A PDF with one page per text; an empty text leaves its page blank."""
    doc = pymupdf.open()
    for text in texts:
        page = doc.new_page()
        if text:
            page.insert_textbox(pymupdf.Rect(50, 50, 550, 780), text, fontsize=11)
    data: bytes = doc.tobytes(**save_options)
    doc.close()
    return data


@pytest.fixture(scope="module")
def plain_pdf() -> bytes:
    return make_pdf(["First page: the parties agree.", f"Second page. {FEE}", "Third page, signatures."])


@pytest.fixture(scope="module")
def encrypted_pdf() -> bytes:
    return make_pdf(
        ["Secret first page.", "Secret second page."],
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw="pw",
        owner_pw="owner-pw",
    )


def paragraphs(count: int, words: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    vocab = [
        "river",
        "ledger",
        "harbor",
        "lantern",
        "meadow",
        "copper",
        "orchard",
        "signal",
        "timber",
        "canyon",
    ]
    return [" ".join(f"{rng.choice(vocab)}{i}" for _ in range(words)) + "." for i in range(count)]


# ---- PDFs ---------------------------------------------------------------------------------


def test_pdf_pages_keep_text_numbers_and_source_pages(plain_pdf: bytes) -> None:
    document = load_document(plain_pdf, filename="contract.pdf", counter=word_counter())
    assert document.kind == "pdf" and document.name == "contract.pdf"
    assert [p.number for p in document.pages] == [1, 2, 3]
    assert [p.source_page for p in document.pages] == [1, 2, 3]
    assert "4.2 million euros" in document.page(2).text
    assert document.page(1).text.startswith("First page")
    assert all(p.tokens > 0 for p in document.pages)
    assert document.total_tokens == sum(document.page_tokens)
    assert document.pdf_bytes == plain_pdf and document.warnings == ()
    assert len(document.sha256) == 64


def test_pdf_loads_from_a_path(tmp_path: Path, plain_pdf: bytes) -> None:
    path = tmp_path / "on-disk.pdf"
    path.write_bytes(plain_pdf)
    document = load_document(path, counter=word_counter())
    assert document.name == "on-disk.pdf" and len(document.pages) == 3


def test_missing_path_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="missing.pdf"):
        load_document(tmp_path / "missing.pdf")


def test_encrypted_pdf_needs_the_right_password(encrypted_pdf: bytes) -> None:
    with pytest.raises(PasswordRequired, match="locked.pdf"):
        load_document(encrypted_pdf, filename="locked.pdf")
    with pytest.raises(WrongPassword, match="locked.pdf"):
        load_document(encrypted_pdf, filename="locked.pdf", password="nope")
    document = load_document(encrypted_pdf, filename="locked.pdf", password="pw", counter=word_counter())
    assert [p.text for p in document.pages] == ["Secret first page.", "Secret second page."]
    assert document.password == "pw"


def test_encrypted_pdf_renders_with_its_password(encrypted_pdf: bytes) -> None:
    document = load_document(encrypted_pdf, filename="locked.pdf", password="pw", counter=word_counter())
    rendered = render_page(document, 2, marks=marks_for(document, 2, "Secret second"))
    assert rendered.png.startswith(b"\x89PNG") and rendered.marked == 1


def test_blank_page_among_text_pages_loads_with_a_warning_naming_it() -> None:
    data = make_pdf(["Page one has text.", "", "Page three has text.", "Page four too."])
    document = load_document(data, filename="gappy.pdf", counter=word_counter())
    assert len(document.pages) == 4
    assert document.empty_pages == [2]
    assert not document.page(2).has_text and document.page(2).tokens == 0
    (warning,) = [w for w in document.warnings if "no text" in w]
    assert "gappy.pdf" in warning and "2" in warning


def test_all_blank_pdf_is_no_text_error() -> None:
    with pytest.raises(NoTextError, match="scan.pdf"):
        load_document(make_pdf(["", "", ""]), filename="scan.pdf")


def test_corrupt_pdf_fails_with_the_file_name_or_loads_repaired() -> None:
    try:
        document = load_document(b"%PDF-1.7 garbage", filename="broken.pdf")
    except CorruptDocument as exc:
        assert "broken.pdf" in str(exc) and exc.filename == "broken.pdf"
    except DocumentError as exc:  # e.g. repaired into nothing readable
        assert "broken.pdf" in str(exc)
    else:
        assert any("broken.pdf" in w for w in document.warnings)


def test_truncated_pdf_names_the_file(plain_pdf: bytes) -> None:
    try:
        document = load_document(
            plain_pdf[: len(plain_pdf) // 2], filename="half.pdf", counter=word_counter()
        )
    except DocumentError as exc:
        assert "half.pdf" in str(exc)
    else:
        assert document.pages  # MuPDF repaired what it could


@pytest.mark.parametrize("data", [b"", b"   \n\t  "])
def test_empty_bytes_are_empty_document(data: bytes) -> None:
    with pytest.raises(EmptyDocument, match="nothing.txt"):
        load_document(data, filename="nothing.txt")


@pytest.mark.parametrize(
    ("data", "filename"),
    [(b"some text", "notes.xyz"), (bytes(range(256)) * 4, "blob.bin"), (b"\x00\x01\x02garbage", "noext")],
)
def test_unknown_types_are_unsupported(data: bytes, filename: str) -> None:
    with pytest.raises(UnsupportedType, match=filename):
        load_document(data, filename=filename)


def test_too_large_by_bytes_and_by_pages(plain_pdf: bytes) -> None:
    with pytest.raises(DocumentTooLarge, match="big.txt"):
        load_document(b"word " * 1_000, filename="big.txt", max_bytes=100)
    with pytest.raises(DocumentTooLarge, match="three.pdf"):
        load_document(plain_pdf, filename="three.pdf", max_pages=2)
    with pytest.raises(DocumentTooLarge):
        load_document("\f".join(["page"] * 5).encode(), filename="pages.txt", max_pages=4)


def test_too_large_file_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    path.write_bytes(b"x " * 5_000)
    with pytest.raises(DocumentTooLarge, match="huge.txt"):
        load_document(path, max_bytes=1_000)


def marks_for(document: Document, number: int, quote: str) -> tuple[Box, ...]:
    """The boxes of a quote placed on a page (none when it is not there)."""
    placed = place_quote(quote, page_words(document, number))
    return placed.boxes if placed else ()


def test_render_page_returns_png_and_marks_a_placed_quote(plain_pdf: bytes) -> None:
    document = load_document(plain_pdf, filename="contract.pdf", counter=word_counter())
    marks = marks_for(document, 2, "4.2 million euros")
    rendered = render_page(document, 2, marks=marks, frame=(0.1, 0.6, 0.2))
    assert rendered.png.startswith(b"\x89PNG") and rendered.width > 0 and rendered.height > 0
    assert rendered.marked == len(marks) == 1 and rendered.png != render_page(document, 2).png
    assert marks_for(document, 1, "4.2 million euros") == ()
    assert render_page(document, 3).marked == 0


def test_page_words_come_in_the_order_of_the_page_text_with_their_boxes(plain_pdf: bytes) -> None:
    document = load_document(plain_pdf, filename="contract.pdf", counter=word_counter())
    words = page_words(document, 2)
    assert " ".join(w.text for w in words) == " ".join(document.page(2).text.split())
    assert all(w.box[0] < w.box[2] and w.box[1] < w.box[3] for w in words)
    with pytest.raises(ConfigError):
        page_words(document, 9)


def test_render_page_of_a_text_document_draws_its_text() -> None:
    document = load_document(f"Intro.\f{FEE}".encode(), filename="notes.txt", counter=word_counter())
    assert document.pdf_bytes is None
    marks = marks_for(document, 2, "termination fee")
    rendered = render_page(document, 2, marks=marks)
    assert rendered.png.startswith(b"\x89PNG") and rendered.marked == 1


def test_a_text_page_is_typeset_with_a_footer_naming_its_own_page(monkeypatch: pytest.MonkeyPatch) -> None:
    # Was: every page of a text document said "page 1" at its foot.
    document = load_document(b"Same words.\fSame words.\fOther.", filename="n.txt", counter=word_counter())
    footers: list[str] = []
    original = documents._add_text_page

    def spy(doc: Any, text: str, footer: str) -> Any:
        footers.append(footer)
        return original(doc, text, footer)

    monkeypatch.setattr(documents, "_add_text_page", spy)
    first, second = render_page(document, 1), render_page(document, 2)
    assert footers == ["n.txt — page 1 of 3", "n.txt — page 2 of 3"]
    assert first.png != second.png  # same text, different footers


def test_a_pdf_is_opened_once_for_many_page_turns_and_left_as_it_was(
    plain_pdf: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = load_document(plain_pdf, filename="turns.pdf", counter=word_counter())
    plain = [render_page(document, n).png for n in (1, 2, 3)]
    opened: list[str] = []
    original = documents._open_pdf

    def counting(data: bytes, filename: str, password: str | None) -> Any:
        opened.append(filename)
        return original(data, filename, password)

    monkeypatch.setattr(documents, "_open_pdf", counting)
    documents._OPEN_PDFS.clear()
    marks = marks_for(document, 2, "4.2 million euros")
    marked = render_page(document, 2, marks=marks, frame=(0.9, 0.1, 0.1))
    assert marked.marked and marked.png != plain[1]
    # The highlight and frame were for that picture only: the pages render as before.
    assert [render_page(document, n).png for n in (1, 2, 3)] == plain
    assert render_page(document, 2, marks=marks, frame=(0.9, 0.1, 0.1)).png == marked.png
    assert opened == ["turns.pdf"]


def test_pages_render_the_same_from_many_threads(plain_pdf: bytes) -> None:
    document = load_document(plain_pdf, filename="threads.pdf", counter=word_counter())
    marks = marks_for(document, 2, "4.2 million euros")
    jobs = [(n, marks if n == 2 else (), (0.1, 0.6, 0.2) if n % 2 else None) for n in (1, 2, 3)] * 4
    serial = [render_page(document, n, marks=m, frame=f).png for n, m, f in jobs]
    with ThreadPoolExecutor(max_workers=6) as pool:
        parallel = list(
            pool.map(lambda job: render_page(document, job[0], marks=job[1], frame=job[2]).png, jobs)
        )
    assert parallel == serial


def test_pdf_from_texts_round_trips_through_the_loader() -> None:
    texts = ["Alpha page.", FEE, "Omega page."]
    document = load_document(
        pdf_from_texts(texts, title="Generated"), filename="gen.pdf", counter=word_counter()
    )
    assert len(document.pages) == 3
    assert "4.2 million euros" in document.page(2).text
    assert "Generated" in document.page(1).text  # the footer


# ---- Text formats ---------------------------------------------------------------------------


def assert_blocks_at_paragraph_breaks(pages: Sequence[str], paras: Sequence[str]) -> None:
    """Every page is whole paragraphs, in order, of at most WORDS_PER_BLOCK words."""
    rebuilt = [para for page in pages for para in page.split("\n\n")]
    assert rebuilt == list(paras)
    for page in pages:
        assert len(page.split()) <= WORDS_PER_BLOCK
    # Blocks are full: adding the next paragraph would have passed the limit.
    sizes = [len(p.split()) for p in pages]
    first_words = [len(page.split("\n\n")[0].split()) for page in pages]
    for size, nxt in zip(sizes, first_words[1:]):
        assert size + nxt > WORDS_PER_BLOCK


def test_txt_is_cut_into_blocks_of_about_450_words_at_paragraph_breaks() -> None:
    paras = paragraphs(30, 70)
    document = load_document("\n\n".join(paras).encode(), filename="notes.txt", counter=word_counter())
    assert document.kind == "txt"
    assert len(document.pages) >= 4
    assert_blocks_at_paragraph_breaks([p.text for p in document.pages], paras)
    assert all(p.source_page is None for p in document.pages)


def test_markdown_loads_like_text() -> None:
    paras = ["# Heading", *paragraphs(12, 90)]
    document = load_document("\n\n".join(paras).encode(), filename="README.md", counter=word_counter())
    assert document.kind == "md"
    assert_blocks_at_paragraph_breaks([p.text for p in document.pages], paras)


def test_html_drops_scripts_styles_and_head() -> None:
    paras = paragraphs(12, 80)
    html = (
        "<!doctype html><html><head><title>Head title</title><style>body { color: red }</style>"
        "<script>var secretToken = 1;</script></head><body>"
        + "".join(f"<p>{p}</p>" for p in paras)
        + "<script>alert('x')</script><noscript>enable javascript</noscript>"
        + "<p>Fish &amp; chips &lt;3</p></body></html>"
    )
    document = load_document(html.encode(), filename="page.html", counter=word_counter())
    text = "\n".join(p.text for p in document.pages)
    assert document.kind == "html"
    for hidden in ("secretToken", "color", "alert", "Head title", "enable javascript"):
        assert hidden not in text
    assert "Fish & chips <3" in text
    assert_blocks_at_paragraph_breaks([p.text for p in document.pages], [*paras, "Fish & chips <3"])


def test_html_is_detected_by_content_without_an_extension() -> None:
    assert detect_kind("upload", b"<!DOCTYPE html><html><body>x</body></html>") == "html"
    assert detect_kind("upload", b"%PDF-1.7\n...") == "pdf"
    assert detect_kind("report.PDF.txt", b"plain") == "txt"


def test_html_without_a_closing_head_tag_keeps_its_body() -> None:
    # "</head>" is optional in HTML; the body's text must not be swallowed with the head.
    html = (
        b"<html><head><title>T</title><style>p {}</style><body><p>The fee is 4.2 million.</p></body></html>"
    )
    document = load_document(html, filename="sloppy.html", counter=word_counter())
    assert [p.text for p in document.pages] == ["The fee is 4.2 million."]


def test_a_text_file_that_mentions_the_pdf_header_is_text() -> None:
    data = b"Notes on formats.\n\nA PDF file begins with %PDF-1.7 and ends with %%EOF."
    document = load_document(data, filename="notes.txt", counter=word_counter())
    assert document.kind == "txt" and "%PDF-1.7" in document.page(1).text
    # Without a text extension, a header after some junk still means a PDF.
    assert detect_kind("upload", b"junk line\n%PDF-1.7\n") == "pdf"
    assert detect_kind("scan.txt", b"%PDF-1.7\n") == "pdf"  # content first


def test_docx_paragraphs_and_tables_load() -> None:
    import docx

    paras = paragraphs(10, 100)
    word = docx.Document()
    for para in paras:
        word.add_paragraph(para)
    table = word.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Fee", "4.2 million euros"
    table.cell(1, 0).text, table.cell(1, 1).text = "Term", "5 years"
    buffer = io.BytesIO()
    word.save(buffer)
    document = load_document(buffer.getvalue(), filename="contract.docx", counter=word_counter())
    assert document.kind == "docx"
    texts = [p.text for p in document.pages]
    assert "Fee | 4.2 million euros" in texts[-1] and "Term | 5 years" in texts[-1]
    assert_blocks_at_paragraph_breaks(texts, [*paras, "Fee | 4.2 million euros", "Term | 5 years"])


def test_corrupt_docx_names_the_file() -> None:
    with pytest.raises(CorruptDocument, match="bad.docx"):
        load_document(b"PK\x03\x04 this is not a zip archive at all", filename="bad.docx")


def test_form_feed_is_a_page_break() -> None:
    document = load_document(
        b"page one\fpage two\n\nstill two\fpage three", filename="ff.txt", counter=word_counter()
    )
    assert [p.text for p in document.pages] == ["page one", "page two\n\nstill two", "page three"]


def test_an_oversized_paragraph_is_cut_between_words() -> None:
    words = [f"w{i}" for i in range(1_000)]
    blocks = split_blocks(" ".join(words))
    assert [len(b.split()) for b in blocks] == [450, 450, 100]
    assert " ".join(blocks).split() == words


def test_text_decodings() -> None:
    assert load_document("café".encode("utf-16"), filename="u16.txt").page(1).text == "café"
    assert load_document("café".encode("cp1252"), filename="latin.txt").page(1).text == "café"
    assert load_document(b"\xef\xbb\xbfbom text", filename="bom.txt").page(1).text == "bom text"


def test_special_token_text_counts_without_error(counter) -> None:  # type: ignore[no-untyped-def]
    text = "Before <|endoftext|> and <|im_start|> after."
    document = load_document(text.encode(), filename="tokens.txt", counter=counter)
    assert document.page(1).text == text
    assert document.page(1).tokens == counter.count(text) > 0


def test_document_from_texts_numbers_pages_and_counts() -> None:
    document = document_from_texts("gen", ["one two", "three"], counter=word_counter())
    assert [(p.number, p.tokens) for p in document.pages] == [(1, 2), (2, 1)]
    assert document.tokenizer and document.approximate_tokens
    other = document_from_texts("gen", ["one two", "three!"], counter=word_counter())
    assert other.sha256 != document.sha256


# ---- Hostile sizes: linear loading, early refusal, DOCX zip bombs (issue 10) ----------------


def _old_split_blocks(text: str, words_per_block: int) -> list[str]:
    """The cutting rule as it was specified before it was made linear: the oracle."""
    blocks: list[str] = []
    for section in text.replace("\r\n", "\n").split("\f"):
        current: list[str] = []
        count = 0
        for paragraph in filter(None, (_clean(p) for p in re.split(r"\n\s*\n", section))):
            words = paragraph.split()
            while len(words) > words_per_block:
                if current:
                    blocks.append("\n\n".join(current))
                    current, count = [], 0
                blocks.append(" ".join(words[:words_per_block]))
                words = words[words_per_block:]
                paragraph = " ".join(words)
            if current and count + len(words) > words_per_block:
                blocks.append("\n\n".join(current))
                current, count = [], 0
            if words:
                current.append(paragraph)
                count += len(words)
        if current:
            blocks.append("\n\n".join(current))
    return blocks


_TEXTISH = st.text(alphabet=st.sampled_from(list("ab c\n\n\r\f\t\x00é\u00a0")), max_size=400)


@given(_TEXTISH, st.integers(min_value=1, max_value=9))
def test_split_blocks_cuts_as_it_always_did(text: str, words_per_block: int) -> None:
    # Line endings are made one kind first (the old cutter read "\r\r\n" as one line break here
    # and as two there); on that text the cut is the old one.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    assert split_blocks(text, words_per_block, max_chars=10**9) == _old_split_blocks(text, words_per_block)


@given(_TEXTISH, st.integers(min_value=1, max_value=9), st.integers(min_value=1, max_value=30))
def test_split_blocks_respects_both_limits_and_keeps_every_word(
    text: str, words_per_block: int, max_chars: int
) -> None:
    blocks = split_blocks(text, words_per_block, max_chars=max_chars)
    assert all(len(b.split()) <= words_per_block and 0 < len(b) <= max_chars for b in blocks)
    pieces = [
        w[i : i + max_chars] for w in text.replace("\x00", "").split() for i in range(0, len(w), max_chars)
    ]
    assert "".join(" ".join(blocks).split()) == "".join(pieces)


@given(_TEXTISH, st.integers(min_value=1, max_value=9), st.integers(min_value=1, max_value=30))
def test_a_huge_paragraph_is_cut_the_same_whatever_the_window(
    text: str, words_per_block: int, max_chars: int
) -> None:
    expected = split_blocks(text, words_per_block, max_chars=max_chars)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(documents, "_WINDOW_CHARS", 3)
        assert split_blocks(text, words_per_block, max_chars=max_chars) == expected


def test_text_without_spaces_still_makes_pages_of_a_sane_size() -> None:
    blocks = split_blocks("x" * 50_000 + " tail")
    assert [len(b) for b in blocks] == [MAX_BLOCK_CHARS, MAX_BLOCK_CHARS, 10_000 + len(" tail")]


def test_split_blocks_stops_once_past_the_block_limit() -> None:
    endless = "word " * 2_000_000  # 10 MB of one paragraph: 4,445 blocks
    assert len(split_blocks(endless, max_blocks=3)) == 4
    assert len(split_blocks("one\fpage", max_blocks=3)) == 2


def test_a_text_far_over_the_page_limit_is_refused_early() -> None:
    """20 MB of text without a blank line: refused at once, not cut up first (which was
    quadratic, about 12 minutes at 20 MB). The thread bound is a hang guard, not a timing."""
    data = b"lorem ipsum dolor sit amet\n" * 750_000
    outcome: list[BaseException] = []

    def load() -> None:
        try:
            load_document(data, filename="endless.txt", counter=word_counter())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive(), "loading did not finish"
    assert len(outcome) == 1 and isinstance(outcome[0], DocumentTooLarge)
    message = str(outcome[0])
    assert "endless.txt" in message and "5,000 pages" in message and "split it" in message


def test_the_size_limit_reads_as_the_readme_and_the_app_say(tmp_path: Path) -> None:
    """README and the app say 200 MB (Streamlit's MB of 2**20 bytes); so must the refusal."""
    path = tmp_path / "big.txt"
    with path.open("wb") as out:  # sparse: no 200 MB written
        out.truncate(MAX_BYTES + 5 * 1024 * 1024)
    with pytest.raises(DocumentTooLarge) as info:
        load_document(path)
    assert str(info.value) == "big.txt: the file is 205.0 MB; the limit is 200 MB"


def _docx_bomb(xml_bytes: int) -> bytes:
    """A .docx whose word/document.xml unpacks to about ``xml_bytes``; small on disk."""
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
    )
    para = b"<w:p><w:r><w:t>" + b"bomb " * 200 + b"</w:t></w:r></w:p>"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", b"<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as xml:
            xml.write(head)
            block = para * 1_000
            for _ in range(xml_bytes // len(block)):
                xml.write(block)
            xml.write(b"</w:body></w:document>")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def docx_bomb() -> bytes:
    return _docx_bomb(100 * 1024 * 1024)


def test_a_docx_zip_bomb_is_refused_before_it_is_parsed(
    docx_bomb: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docx

    assert len(docx_bomb) < 1024 * 1024  # under a megabyte on disk
    monkeypatch.setattr(docx, "Document", lambda *a, **k: pytest.fail("python-docx parsed the bomb"))
    with pytest.raises(DocumentTooLarge, match="bomb.docx") as info:
        load_document(docx_bomb, filename="bomb.docx")
    message = str(info.value)
    assert "word/document.xml" in message and "zip bomb" in message and "the limit is 64 MB" in message


def test_a_docx_that_unpacks_past_the_size_limit_is_refused(docx_bomb: bytes) -> None:
    with pytest.raises(
        DocumentTooLarge, match=r"bomb.docx: unpacked, the DOCX is \d+\.\d MB; the limit is 50 MB"
    ):
        load_document(docx_bomb, filename="bomb.docx", max_bytes=50 * 1024 * 1024)


# ---- What each bad file says (issue 8) ----------------------------------------------------


def test_a_text_file_named_pdf_says_to_rename_it() -> None:
    with pytest.raises(CorruptDocument) as info:
        load_document(b"Minutes of the meeting.\nThe fee is 4.2 million euros.\n", filename="minutes.pdf")
    message = str(info.value)
    assert message.startswith("minutes.pdf: this is plain text, not a PDF")
    assert "Rename it to .txt" in message and "Failed to open" not in message


def test_an_image_named_pdf_says_what_it_is() -> None:
    with pytest.raises(CorruptDocument, match=r"scan.pdf: this is a PNG image, not a PDF"):
        load_document(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, filename="scan.pdf")


@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_a_pdf_cut_short_says_it_looks_damaged(plain_pdf: bytes, share: float) -> None:
    pdf = make_pdf([f"Page {i}. {FEE}" for i in range(40)])
    cut = pdf[: int(len(pdf) * share)]
    try:
        document = load_document(cut, filename="cut.pdf", counter=word_counter())
    except DocumentError as exc:
        message = str(exc)
        assert isinstance(exc, CorruptDocument), message
        assert "looks damaged" in message and "cut short" in message and "fresh copy" in message
        assert "no pages" not in message and "scanned" not in message and "Failed to open" not in message
    else:  # MuPDF recovered some pages: the damage is said
        assert any("damaged" in w for w in document.warnings)


def test_a_damaged_pdf_whose_pages_lost_their_text_is_not_called_scanned() -> None:
    pdf = make_pdf([f"Page {i}. {FEE}" for i in range(6)], garbage=0, deflate=False)
    # Keep the page objects, lose the content streams and the trailer: pages without text.
    cut = pdf[: pdf.find(b"stream")]
    with pytest.raises(CorruptDocument, match=r"looks damaged") as info:
        load_document(cut + b"\n", filename="half.pdf", counter=word_counter())
    assert "scanned" not in str(info.value)


def test_a_binary_file_named_txt_is_refused() -> None:
    noise = random.Random(5).randbytes(50_000)
    with pytest.raises(UnsupportedType, match=r"notes.txt: this does not look like text"):
        load_document(noise, filename="notes.txt")
    # Ordinary text with a few odd characters still loads.
    text = ("Fee: 4.2 million euros.\x07 " * 200).encode()
    assert load_document(text, filename="ok.txt", counter=word_counter()).pages


def test_the_encrypted_pdf_message_is_whole_sentences(encrypted_pdf: bytes) -> None:
    with pytest.raises(PasswordRequired) as info:
        load_document(encrypted_pdf, filename="secret.pdf")
    message = str(info.value)
    assert message.endswith(".")
    assert f"{message} It is used for this session only.".count(". ") >= 1  # as the app shows it


def test_a_scanned_pdf_says_how_to_get_ocr() -> None:
    with pytest.raises(NoTextError) as info:
        load_document(make_pdf(["", ""]), filename="scan.pdf")
    message = str(info.value)
    assert "OCR is off" in message and "--ocr" in message and "tesseract" in message.lower()


def test_ocr_without_tesseract_says_so_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents.shutil, "which", lambda name: None)
    monkeypatch.delenv("TESSDATA_PREFIX", raising=False)
    with pytest.raises(NoTextError) as info:
        load_document(make_pdf(["", ""]), filename="scan.pdf", ocr=True)
    message = str(info.value)
    assert "Tesseract, which is not installed" in message and "apt-get install tesseract-ocr" in message


@pytest.mark.skipif(documents.ocr_available() is not None, reason="Tesseract is not installed")
def test_ocr_reads_a_page_without_a_text_layer() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 144), "The termination fee is 4.2 million euros.", fontsize=28)
    pix = page.get_pixmap(dpi=150)  # the page as an image only: no text layer
    scan = pymupdf.open()
    scan.new_page().insert_image(scan[0].rect, pixmap=pix)
    data = scan.tobytes()
    document = load_document(data, filename="scan.pdf", counter=word_counter(), ocr=True)
    assert "4.2 million euros" in document.page(1).text
    assert any("read by OCR" in w for w in document.warnings)


def test_html_far_over_the_page_limit_is_refused_before_it_is_all_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed: list[int] = []
    feed = documents._TextFromHTML.feed

    def counting_feed(self: documents._TextFromHTML, data: str) -> None:
        fed.append(len(data))
        feed(self, data)

    monkeypatch.setattr(documents._TextFromHTML, "feed", counting_feed)
    html = "<html><body>" + "<p>one two three four five six seven eight nine ten</p>" * 200_000
    with pytest.raises(DocumentTooLarge, match=r"page.html: .*more than 20 pages"):
        load_document(html.encode(), filename="page.html", counter=word_counter(), max_pages=20)
    assert sum(fed) < len(html) / 2


def test_ocr_of_too_many_pages_is_refused_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "ocr_available", lambda: None)
    monkeypatch.setattr(documents, "MAX_OCR_PAGES", 2)
    monkeypatch.setattr(documents, "_ocr_text", lambda page: pytest.fail("OCR started"))
    with pytest.raises(
        DocumentTooLarge, match=r"scan.pdf: 3 pages have no text layer, and OCR reads at most 2"
    ):
        load_document(make_pdf(["", "", ""]), filename="scan.pdf", ocr=True)


def test_printed_page_labels_travel_with_the_pages_and_the_cited_page() -> None:
    """A lawyer cites the printed page: a PDF's page labels (i, ii, 1, 2…) are kept per page and
    on the outcome that cites one."""
    import pymupdf

    from rr_core.llm import OfflineEngine
    from rr_core.methods import get_method
    from rr_core.runs import run_plans
    from rr_core.settings import RunSettings

    doc = pymupdf.open()
    texts = ["Preface.", "Contents.", "The deposit is 900 euros.", "Other terms.", "More terms.", "End."]
    for text in texts:
        doc.new_page().insert_text((72, 72), text)
    doc.set_page_labels(
        [
            {"startpage": 0, "prefix": "", "style": "r", "firstpagenum": 1},
            {"startpage": 2, "prefix": "", "style": "D", "firstpagenum": 1},
        ]
    )
    document = load_document(doc.tobytes(), filename="labelled.pdf")
    assert [p.label for p in document.pages] == ["i", "ii", "1", "2", "3", "4"]
    plan = get_method("baseline").plan(
        document, "What is the deposit?", RunSettings(method="baseline"), word_counter()
    )
    (trace,) = run_plans(document, [plan], OfflineEngine())
    assert trace.page == 3 and trace.outcome.page_label == "1"


def _clean_line_by_line(text: str) -> str:
    """What ``_clean`` means: each line's runs of spaces, tabs and no-break spaces squeezed to
    one space, each line stripped, the whole stripped (the one-pass version must agree)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [re.sub(r"[ \t\u00a0]+", " ", line).strip() for line in text.split("\n")]
    return "\n".join(lines).strip()


@given(st.text(alphabet=" \t\u00a0\n\r\x00ab.\u2003\f", max_size=40))
def test_clean_squeezes_spaces_line_by_line(text: str) -> None:
    assert _clean(text) == _clean_line_by_line(text)
    assert _clean("a  b\t\u00a0c \n  d ") == "a b c\nd"


# ---- a text layer that reads as noise ------------------------------------------------------


def _noise(tokens: int, seed: int = 7) -> str:
    """``tokens`` tokens of random letters (both cases), digits and signs: a failed OCR layer."""
    import random

    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789#$%&@!~^|;:,."
    return " ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(tokens))


def test_a_noise_text_layer_gets_a_warning_that_suggests_ocr() -> None:
    from rr_core.documents import pdf_from_texts

    clean = "The tenant pays a deposit of nine hundred euros on signing, returned within thirty days. " * 6
    pdf = pdf_from_texts([clean, _noise(345), clean])
    document = load_document(pdf, filename="garbled.pdf")
    (warning,) = [w for w in document.warnings if "noise" in w]
    assert "page 2 " in warning and "OCR" in warning
    assert not [w for w in load_document(pdf_from_texts([clean] * 3), filename="clean.pdf").warnings]


def test_short_or_numeric_pages_are_not_called_noise() -> None:
    from rr_core.documents import reads_as_noise

    assert not reads_as_noise(_noise(20))  # too few tokens to judge
    table = " ".join(f"{n:,}.{n % 100:02d} ({n % 7}%) $1,{n:03d} 10mg 3rd" for n in range(1, 60))
    assert not reads_as_noise(table)
    assert not reads_as_noise("대한민국 헌법 제1조 대한민국은 민주공화국이다 2024년 " * 10)
    assert reads_as_noise(_noise(345))


def test_a_token_is_judged_once_and_only_word_length_tokens_are_remembered() -> None:
    from rr_core.documents import _KNOWN_TOKEN_LEN, _word_shaped_known, reads_as_noise

    page = "The tenant pays a deposit of nine hundred euros on signing, returned within thirty days. " * 6
    assert not reads_as_noise(page)
    before = _word_shaped_known.cache_info()
    assert not reads_as_noise(page)  # the same words on another page: none judged again
    after = _word_shaped_known.cache_info()
    assert after.misses == before.misses and after.hits > before.hits
    long_token = "x" * (_KNOWN_TOKEN_LEN + 1)  # a run of garbage is judged, never kept
    assert reads_as_noise(" ".join(f"{long_token}{i}" for i in range(60)))
    assert _word_shaped_known.cache_info().currsize == after.currsize


def test_no_real_document_reads_as_noise(shared_documents: Path) -> None:
    pdfs = sorted(shared_documents.glob("*.pdf"))
    read = 0
    for pdf in pdfs:
        try:
            document = load_document(pdf.read_bytes(), filename=pdf.name)
        except DocumentError:
            continue  # encrypted, scanned: not a text layer to judge
        read += 1
        assert not [w for w in document.warnings if "noise" in w], pdf.name
    assert read >= 5


def test_a_document_read_with_ocr_is_kept_apart_from_its_reading_without(tmp_path: Path) -> None:
    """The Ask screen keeps the reading it ran on: one loaded with OCR on goes under the OCR'd
    reading's key, so it never replaces (nor is replaced by) the reading without OCR."""
    from rr_core.review.corpus import reading_key
    from rr_core.store import SQLiteStore
    from rr_core.workbench import keep_document

    data = make_pdf(["The fee is 4.2 million.", "Signed in Oslo."])
    plain = load_document(data, filename="deal.pdf", counter=word_counter())
    with_ocr = load_document(data, filename="deal.pdf", counter=word_counter(), ocr=True)
    assert not plain.ocr and with_ocr.ocr and plain.sha256 == with_ocr.sha256
    store = SQLiteStore(tmp_path / "runs.sqlite3")
    keep_document(store, plain)
    keep_document(store, with_ocr)
    keys = {reading_key(plain.tokenizer, False), reading_key(plain.tokenizer, True)}
    assert len(keys) == 2 and all(store.get_reading(plain.sha256, key) for key in keys)
