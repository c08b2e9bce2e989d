"""Reading a model's JSON tolerantly: the first object in prose or fences, pages as ints.

The output shapes themselves (and their validation) live in ``rr_core.outputs``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rr_core.errors import ResponseParseError

NA = "n/a"


def coerce_page(value: Any) -> int | str:
    """`7`, `"7"`, `"page 7"`, `7.0` become 7; anything else is ``n/a``."""
    if isinstance(value, bool) or value is None:
        return NA
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        if _DECIMAL.search(value):  # "3.5" is no page; reading it as 3 would cite a wrong one
            return NA
        match = re.search(r"-?\d+", value)
        if match:
            return int(match.group())
    return NA


_DECIMAL = re.compile(r"\d\.\d")


def unusable_pages(value: Any) -> list[str]:
    """The items of a page list that are not page numbers (``3.5``, ``"three"``), as given."""
    items = value if isinstance(value, (list, tuple)) else [value] if value is not None else []
    out = []
    for item in items:
        if isinstance(item, dict):
            item = next((v for k, v in item.items() if "page" in str(k).lower()), None)
        if item is not None and not isinstance(coerce_page(item), int):
            out.append(str(item))
    return out


def page_list(value: Any) -> list[int]:
    """A list of page numbers from what models send: ints, strings, "3, 5", [{"page": 3}]."""
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
        page = coerce_page(item)
        if isinstance(page, int):
            out.append(page)
    return out


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
