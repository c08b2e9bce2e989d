"""Tokens as a provider billed them, normalised: a plain value that errors, adapters and the
runner all carry (it imports nothing of the project, so anything may import it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens as the provider billed them, normalised.

    ``input_tokens`` counts *uncached* input; ``cached_tokens`` were read from the prompt
    cache and ``cache_write_tokens`` written to it. Their sum is the whole prompt.
    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written with a one-hour
    lifetime (Anthropic's ``cache_creation.ephemeral_1h_input_tokens``), priced higher.
    """

    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """All input tokens, cached or not."""
        return self.input_tokens + self.cached_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )
