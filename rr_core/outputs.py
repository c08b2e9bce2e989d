"""What a call asks the model to return: one pydantic model per output shape.

A request carries one of these classes as its schema, so the provider adapters and the
offline engine learn *what shape* to return, never which method asked. Each class knows its
wire schema (the strict JSON schema sent to providers that support structured output) and
how to read a reply tolerantly (models wrap JSON in prose, fences and near-miss keys).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rr_core.errors import ResponseParseError
from rr_core.parsing import NA, coerce_page, extract_json, page_list, unusable_pages

T = TypeVar("T", bound="Output")


class Output(BaseModel):
    """Base of every output shape."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    WIRE_NAME: ClassVar[str] = "output"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = {}
    # False: the reply is plain text (the paper's protocol): no structured output is asked for.
    STRUCTURED: ClassVar[bool] = True

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Tolerate near misses before validation (renamed keys and the like)."""
        return data

    @classmethod
    def parse(cls: type[T], text: str) -> T:
        """Read a reply; raises ``ResponseParseError`` when it is unusable."""
        data = cls.prepare(extract_json(text))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ())) or "object"
            raise ResponseParseError(
                f"The model's JSON lacks what was asked ({cls.WIRE_NAME}: {where}: {err.get('msg', 'invalid')}).",
                text,
            ) from exc


def _strict(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# Most citations one answer keeps: a list question needs a handful, a runaway reply is cut.
MAX_CITATIONS = 20
# How an answer says the document does not hold it (compared lower-case, without end punctuation).
NOT_STATED = "not stated in the document"
# ("none" is left out: it can be a real answer, "Which fees are waived? None.")
_NOT_STATED_FORMS = frozenset(
    {"", "n/a", "na", "not stated", NOT_STATED, "not found", "not in the document", "not found in the document",
     "not mentioned in the document", "the document does not say", "not stated in the extracts"}
)  # fmt: skip
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})


def says_not_stated(answer: str | None) -> bool:
    """Whether an answer's text is one of the ways of saying the document does not hold it."""
    return answer is None or answer.strip().lower().rstrip(".!") in _NOT_STATED_FORMS


def _flag(value: Any) -> bool | None:
    """A yes/no as models write it (true, "true", "yes", 1), or None when it is none of those."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in _TRUE else False if word in _FALSE else None
    return None


class CitationOut(BaseModel):
    """One passage an answer rests on: its page and its sentence, quoted word for word."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    page: int | str = NA
    quote: str = ""
    # The page as the reply gave it, when that was not a page number ("3.5"): said, not dropped.
    page_given: str = ""

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        if isinstance(data, str):  # a bare quote
            return {"quote": data}
        if isinstance(data, (int, float)) and not isinstance(data, bool):  # a bare page
            return {"page": data}
        if not isinstance(data, dict):
            return {}
        data = dict(data)
        if "page" not in data:  # {"page_number": 3}
            data["page"] = next((v for k, v in data.items() if "page" in str(k).lower()), NA)
        if "quote" not in data:  # {"text": "..."}, {"sentence": "..."}
            data["quote"] = next(
                (data[k] for k in ("text", "sentence", "passage", "excerpt") if k in data), ""
            )
        if not data.get("page_given"):
            raw = data.get("page")
            bad = unusable_pages(raw)
            if bad and str(raw).strip().lower() not in ("n/a", "na", "none", ""):
                data["page_given"] = bad[0]
        return data

    @field_validator("quote", mode="before")
    @classmethod
    def _quote(cls, value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        text = str(value).strip()
        return "" if text.lower() in ("n/a", "na", "none") else text

    @field_validator("page", mode="before")
    @classmethod
    def _page(cls, value: Any) -> int | str:
        return coerce_page(value)

    @property
    def page_number(self) -> int | None:
        """The cited page as an int, or None for ``n/a``."""
        return self.page if isinstance(self.page, int) else None

    @property
    def empty(self) -> bool:
        """Neither a page nor a quote: nothing cited."""
        return self.page_number is None and not self.quote and not self.page_given


class AnswerOut(Output):
    """An answer, whether the document states it, and the passages it rests on, each quoted
    with its page.

    Read tolerantly: a reply in the first shape (one ``page`` and one ``quote``) is one
    citation; an answer of ``n/a`` (or "not stated in the document") is ``found = false``.
    """

    WIRE_NAME: ClassVar[str] = "answer"
    # Pages are strings so that "n/a" is expressible; the validators turn them into ints.
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = _strict(
        {
            "question": {"type": "string"},
            "answer": {"type": "string"},
            "found": {"type": "boolean"},
            "citations": {
                "type": "array",
                "items": _strict({"page": {"type": "string"}, "quote": {"type": "string"}}),
            },
        }
    )

    question: str = ""
    answer: str
    found: bool = True
    citations: list[CitationOut] = Field(default_factory=list)
    citations_cut: int = 0  # citations beyond MAX_CITATIONS, left out
    # Not asked of models: a reader that found nothing (the offline engine) names the pages
    # worth reading, best first, so "not found" does not lose them.
    pages_to_read: list[int] = Field(default_factory=list)
    # Not asked of models either: "reader" when the reply comes from a reader that found
    # nothing (the offline engine: "Not found", a claim about its search, not the document).
    absent_by: str = ""

    @field_validator("pages_to_read", mode="before")
    @classmethod
    def _to_read(cls, value: Any) -> list[int]:
        return page_list(value)[:20]

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "citations" not in data:
            alias = next((k for k in ("citation", "sources", "evidence") if k in data), None)
            if alias is not None:
                data["citations"] = data[alias]
            elif any(k in data for k in ("page", "quote")):  # the first shape: one page, one quote
                data["citations"] = [{"page": data.get("page", NA), "quote": data.get("quote", "")}]
        cited = data.get("citations")
        if cited is None:
            cited = []
        elif not isinstance(cited, (list, tuple)):
            cited = [cited]
        data["citations"] = list(cited)
        flag = _flag(data.get("found"))
        data["found"] = True if flag is None else flag
        return data

    @model_validator(mode="after")
    def _settle(self) -> AnswerOut:
        if says_not_stated(self.answer):
            self.found = False
        if not self.found:
            self.citations = []  # nothing is cited for what the document does not say
            return self
        kept: list[CitationOut] = []
        seen: set[tuple[int | str, str]] = set()
        for citation in self.citations:
            key = (citation.page, " ".join(citation.quote.split()))
            if citation.empty or key in seen:
                continue
            seen.add(key)
            kept.append(citation)
        self.citations_cut = max(len(kept) - MAX_CITATIONS, 0)
        self.citations = kept[:MAX_CITATIONS]
        return self

    @field_validator("answer", mode="before")
    @classmethod
    def _to_text(cls, value: Any) -> str:
        if value is None:
            return NA
        if isinstance(value, (list, tuple)):
            return "; ".join(str(v) for v in value)
        return str(value).strip()

    @property
    def page_number(self) -> int | None:
        """The first citation's page as an int, or None."""
        return self.citations[0].page_number if self.citations else None

    @property
    def quote(self) -> str:
        """The first citation's quote, or ""."""
        return self.citations[0].quote if self.citations else ""


class RetrievalOut(Output):
    """Page numbers most relevant to one question, most relevant first."""

    WIRE_NAME: ClassVar[str] = "retrieval"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = _strict(
        {"question": {"type": "string"}, "pages": {"type": "array", "items": {"type": "integer"}}}
    )

    question: str = ""
    # Required: a reply without any list of pages is a parse error, not "nothing relevant".
    pages: list[int]
    # What the reply gave as pages that are not page numbers (3.5, "three"): said, not dropped silently.
    unusable: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _note_unusable(cls, data: Any) -> Any:
        if isinstance(data, dict) and "pages" in data and not data.get("unusable"):
            return {**data, "unusable": unusable_pages(data["pages"])}
        return data

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "pages" not in data:  # tolerate {"page_numbers": [...]}
            for key, value in data.items():
                if "page" in key.lower() and isinstance(value, list):
                    return {**data, "pages": value}
        return data

    @field_validator("pages", mode="before")
    @classmethod
    def _pages(cls, value: Any) -> list[int]:
        return page_list(value)


class QuestionPages(BaseModel):
    """One entry of a several-questions retrieval: the question's number and its pages."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    question: int
    pages: list[int] = Field(default_factory=list)

    @field_validator("question", mode="before")
    @classmethod
    def _number(cls, value: Any) -> int:
        page = coerce_page(value)
        if not isinstance(page, int):
            raise ValueError("question must be the question's number")
        return page

    @field_validator("pages", mode="before")
    @classmethod
    def _pages(cls, value: Any) -> list[int]:
        return page_list(value)


class MultiRetrievalOut(Output):
    """Pages for each of several numbered questions, in one reply (000 §9)."""

    WIRE_NAME: ClassVar[str] = "retrieval_per_question"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = _strict(
        {
            "results": {
                "type": "array",
                "items": _strict(
                    {
                        "question": {"type": "integer"},
                        "pages": {"type": "array", "items": {"type": "integer"}},
                    }
                ),
            }
        }
    )

    results: list[QuestionPages]

    @classmethod
    def prepare(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "results" not in data:
            # {"1": [3, 4], "2": [9]}: numbered keys (checked first: their values are lists too)
            numbered = {k: v for k, v in data.items() if re.fullmatch(r"\d+", str(k))}
            if numbered:
                return {"results": [{"question": k, "pages": v} for k, v in numbered.items()]}
            lists = [v for v in data.values() if isinstance(v, list)]
            if lists:
                return {"results": lists[0]}
        return data

    def pages_for(self, count: int) -> tuple[dict[int, list[int]], list[int], list[int]]:
        """(pages per question 1..count, question numbers missing, extra numbers ignored)."""
        found: dict[int, list[int]] = {}
        extra: list[int] = []
        for entry in self.results:
            if 1 <= entry.question <= count:
                found.setdefault(entry.question, []).extend(
                    p for p in entry.pages if p not in found.get(entry.question, [])
                )
            else:
                extra.append(entry.question)
        missing = [n for n in range(1, count + 1) if n not in found]
        return found, missing, extra


class Extract(BaseModel):
    """A piece of a page that bears on the question."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    page: int | str = NA
    text: str = ""

    @field_validator("page", mode="before")
    @classmethod
    def _page(cls, value: Any) -> int | str:
        return coerce_page(value)

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value).strip()


class ExtractionOut(Output):
    """What a partition of passages says about the question (BriefContext's map step)."""

    WIRE_NAME: ClassVar[str] = "extraction"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = _strict(
        {
            "relevant": {"type": "boolean"},
            "extracts": {
                "type": "array",
                "items": _strict({"page": {"type": "string"}, "text": {"type": "string"}}),
            },
            "answer": {"type": "string"},
        }
    )

    relevant: bool = False
    extracts: list[Extract] = Field(default_factory=list)
    answer: str = NA

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, value: Any) -> str:
        return NA if value is None else str(value).strip()

    @field_validator("extracts", mode="before")
    @classmethod
    def _extracts(cls, value: Any) -> list[Any]:
        if value is None:
            return []
        if isinstance(value, str):
            return [{"text": value}] if value.strip() else []
        return list(value) if isinstance(value, (list, tuple)) else [value]


# ---- Plain-text replies (the paper's protocol) ---------------------------------------------
#
# The paper asks for an answer and its page, or for page numbers, in plain text. Models write
# the labels their own way ("**Answer:**", "answer -", a bullet), put the page in brackets, or
# answer in JSON all the same: each is read here, and a reply that names nothing usable is a
# ``ResponseParseError`` (a failed call, never a silent "not found").

_LABELLED = re.compile(
    r"^[ \t*_#>`\-]*(answer|pages?|page numbers?)[ \t*_`]*(?:\(s\))?[ \t*_`]*[:=\-–][ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_PAGE_IN_ANSWER = re.compile(r"[(\[,;]?\s*\(?\bpage\s+(\d+)\)?\]?\s*[.;]?\s*$", re.IGNORECASE)
_NUMBERS = re.compile(r"\d+(?:\.\d+)?(?:[ \t]*[-–][ \t]*\d+)?")
_NUMBER_LINE = re.compile(r"^[\s\-*•\[\](),;.]*\d[\d\s,;.\-–•*\[\]()and]*$", re.IGNORECASE)
_NOTHING = frozenset({"n/a", "na", "none", "no pages", "no page", "nothing", "not found"})
# A range wider than this ("1-4000") is not a list of pages: its ends are taken as they are.
_MAX_RANGE = 50


# The labels of a plain-text reply, as ``_labelled`` keys them.
_ANSWER, _PAGE, _PAGES = "answer", "page", "pages"


def _label_of(match: re.Match[str]) -> str:
    """The label a labelled line names: the answer, one page, or several pages."""
    word = match.group(1).lower()
    if word.startswith("a"):
        return _ANSWER
    return _PAGES if word.startswith(("pages", "page n")) else _PAGE


def _labelled(text: str) -> dict[str, str]:
    """The first value of each label ("answer", "page", "pages") in a reply; a label with no
    value on its line takes the next non-empty line."""
    found: dict[str, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _LABELLED.match(line)
        if match is None:
            continue
        label = _label_of(match)
        value = match.group(2).strip()
        if not value:
            value = next((rest.strip() for rest in lines[i + 1 :] if rest.strip()), "")
        found.setdefault(label, _unwrap(value))
    return found


def _unwrap(value: str) -> str:
    """A value without the markup and quotes models put around it."""
    value = value.strip().strip("*_`").strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    return value


def _page_numbers(text: str) -> tuple[list[int], list[str]]:
    """Page numbers in a piece of text, in order (a small range "3-5" counts its pages), and
    what was written as a page but is none ("3.5")."""
    pages: list[int] = []
    unusable: list[str] = []
    for token in _NUMBERS.findall(text):
        if "." in token:
            unusable.append(token)
            continue
        ends = [int(n) for n in re.findall(r"\d+", token)]
        if len(ends) == 2 and 0 <= ends[1] - ends[0] <= _MAX_RANGE:
            pages.extend(range(ends[0], ends[1] + 1))
        else:
            pages.extend(ends)
    return list(dict.fromkeys(pages)), unusable


def _looks_like_json(text: str) -> bool:
    stripped = text.strip().strip("`").strip()
    return stripped.startswith("{") or stripped.lower().startswith("json")


class PlainAnswerOut(AnswerOut):
    """An answer and its page in plain text ("Answer: ...", "Page: 7"): the paper's reply.
    No quote is asked for, so a citation holds only the page."""

    WIRE_NAME: ClassVar[str] = "plain_answer"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = {}
    STRUCTURED: ClassVar[bool] = False

    @classmethod
    def parse(cls, text: str) -> PlainAnswerOut:
        """Read a plain-text answer (or, from a model that answered in JSON anyway, the JSON)."""
        if _looks_like_json(text):
            try:
                return super().parse(text)
            except ResponseParseError:
                pass  # read it as text below
        values = _labelled(text)
        answer = values.get(_ANSWER)
        page_text = values.get(_PAGE) or values.get(_PAGES) or ""
        if answer is None:
            # No label: the first line that is not the page's.
            rest = [
                line.strip()
                for line in text.splitlines()
                if line.strip() and not ((match := _LABELLED.match(line)) and _label_of(match) != _ANSWER)
            ]
            answer = _unwrap(rest[0]) if rest else ""
        if not page_text:
            inline = _PAGE_IN_ANSWER.search(answer)
            if inline is not None and inline.start() > 0:  # "Paris (page 7)"
                page_text, answer = inline.group(1), answer[: inline.start()].strip()
        if not answer:
            preview = text.strip().replace("\n", " ")[:120]
            raise ResponseParseError(f"The model's reply holds no answer (it said: {preview!r}).", text)
        data: dict[str, Any] = {"answer": answer}
        if page_text and page_text.strip().lower().rstrip(".") not in _NOTHING:
            data["citations"] = [{"page": page_text}]
        return cls.model_validate(data)


class PlainRetrievalOut(RetrievalOut):
    """Page numbers in plain text ("Pages: 3, 17, 42"): the paper's retrieval reply."""

    WIRE_NAME: ClassVar[str] = "plain_retrieval"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = {}
    STRUCTURED: ClassVar[bool] = False

    @classmethod
    def parse(cls, text: str) -> PlainRetrievalOut:
        """Read the page numbers of a plain-text reply: after a "Pages:" label where there is
        one, else on the lines that hold only numbers, else anywhere in the reply."""
        if _looks_like_json(text):
            try:
                return super().parse(text)
            except ResponseParseError:
                pass
        values = _labelled(text)
        where = values.get(_PAGES) or values.get(_PAGE)
        if where is None:
            lines = [line for line in text.splitlines() if _NUMBER_LINE.match(line.strip())]
            where = "\n".join(lines) if lines else text
        pages, unusable = _page_numbers(where)
        if not pages and not unusable:
            said = where.strip().lower().rstrip(".")
            if said not in _NOTHING and not any(word in said for word in ("no relevant", "none of")):
                preview = text.strip().replace("\n", " ")[:120]
                raise ResponseParseError(f"The model's reply names no page (it said: {preview!r}).", text)
        return cls.model_validate({"pages": pages, "unusable": unusable})


# What a check of an answer against its quotes can find (MISSING: the check gave no verdict).
VERDICTS = ("supported", "partial", "unsupported")
UNCHECKED = "unchecked"
# The longest reason kept: one line.
MAX_REASON_CHARS = 300


class VerificationOut(Output):
    """A verifier's verdict on one answer: whether its quotes state it, and why, in one line.

    Read strictly on the verdict (one of ``VERDICTS``, case and spacing aside; anything else is
    a ``ResponseParseError``, so that nothing looks checked that was not)."""

    WIRE_NAME: ClassVar[str] = "verification"
    WIRE_SCHEMA: ClassVar[dict[str, Any]] = _strict(
        {"verdict": {"type": "string", "enum": list(VERDICTS)}, "reason": {"type": "string"}}
    )

    verdict: str
    reason: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _verdict(cls, value: Any) -> str:
        word = str(value).strip().lower() if isinstance(value, str) else ""
        if word not in VERDICTS:
            raise ValueError(f"a verdict is one of {', '.join(VERDICTS)}, not {str(value)[:40]!r}")
        return word

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> str:
        text = " ".join(str(value or "").split())
        return text[:MAX_REASON_CHARS]


OUTPUTS: tuple[type[Output], ...] = (
    AnswerOut,
    RetrievalOut,
    MultiRetrievalOut,
    ExtractionOut,
    VerificationOut,
)


# The paper's plain-text form of each JSON shape that has one.
PLAIN_FORMS: dict[type[Output], type[Output]] = {AnswerOut: PlainAnswerOut, RetrievalOut: PlainRetrievalOut}
# The plain-text shapes (no wire schema: ``OUTPUTS`` lists the structured ones).
PLAIN_OUTPUTS: tuple[type[Output], ...] = tuple(PLAIN_FORMS.values())


def output_named(name: str) -> type[Output]:
    """The output class of a wire name (traces store the name)."""
    for cls in (*OUTPUTS, *PLAIN_OUTPUTS):
        if name == cls.WIRE_NAME:
            return cls
    raise KeyError(name)
