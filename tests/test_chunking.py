"""Reminder layout and chunk boundaries: pure arithmetic on page token counts (METHOD.md §4, §7)."""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from rr_core.chunking import chunk_count, partition_pages, plan_reminders

page_tokens = st.lists(st.integers(0, 3_000), max_size=150)
positive_pages = st.lists(st.integers(1, 3_000), min_size=1, max_size=150)
interval = st.integers(1, 20_000)


# ---- Reminders -------------------------------------------------------------------------


@given(page_tokens, interval)
@example([500] * 160, 10_000)
@example([10_000, 10_000, 10_000], 10_000)
@example([0, 0, 0], 1)
def test_reminders_sit_strictly_between_pages(tokens: list[int], every: int) -> None:
    positions = plan_reminders(tokens, every)
    assert all(1 <= p <= len(tokens) - 1 for p in positions)
    assert positions == sorted(set(positions))


@given(page_tokens, interval)
@example([500] * 160, 10_000)
@example([9_999, 1, 9_999, 2], 10_000)
def test_reminder_spacing_is_k_give_or_take_one_page(tokens: list[int], every: int) -> None:
    positions = plan_reminders(tokens, every)
    biggest = max(tokens, default=0)
    starts = [0, *positions]
    for start, end in zip(starts, positions):
        between = sum(tokens[start:end])  # pages start+1 .. end (1-based)
        assert every <= between < every + biggest
    # After the last reminder the count never reaches k again before the final page.
    last = positions[-1] if positions else 0
    assert sum(tokens[last : len(tokens) - 1]) < every


def test_reminder_interval_examples() -> None:
    assert plan_reminders([500] * 160, 10_000) == [20, 40, 60, 80, 100, 120, 140]
    assert plan_reminders([6_000, 6_000, 6_000, 6_000], 10_000) == [2]
    # Reaching k on the last page adds nothing: the closing instructions follow anyway.
    assert plan_reminders([5_000, 5_000], 10_000) == []
    assert plan_reminders([], 10_000) == []
    assert plan_reminders([20_000], 10_000) == []
    assert plan_reminders([100, 100, 100], 0) == []


# ---- Chunks ----------------------------------------------------------------------------


@given(page_tokens, st.integers(1, 40_000))
@example([100, 1, 1, 1], 26)
@example([0] * 5, 10)
def test_chunks_partition_pages_contiguously(tokens: list[int], size: int) -> None:
    chunks = partition_pages(tokens, size)
    pages = [p for chunk in chunks for p in chunk]
    assert pages == list(range(1, len(tokens) + 1))  # each page once, in order
    assert all(len(chunk) >= 1 and chunk.step == 1 for chunk in chunks)
    for left, right in zip(chunks, chunks[1:]):
        assert left.stop == right.start  # breaks only at page boundaries


@given(positive_pages, st.integers(1, 40_000))
@example([500] * 160, 20_000)
@example([3_000, 1, 1, 1, 1, 3_000, 1], 1_000)
def test_chunk_count_and_balance(tokens: list[int], size: int) -> None:
    chunks = partition_pages(tokens, size)
    total = sum(tokens)
    expected = 1 if total <= size else min(len(tokens), math.ceil(total / size))
    assert len(chunks) == expected
    average = total / len(chunks)
    biggest = max(tokens)
    for chunk in chunks:
        size_of_chunk = sum(tokens[p - 1] for p in chunk)
        assert average - biggest <= size_of_chunk <= average + biggest


def test_chunk_examples_from_the_papers_cost_table() -> None:
    # 160 pages of 500 tokens = 80k tokens: c = 10k/20k/40k/80k gives 8/4/2/1 chunks.
    tokens = [500] * 160
    for size, count in ((10_000, 8), (20_000, 4), (40_000, 2), (80_000, 1)):
        chunks = partition_pages(tokens, size)
        assert len(chunks) == count
        assert {len(c) for c in chunks} == {160 // count}


def test_chunk_count_edges() -> None:
    assert chunk_count(0, 1_000, 0) == 0
    assert chunk_count(500, 1_000, 3) == 1
    assert chunk_count(10_001, 1_000, 3) == 3  # capped at the page count
    assert chunk_count(5_000, 0, 4) == 1
    assert partition_pages([], 1_000) == []
    assert partition_pages([5_000], 1_000) == [range(1, 2)]
