"""Token counting: the model family's tokenizer, or an honest estimate with a notice."""

from __future__ import annotations

import pytest

from rr_core import tokens
from rr_core.documents import load_document
from rr_core.tokens import TokenCounter, approximate_count, counter_for_model, encoding_for_model


def tiktoken_available(name: str) -> bool:
    encoding, _ = tokens._load_encoding(name)
    return encoding is not None


needs_tiktoken = pytest.mark.skipif(
    not (tiktoken_available("o200k_base") and tiktoken_available("cl100k_base")),
    reason="tiktoken encodings not loadable (set TIKTOKEN_CACHE_DIR to ../shared/tiktoken)",
)


@pytest.fixture
def no_tokenizer(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Make every tiktoken encoding fail to load, as on a machine offline without the files."""
    import tiktoken

    def offline(name: str) -> object:
        raise ConnectionError(f"cannot download {name}")

    tokens._load_encoding.cache_clear()
    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    yield
    monkeypatch.undo()
    tokens._load_encoding.cache_clear()  # later tests load the real encodings again


@pytest.mark.parametrize(
    ("model", "encoding", "estimate"),
    [
        ("gpt-4-turbo", "cl100k_base", False),
        ("gpt-4", "cl100k_base", False),
        ("gpt-4-0613", "cl100k_base", False),
        ("gpt-3.5-turbo", "cl100k_base", False),
        ("gpt-4o", "o200k_base", False),
        ("gpt-4o-mini", "o200k_base", False),
        ("gpt-4.1-mini", "o200k_base", False),
        ("o3-mini", "o200k_base", False),
        ("claude-sonnet-4-5", "o200k_base", True),
        ("Claude-3-Opus", "o200k_base", True),
        ("llama3.1", "o200k_base", True),
        ("offline", "o200k_base", False),
        ("", "o200k_base", False),
    ],
)
def test_encoding_for_model(model: str, encoding: str, estimate: bool) -> None:
    assert encoding_for_model(model) == (encoding, estimate)


@needs_tiktoken
def test_counter_for_model_uses_tiktoken_and_marks_claude_as_estimate() -> None:
    gpt4 = counter_for_model("gpt-4-turbo")
    assert (gpt4.encoding_name, gpt4.approximate, gpt4.note) == ("cl100k_base", False, "")
    assert gpt4.label == "cl100k_base"
    claude = counter_for_model("claude-sonnet-4-5")
    assert claude.encoding_name == "o200k_base" and claude.approximate
    assert "estimate" in claude.note and "claude-sonnet-4-5" in claude.note
    assert claude.label == "o200k_base (estimate)"
    # Same text, different tokenizers: the counts are the tokenizers' own.
    import tiktoken

    text = "Reprompting and in-context retrieval for long documents."
    assert gpt4.count(text) == len(tiktoken.get_encoding("cl100k_base").encode(text))
    assert counter_for_model("gpt-4o").count(text) == len(tiktoken.get_encoding("o200k_base").encode(text))


@needs_tiktoken
def test_special_token_strings_are_ordinary_text() -> None:
    counter = counter_for_model("gpt-4o")
    text = "a document quoting <|endoftext|> and <|fim_prefix|>"
    assert counter.count(text) > 5
    assert counter.count_many([text, "", "x"]) == [counter.count(text), 0, 1]


def test_approximate_counter_when_the_encoding_cannot_load(no_tokenizer: None) -> None:
    counter = counter_for_model("gpt-4o")
    assert counter.approximate and counter.encoding_name == "o200k_base"
    assert "TIKTOKEN_CACHE_DIR" in counter.note and "approximate" in counter.note
    assert counter.label.startswith("approximate")
    assert counter.count("one two three.") == approximate_count("one two three.") == 4
    assert counter.count_many(["a b", "<|endoftext|>"]) == [2, approximate_count("<|endoftext|>")]


def test_loading_without_a_tokenizer_warns_instead_of_failing(no_tokenizer: None) -> None:
    document = load_document(b"Plain text about a termination fee.", filename="a.txt")
    assert document.approximate_tokens and document.total_tokens > 0
    assert any("TIKTOKEN_CACHE_DIR" in w for w in document.warnings)


def test_approximate_count() -> None:
    assert approximate_count("") == 0
    assert approximate_count("Hello, world!") == 4  # two words, two marks
    assert approximate_count("internationalisation") == 1 + 20 // 8  # long words count extra
    assert approximate_count("über straße") == 2


def test_empty_text_is_zero_tokens_for_any_counter(counter) -> None:  # type: ignore[no-untyped-def]
    assert counter.count("") == 0
    assert TokenCounter("words", approximate=True).count("") == 0
