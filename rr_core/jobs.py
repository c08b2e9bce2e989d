"""Work as plain data: a job says *what* to run, never holds the document or a plan.

A ``Job`` names where its document comes from (a ``Source``: a document by content hash, or
a recipe the Lab builds a test document from), the method and its settings, and the
questions. It serialises to JSON (and pickles), so it can be stored, shipped to a worker or
resubmitted after a restart, and it is **planned where it runs**: the runner opens its source
through a ``Resolver`` and asks the method for a plan there. Planning is pure and
deterministic, so the same job planned twice makes the same calls with the same keys: a
restarted run finds what it paid for in the call cache, and what is still in a provider
batch, instead of paying again.

Source kinds are a registry: ``DocumentRef`` is registered here, the Lab registers its trial
recipe, and ``source_from_dict`` reads any of them back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from rr_core.documents import Document
from rr_core.errors import ConfigError
from rr_core.methods import get_method
from rr_core.plans import Plan
from rr_core.settings import RunSettings
from rr_core.tokens import TokenCounter

JOB_SCHEMA_VERSION = 1

JSONValue = str | int | float | bool | None | list[Any] | dict[str, Any]


class Source(Protocol):
    """Where a job's document comes from. ``kind`` names it in ``SOURCE_KINDS``."""

    kind: ClassVar[str]

    @property
    def key(self) -> str:
        """A short stable name of the source (what a resolver caches it by)."""
        ...

    def to_dict(self) -> dict[str, JSONValue]:
        """The source as JSON (with ``kind``)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentRef:
    """A document by the SHA-256 of its bytes (as loaded), resolvable through a document store."""

    kind: ClassVar[str] = "document"
    sha256: str
    name: str = ""
    ocr: bool = False  # its reading with pages without text read by OCR (another reading than without)

    @property
    def key(self) -> str:
        """The content hash (and "+ocr" for the OCR'd reading)."""
        return f"{self.sha256}+ocr" if self.ocr else self.sha256

    def to_dict(self) -> dict[str, JSONValue]:
        """``{"kind": "document", "sha256", "name"}`` (and ``"ocr": true`` for the OCR'd reading)."""
        out: dict[str, JSONValue] = {"kind": self.kind, "sha256": self.sha256, "name": self.name}
        if self.ocr:
            out["ocr"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DocumentRef:
        """Read ``to_dict``'s output."""
        return cls(
            sha256=str(data["sha256"]), name=str(data.get("name", "")), ocr=bool(data.get("ocr", False))
        )

    @classmethod
    def of(cls, document: Document) -> DocumentRef:
        """The reference of a loaded document."""
        return cls(sha256=document.sha256, name=document.name)


SOURCE_KINDS: dict[str, Callable[[Mapping[str, Any]], Source]] = {"document": DocumentRef.from_dict}


def register_source(kind: str, reader: Callable[[Mapping[str, Any]], Source]) -> None:
    """Make a source kind readable by ``source_from_dict`` (the Lab registers its recipes)."""
    SOURCE_KINDS[kind] = reader


def source_from_dict(data: Mapping[str, Any]) -> Source:
    """A source from its JSON form; ``ConfigError`` for an unknown kind."""
    kind = str(data.get("kind", ""))
    try:
        reader = SOURCE_KINDS[kind]
    except KeyError:
        raise ConfigError(f"unknown document source {kind!r}; known: {', '.join(SOURCE_KINDS)}") from None
    return reader(data)


@dataclass(frozen=True, slots=True)
class Material:
    """An opened source: the document, and what the source knows of it (a trial's answer
    pages, which the plan's oracle reads; its facts, which the run records for scoring)."""

    document: Document
    gold_pages: tuple[int, ...] = ()
    details: Mapping[str, JSONValue] = field(default_factory=dict)


class Resolver(Protocol):
    """Opens a job's source where the job runs."""

    def open(self, source: Source) -> Material:
        """The document behind ``source`` (``ConfigError`` when it cannot be found)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One method over one document and its question(s), as plain data.

    ``settings`` is the method spec (``settings.method`` and the parameters it reads) with
    the engine and model; ``meta`` carries what the caller needs to place the result (a Lab
    series, a grid cell), never anything the run reads.
    """

    id: str
    source: Source
    settings: RunSettings
    questions: tuple[str, ...]
    tokenizer: str = ""  # the model whose tokenizer counts the prompts ("": the settings' model)
    meta: Mapping[str, JSONValue] = field(default_factory=dict)

    @property
    def token_model(self) -> str:
        """The model whose tokenizer plans this job."""
        return self.tokenizer or self.settings.model

    def to_dict(self) -> dict[str, JSONValue]:
        """The job as JSON."""
        return {
            "schema_version": JOB_SCHEMA_VERSION,
            "id": self.id,
            "source": self.source.to_dict(),
            "settings": self.settings.to_dict(),
            "questions": list(self.questions),
            "tokenizer": self.tokenizer,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Job:
        """Read ``to_dict``'s output."""
        version = int(data.get("schema_version", JOB_SCHEMA_VERSION))
        if version > JOB_SCHEMA_VERSION:
            raise ConfigError(
                f"This job was written by a newer version (job schema {version}; this one reads up to "
                f"{JOB_SCHEMA_VERSION})."
            )
        return cls(
            id=str(data["id"]),
            source=source_from_dict(data["source"]),
            settings=RunSettings.from_dict(dict(data["settings"])),
            questions=tuple(str(q) for q in data["questions"]),
            tokenizer=str(data.get("tokenizer", "")),
            meta=dict(data.get("meta") or {}),
        )


def plan_job(job: Job, material: Material, counter: TokenCounter) -> Plan:
    """The job's plan on its opened document (pure; the same job plans the same calls)."""
    settings = job.settings.but(gold_pages=material.gold_pages) if material.gold_pages else job.settings
    return get_method(settings.method).plan(material.document, job.questions, settings, counter)


class Documents:
    """A resolver over documents already in memory, then a document store's bytes.

    ``loader`` turns stored bytes back into a ``Document`` (the caller's loading options);
    opened documents are kept (a few at a time) so a job's many runs read one copy.
    """

    def __init__(
        self,
        documents: Sequence[Document] = (),
        *,
        fetch: Callable[[str], tuple[bytes, str] | None] | None = None,
        loader: Callable[[bytes, str], Document] | None = None,
        keep: int = 8,
    ) -> None:
        self._known: dict[str, Document] = {d.sha256: d for d in documents}
        self._fetch, self._loader, self._keep = fetch, loader, keep
        self._openers: dict[str, Callable[[Source], Material]] = {}

    def add(self, document: Document) -> DocumentRef:
        """Make a loaded document resolvable; its reference."""
        self._known[document.sha256] = document
        return DocumentRef.of(document)

    def register(self, kind: str, opener: Callable[[Source], Material]) -> None:
        """Open sources of ``kind`` (e.g. the Lab's trial recipes) with ``opener``."""
        self._openers[kind] = opener

    def open(self, source: Source) -> Material:
        """The document behind the source."""
        opener = self._openers.get(source.kind)
        if opener is not None:
            return opener(source)
        if not isinstance(source, DocumentRef):
            raise ConfigError(f"No way to open a {source.kind!r} source here.")
        known = self._known.get(source.sha256)
        if known is not None:
            return Material(known)
        found = self._fetch(source.sha256) if self._fetch is not None else None
        if found is None or self._loader is None:
            raise ConfigError(
                f"The document {source.name or source.sha256[:12]} (sha256 {source.sha256[:12]}…) is not "
                "in the document store: open it again to run this."
            )
        data, name = found
        document = self._loader(data, name)
        if len(self._known) >= self._keep:
            self._known.pop(next(iter(self._known)))
        self._known[document.sha256] = document
        return Material(document)
