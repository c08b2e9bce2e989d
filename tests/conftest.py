"""Shared fixtures. No test may spend money: real keys are removed from the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data" / "documents"

_PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
)


@pytest.fixture(autouse=True)
def _no_real_providers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in _PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # Every test gets its own run ledger.
    monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / "runs.sqlite3"))


@pytest.fixture(scope="session")
def shared_documents() -> Path:
    """The real documents beside the project; tests using them skip when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (a user's clone has no shared/)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def counter():  # type: ignore[no-untyped-def]
    """The default token counter (tiktoken when its files load, else the estimate)."""
    from rr_core.tokens import counter_for_model

    return counter_for_model("gpt-4.1-mini")


def word_counter():  # type: ignore[no-untyped-def]
    """A tokenizer-free counter: one token per word. Keeps pure tests independent of tiktoken."""
    from rr_core.tokens import TokenCounter

    return TokenCounter("words", approximate=True)


os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")
