"""Counting tokens with the model family's tokenizer, or an honest estimate without one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """Counts tokens for one model family.

    ``approximate`` is true when the count is an estimate: either the encoding could not be
    loaded (offline, no cache) or the model family has no public tokenizer (Claude).
    """

    encoding_name: str
    approximate: bool = False
    note: str = ""
    _encoding: Any = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        """A short label for the UI and CLI, e.g. ``o200k_base`` or ``~approx``."""
        if self._encoding is None:
            return "approximate (no tokenizer)"
        return self.encoding_name + (" (estimate)" if self.approximate else "")

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        if not text:
            return 0
        if self._encoding is None:
            return approximate_count(text)
        # encode_ordinary: documents may contain "<|endoftext|>", which plain encode rejects.
        return len(self._encoding.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        """Token counts for several texts, batched where the tokenizer allows."""
        if self._encoding is None:
            return [approximate_count(t) for t in texts]
        return [len(ids) for ids in self._encoding.encode_ordinary_batch(texts, num_threads=2)]


def approximate_count(text: str) -> int:
    """A tokenizer-free estimate: about 0.75 words a token, punctuation counted apiece."""
    pieces = _WORDISH.findall(text)
    long_words = sum(len(p) // 8 for p in pieces if len(p) > 8)
    return len(pieces) + long_words


def encoding_for_model(model: str) -> tuple[str, bool]:
    """The tiktoken encoding for a model id, and whether it is only an estimate there."""
    name = model.lower()
    if name.startswith(("gpt-4-", "gpt-3.5")) or name in {"gpt-4", "gpt-4-turbo"}:
        return "cl100k_base", False
    if "claude" in name:
        return "o200k_base", True
    return "o200k_base", name not in {"", "offline"} and not _is_openai(name)


def _is_openai(name: str) -> bool:
    return name.startswith(("gpt-", "o1", "o3", "o4", "chatgpt", "text-embedding"))


@lru_cache(maxsize=8)
def _load_encoding(encoding_name: str) -> tuple[Any, str]:
    try:
        import tiktoken

        return tiktoken.get_encoding(encoding_name), ""
    except Exception as exc:  # noqa: BLE001 - offline, no cache, corrupt cache: all degrade the same way
        return None, (
            f"Tokenizer {encoding_name} could not be loaded ({type(exc).__name__}); token counts "
            "are approximate. Set TIKTOKEN_CACHE_DIR to a folder holding the encoding files."
        )


def counter_for_model(model: str = "") -> TokenCounter:
    """The token counter for a model id (o200k_base by default)."""
    encoding_name, estimate = encoding_for_model(model)
    encoding, problem = _load_encoding(encoding_name)
    if encoding is None:
        return TokenCounter(encoding_name, approximate=True, note=problem)
    note = f"{encoding_name} is an estimate for {model}." if estimate else ""
    return TokenCounter(encoding_name, approximate=estimate, note=note, _encoding=encoding)
