"""Token counting: the model family's tokenizer, or an honest estimate with a notice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rr_core import tokens
from rr_core.documents import load_document
from rr_core.tokens import TokenCounter, approximate_count, counter_for_model, encoding_for_model

ROOT = Path(__file__).resolve().parent.parent


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


def test_special_token_strings_are_ordinary_text() -> None:
    counter = counter_for_model("gpt-4o")
    text = "a document quoting <|endoftext|> and <|fim_prefix|>"
    assert counter.count(text) > 5
    assert counter.count_many([text, "", "x"]) == [counter.count(text), 0, 1]


def test_approximate_counter_when_the_encoding_cannot_load(no_tokenizer: None) -> None:
    counter = counter_for_model("gpt-4o")
    assert counter.approximate and counter.encoding_name == "o200k_base"
    assert "TIKTOKEN_CACHE_DIR" in counter.note and "estimated from words" in counter.note
    assert counter.label == "word-count estimate"
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


_FRESH_MACHINE = """
import json, os
from rr_core.tokens import counter_for_model
gpt4o, gpt4 = counter_for_model("gpt-4o"), counter_for_model("gpt-4-turbo")
print(json.dumps({
    "labels": [gpt4o.label, gpt4.label],
    "approximate": [gpt4o.approximate, gpt4.approximate],
    "counts": [gpt4o.count("Reprompting and in-context retrieval."), gpt4.count("Hello, world!")],
    "cache_variable": os.environ.get("TIKTOKEN_CACHE_DIR"),
}))
"""


def test_counts_are_exact_on_a_fresh_machine_offline(tmp_path: Path) -> None:
    """No tokenizer cache anywhere, no way to download: the shipped encodings count exactly."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env["TMPDIR"] = str(tmp_path)  # tiktoken's default cache folder lives under it: empty here
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"  # any download fails at once
    result = subprocess.run(
        [sys.executable, "-c", _FRESH_MACHINE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["labels"] == ["o200k_base", "cl100k_base"]
    assert seen["approximate"] == [False, False]
    # o200k_base: Rep|rompt|ing| and| in|-context| retrieval|.  cl100k_base: Hello|,| world|!
    assert seen["counts"] == [8, 4]
    assert seen["cache_variable"] is None  # set only while tiktoken reads the files
    assert list(tmp_path.iterdir()) == []  # and nothing was written to a cache


def test_the_bundled_files_are_checked_before_use(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert tokens.bundled_file("o200k_base") is not None
    assert tokens.bundled_file("cl100k_base") is not None
    assert tokens.bundled_file("p50k_base") is None  # not shipped
    damaged = tmp_path / tokens._BUNDLED_FILES["o200k_base"][0]
    damaged.write_text("not an encoding")
    monkeypatch.setattr(tokens, "BUNDLED_TIKTOKEN", tmp_path)
    assert tokens.bundled_file("o200k_base") is None


def test_loading_leaves_a_users_cache_setting_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tokens._load_encoding.cache_clear()
    try:
        counter = counter_for_model("gpt-4o")
    finally:
        tokens._load_encoding.cache_clear()
    assert not counter.approximate and counter.count("Hello, world!") == 4
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)


def test_text_keys_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import hashlib

    monkeypatch.setattr(tokens, "_KEY_MEMORY_LIMIT", 3)
    monkeypatch.setattr(tokens, "_KEY_OF", {})
    texts = [f"page {i} text" for i in range(10)]
    for text in texts * 2:
        assert tokens.text_key(text) == hashlib.blake2b(text.encode(), digest_size=16).digest()
        assert len(tokens._KEY_OF) <= 3
