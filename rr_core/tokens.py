"""Counting tokens with the model family's tokenizer, or an honest estimate without one.

The o200k_base and cl100k_base encodings ship with the project (``rr_core/data/tiktoken``,
OpenAI's files from the MIT-licensed tiktoken project, byte for byte), so counts are exact
offline and on a fresh machine; tiktoken's own loader reads them and checks their SHA-256.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from rr_core.llm.providers import OFFLINE

BUNDLED_TIKTOKEN = Path(__file__).resolve().parent / "data" / "tiktoken"

# Each bundled file is named as tiktoken names its cache entry (the SHA-1 of the encoding's
# download address), with the SHA-256 tiktoken itself expects of the content.
_BUNDLED_FILES: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
_CACHE_VARIABLE = "TIKTOKEN_CACHE_DIR"
_environment_lock = threading.Lock()

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
        """A short label for the UI and CLI: ``o200k_base``, ``o200k_base (estimate)`` for a model
        without a public tokenizer, or ``word-count estimate`` when no tokenizer loads."""
        if self._encoding is None:
            return "word-count estimate"
        return self.encoding_name + (" (estimate)" if self.approximate else "")

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        if not text:
            return 0
        if self._encoding is None:
            return approximate_count(text)
        # encode_ordinary: documents may contain "<|endoftext|>", which plain encode rejects.
        return len(self._encoding.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts for several texts (a document's pages), remembered for ``count_known``.

        One text at a time, each token list dropped as soon as it is counted: a 3,000-page
        document no longer holds two million token ids at once. (Two threads saved about 3%
        of a load's time and cost 6 MiB of peak memory for the second thread's heap.)
        """
        counts = [self.count(t) for t in texts]
        _KNOWN.remember(((self._memo_kind, text_key(t)) for t in texts), counts)
        return counts

    def count_known(self, text: str, key: bytes | None = None) -> int:
        """``count(text)``, taken from memory when this text was counted before (a page counted
        when its document was loaded); ``key`` is ``text_key(text)`` when the caller has it."""
        memo_key = (self._memo_kind, key if key is not None else text_key(text))
        known = _KNOWN.get(memo_key)
        if known is None:
            known = self.count(text)
            _KNOWN.remember([memo_key], [known])
        return known

    @property
    def _memo_kind(self) -> str:
        # Counts differ by tokenizer; every counter without one counts the same estimate.
        return self.encoding_name if self._encoding is not None else "~approximate"


def text_key(text: str) -> bytes:
    """A short digest identifying a text, for memos keyed by page text.

    Remembered for the last few thousand texts: a run looks its pages up several times (the
    page memory, the usage count), and a string's own hash is computed once and kept, so
    the same page text is digested once, not once per call (8% of an offline ask).
    """
    # By the string's own hash (kept on the string) and length, not by the text: the memory
    # holds no text. (Page texts parsed out of each prompt were held here until 6,000 had
    # come, 12 MB that grew with a grid's corpus.) Two texts of the same length and 64-bit
    # hash (SipHash, seeded per process) are about 1 in 10^15 among 6,000.
    seen = (hash(text), len(text))
    key = _KEY_OF.get(seen)
    if key is None:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if len(_KEY_OF) >= _KEY_MEMORY_LIMIT:
            _KEY_OF.clear()  # a crude bound
        _KEY_OF[seen] = key
    return key


# Above the largest document's page count (5,000): one document's pages all stay.
_KEY_MEMORY_LIMIT = 6_000
_KEY_OF: dict[tuple[int, int], bytes] = {}


class _CountMemo:
    """A bounded, thread-safe memory of token counts by (tokenizer, text digest)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._counts: OrderedDict[tuple[str, bytes], int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, bytes]) -> int | None:
        with self._lock:
            count = self._counts.get(key)
            if count is not None:
                self._counts.move_to_end(key)
            return count

    def remember(self, keys: Iterable[tuple[str, bytes]], counts: Sequence[int]) -> None:
        with self._lock:
            for key, count in zip(keys, counts, strict=True):
                self._counts[key] = count
                self._counts.move_to_end(key)
            while len(self._counts) > self.capacity:
                self._counts.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


# Room for the pages of two of the largest documents (5,000 pages each), least lately used
# let go first; an entry is about 150 bytes (1.5 MB full). A grid's corpus goes through it,
# the documents in flight staying: sized for several of the largest, it held 3 MB more at
# 1,000 documents than at 300.
_KNOWN = _CountMemo(capacity=10_240)


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
    # A free engine's model id ("offline") has no tokenizer of its own: not an estimate there.
    return "o200k_base", name not in {"", *_FREE_ENGINE_MODELS} and not _is_openai(name)


_FREE_ENGINE_MODELS = frozenset({OFFLINE.default_model})


def _is_openai(name: str) -> bool:
    return name.startswith(("gpt-", "o1", "o3", "o4", "chatgpt", "text-embedding"))


def bundled_file(encoding_name: str) -> Path | None:
    """The shipped file of an encoding, when it is there and intact (its SHA-256 checked)."""
    entry = _BUNDLED_FILES.get(encoding_name)
    if entry is None:
        return None
    path = BUNDLED_TIKTOKEN / entry[0]
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == entry[1] else None


def _from_bundled_files(tiktoken: Any, encoding_name: str) -> Any:
    """tiktoken's own loader, pointed at the shipped files for this one call.

    tiktoken reads its cache folder from the environment; the variable is set only while the
    encoding is built (tiktoken keeps the built encoding) and restored at once, so a user's
    own ``TIKTOKEN_CACHE_DIR`` still serves any other encoding. The file was checked first, so
    tiktoken never finds a damaged cache entry to delete in the package folder.
    """
    with _environment_lock:
        saved = os.environ.get(_CACHE_VARIABLE)
        os.environ[_CACHE_VARIABLE] = str(BUNDLED_TIKTOKEN)
        try:
            return tiktoken.get_encoding(encoding_name)
        finally:
            if saved is None:
                del os.environ[_CACHE_VARIABLE]
            else:
                os.environ[_CACHE_VARIABLE] = saved


@lru_cache(maxsize=8)
def _load_encoding(encoding_name: str) -> tuple[Any, str]:
    try:
        import tiktoken

        if bundled_file(encoding_name) is not None:
            return _from_bundled_files(tiktoken, encoding_name), ""
        # Not shipped (or damaged): tiktoken's usual cache, or a download.
        return tiktoken.get_encoding(encoding_name), ""
    except Exception as exc:  # noqa: BLE001 - offline, no cache, corrupt cache: all degrade the same way
        return None, (
            f"Tokenizer {encoding_name} could not be loaded ({type(exc).__name__}), so token counts "
            f"are estimated from words. Its file ships in {BUNDLED_TIKTOKEN}: reinstall R&R Studio, "
            "or set TIKTOKEN_CACHE_DIR to a folder holding tiktoken's encoding files."
        )


def counter_for_model(model: str = "") -> TokenCounter:
    """The token counter for a model id (o200k_base by default)."""
    encoding_name, estimate = encoding_for_model(model)
    encoding, problem = _load_encoding(encoding_name)
    if encoding is None:
        return TokenCounter(encoding_name, approximate=True, note=problem)
    note = f"{encoding_name} is an estimate for {model}." if estimate else ""
    return TokenCounter(encoding_name, approximate=estimate, note=note, _encoding=encoding)
