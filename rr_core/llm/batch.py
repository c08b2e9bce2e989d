"""What the batch interfaces share (no SDK here), and the free engines' stand-in for a batch.

``LocalBatch`` is **not a provider batch**: it answers every line at once, in this process,
through the client's own ``complete``, and keeps the results in memory under a made-up id
("local-..."). It lets a batch run (``--mode batch``) work with the offline engine or the
simulated reader, with no key and nothing paid; it saves nothing and waits for nothing.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence

from rr_core.errors import ConfigError, LLMError
from rr_core.llm.base import BatchLine, BatchResult, BatchStatus, LLMClient

# Anthropic's rule for a custom_id, the stricter of the two providers' (a call key fits it).
_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# The custom_id of a result line that is not valid JSON, if it can still be read.
_CUSTOM_ID_IN_TEXT = re.compile(r'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"')
LOCAL_PREFIX = "local-"


def check_lines(lines: Sequence[BatchLine], *, label: str, max_lines: int) -> None:
    """Refuse a batch the provider would refuse: empty, too many lines, a custom_id that is
    malformed or given twice."""
    if not lines:
        raise ConfigError("A batch needs at least one call.")
    if len(lines) > max_lines:
        raise ConfigError(
            f"{label} takes at most {max_lines:,} calls in one batch; this one has {len(lines):,}. "
            "Split it into several batches."
        )
    seen: set[str] = set()
    for line in lines:
        if not _CUSTOM_ID.match(line.custom_id):
            raise ConfigError(
                f"Batch call id {line.custom_id[:80]!r} is not 1-64 letters, digits, '_' or '-'."
            )
        if line.custom_id in seen:
            raise ConfigError(f"Batch call id {line.custom_id!r} appears twice in one batch.")
        seen.add(line.custom_id)


def custom_id_in(text: str) -> str | None:
    """The custom_id named in a result line that could not be parsed, if any."""
    match = _CUSTOM_ID_IN_TEXT.search(text)
    return match.group(1) if match else None


_MISSING = {
    "expired": "The provider returned no result for this call before the batch ended.",
    "canceled": "The batch was canceled before this call was answered.",
}


def every_call(
    found: Iterable[BatchResult], submitted: Iterable[str] | None, *, missing: str, why: str | None = None
) -> Iterator[BatchResult]:
    """Each call once: ``found`` with any repeat of a custom_id dropped (a success wins),
    then a ``missing`` result ("expired", "canceled" or "errored", saying ``why``) for each
    ``submitted`` id that had none. With ``submitted`` known, results for other ids are
    dropped."""
    wanted = list(submitted) if submitted is not None else None
    allowed = set(wanted) if wanted is not None else None
    by_id: dict[str, BatchResult] = {}
    for result in found:
        if allowed is not None and result.custom_id not in allowed:
            continue
        kept = by_id.get(result.custom_id)
        if kept is None or (kept.kind != "succeeded" and result.kind == "succeeded"):
            by_id[result.custom_id] = result
    yield from by_id.values()
    said = why or _MISSING.get(missing, "The provider returned no result for this call.")
    for custom_id in wanted or ():
        if custom_id not in by_id:
            yield BatchResult(custom_id=custom_id, kind=missing, error=said)


class LocalBatch:
    """A batch run in this process by a free engine (see the module doc): not a provider
    batch; every call is answered during ``submit``."""

    def __init__(self, client: LLMClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._done: dict[str, tuple[BatchResult, ...]] = {}

    def submit(self, lines: Sequence[BatchLine], *, label: str, marker: str = "") -> str:
        """Answer every line now through the client; the id to read them back by."""
        check_lines(lines, label=self._client.name, max_lines=1_000_000)
        results: list[BatchResult] = []
        for line in lines:
            try:
                completion = self._client.complete(line.request)
            except LLMError as exc:
                results.append(
                    BatchResult(custom_id=line.custom_id, kind="errored", error=str(exc), usage=exc.usage)
                )
                continue
            results.append(BatchResult(custom_id=line.custom_id, kind="succeeded", completion=completion))
        batch_id = f"{LOCAL_PREFIX}{uuid.uuid4().hex}"
        with self._lock:
            self._done[batch_id] = tuple(results)
        return batch_id

    def status(self, batch_id: str) -> BatchStatus:
        """Ended (answered during ``submit``). A batch this object does not hold (made by a
        process that has ended) is "expired" with no results: its calls are to be run again."""
        with self._lock:
            results = self._done.get(batch_id)
        if results is None:
            return BatchStatus(
                batch_id=batch_id,
                state="expired",
                total=0,
                done=0,
                failed=0,
                provider_state="gone (held in memory by a process that has ended)",
            )
        done = sum(r.kind == "succeeded" for r in results)
        return BatchStatus(
            batch_id=batch_id,
            state="ended",
            total=len(results),
            done=done,
            failed=len(results) - done,
            provider_state="answered in this process (not a provider batch)",
        )

    def results(self, batch_id: str) -> Iterator[BatchResult]:
        """The results kept for ``batch_id`` (none for a batch this object does not hold)."""
        with self._lock:
            results = self._done.get(batch_id, ())
        yield from results

    def cancel(self, batch_id: str) -> None:
        """Nothing to stop: every call was answered during ``submit``."""

    def find(self, marker: str, *, total: int, since: float) -> str | None:
        """None: a local batch lives only in the process that made it."""
        return None
