"""Requests and checks shared by the provider adapter tests (``tests/test_llm_*.py``).

The adapters' fixtures (``stub``, ``refused_port``) are in ``conftest.py``.
"""

from __future__ import annotations

import pytest

from rr_core.errors import LLMError
from rr_core.llm.base import LLMRequest
from rr_core.llm.structured import SDKAdapter
from rr_core.outputs import AnswerOut, RetrievalOut

PROMPT = 'Pages follow.\n<page 1>The sky is blue.</page 1>\nQuestion: What colour is the sky?\nReply as JSON with "answer" and "page".'
RETRIEVE_PROMPT = 'Pages follow.\nQuestion: What colour is the sky?\nList the relevant "pages" as JSON.'


def answer_request(model: str = "", max_output_tokens: int = 1024, timeout_s: float = 120.0) -> LLMRequest:
    """An answer call; an empty ``model`` leaves the client's own."""
    return LLMRequest(
        prompt=PROMPT,
        schema=AnswerOut,
        model=model,
        max_output_tokens=max_output_tokens,
        timeout_s=timeout_s,
    )


def retrieve_request(model: str = "") -> LLMRequest:
    """A retrieval call; an empty ``model`` leaves the client's own."""
    return LLMRequest(prompt=RETRIEVE_PROMPT, schema=RetrievalOut, model=model)


def raised(client: SDKAdapter, request: LLMRequest | None = None) -> LLMError:
    """The ``LLMError`` that ``client`` raises for ``request`` (default: an answer call)."""
    with pytest.raises(LLMError) as info:
        client.complete(request or answer_request())
    return info.value
