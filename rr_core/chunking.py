"""Where reminders go and where chunks break: pure arithmetic on page token counts."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from itertools import accumulate


def plan_reminders(page_tokens: Sequence[int], every: int) -> list[int]:
    """Positions (1-based, into ``page_tokens``) after which a reminder goes.

    Walk the pages adding up tokens; when the running count reaches ``every``, a reminder
    goes after that page and the count restarts (METHOD.md §4). Reminders sit only between
    pages: never inside one, and never after the last page, where the closing instructions
    follow anyway.
    """
    if every <= 0:
        return []
    positions: list[int] = []
    running = 0
    last = len(page_tokens)
    for index, tokens in enumerate(page_tokens, start=1):
        running += tokens
        if running >= every and index < last:
            positions.append(index)
            running = 0
    return positions


def chunk_count(total_tokens: int, chunk_size: int, pages: int) -> int:
    """How many chunks of about ``chunk_size`` tokens the pages need (1 to ``pages``)."""
    if pages == 0:
        return 0
    if chunk_size <= 0 or total_tokens <= chunk_size:
        return 1
    return min(pages, math.ceil(total_tokens / chunk_size))


def partition_pages(page_tokens: Sequence[int], chunk_size: int) -> list[range]:
    """Split pages into consecutive chunks of about ``chunk_size`` tokens, as even as possible.

    Returns ranges of 1-based page numbers. Chunks break only between pages, cover every page
    exactly once, and each boundary is placed at the page break nearest to its even share,
    so every chunk is within one page of the average size.
    """
    n = len(page_tokens)
    prefix = [0, *accumulate(page_tokens)]
    count = chunk_count(prefix[-1], chunk_size, n)
    if count <= 1:
        return [range(1, n + 1)] if n else []
    total = prefix[-1]
    bounds = [0]
    for i in range(1, count):
        target = total * i / count
        low = bounds[-1] + 1  # at least one page in this chunk
        high = n - (count - i)  # and at least one in each remaining chunk
        j = bisect.bisect_left(prefix, target, low, high + 1)
        candidates = [c for c in (j - 1, j) if low <= c <= high]
        bounds.append(min(candidates, key=lambda c: (abs(prefix[c] - target), c)))
    bounds.append(n)
    return [range(a + 1, b + 1) for a, b in zip(bounds, bounds[1:], strict=False)]
