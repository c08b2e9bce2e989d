"""Loading documents into numbered pages. The only module that knows file formats.

pymupdf is imported lazily (it costs over a second) and only here.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
import re
import shutil
import sys
import threading
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
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
from rr_core.untrusted import plain_name

_MB = 1024 * 1024
MAX_BYTES = 200 * _MB  # "200 MB", as README, the app and Streamlit's upload limit say
MAX_PAGES = 5_000
# Inputs without pages are cut into blocks of about this many words, at paragraph breaks,
WORDS_PER_BLOCK = 450
# and of at most this many characters (text without spaces still makes sane pages).
MAX_BLOCK_CHARS = 20_000
# A text file in which more than this share of characters are control codes or undecodable
# bytes is not text (a binary file with a text name).
_MAX_BINARY_SHARE = 0.05
# A DOCX is refused before it is unpacked when its XML parts unpack to more than this.
MAX_DOCX_XML_BYTES = 64 * 1024 * 1024
# OCR (opt-in): Tesseract's language and the resolution pages are rendered at for it.
OCR_LANGUAGE = "eng"
OCR_DPI = 300
# At a few seconds a page, more than this many pages to read by OCR would hold the server
# (and everyone else's work) for minutes: such a file is refused.
MAX_OCR_PAGES = 100

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
    label: str = ""  # the printed page label (a PDF's page labels, e.g. "iv" or "12"), when it has one

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
    # Loaded with OCR on (pages without text read by Tesseract): its reading is kept apart from
    # the one without.
    ocr: bool = False

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
    ocr: bool = False,
) -> Document:
    """Load a PDF, DOCX, TXT, Markdown or HTML file (bytes or path) into numbered pages.

    Time and memory are bounded by the file size: text is cut into pages in linear time and
    refused as soon as it passes ``max_pages``; a DOCX is refused before it is unpacked when
    its parts unpack to too much. ``ocr``: read PDF pages without a text layer with
    Tesseract (``ocr_available`` says whether it is installed).
    """
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
    filename = plain_name(filename)
    if len(data) > max_bytes:
        raise DocumentTooLarge(filename, _too_large(len(data), max_bytes))
    if not data.strip():
        raise EmptyDocument(filename, "the file is empty")
    counter = counter or counter_for_model()
    kind = detect_kind(filename, data)
    if kind == "pdf":
        texts, warnings, labels = _pdf_texts(data, filename, password, max_pages, ocr)
        loaded = document_from_texts(
            filename, texts, counter=counter, kind=kind, sha256=hashlib.sha256(data).hexdigest(),
            warnings=warnings, pdf_bytes=data, password=password, labels=labels,
        )  # fmt: skip
        return replace(loaded, ocr=True) if ocr else loaded
    text = _plain_text(kind, data, filename, max_bytes, max_words=max_pages * WORDS_PER_BLOCK)
    texts = split_blocks(text, max_blocks=max_pages)
    if not texts:
        raise EmptyDocument(filename, "the file has no text")
    if len(texts) > max_pages:
        raise DocumentTooLarge(
            filename,
            f"its text makes more than {max_pages:,} pages of about {WORDS_PER_BLOCK} words, and "
            f"the limit is {max_pages:,} pages: split it into smaller files",
        )
    return document_from_texts(
        filename, texts, counter=counter, kind=kind, sha256=hashlib.sha256(data).hexdigest()
    )


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
    labels: Sequence[str] = (),
) -> Document:
    """A document whose pages are the given texts, counted once.

    Loading ends here; samples, evaluation haystacks and tests start here. A ``pdf`` kind's
    page n is page n of ``pdf_bytes`` (when given) for rendering.
    """
    counter = counter or counter_for_model()
    counts = counter.count_many(list(texts))
    pages = tuple(
        Page(
            number=i + 1,
            text=t,
            tokens=n,
            source_page=i + 1 if kind == "pdf" else None,
            label=labels[i] if i < len(labels) else "",
        )
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


def _too_large(size: int, limit: int, what: str = "the file is") -> str:
    # MB as Streamlit's upload limit counts them (2**20 bytes), so the numbers agree.
    return f"{what} {size / _MB:.1f} MB; the limit is {limit / _MB:.0f} MB"


# pymupdf 2.0 imports these add-ons whenever they are installed (its layout analyser loads
# onnxruntime: 0.9 s and 56 MiB); nothing here uses them, and text comes out the same.
_PYMUPDF_ADDONS = ("pymupdf.layout", "pymupdf4llm")


_quietened: list[bool] = []


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

    if not _quietened:
        # MuPDF prints its errors ("MuPDF error: zlib error: ...") on stdout, where the CLI's
        # --json output goes. What it says about a damaged file reaches the user as the
        # document's warnings; anything else pymupdf says goes to the "pymupdf" logger.
        untyped: Any = pymupdf
        untyped.TOOLS.mupdf_display_errors(False)
        untyped.TOOLS.mupdf_display_warnings(False)
        untyped.set_messages(pylogging=True)
        _quietened.append(True)
    return pymupdf


def _open_pdf(data: bytes, filename: str, password: str | None) -> Any:
    pymupdf = _pymupdf()
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # noqa: BLE001 - pymupdf raises several types for broken files
        raise CorruptDocument(filename, _not_a_pdf(data, str(exc))) from exc
    # needs_pass must be read before authenticate (afterwards get_text comes back empty).
    if doc.needs_pass:
        if not password:
            doc.close()
            # A whole sentence: the app adds its own after it.
            raise PasswordRequired(filename, "the PDF is encrypted: enter its password to open it.")
        if not doc.authenticate(password):
            doc.close()
            raise WrongPassword(filename, "the password did not open the PDF. Check it and try again.")
    return doc


# What a file named .pdf may really be, by its first bytes.
_MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"PK\x03\x04", "a ZIP archive (or an Office file)"),
    (b"\xd0\xcf\x11\xe0", "an old Office file (.doc, .xls)"),
    (b"{\\rtf", "an RTF file"),
)


def _not_a_pdf(data: bytes, why: str) -> str:
    """Why MuPDF could not open ``data``, in words that say what to do."""
    if data[:1024].find(b"%PDF-") < 0:
        for magic, what in _MAGIC:
            if data.startswith(magic):
                return f"this is {what}, not a PDF. Convert it to PDF (or save it as DOCX or text) and load that."
        if _looks_like_text(data):
            return (
                "this is plain text, not a PDF (it has no PDF header). Rename it to .txt "
                "(or .md, .html) and load it again."
            )
        return "this is not a PDF (it has no PDF header). Check that it is the file you meant to load."
    return _damaged(data, "it could not be opened")


def _looks_like_text(data: bytes) -> bool:
    return _binary_share(_decode(data[:65536])) <= _MAX_BINARY_SHARE


def _cut_short(data: bytes) -> bool:
    """Whether a PDF lacks the end-of-file marker its last bytes should carry."""
    return data[-2048:].find(b"%%EOF") < 0


def _damaged(data: bytes, what: str) -> str:
    cut = " It seems to be cut short (an incomplete download or copy?)." if _cut_short(data) else ""
    return f"the PDF looks damaged ({what}).{cut} Get a fresh copy of the file and load it again."


def ocr_available() -> str | None:
    """None when OCR can run; otherwise what is missing and how to get it."""
    if shutil.which("tesseract") is None and not os.environ.get("TESSDATA_PREFIX"):
        return (
            "OCR needs Tesseract, which is not installed: install it (on Debian or Ubuntu: "
            "apt-get install tesseract-ocr) and load the file again with OCR on"
        )
    try:
        _pymupdf().get_tessdata()
    except Exception:  # noqa: BLE001 - pymupdf raises RuntimeError, or whatever the probe hit
        return (
            "OCR needs Tesseract's language files, which were not found: install "
            "tesseract-ocr-eng (Debian/Ubuntu) or set TESSDATA_PREFIX to their folder"
        )
    return None


def _ocr_text(page: Any) -> str:
    textpage = page.get_textpage_ocr(language=OCR_LANGUAGE, dpi=OCR_DPI, full=True)
    return _clean(page.get_text(textpage=textpage))


def _pdf_texts(
    data: bytes, filename: str, password: str | None, max_pages: int, ocr: bool = False
) -> tuple[list[str], list[str], list[str]]:
    if data[:1024].find(b"%PDF-") < 0 and (
        data.startswith(tuple(m for m, _ in _MAGIC)) or _looks_like_text(data)
    ):
        # MuPDF would open an image as a one-page document, and fail on text with no hint.
        raise CorruptDocument(filename, _not_a_pdf(data, "no PDF header"))
    doc = _open_pdf(data, filename, password)
    warnings: list[str] = []
    try:
        repaired = bool(getattr(doc, "is_repaired", False))
        try:
            page_count = doc.page_count
        except Exception:  # noqa: BLE001 - MuPDF raises RuntimeError ("Invalid number of pages")
            raise CorruptDocument(filename, _damaged(data, "its page tree could not be read")) from None
        if page_count == 0:
            if repaired or _cut_short(data):
                raise CorruptDocument(filename, _damaged(data, "no page could be found in it"))
            raise EmptyDocument(filename, "the PDF has no pages")
        if page_count > max_pages:
            raise DocumentTooLarge(filename, f"{page_count:,} pages; the limit is {max_pages:,}")
        texts: list[str] = []
        labels: list[str] = []
        broken: list[int] = []
        for index in range(page_count):
            try:
                page = doc[index]
                texts.append(_clean(page.get_text()))
                labels.append(_label(page))
            except Exception:  # noqa: BLE001 - one broken page must not lose the others
                broken.append(index + 1)
                texts.append("")
                labels.append("")
        repaired = repaired or bool(getattr(doc, "is_repaired", False))
        empty = [i + 1 for i, t in enumerate(texts) if not t.strip()]
        if empty and ocr and not (repaired and len(empty) == len(texts)):
            missing = ocr_available()
            if missing is not None and len(empty) == len(texts):
                raise NoTextError(filename, f"{_no_text(empty, texts)}, and {missing}")
            if missing is not None:
                warnings.append(f"{filename}: OCR was not run: {missing}.")
            elif len(empty) > MAX_OCR_PAGES:
                raise DocumentTooLarge(
                    filename,
                    f"{len(empty):,} pages have no text layer, and OCR reads at most {MAX_OCR_PAGES} "
                    "pages of a file: OCR it beforehand (e.g. with ocrmypdf) and load the result",
                )
            else:
                empty = _ocr_pages(doc, texts, empty, filename, warnings)
    finally:
        doc.close()
    if repaired:
        warnings.append(f"{filename}: the PDF structure was damaged and has been repaired.")
    noisy = [i + 1 for i, t in enumerate(texts) if reads_as_noise(t)]
    if noisy:
        warnings.append(
            f"{filename}: the text layer of {'page' if len(noisy) == 1 else 'pages'} {_ranges(noisy)} "
            "reads as noise (most of its words are not word-shaped: a bad OCR layer?). Answers from "
            "it cannot be trusted: OCR the file afresh (e.g. ocrmypdf --force-ocr) and load the result."
        )
    if broken:
        warnings.append(f"{filename}: pages {_ranges(broken)} could not be read.")
    if len(empty) == len(texts):
        if repaired or _cut_short(data):
            raise CorruptDocument(
                filename, _damaged(data, f"none of its {len(texts)} pages has readable text")
            )
        if ocr:
            raise NoTextError(filename, f"{_no_text(empty, texts)}, and OCR found no text on them either")
        raise NoTextError(
            filename,
            f"{_no_text(empty, texts)}. OCR is off: load the file again with OCR on "
            "(python -m rr_core ... --ocr; it needs Tesseract: apt-get install tesseract-ocr)",
            finding=_no_text(empty, texts),
        )
    if empty:
        why = "damaged, or scanned?" if repaired else "scanned?"
        warnings.append(f"{filename}: pages {_ranges(empty)} have no text layer ({why}) and stay empty.")
    return texts, warnings, labels


# A text layer reads as noise when fewer than half its tokens look like words (letters of one
# case pattern, or numbers). Calibrated on ../shared/data/documents: every page of 40 tokens or
# more of the nine readable PDFs (English legal, medical, financial, multi-column; Korean)
# scores 0.86 or more; 345 tokens of random letters, digits and signs score about 0.2.
NOISE_WORD_SHARE = 0.5
NOISE_MIN_TOKENS = 40  # a page with fewer (a title page, a table of figures) is not judged
_EDGE = "\"'“”‘’«»()[]{}<>.,;:!?*§¶•·–—-/\\|"
_NUMBER = re.compile(r"^[$€£¥#(+-]*\d[\d.,:/%-]*[)%]*$")
_NUMBER_UNIT = re.compile(r"^\d[\d.,]*[^\W\d_]{1,4}$")  # 10mg, 3rd, 2024년
_INNER = re.compile(r"['’.-]")
_VOWELS = frozenset("aeiouy")


def _word_shaped(token: str) -> bool | None:
    """Whether a token looks like a word or a number (None: punctuation only, not judged)."""
    core = token.strip(_EDGE)
    if not core:
        return None
    if _NUMBER.match(core) or _NUMBER_UNIT.match(core):
        return True
    parts = [p for p in _INNER.split(core) if p]
    if not parts or not all(p.isalpha() for p in parts):
        return False
    letters = "".join(parts)
    if (
        not (letters.islower() or letters.isupper() or letters.istitle())
        and letters.lower() != letters.upper()
    ):
        return False  # xQkTb: a cased script in no case pattern a word has
    lower = letters.lower()
    return not (lower.isascii() and len(lower) > 3 and not _VOWELS & set(lower))


# The pages of a document (and of a corpus) repeat most of their words: a token is judged once
# per process, not once per page it is on (four real PDFs, 106 pages: 23,000 judgements -> 8,000,
# 68 -> 27 ms). Remembered only for tokens of a word's length: ~5 MiB when full (32,768 Latin
# words; up to ~8 MiB in scripts of several bytes a character).
_KNOWN_TOKEN_LEN = 48
_word_shaped_known = lru_cache(maxsize=1 << 15)(_word_shaped)


def reads_as_noise(text: str) -> bool:
    """Whether a page's text layer looks like garbage (a failed OCR): of its tokens (at least
    ``NOISE_MIN_TOKENS``), fewer than ``NOISE_WORD_SHARE`` are word-shaped."""
    judged = shaped = 0
    for token, times in Counter(text.split()).items():  # each distinct token judged once
        word = _word_shaped_known(token) if len(token) <= _KNOWN_TOKEN_LEN else _word_shaped(token)
        if word is not None:
            judged += times
            shaped += times if word else 0
    return judged >= NOISE_MIN_TOKENS and shaped < NOISE_WORD_SHARE * judged


def _label(page: Any) -> str:
    """The page's printed label from the PDF's page labels ("" when it defines none)."""
    try:
        return str(page.get_label() or "")
    except Exception:  # noqa: BLE001 - a malformed label tree must not lose the page
        return ""


def _ocr_pages(doc: Any, texts: list[str], empty: list[int], filename: str, warnings: list[str]) -> list[int]:
    """Read the ``empty`` pages by OCR into ``texts``; the pages that stay empty."""
    read: list[int] = []
    for number in empty:
        try:
            texts[number - 1] = _ocr_text(doc[number - 1])
        except Exception:  # noqa: BLE001 - a page Tesseract cannot read stays empty
            continue
        if texts[number - 1].strip():
            read.append(number)
    if read:
        warnings.append(
            f"{filename}: pages {_ranges(read)} were read by OCR (Tesseract); "
            "check quotes from them against the page image."
        )
    done = set(read)
    return [n for n in empty if n not in done]


def _no_text(empty: list[int], texts: list[str]) -> str:
    if len(empty) == len(texts):
        return f"none of its {len(texts)} pages has a text layer (a scanned document?)"
    return f"pages {_ranges(empty)} have no text layer (scanned?)"


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
    # Runs of spaces squeezed in one pass over the page (a run never crosses a line), and only
    # where there is one to squeeze (most pages have none); then each line stripped.
    if "  " in text or "\t" in text or "\u00a0" in text:
        text = _SPACES.sub(" ", text)
    lines = [line.strip() for line in text.split("\n")]
    return "\n".join(lines).strip()


def _plain_text(
    kind: str, data: bytes, filename: str, max_bytes: int = MAX_BYTES, max_words: int | None = None
) -> str:
    if kind == "docx":
        return _docx_text(data, filename, max_bytes)
    text = _decode(data)
    share = _binary_share(text[:65536])
    if share > _MAX_BINARY_SHARE:
        raise UnsupportedType(
            filename,
            f"this does not look like text ({share:.0%} of its first characters are control codes "
            "or bytes that are not text): it may be a binary file with a text name. "
            "Load a PDF, DOCX, TXT, HTML or Markdown file.",
        )
    if kind == "html":
        return _html_text(text, max_words)
    return text


# Control characters (tabs, line and page breaks excepted) and the replacement character.
_NOT_TEXT = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")


def _binary_share(sample: str) -> float:
    """The share of characters in ``sample`` that ordinary text does not contain."""
    return len(_NOT_TEXT.findall(sample)) / len(sample) if sample else 0.0


def _decode(data: bytes) -> str:
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _check_docx_size(data: bytes, filename: str, max_bytes: int) -> None:
    """Refuse a DOCX whose parts unpack to too much, before anything is unpacked.

    The sizes are those the ZIP directory declares; Python's ``zipfile`` (which python-docx
    reads through) never inflates a part past its declared size, so they bound the work.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise CorruptDocument(filename, f"not a readable DOCX ({type(exc).__name__}: {exc})") from exc
    total = sum(i.file_size for i in infos)
    xml = [i for i in infos if i.filename.lower().endswith((".xml", ".rels"))]
    xml_total = sum(i.file_size for i in xml)
    hint = "it is very large or built to exhaust memory (a zip bomb); save it as PDF or split it"
    if total > max_bytes:
        raise DocumentTooLarge(filename, f"{_too_large(total, max_bytes, 'unpacked, the DOCX is')}: {hint}")
    if xml_total > MAX_DOCX_XML_BYTES:
        biggest = max(xml, key=lambda i: i.file_size)
        raise DocumentTooLarge(
            filename,
            f"its XML unpacks to {xml_total / _MB:,.0f} MB ({biggest.filename}: "
            f"{biggest.file_size / _MB:,.0f} MB); the limit is {MAX_DOCX_XML_BYTES / _MB:.0f} MB: {hint}",
        )


def _docx_text(data: bytes, filename: str, max_bytes: int = MAX_BYTES) -> str:
    import docx  # python-docx

    _check_docx_size(data, filename, max_bytes)
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


def _html_text(html: str, max_words: int | None = None) -> str:
    """The visible text of ``html``; parsing stops once it holds more than ``max_words``
    words (enough to know the document is over the page limit)."""
    parser = _TextFromHTML()
    words = 0
    for at in range(0, len(html), _WINDOW_CHARS):
        seen = len(parser.parts)
        parser.feed(html[at : at + _WINDOW_CHARS])
        words += sum(len(part.split()) for part in parser.parts[seen:])
        if max_words is not None and words > max_words:
            return "".join(parser.parts)
    parser.close()
    return "".join(parser.parts)


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SPACE = re.compile(r"\s")


def split_blocks(
    text: str,
    words_per_block: int = WORDS_PER_BLOCK,
    *,
    max_chars: int = MAX_BLOCK_CHARS,
    max_blocks: int | None = None,
) -> list[str]:
    """Cut text without pages into blocks of about ``words_per_block`` words.

    Form feeds are hard page breaks; otherwise blocks end at paragraph breaks, and a
    paragraph longer than a block is cut between words. A block also ends before it passes
    ``max_chars`` characters (a "word" longer than that is cut), so text without spaces still
    makes pages of a sane size. Time and memory are linear in the text; with ``max_blocks``
    the cutting stops after ``max_blocks + 1`` blocks, enough to tell that a text is over a
    page limit without cutting all of it.
    """
    # One kind of line break, so "\r\r\n" cannot count as a paragraph break in one place and
    # as a line break in another.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    blocks = _iter_blocks(text, words_per_block, max_chars)
    if max_blocks is None:
        return list(blocks)
    return list(itertools.islice(blocks, max_blocks + 1))


def _iter_blocks(text: str, words_per_block: int, max_chars: int) -> Iterator[str]:
    if words_per_block < 1 or max_chars < 1:
        raise ValueError("words_per_block and max_chars must be positive")
    start = 0
    while start <= len(text):
        stop = text.find("\f", start)
        stop = len(text) if stop < 0 else stop
        yield from _section_blocks(text, start, stop, words_per_block, max_chars)
        start = stop + 1


def _paragraph_spans(text: str, start: int, stop: int) -> Iterator[tuple[int, int]]:
    at = start
    for brk in _PARAGRAPH_BREAK.finditer(text, start, stop):
        yield at, brk.start()
        at = brk.end()
    yield at, stop


def _section_blocks(text: str, start: int, stop: int, words_per_block: int, max_chars: int) -> Iterator[str]:
    """The blocks of ``text[start:stop]``, a stretch without form feeds."""
    current: list[str] = []  # paragraphs (or the tail of a long one) of the block being filled
    count = chars = 0  # its words and characters
    for a, b in _paragraph_spans(text, start, stop):
        if b - a <= max_chars:
            paragraph = _clean(text[a:b])
            if not paragraph:
                continue
            words = paragraph.split()
            if len(words) <= words_per_block:
                if current and (
                    count + len(words) > words_per_block or chars + 2 + len(paragraph) > max_chars
                ):
                    yield "\n\n".join(current)
                    current, count, chars = [], 0, 0
                current.append(paragraph)
                count += len(words)
                chars += len(paragraph) + (2 if len(current) > 1 else 0)
                continue
            windows: Iterable[list[str]] = [words]
        else:  # a huge paragraph: read it a window at a time, never copied whole
            windows = _word_windows(text, a, b, max_chars)
        # An oversized paragraph: full blocks of it go out, its tail starts the next block.
        if current:
            yield "\n\n".join(current)
        tail: list[str] = []
        for window in windows:
            tail.extend(window)
            at = 0
            while len(tail) - at > words_per_block:
                block, at = _take(tail, at, words_per_block, max_chars)
                yield block
            del tail[:at]
        while True:  # the tail may still be over the character limit
            block, at = _take(tail, 0, words_per_block, max_chars)
            if at >= len(tail):
                break
            yield block
            del tail[:at]
        current, count, chars = ([block], len(tail), len(block)) if tail else ([], 0, 0)
    if current:
        yield "\n\n".join(current)


def _take(words: list[str], at: int, words_per_block: int, max_chars: int) -> tuple[str, int]:
    """The block that starts at ``words[at]`` (at most ``words_per_block`` words and
    ``max_chars`` characters, at least one word), and the index after it."""
    block = " ".join(words[at : at + words_per_block])
    if len(block) <= max_chars:
        return block, min(at + words_per_block, len(words))
    end, size = at, -1
    while (
        end < len(words)
        and end - at < words_per_block
        and (end == at or size + 1 + len(words[end]) <= max_chars)
    ):
        size += 1 + len(words[end])
        end += 1
    return " ".join(words[at:end]), end


_WINDOW_CHARS = 1 << 20


def _word_windows(text: str, start: int, stop: int, max_chars: int) -> Iterator[list[str]]:
    """The words of ``text[start:stop]`` (as ``_clean`` then ``split`` would give them, and
    none longer than ``max_chars``), a window of about a megabyte at a time."""
    at = start
    while at < stop:
        end = min(at + _WINDOW_CHARS, stop)
        if end < stop:  # end the window at whitespace, so no word is split across two
            space = _SPACE.search(text, end, stop)
            end = space.start() if space else stop
        words = text[at:end].replace("\x00", "").split()
        if any(len(w) > max_chars for w in words):
            words = [w[i : i + max_chars] for w in words for i in range(0, len(w), max_chars)]
        yield words
        at = end


# ---- Rendering (for the page viewer) -------------------------------------------------


_PAGE_SIZE = (612, 792)  # US Letter, in points
_MARGIN = 54


def pdf_from_texts(texts: Sequence[str], *, title: str = "") -> bytes:
    """A simple PDF with one page per text (for exports, tests and benchmarks)."""
    pymupdf = _pymupdf()
    doc = pymupdf.open()
    for i, text in enumerate(texts):
        _add_text_page(doc, text, f"{title} — page {i + 1} of {len(texts)}" if title else f"page {i + 1}")
    if title:
        doc.set_metadata({"title": title, "producer": "R&R Studio sample generator"})
    out: bytes = doc.tobytes(garbage=3, deflate=True)
    doc.close()
    return out


def _add_text_page(doc: Any, text: str, footer: str) -> Any:
    """Append a page showing ``text`` (the largest font it fits in) and a grey footer line."""
    pymupdf = _pymupdf()
    width, height = _PAGE_SIZE
    rect = pymupdf.Rect(_MARGIN, _MARGIN, width - _MARGIN, height - _MARGIN - 18)
    page = doc.new_page(width=width, height=height)
    for size in (10, 9, 8, 7, 6, 5):
        if page.insert_textbox(rect, text, fontsize=size, fontname="helv") >= 0:
            break
        doc.delete_page(-1)
        page = doc.new_page(width=width, height=height)
    page.insert_text((_MARGIN, height - _MARGIN + 8), footer, fontsize=7, color=(0.4, 0.4, 0.4))
    return page


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """A page as PNG, and how many marked boxes were drawn on it."""

    png: bytes
    width: int
    height: int
    marked: int = 0
    zoom: float = 1.0  # pixels per PDF point: a word's box times this is its place in the picture


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in PDF points, origin top left


@dataclass(frozen=True, slots=True)
class PageWord:
    """One word of a page as drawn: its text, its box, and the line it stands on."""

    text: str
    box: Box
    line: tuple[int, int]  # (block, line) on the page: boxes of one line can be joined


def page_words(document: Document, number: int) -> tuple[PageWord, ...]:
    """The words of a page in reading order (the order of the page's text), with their boxes
    on the page as ``render_page`` draws it (a typeset page's words for a document without PDF
    pages)."""
    if not 1 <= number <= len(document.pages):
        raise ConfigError(f"{document.name} has no page {number} (it has {len(document.pages)}).")
    try:
        with _RENDER_LOCK, _drawn_page(document, number) as page:
            return tuple(
                PageWord(
                    str(w[4]), (float(w[0]), float(w[1]), float(w[2]), float(w[3])), (int(w[5]), int(w[6]))
                )
                for w in page.get_text("words")
            )
    except RRError:
        raise
    except Exception as exc:  # noqa: BLE001 - a page MuPDF cannot read must not take the screen down
        raise CorruptDocument(document.name, f"page {number} could not be read ({exc})") from exc


def render_page(
    document: Document,
    number: int,
    *,
    zoom: float = 1.5,
    width: int | None = None,
    marks: Sequence[Box] = (),
    frame: tuple[float, float, float] | None = None,
) -> RenderedPage:
    """Render one page to PNG (at ``zoom``, or ``width`` pixels wide), optionally marking
    boxes (a quote's words, placed by ``rr_core.viewer.place_quote``) and framing the page.

    A PDF's page is drawn from the PDF itself, kept open between calls (a page turn does not
    parse the file again); a page without one (text, DOCX, HTML, the samples) is typeset from
    its text, with a footer naming the document and the page.
    """
    if not 1 <= number <= len(document.pages):
        raise ConfigError(f"{document.name} has no page {number} (it has {len(document.pages)}).")
    try:
        with _RENDER_LOCK:
            return _render(document, number, zoom, width, marks, frame)
    except RRError:
        raise
    except Exception as exc:  # noqa: BLE001 - a page MuPDF cannot draw must not take the screen down
        raise CorruptDocument(document.name, f"page {number} could not be rendered ({exc})") from exc


# MuPDF is not thread-safe, and the app's sessions run in threads: every use of an open
# document happens under this lock. Rendering a page takes tens of milliseconds.
_RENDER_LOCK = threading.RLock()
_OPEN_PDFS: OrderedDict[str, Any] = OrderedDict()  # by the document's sha256, most recent last
_OPEN_PDF_LIMIT = 4


def _open_for_render(document: Document) -> Any:
    """The document's PDF, opened once and kept (the last few documents, under the lock)."""
    doc = _OPEN_PDFS.get(document.sha256)
    if doc is None:
        assert document.pdf_bytes is not None
        doc = _open_pdf(document.pdf_bytes, document.name, document.password)
        _OPEN_PDFS[document.sha256] = doc
        while len(_OPEN_PDFS) > _OPEN_PDF_LIMIT:
            _OPEN_PDFS.popitem(last=False)[1].close()
    _OPEN_PDFS.move_to_end(document.sha256)
    return doc


@contextmanager
def _drawn_page(document: Document, number: int) -> Iterator[Any]:
    """The page as drawn (under the lock): the PDF's own, or one typeset from the text."""
    page_info = document.page(number)
    if document.pdf_bytes is not None and page_info.source_page is not None:
        try:
            pdf = _open_for_render(document)
        except (PasswordRequired, WrongPassword):
            # An encrypted PDF read with a password that was used for the reading only (a
            # Review corpus): its pages are shown typeset from their text.
            pdf = None
        if pdf is not None:
            yield pdf[page_info.source_page - 1]
            return
    scratch = _pymupdf().open()
    try:
        yield _add_text_page(
            scratch, page_info.text, f"{document.name} — page {number} of {len(document.pages)}"
        )
    finally:
        scratch.close()


def _render(
    document: Document,
    number: int,
    zoom: float,
    width: int | None,
    marks: Sequence[Box],
    frame: tuple[float, float, float] | None,
) -> RenderedPage:
    pymupdf = _pymupdf()
    with _drawn_page(document, number) as page:
        # The marks and the frame are annotations added for this picture and removed after
        # it, so the open document is left as it was.
        added = []
        try:
            for box in marks:
                annot = page.add_highlight_annot(pymupdf.Rect(*box))
                annot.set_colors(stroke=(1.0, 0.85, 0.1))
                annot.update()
                added.append(annot)
            # A thin grey outline on every page, so its edge shows on a white screen; a frame
            # (a retrieved page, in its rank's colour) is drawn wide instead.
            width_pt, colour = (4, frame) if frame is not None else (1, (0.72, 0.74, 0.78))
            annot = page.add_rect_annot(
                page.rect + (2, 2, -2, -2) if frame is not None else page.rect + (0.5, 0.5, -0.5, -0.5)
            )
            annot.set_border(width=width_pt)
            annot.set_colors(stroke=colour)
            annot.update()
            added.append(annot)
            if width:
                zoom = width / page.rect.width
            pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), annots=True)
            return RenderedPage(pix.tobytes("png"), pix.width, pix.height, len(marks), zoom)
        finally:
            for annot in reversed(added):
                page.delete_annot(annot)
