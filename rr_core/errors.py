"""The errors a user can act on. Their messages are safe to show as they are.

    RRError
    ├── DocumentError          a file we cannot read (names the file)
    │   ├── PasswordRequired   encrypted PDF, no password given
    │   ├── WrongPassword      encrypted PDF, password rejected
    │   ├── NoTextError        no page has a text layer (scanned)
    │   ├── EmptyDocument      nothing in it
    │   ├── CorruptDocument    not a readable file of its type
    │   ├── DocumentTooLarge   over the size or page limit
    │   └── UnsupportedType    a type we do not load
    ├── LLMError               a provider call failed
    │   ├── MissingKeyError    no API key: says which variable to set
    │   ├── AuthError          key rejected
    │   ├── RateLimitError     429: wait and retry
    │   ├── ContextTooLongError  prompt over the model's window: suggests a chunked method
    │   ├── ProviderTimeout    no answer in time
    │   └── ProviderError      anything else the provider said (5xx, 4xx, connection)
    ├── ResponseParseError     the model's output was not the JSON we asked for
    ├── LedgerError            the run history file cannot be read or written
    ├── BatchConflict          a call is already waiting in an open provider batch
    ├── RunCancelled           the run was stopped before a call was sent
    └── ConfigError            settings that cannot work together

Anything else that escapes ``rr_core`` is a bug.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rr_core.usage import Usage


class RRError(Exception):
    """Base of every error whose message a user can act on."""


class DocumentError(RRError):
    """A document could not be loaded."""

    def __init__(self, filename: str, message: str) -> None:
        self.filename = filename
        super().__init__(f"{filename}: {message}")


class PasswordRequired(DocumentError):
    """The PDF is encrypted and no password was given."""


class WrongPassword(DocumentError):
    """The PDF is encrypted and the password did not open it."""


class NoTextError(DocumentError):
    """No page has extractable text. ``finding`` is what was found, without what to do about
    it (a screen or the command line says what can be done where the user is)."""

    def __init__(self, filename: str, message: str, *, finding: str = "") -> None:
        super().__init__(filename, message)
        self.finding = finding or message


class EmptyDocument(DocumentError):
    """The file holds no pages or no text at all."""


class CorruptDocument(DocumentError):
    """The file is not a readable document of its type."""


class DocumentTooLarge(DocumentError):
    """The file exceeds the size or page limit."""


class UnsupportedType(DocumentError):
    """The file type is not one we load."""


class LLMError(RRError):
    """A provider call failed."""

    def __init__(
        self, message: str, *, provider: str = "", status: int | None = None, usage: Usage | None = None
    ) -> None:
        self.provider = provider
        self.status = status
        # What the provider billed for the failed call, when its reply said so (a reply left
        # empty is billed like any other): it reaches the budget and the cost like a reply's.
        self.usage = usage
        super().__init__(message)


class MissingKeyError(LLMError):
    """No API key is configured for the provider."""


class AuthError(LLMError):
    """The provider rejected the key."""


class RateLimitError(LLMError):
    """The provider is rate limiting us."""


class ContextTooLongError(LLMError):
    """The prompt does not fit the model's context window."""


class ProviderTimeout(LLMError):
    """The provider did not answer in time."""


class ProviderError(LLMError):
    """Any other provider failure (server error, bad request, connection)."""


class NotConnected(ProviderError):
    """The provider's server could not be reached at all (connection refused, name not found):
    no request left this machine, so the call was not sent, and cannot have been billed."""


class ResponseParseError(RRError):
    """The model's output was not the JSON the prompt asked for."""

    def __init__(self, message: str, raw: str = "") -> None:
        self.raw = raw
        super().__init__(message)


class LedgerError(RRError):
    """The run history (SQLite file) could not be read or written."""


class BatchConflict(RRError):
    """A call key is still waiting in a provider batch: it is not submitted again until that
    batch settles it (a call is never paid twice)."""


class RunCancelled(RRError):
    """The run was stopped (the user left the page) before this call was sent."""


class BudgetReached(RunCancelled):
    """The budget cap would be passed by this call: it was not sent, nor any after it."""


class SaveFailed(RunCancelled):
    """A reply could not be kept in the run store: no further call was sent (it would be paid
    again next time)."""


class ConfigError(RRError):
    """Settings that cannot work together."""
