"""A review's corpus: many files read once, in parallel processes, into the document store.

Files come as paths, folders, uploads (name and bytes) or ZIPs of them. Each is read in a
worker process (PDF text extraction is CPU-bound), and what was read — the pages' text, labels
and token counts — is kept in the document store beside the file's bytes, by content hash: a
document is parsed once, and any later step (the estimate, the run, the Document screen, another
process) opens its reading from the store. The parent keeps only a summary per file
(``CorpusFile``), never the corpus: peak memory is a few documents, one per worker in flight.

A file that cannot be read (encrypted, scanned, damaged, empty, too large, of a type not read)
is listed with its message; the others go on. An encrypted PDF is opened with its password
(``Passwords``: one file's, or one for every file; used for this reading only, never stored) and
a scanned one by OCR when asked (``Opening``); a file still unreadable says what to do where the
user is: on the Review screen, or on the command line.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import sys
import threading
import time
import types
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

from rr_core.documents import MAX_BYTES, SUPPORTED, Document, Page, load_document
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
from rr_core.jobs import DocumentRef, Material, Source
from rr_core.tokens import TokenCounter, counter_for_model
from rr_core.untrusted import plain_name

MAX_FILES = 10_000
ZIP_MAX_MEMBERS = 10_000
ZIP_MAX_UNPACKED = 2 * 1024**3  # what a ZIP may unpack to in all
READING_VERSION = 1

# What each problem is called on screen, by the error that says it.
PROBLEMS: tuple[tuple[type[DocumentError], str], ...] = (
    (PasswordRequired, "encrypted"),
    (WrongPassword, "encrypted"),
    (NoTextError, "scanned (no text layer)"),
    (CorruptDocument, "damaged"),
    (EmptyDocument, "empty"),
    (DocumentTooLarge, "too large"),
    (UnsupportedType, "type not read"),
)


class ReadingStore(Protocol):
    """What the corpus needs of a store: document bytes and readings, by content hash."""

    def put_document(self, data: bytes, name: str) -> str: ...

    def get_document(self, sha256: str) -> bytes | None: ...

    def document_name(self, sha256: str) -> str | None: ...

    def put_reading(self, sha256: str, tokenizer: str, data: bytes) -> None: ...

    def get_reading(self, sha256: str, tokenizer: str) -> bytes | None: ...


@dataclass(frozen=True, slots=True)
class CorpusFile:
    """One file of the corpus, as read: its pages and tokens, or why it could not be read."""

    name: str  # as given (a ZIP member: "archive.zip/folder/file.pdf")
    size: int
    sha256: str = ""
    kind: str = ""
    pages: int = 0
    tokens: int = 0
    empty_pages: int = 0
    warnings: tuple[str, ...] = ()
    problem: str = ""  # e.g. "encrypted"; "" when read
    message: str = ""  # the reader's message, safe to show
    duplicate_of: str = ""  # the name of an earlier file with the same bytes
    ocr: bool = False  # read with OCR on: its reading is the OCR'd one (kept apart from the one without)

    @property
    def ok(self) -> bool:
        """Read, and not a second copy of a file already in the corpus."""
        return not self.problem and not self.duplicate_of

    @property
    def ref(self) -> DocumentRef:
        """The reference a job holds."""
        return DocumentRef(sha256=self.sha256, name=self.name, ocr=self.ocr)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CorpusFile:
        """Read ``to_dict``'s output."""
        return cls(
            name=str(data["document"]), size=int(data.get("size_bytes") or 0), sha256=str(data.get("document_sha256") or ""),
            kind=str(data.get("kind") or ""), pages=int(data.get("pages") or 0), tokens=int(data.get("tokens") or 0),
            warnings=tuple(data.get("warnings") or ()), problem=str(data.get("problem") or ""),
            message=str(data.get("message") or ""), duplicate_of=str(data.get("duplicate_of") or ""),
            empty_pages=int(data.get("empty_pages") or 0), ocr=bool(data.get("ocr") or False),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """As JSON (the CLI's ``documents``)."""
        return {
            "document": self.name,
            "document_sha256": self.sha256,
            "kind": self.kind,
            "pages": self.pages,
            "tokens": self.tokens,
            "size_bytes": self.size,
            "read": self.ok,
            "problem": self.problem or None,
            "message": self.message or None,
            "duplicate_of": self.duplicate_of or None,
            "empty_pages": self.empty_pages,
            "warnings": list(self.warnings),
            **({"ocr": True} if self.ocr else {}),  # only when on: a grid's calls key is unchanged without
        }


@dataclass(frozen=True, slots=True)
class Item:
    """A file to read: its name, and its bytes or its path (read in the worker)."""

    name: str
    data: bytes | None = None
    path: str = ""

    def read(self) -> bytes:
        """The file's bytes."""
        return self.data if self.data is not None else Path(self.path).read_bytes()


# ---- collecting the files ------------------------------------------------------------------------


def items_from_paths(paths: Sequence[str | Path]) -> tuple[list[Item], list[CorpusFile]]:
    """Files from paths and folders (folders walked, sorted; hidden files skipped), ZIPs opened.
    Paths that do not exist, and links in a folder to files outside it, are listed as problems."""
    items: list[Item] = []
    problems: list[CorpusFile] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path)))
            root = path.resolve()
            for p in found:
                name = plain_name(str(p.relative_to(path.parent)))
                if p.is_symlink() and not p.resolve().is_relative_to(root):
                    # A folder is what was chosen: a link out of it (to /etc/passwd, say) is not.
                    problems.append(CorpusFile(name, 0, problem="link out of the folder",
                                               message=f"{name}: a link to a file outside {plain_name(path.name)}; "
                                               "not read (add that file itself to read it)"))  # fmt: skip
                    continue
                _add_path(p, name, items, problems)
        elif path.is_file():
            _add_path(path, plain_name(path.name), items, problems)
        else:
            shown = plain_name(str(given))
            problems.append(
                CorpusFile(shown, 0, problem="missing", message=f"{shown}: no such file or folder")
            )
    return items, problems


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") or part == "__MACOSX" for part in relative.parts)


def _add_path(path: Path, name: str, items: list[Item], problems: list[CorpusFile]) -> None:
    if path.suffix.lower() == ".zip":
        try:
            data = path.read_bytes()
        except OSError as exc:
            problems.append(
                CorpusFile(name, 0, problem="unreadable", message=f"{name}: {exc.strerror or exc}")
            )
            return
        unpacked, bad = unzip(name, data)
        items.extend(unpacked)
        problems.extend(bad)
        return
    items.append(Item(name, path=str(path)))


def items_from_uploads(files: Iterable[tuple[str, bytes]]) -> tuple[list[Item], list[CorpusFile]]:
    """Files from uploads (name, bytes); a ZIP's members become files of their own."""
    items: list[Item] = []
    problems: list[CorpusFile] = []
    for given, data in files:
        name = plain_name(given)
        if name.lower().endswith(".zip"):
            unpacked, bad = unzip(name, data)
            items.extend(unpacked)
            problems.extend(bad)
        else:
            items.append(Item(name, data=data))
    return items, problems


def unzip(name: str, data: bytes) -> tuple[list[Item], list[CorpusFile]]:
    """The documents in a ZIP, each named ``name/member``. A ZIP that is damaged, holds too many
    files or unpacks to too much is a problem; members of a type not read are skipped and listed;
    a ZIP inside a ZIP is not opened (listed)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir() and not _hidden(Path(m.filename))]
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        return [], [
            CorpusFile(name, len(data), problem="damaged", message=f"{name}: not a readable ZIP ({exc})")
        ]
    if len(members) > ZIP_MAX_MEMBERS:
        return [], [
            CorpusFile(name, len(data), problem="too large",
                       message=f"{name}: holds {len(members):,} files; at most {ZIP_MAX_MEMBERS:,} are read")
        ]  # fmt: skip
    total = sum(m.file_size for m in members)
    if total > ZIP_MAX_UNPACKED:
        return [], [
            CorpusFile(name, len(data), problem="too large",
                       message=f"{name}: unpacks to {total / 1024**3:.1f} GB; at most {ZIP_MAX_UNPACKED / 1024**3:.0f} GB")
        ]  # fmt: skip
    items: list[Item] = []
    problems: list[CorpusFile] = []
    for member in members:
        shown = plain_name(f"{name}/{PurePosixPath(member.filename).as_posix()}")
        suffix = PurePosixPath(member.filename).suffix.lower()
        if suffix == ".zip":
            problems.append(CorpusFile(shown, member.file_size, problem="type not read",
                                       message=f"{shown}: a ZIP inside a ZIP is not opened; upload it on its own"))  # fmt: skip
            continue
        if suffix not in SUPPORTED:
            problems.append(CorpusFile(shown, member.file_size, problem="type not read",
                                       message=f"{shown}: {suffix or 'no extension'} files are not read"))  # fmt: skip
            continue
        if member.file_size > MAX_BYTES:
            problems.append(CorpusFile(shown, member.file_size, problem="too large",
                                       message=f"{shown}: {member.file_size / 1024**2:.0f} MB, over the file limit"))  # fmt: skip
            continue
        try:
            with archive.open(member) as handle:
                content = handle.read(MAX_BYTES + 1)
        except (
            zipfile.BadZipFile,
            OSError,
            ValueError,
            RuntimeError,
        ) as exc:  # RuntimeError: encrypted member
            problems.append(CorpusFile(shown, member.file_size, problem="damaged", message=f"{shown}: {exc}"))
            continue
        items.append(Item(shown, data=content))
    return items, problems


# ---- how files are opened: passwords and OCR -----------------------------------------------------

# Where the user is: what a file still unreadable tells them to do.
Where = Literal["screen", "cli"]


@dataclass(frozen=True, slots=True)
class Passwords:
    """Passwords for a corpus's encrypted PDFs, for this reading only (never stored, never
    shown): one file's, by its name as listed or its base name, and one for every encrypted file
    without its own."""

    by_file: Mapping[str, str] = field(default_factory=dict, repr=False)
    every: str | None = field(default=None, repr=False)

    def for_file(self, name: str) -> str | None:
        """The password to open ``name`` with, or None."""
        own = self.by_file.get(name) or self.by_file.get(PurePosixPath(name).name)
        return own or self.every or None


def parse_password_file(text: str, *, name: str = "the password file") -> Passwords:
    """``file,password`` lines (a CSV; a header line ``file,password`` is skipped) as
    ``Passwords``. A line without both is an error naming its line number, never its text."""
    by_file: dict[str, str] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip():
            continue
        cells = [cell.strip() for cell in row]
        if number == 1 and [c.lower() for c in cells[:2]] == ["file", "password"]:
            continue
        if len(cells) < 2 or not cells[0] or not row[1]:
            raise ConfigError(f"{name}, line {number}: give a file and its password (file,password)")
        # The password as written: a space may be part of it, and a comma (split by the reader).
        by_file[cells[0]] = ",".join(row[1:])
    return Passwords(by_file=by_file)


@dataclass(frozen=True, slots=True)
class Opening:
    """How a corpus's files are opened: OCR on or off, the passwords for encrypted PDFs, and
    where the user is (what a file still unreadable tells them to do)."""

    ocr: bool = False
    passwords: Passwords = field(default_factory=Passwords, repr=False)
    where: Where = "cli"


# What a user can do about a file that was not read, where they are.
_ACTIONS: dict[tuple[str, Where], str] = {
    ("locked", "screen"): "the PDF is encrypted: enter its password below, and it is read again",
    ("locked", "cli"): (
        "the PDF is encrypted: give its password with --password PW (for every encrypted file) "
        "or --password-file CSV (file,password lines)"
    ),
    ("wrong", "screen"): "the password entered did not open the PDF: check it and enter it again below",
    ("wrong", "cli"): (
        "the password given did not open the PDF: check --password, or the file's line in --password-file"
    ),
    ("scanned", "screen"): "turn on OCR above to read its pages (Tesseract, a few seconds a page)",
    ("scanned", "cli"): "run again with --ocr to read its pages (it needs Tesseract)",
}


def _unread_message(name: str, exc: DocumentError, opening: Opening) -> str:
    """Why a file was not read, with what the user can do where they are."""
    where = opening.where
    if isinstance(exc, PasswordRequired):
        return f"{name}: {_ACTIONS['locked', where]}"
    if isinstance(exc, WrongPassword):
        return f"{name}: {_ACTIONS['wrong', where]}"
    if isinstance(exc, NoTextError) and not opening.ocr:
        return f"{name}: {exc.finding}: {_ACTIONS['scanned', where]}"
    return str(exc)


# ---- reading (in worker processes) ---------------------------------------------------------------


def _problem_of(exc: DocumentError) -> str:
    for kind, problem in PROBLEMS:
        if isinstance(exc, kind):
            return problem
    return "unreadable"


def reading_bytes(document: Document) -> bytes:
    """A document's reading (pages, labels, tokens) as the store keeps it: compressed JSON."""
    data = {
        "v": READING_VERSION,
        "name": document.name,
        "kind": document.kind,
        "tokenizer": document.tokenizer,
        "approximate": document.approximate_tokens,
        "warnings": list(document.warnings),
        "pages": [[p.text, p.tokens, p.source_page, p.label] for p in document.pages],
    }
    # Level 1: a tenth of level 6's time for a reading ~25% larger (level 6 cost ~15% of the
    # page extraction itself; benchmarks/bench_review.py).
    return zlib.compress(json.dumps(data, ensure_ascii=False).encode(), 1)


def document_from_reading(sha256: str, blob: bytes, pdf_bytes: bytes | None = None) -> Document | None:
    """The document a stored reading holds (None when it is of another version or damaged)."""
    try:
        data = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError):
        return None
    if not isinstance(data, dict) or data.get("v") != READING_VERSION:
        return None
    pages = tuple(
        Page(number=i + 1, text=text, tokens=tokens, source_page=source, label=label or "")
        for i, (text, tokens, source, label) in enumerate(data["pages"])
    )
    return Document(
        name=str(data["name"]),
        kind=str(data["kind"]),
        pages=pages,
        tokenizer=str(data["tokenizer"]),
        approximate_tokens=bool(data["approximate"]),
        sha256=sha256,
        warnings=tuple(data.get("warnings") or ()),
        pdf_bytes=pdf_bytes,
    )


_COUNTERS: dict[str, TokenCounter] = {}


def _counter(model: str) -> TokenCounter:
    if model not in _COUNTERS:
        _COUNTERS[model] = counter_for_model(model)
    return _COUNTERS[model]


def read_item(
    item: Item, model: str, ocr: bool | Opening = False
) -> tuple[CorpusFile, bytes | None, bytes | None]:
    """Read one file (in a worker): its summary, its bytes and its reading (None when it could
    not be read). ``ocr``: OCR on or off, or the whole ``Opening`` (passwords too)."""
    opening = ocr if isinstance(ocr, Opening) else Opening(ocr=ocr)
    try:
        data = item.read()
    except OSError as exc:
        return (
            CorpusFile(item.name, 0, problem="unreadable", message=f"{item.name}: {exc.strerror or exc}"),
            None,
            None,
        )
    sha = hashlib.sha256(data).hexdigest()
    try:
        document = load_document(
            data,
            filename=PurePosixPath(item.name).name,
            password=opening.passwords.for_file(item.name),
            counter=_counter(model),
            ocr=opening.ocr,
        )
    except DocumentError as exc:
        message = _unread_message(item.name, exc, opening)
        return (
            CorpusFile(item.name, len(data), sha256=sha, problem=_problem_of(exc), message=message),
            None,
            None,
        )
    except Exception as exc:  # noqa: BLE001 -- a parser's own failure: this file only, as in a worker
        return (
            CorpusFile(item.name, len(data), sha256=sha, problem="damaged",
                       message=f"{item.name}: the reader stopped on this file ({type(exc).__name__})"),
            None,
            None,
        )  # fmt: skip
    summary = CorpusFile(
        item.name,
        len(data),
        sha256=sha,
        kind=document.kind,
        pages=len(document.pages),
        tokens=document.total_tokens,
        empty_pages=len(document.empty_pages),
        warnings=document.warnings,
        ocr=opening.ocr,
    )
    return summary, data, reading_bytes(document)


# How often a reader process looks whether the process that started it is still there.
PARENT_POLL_S = 0.5


def _end_with_parent(parent: int) -> None:
    """A reader process's start: a watchdog thread ends the process when its parent is gone.

    A reader waits on the pool's queue, whose pipe it holds both ends of: a parent killed
    (kill -9, out of memory) would leave it blocked for ever, holding a document's memory.
    When the parent dies the reader is given another parent (init, or a subreaper), which this
    sees; a parent thread's death, as ``PR_SET_PDEATHSIG`` would, does not count.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="rr-parent-watch", daemon=True).start()


_MAIN_SWAP = threading.Lock()


@contextlib.contextmanager
def _host_main_hidden() -> Iterator[None]:
    """While readers start, the host program's main module out of multiprocessing's sight.

    A spawned process first runs its parent's ``__main__`` again (by file, or by module name).
    Under ``streamlit run`` that is the page script Streamlit installs as ``__main__``: every
    reader ran the app without a session, filling the log with "missing ScriptRunContext"
    warnings (and a script that reads a corpus at its top level started readers in its
    readers). The readers need nothing from it: they run rr_core functions on rr_core values.
    A stand-in without a file or a spec makes spawn leave the readers' ``__main__`` alone.
    """
    with _MAIN_SWAP:
        host = sys.modules.get("__main__")
        stand_in = types.ModuleType("__main__")
        sys.modules["__main__"] = stand_in
        try:
            yield
        finally:
            if sys.modules.get("__main__") is stand_in and host is not None:
                sys.modules["__main__"] = host


def _read_for_pool(item: Item, model: str, ocr: Opening) -> tuple[CorpusFile, bytes | None, bytes | None]:
    # A path is read in the worker; its bytes come back once, for the store.
    return read_item(item, model, ocr)


# Seconds a corpus is read in the calling process before reader processes start (see read_corpus).
READ_HERE_FIRST_S = 1.0


def default_processes() -> int:
    """Worker processes: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


OnFile = Callable[[int, int, CorpusFile], None]


def reading_key(tokenizer: str, ocr: bool) -> str:
    """What a document's reading is kept under, beside its hash: the tokenizer that counted its
    pages, and whether OCR read its pages without text (the two readings never replace each other)."""
    return f"{tokenizer}+ocr" if ocr else tokenizer


def read_corpus(
    items: Sequence[Item],
    store: ReadingStore,
    *,
    model: str = "",
    processes: int | None = None,
    ocr: bool = False,
    on_file: OnFile | None = None,
    passwords: Passwords | None = None,
    where: Where = "cli",
) -> list[CorpusFile]:
    """Read every file once (in ``processes`` worker processes; 1: in this one; None: here, then,
    when a second here leaves more than another second's reading, in one process a core), keep its bytes
    and reading in ``store``, and return one summary per file in the order given. A file whose
    reading is already stored (same bytes, same tokenizer) is not parsed again; with ``ocr``, one
    whose stored reading has pages without text is (OCR may read them). ``passwords`` open
    encrypted PDFs; a file not read says what to do ``where`` the user is."""
    opening = Opening(ocr=ocr, passwords=passwords or Passwords(), where=where)
    if len(items) > MAX_FILES:
        raise ConfigError(f"{len(items):,} files: a review reads at most {MAX_FILES:,} at a time.")
    tokenizer = _counter(model).label
    results: list[CorpusFile | None] = [None] * len(items)
    done = 0

    def keep(index: int, summary: CorpusFile, data: bytes | None, reading: bytes | None) -> None:
        nonlocal done
        if data is not None and reading is not None:
            store.put_document(data, PurePosixPath(summary.name).name)
            store.put_reading(summary.sha256, reading_key(tokenizer, summary.ocr), reading)
        results[index] = summary
        done += 1
        if on_file is not None:
            on_file(done, len(items), summary)

    todo: list[int] = []
    for index, item in enumerate(items):
        known = _known(item, store, tokenizer, ocr=ocr)
        if known is not None:
            keep(index, known, None, None)
        else:
            todo.append(index)
    if processes is None and len(todo) > 1:
        # Readers only for a corpus that pays for them: a reader's start (a fresh interpreter
        # importing rr_core) costs about half a second, reading a 20-page contract a few
        # hundredths. So files are read here first, and readers take over only when a second
        # of it has passed and what is left would take another here (30 contracts: all read
        # here, even on a slow machine; a thousand: the readers read most).
        started, read_here = time.monotonic(), 0
        while todo:
            spent = time.monotonic() - started
            if spent >= READ_HERE_FIRST_S and spent / max(read_here, 1) * len(todo) >= READ_HERE_FIRST_S:
                break
            index = todo.pop(0)
            keep(index, *read_item(items[index], model, opening))
            read_here += 1
    workers = min(processes or default_processes(), len(todo))
    if workers <= 1:
        for index in todo:
            keep(index, *read_item(items[index], model, opening))
    else:
        # Imported only when readers start: most Reviews read their files here (15 ms saved).
        from concurrent.futures.process import BrokenProcessPool

        try:
            for index, result in _in_pool(items, todo, model, opening, workers):
                keep(index, *result)
        except BrokenProcessPool:
            # The pool could not start (a program that starts processes on import, say): the
            # files left are read here, one after another.
            for index in todo:
                if results[index] is None:
                    keep(index, *read_item(items[index], model, opening))
    return _mark_duplicates([r for r in results if r is not None])


def _known(item: Item, store: ReadingStore, tokenizer: str, *, ocr: bool = False) -> CorpusFile | None:
    """The summary of a file whose reading is stored already (a path's file is hashed here,
    streamed, a block at a time: it is parsed in a worker only when its reading is not kept)."""
    if item.data is not None:
        sha, size = hashlib.sha256(item.data).hexdigest(), len(item.data)
    else:
        try:
            with open(item.path, "rb") as handle:
                sha, size = (
                    hashlib.file_digest(handle, "sha256").hexdigest(),
                    os.fstat(handle.fileno()).st_size,
                )
        except OSError:
            return None  # the worker says why
    if store.document_name(sha) is None:  # the bytes are kept too
        return None
    # With OCR: its OCR'd reading, else the one without when it has no page OCR would read (the
    # same text); without OCR: the reading without, never the OCR'd one.
    for with_ocr in (True, False) if ocr else (False,):
        blob = store.get_reading(sha, reading_key(tokenizer, with_ocr))
        document = document_from_reading(sha, blob) if blob is not None else None
        if document is None or (ocr and not with_ocr and document.empty_pages):
            continue
        return CorpusFile(
            item.name, size, sha256=sha, kind=document.kind, pages=len(document.pages), tokens=document.total_tokens,
            empty_pages=len(document.empty_pages), warnings=document.warnings, ocr=with_ocr,
        )  # fmt: skip
    return None


def _in_pool(
    items: Sequence[Item], todo: Sequence[int], model: str, ocr: Opening, workers: int
) -> Iterator[tuple[int, tuple[CorpusFile, bytes | None, bytes | None]]]:
    """Results as they finish, with at most two files per worker in flight (memory stays a few
    documents, not the corpus)."""
    from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor
    from multiprocessing import get_context

    pending: dict[Future[tuple[CorpusFile, bytes | None, bytes | None]], int] = {}
    queue = iter(todo)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_end_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        # Readers start on submissions (one per submission while none is idle).
        with _host_main_hidden():
            for index in queue:
                pending[pool.submit(_read_for_pool, items[index], model, ocr)] = index
                if len(pending) >= 2 * workers:
                    break
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                index = pending.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool:
                    raise
                except Exception as exc:  # noqa: BLE001 -- a worker that died (out of memory, a crash in the parser)
                    item = items[index]
                    result = (
                        CorpusFile(item.name, 0, problem="damaged",
                                   message=f"{item.name}: the reader stopped on this file ({type(exc).__name__})"),
                        None, None,
                    )  # fmt: skip
                yield index, result
                nxt = next(queue, None)
                if nxt is not None:
                    with _host_main_hidden():  # a submission may still start a reader
                        pending[pool.submit(_read_for_pool, items[nxt], model, ocr)] = nxt


def _mark_duplicates(files: list[CorpusFile]) -> list[CorpusFile]:
    """A second file with the same bytes is listed as a copy of the first (read once)."""
    first: dict[str, str] = {}
    out = []
    for f in files:
        if f.ok and f.sha256 in first:
            f = CorpusFile(**{**_fields(f), "duplicate_of": first[f.sha256]})
        elif f.ok:
            first[f.sha256] = f.name
        out.append(f)
    return out


def _fields(f: CorpusFile) -> dict[str, Any]:
    return {name: getattr(f, name) for name in CorpusFile.__dataclass_fields__}


# ---- opening a stored document where a job runs ----------------------------------------------------


class StoredDocuments:
    """A resolver over the document store: a job's document opened from its stored reading
    (parsed again from its bytes, and the reading kept, only when there is none). Keeps the
    last few opened (a document's jobs run together)."""

    def __init__(
        self, store: ReadingStore, counter: TokenCounter, *, keep: int = 4, with_pdf: bool = False
    ) -> None:
        self._store, self._counter, self._keep, self._with_pdf = store, counter, keep, with_pdf
        self._open: dict[str, Document] = {}
        # The run's threads share it: the kept documents are read and changed under this lock
        # (unlocked, two threads evicting at once failed cells with KeyError and RuntimeError).
        self._lock = threading.Lock()

    def open(self, source: Source) -> Material:
        """The document behind a ``DocumentRef``."""
        if not isinstance(source, DocumentRef):
            raise ConfigError(f"A review opens documents only, not a {source.kind!r} source.")
        return Material(self.document(source.sha256, source.name, ocr=source.ocr))

    def document(self, sha256: str, name: str = "", *, ocr: bool = False) -> Document:
        """The stored document with this hash (``ConfigError`` when the store does not have it);
        ``ocr``: its OCR'd reading (kept apart from the one without)."""
        kept_as = f"{sha256}+ocr" if ocr else sha256
        with self._lock:
            found = self._open.get(kept_as)
        if found is not None:
            return found
        tokenizer = reading_key(self._counter.label, ocr)
        blob = self._store.get_reading(sha256, tokenizer)
        pdf = self._store.get_document(sha256) if self._with_pdf or blob is None else None
        document = document_from_reading(sha256, blob, pdf if self._with_pdf else None) if blob else None
        if document is not None and ocr:
            document = replace(document, ocr=True)  # read back from the OCR'd reading
        if document is None:
            if pdf is None:
                raise ConfigError(
                    f"The document {name or sha256[:12]} (sha256 {sha256[:12]}…) is not in the document store: "
                    "add it to the review again."
                )
            filename = self._store.document_name(sha256) or name or "document"
            document = load_document(pdf, filename=filename, counter=self._counter, ocr=ocr)
            self._store.put_reading(sha256, tokenizer, reading_bytes(document))
            if not self._with_pdf:
                document = document_from_reading(sha256, reading_bytes(document)) or document
        with self._lock:
            kept = self._open.get(kept_as)
            if kept is not None:  # another thread opened it meanwhile: one copy is kept
                return kept
            while len(self._open) >= self._keep:
                self._open.pop(next(iter(self._open)))
            self._open[kept_as] = document
        return document
