"""Reading the model's JSON: strict where the provider validated it, tolerant otherwise."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from rr_core.errors import ResponseParseError

NA = "n/a"


class AnswerOut(BaseModel):
    """What an answer call returns: the answer and the page that holds it."""

    model_config = ConfigDict(extra="ignore")

    question: str = ""
    answer: str
    page: int | str = NA

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_to_text(cls, value: Any) -> str:
        if value is None:
            return NA
        if isinstance(value, (list, tuple)):
            return "; ".join(str(v) for v in value)
        return str(value).strip()

    @field_validator("page", mode="before")
    @classmethod
    def _page_to_int(cls, value: Any) -> int | str:
        return _coerce_page(value)

    @property
    def page_number(self) -> int | None:
        """The cited page as an int, or None for ``n/a``."""
        return self.page if isinstance(self.page, int) else None


class RetrievalOut(BaseModel):
    """What a retrieval call returns: page numbers, most relevant first."""

    model_config = ConfigDict(extra="ignore")

    question: str = ""
    # Required: a reply without any list of pages is a parse error, not "nothing relevant".
    pages: list[int]

    @field_validator("pages", mode="before")
    @classmethod
    def _pages_to_ints(cls, value: Any) -> list[int]:
        if value is None:
            return []
        if isinstance(value, str):
            value = re.findall(r"\d+", value)
        elif not isinstance(value, (list, tuple)):
            value = [value]  # a lone number (7, 7.0) or object
        out: list[int] = []
        for item in value:
            if isinstance(item, dict):  # [{"page": 3}, ...]
                item = next((v for k, v in item.items() if "page" in str(k).lower()), None)
            page = _coerce_page(item)
            if isinstance(page, int):
                out.append(page)
        return out


def _coerce_page(value: Any) -> int | str:
    """`7`, `"7"`, `"page 7"`, `7.0` become 7; anything else is ``n/a``."""
    if isinstance(value, bool) or value is None:
        return NA
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = re.search(r"-?\d+", value)
        if match:
            return int(match.group())
    return NA


# The JSON schemas sent to providers that support structured output. Pages are strings so
# that "n/a" is expressible; the validators above turn them into ints.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "answer": {"type": "string"},
        "page": {"type": "string"},
    },
    "required": ["question", "answer", "page"],
    "additionalProperties": False,
}

RETRIEVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string"},
        "pages": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["question", "pages"],
    "additionalProperties": False,
}


def schema_for(task: str) -> dict[str, Any]:
    """The JSON schema the given task's response must follow."""
    return RETRIEVAL_SCHEMA if task == "retrieve" else ANSWER_SCHEMA


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: bare, fenced, or embedded in prose."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    # Scan for the first '{' that starts a decodable object (prose around the JSON).
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    preview = text.strip().replace("\n", " ")[:120]
    raise ResponseParseError(f"The model did not return a JSON object (it said: {preview!r}).", text)


def parse_answer(text: str) -> AnswerOut:
    """Parse an answer call's output; raises ``ResponseParseError`` when it is unusable."""
    data = extract_json(text)
    try:
        return AnswerOut.model_validate(data)
    except ValidationError as exc:
        raise ResponseParseError(
            f"The model's answer JSON lacks the expected keys ({_first_error(exc)}).", text
        ) from exc


def parse_retrieval(text: str) -> RetrievalOut:
    """Parse a retrieval call's output; raises ``ResponseParseError`` when it is unusable."""
    data = extract_json(text)
    if "pages" not in data:
        # Tolerate a near miss such as {"page_numbers": [...]}.
        for key, value in data.items():
            if "page" in key.lower() and isinstance(value, list):
                data = {**data, "pages": value}
                break
    try:
        return RetrievalOut.model_validate(data)
    except ValidationError as exc:
        raise ResponseParseError(
            f"The model's retrieval JSON lacks a list of pages ({_first_error(exc)}).", text
        ) from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "object"
    return f"{where}: {err.get('msg', 'invalid')}"
