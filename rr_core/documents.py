"""Loading documents into numbered pages. The only module that knows file formats.

pymupdf is imported lazily (it costs over a second) and only here.
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rr_core.errors import (
    ConfigError,
    CorruptDocument,
    DocumentTooLarge,
    EmptyDocument,
    NoTextError,
    PasswordRequired,
    RRError,
    UnsupportedType,
    WrongPassword,
)
from rr_core.tokens import TokenCounter, counter_for_model

MAX_BYTES = 200 * 1024 * 1024
MAX_PAGES = 5_000
# Inputs without pages are cut into blocks of about this many words, at paragraph breaks.
WORDS_PER_BLOCK = 450

SUPPORTED = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
}


@dataclass(frozen=True, slots=True)
class Page:
    """One numbered page: the citation unit everywhere."""

    number: int
    text: str
    tokens: int
    source_page: int | None = None  # 1-based page of the source PDF, when there is one

    @property
    def chars(self) -> int:
        """Length of the page text in characters."""
        return len(self.text)

    @property
    def has_text(self) -> bool:
        """Whether the page has any extractable text."""
        return bool(self.text.strip())


@dataclass(frozen=True, slots=True)
class Document:
    """A loaded document: its pages, how they were counted, and what went wrong on the way."""

    name: str
    kind: str
    pages: tuple[Page, ...]
    tokenizer: str
    approximate_tokens: bool
    sha256: str
    warnings: tuple[str, ...] = ()
    # The PDF behind the pages (the upload, or one generated for a sample), for rendering.
    pdf_bytes: bytes | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def total_tokens(self) -> int:
        """Sum of the page token counts."""
        return sum(p.tokens for p in self.pages)

    @property
    def page_tokens(self) -> list[int]:
        """Token count of every page, page 1 first."""
        return [p.tokens for p in self.pages]

    def page(self, number: int) -> Page:
        """The page with this 1-based number."""
        return self.pages[number - 1]

    @property
    def empty_pages(self) -> list[int]:
        """Numbers of the pages without text."""
        return [p.number for p in self.pages if not p.has_text]


def detect_kind(filename: str, data: bytes) -> str:
    """The document kind from content first, then the file name's extension."""
    head = data[:1024].lstrip()
    suffix = Path(filename).suffix.lower()
    # A PDF header after some junk still makes a PDF, unless the name says text: a .txt or
    # .md that merely mentions "%PDF-1.7" is text.
    sniff_anywhere = SUPPORTED.get(suffix, "pdf") == "pdf"
    if head.startswith(b"%PDF") or (sniff_anywhere and data[:1024].find(b"%PDF-") >= 0):
        return "pdf"
    if data[:2] == b"PK" and (suffix == ".docx" or _zip_has(data, "word/document.xml")):
        return "docx"
    if suffix in SUPPORTED:
        return SUPPORTED[suffix]
    lowered = head[:200].lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "html"
    names = ", ".join(sorted({k for k in SUPPORTED}))
    raise UnsupportedType(filename, f"unsupported file type; load one of: {names}")


def _zip_has(data: bytes, member: str) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return member in zf.namelist()
    except zipfile.BadZipFile:
        return False


def load_document(
    source: bytes | str | Path,
    *,
    filename: str | None = None,
    password: str | None = None,
    counter: TokenCounter | None = None,
    max_bytes: int = MAX_BYTES,
    max_pages: int = MAX_PAGES,
) -> Document:
    """Load a PDF, DOCX, TXT, Markdown or HTML file (bytes or path) into numbered pages."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        filename = filename or path.name
        if not path.is_file():
            raise EmptyDocument(filename, f"no such file: {path}")
        if path.stat().st_size > max_bytes:
            raise DocumentTooLarge(filename, _too_large(path.stat().st_size, max_bytes))
        data = path.read_bytes()
    else:
        data = bytes(source)
        filename = filename or "document"
    if len(data) > max_bytes:
        raise DocumentTooLarge(filename, _too_large(len(data), max_bytes))
    if not data.strip():
        raise EmptyDocument(filename, "the file is empty")
    counter = counter or counter_for_model()
    kind = detect_kind(filename, data)
    sha = hashlib.sha256(data).hexdigest()
    if kind == "pdf":
        texts, warnings = _pdf_texts(data, filename, password, max_pages)
        return document_from_texts(
            filename, texts, counter=counter, kind=kind, sha256=sha, warnings=warnings,
            pdf_bytes=data, password=password,
        )  # fmt: skip
    texts = split_blocks(_plain_text(kind, data, filename))
    if not texts:
        raise EmptyDocument(filename, "the file has no text")
    if len(texts) > max_pages:
        raise DocumentTooLarge(filename, f"{len(texts)} pages; the limit is {max_pages}")
    return document_from_texts(filename, texts, counter=counter, kind=kind, sha256=sha)


def document_from_texts(
    name: str,
    texts: Sequence[str],
    *,
    counter: TokenCounter | None = None,
    kind: str = "txt",
    sha256: str | None = None,
    warnings: Sequence[str] = (),
    pdf_bytes: bytes | None = None,
    password: str | None = None,
) -> Document:
    """A document whose pages are the given texts, counted once.

    Loading ends here; samples, evaluation haystacks and tests start here. A ``pdf`` kind's
    page n is page n of ``pdf_bytes`` (when given) for rendering.
    """
    counter = counter or counter_for_model()
    counts = counter.count_many(list(texts))
    pages = tuple(
        Page(number=i + 1, text=t, tokens=n, source_page=i + 1 if kind == "pdf" else None)
        for i, (t, n) in enumerate(zip(texts, counts, strict=True))
    )
    return Document(
        name=name,
        kind=kind,
        pages=pages,
        tokenizer=counter.label,
        approximate_tokens=counter.approximate,
        sha256=sha256 or hashlib.sha256("\f".join(texts).encode()).hexdigest(),
        warnings=(*warnings, counter.note) if counter.note else tuple(warnings),
        pdf_bytes=pdf_bytes,
        password=password,
    )


def _too_large(size: int, limit: int) -> str:
    return f"the file is {size / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB"


# pymupdf 2.0 imports these add-ons whenever they are installed (its layout analyser loads
# onnxruntime: 0.9 s and 56 MiB); nothing here uses them, and text comes out the same.
_PYMUPDF_ADDONS = ("pymupdf.layout", "pymupdf4llm")


def _pymupdf() -> Any:
    if "pymupdf" not in sys.modules:
        placed = [n for n in _PYMUPDF_ADDONS if sys.modules.setdefault(n, None) is None]  # type: ignore[arg-type]
        try:
            import pymupdf
        finally:
            for name in placed:  # importable again for anyone who asks for them by name
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]
    import pymupdf

    return pymupdf


def _open_pdf(data: bytes, filename: str, password: str | None) -> Any:
    pymupdf = _pymupdf()
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - pymupdf raises several types for broken files
        raise CorruptDocument(filename, f"not a readable PDF ({exc})") from exc
    # needs_pass must be read before authenticate (afterwards get_text comes back empty).
    if doc.needs_pass:
        if not password:
            raise PasswordRequired(filename, "the PDF is encrypted: enter its password")
        if not doc.authenticate(password):
            raise WrongPassword(filename, "the password did not open the PDF")
    return doc


def _pdf_texts(
    data: bytes, filename: str, password: str | None, max_pages: int
) -> tuple[list[str], list[str]]:
    doc = _open_pdf(data, filename, password)
    warnings: list[str] = []
    try:
        if doc.page_count == 0:
            raise EmptyDocument(filename, "the PDF has no pages")
        if doc.page_count > max_pages:
            raise DocumentTooLarge(filename, f"{doc.page_count} pages; the limit is {max_pages}")
        texts: list[str] = []
        broken: list[int] = []
        for index in range(doc.page_count):
            try:
                texts.append(_clean(doc[index].get_text()))
            except Exception:  # noqa: BLE001 - one broken page must not lose the others
                broken.append(index + 1)
                texts.append("")
        if getattr(doc, "is_repaired", False):
            warnings.append(f"{filename}: the PDF structure was damaged and has been repaired.")
    finally:
        doc.close()
    if broken:
        warnings.append(f"{filename}: pages {_ranges(broken)} could not be read.")
    empty = [i + 1 for i, t in enumerate(texts) if not t.strip()]
    if len(empty) == len(texts):
        raise NoTextError(
            filename,
            f"none of its {len(texts)} pages has a text layer (a scanned document?); "
            "OCR is not enabled, so there is nothing to ask about",
        )
    if empty:
        warnings.append(f"{filename}: pages {_ranges(empty)} have no text layer (scanned?) and stay empty.")
    return texts, warnings


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` → ``"1–3, 7"``."""
    out: list[str] = []
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}–{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


_SPACES = re.compile(r"[ \t\u00a0]+")


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return "\n".join(lines).strip()


def _plain_text(kind: str, data: bytes, filename: str) -> str:
    if kind == "docx":
        return _docx_text(data, filename)
    text = _decode(data)
    if kind == "html":
        return _html_text(text)
    return text


def _decode(data: bytes) -> str:
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _docx_text(data: bytes, filename: str) -> str:
    import docx  # python-docx

    try:
        document = docx.Document(io.BytesIO(data))
        parts: list[str] = [p.text for p in document.paragraphs]
        for table in document.tables:
            for row in table.rows:
                parts.append(" | ".join(cell.text.strip() for cell in row.cells))
    except Exception as exc:  # noqa: BLE001 - python-docx raises zip, xml, key and index errors
        raise CorruptDocument(filename, f"not a readable DOCX ({type(exc).__name__})") from exc
    return "\n\n".join(parts)


class _TextFromHTML(HTMLParser):
    _SKIP = {"script", "style", "noscript", "template", "head"}
    _BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            # "</head>" is optional in HTML: the body starts the visible text in any case.
            self._skipping = 0
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _html_text(html: str) -> str:
    parser = _TextFromHTML()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def split_blocks(text: str, words_per_block: int = WORDS_PER_BLOCK) -> list[str]:
    """Cut text without pages into blocks of about ``words_per_block`` words.

    Form feeds are hard page breaks; otherwise blocks end at paragraph breaks, and a
    paragraph longer than a block is cut between words.
    """
    blocks: list[str] = []
    for section in text.replace("\r\n", "\n").split("\f"):
        paragraphs = [_clean(p) for p in _PARAGRAPH_BREAK.split(section)]
        current: list[str] = []
        count = 0
        for paragraph in filter(None, paragraphs):
            words = paragraph.split()
            while len(words) > words_per_block:  # an oversized paragraph
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


# ---- Rendering (for the page viewer) -------------------------------------------------


def pdf_from_texts(texts: Sequence[str], *, title: str = "") -> bytes:
    """A simple PDF with one page per text (samples and reflowed documents render from it)."""
    pymupdf = _pymupdf()
    doc = pymupdf.open()
    width, height, margin = 612, 792, 54
    for i, text in enumerate(texts):
        page = doc.new_page(width=width, height=height)
        rect = pymupdf.Rect(margin, margin, width - margin, height - margin - 18)
        for size in (10, 9, 8, 7, 6, 5):
            if page.insert_textbox(rect, text, fontsize=size, fontname="helv") >= 0:
                break
            page.clean_contents()
            doc.delete_page(-1)
            page = doc.new_page(width=width, height=height)
        footer = f"{title} — page {i + 1} of {len(texts)}" if title else f"page {i + 1}"
        page.insert_text((margin, height - margin + 8), footer, fontsize=7, color=(0.4, 0.4, 0.4))
    if title:
        doc.set_metadata({"title": title, "producer": "R&R Studio sample generator"})
    out: bytes = doc.tobytes(garbage=3, deflate=True)
    doc.close()
    return out


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """A page as PNG, and whether the highlight text was found on it."""

    png: bytes
    width: int
    height: int
    highlight_found: bool


def render_page(
    document: Document,
    number: int,
    *,
    zoom: float = 1.5,
    width: int | None = None,
    highlight: str | None = None,
    frame: tuple[float, float, float] | None = None,
) -> RenderedPage:
    """Render one page to PNG (at ``zoom``, or ``width`` pixels wide), optionally
    highlighting a quote and framing the page."""
    if not 1 <= number <= len(document.pages):
        raise ConfigError(f"{document.name} has no page {number} (it has {len(document.pages)}).")
    try:
        return _render(document, number, zoom, width, highlight, frame)
    except RRError:
        raise
    except Exception as exc:  # noqa: BLE001 - a page MuPDF cannot draw must not take the screen down
        raise CorruptDocument(document.name, f"page {number} could not be rendered ({exc})") from exc


def _render(
    document: Document,
    number: int,
    zoom: float,
    width: int | None,
    highlight: str | None,
    frame: tuple[float, float, float] | None,
) -> RenderedPage:
    pymupdf = _pymupdf()
    page_info = document.page(number)
    if document.pdf_bytes is not None and page_info.source_page is not None:
        doc = _open_pdf(document.pdf_bytes, document.name, document.password)
        page = doc[page_info.source_page - 1]
    else:
        doc = pymupdf.open(stream=pdf_from_texts([page_info.text]), filetype="pdf")
        page = doc[0]
    try:
        found = False
        if highlight:
            rects = _find_quote(page, highlight)
            for rect in rects:
                annot = page.add_highlight_annot(rect)
                annot.set_colors(stroke=(1.0, 0.85, 0.1))
                annot.update()
            found = bool(rects)
        if frame is not None:
            shape = page.new_shape()
            shape.draw_rect(page.rect + (2, 2, -2, -2))
            shape.finish(color=frame, width=4)
            shape.commit()
        if width:
            zoom = width / page.rect.width
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), annots=True)
        return RenderedPage(pix.tobytes("png"), pix.width, pix.height, found)
    finally:
        doc.close()


def _find_quote(page: Any, quote: str) -> list[Any]:
    """Rectangles of the quote on the page; falls back to its longest runs of words."""
    quote = " ".join(quote.split())
    hits = page.search_for(quote) if quote else []
    if hits:
        return list(hits)
    # Line breaks or hyphenation split the quote: look for its pieces of six words.
    words = quote.split()
    found: list[Any] = []
    for start in range(0, max(len(words) - 5, 1), 6):
        piece = " ".join(words[start : start + 6])
        if len(piece) >= 12:
            found.extend(page.search_for(piece))
    return found
