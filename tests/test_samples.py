"""The generated sample documents: deterministic, long, varied, with findable planted facts."""

from __future__ import annotations

import itertools
import re

import pytest

from rr_core.retrieval import BM25
from rr_core.samples import Sample, SampleQuestion, get_sample, list_samples

MIN_PAGES = {"contract": 120, "protocol": 60}


def _allowed(ch: str) -> bool:
    code = ord(ch)
    return ch == "\n" or 32 <= code < 127 or 0xA0 <= code <= 0xFF


@pytest.fixture(params=["contract", "protocol"])
def sample(request: pytest.FixtureRequest) -> Sample:
    return get_sample(request.param)


def test_list_samples() -> None:
    assert list_samples() == ["contract", "protocol"]


def test_unknown_sample_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"^unknown sample 'x'; choose one of: contract, protocol$"):
        get_sample("x")


def test_generation_is_deterministic() -> None:
    first = {name: get_sample(name) for name in list_samples()}
    get_sample.cache_clear()
    again = {name: get_sample(name) for name in list_samples()}
    assert again == first
    assert all(again[name] is not first[name] for name in first)


def test_metadata(sample: Sample) -> None:
    assert sample.name in list_samples()
    assert "(generated sample)" in sample.title
    description = sample.description.lower()
    assert "generated" in description and "fictional" in description


def test_page_count(sample: Sample) -> None:
    assert len(sample.pages) >= MIN_PAGES[sample.name]


def test_page_lengths(sample: Sample) -> None:
    counts = [len(page.split()) for page in sample.pages]
    short_or_long = [(i + 1, n) for i, n in enumerate(counts) if not 250 <= n <= 900]
    assert not short_or_long
    assert 350 <= sum(counts) / len(counts) <= 600


def test_only_plain_characters(sample: Sample) -> None:
    for number, page in enumerate(sample.pages, start=1):
        bad = sorted({ch for ch in page if not _allowed(ch)})
        assert not bad, f"page {number} has characters a base-14 font may not render: {bad}"


def test_pages_start_with_a_heading_and_carry_no_page_numbers(sample: Sample) -> None:
    for page in sample.pages:
        first = page.split("\n", 1)[0]
        assert first.strip() and len(first) < 120
        assert not re.search(r"\bpage \d+ of \d+\b", page, re.IGNORECASE)


def test_pages_are_varied(sample: Sample) -> None:
    assert len(set(sample.pages)) == len(sample.pages)
    words = [set(page.lower().split()) for page in sample.pages]
    jaccards = [len(a & b) / len(a | b) for a, b in itertools.combinations(words, 2)]
    assert sum(jaccards) / len(jaccards) < 0.6
    assert max(jaccards) < 0.85  # no near-duplicate pages


def test_questions_are_well_formed(sample: Sample) -> None:
    assert len(sample.questions) >= 8
    for q in sample.questions:
        assert isinstance(q, SampleQuestion)
        assert q.question.endswith("?")
        assert q.answers and all(0 < len(a) <= 60 for a in q.answers)
        assert 1 <= q.page <= len(sample.pages)


def test_each_answer_is_on_its_gold_page_only(sample: Sample) -> None:
    for q in sample.questions:
        first = q.answers[0].lower()
        assert first in sample.pages[q.page - 1].lower(), q.question
        elsewhere = [
            i + 1 for i, page in enumerate(sample.pages) if i != q.page - 1 and first in page.lower()
        ]
        assert not elsewhere, f"{q.answers[0]!r} also on pages {elsewhere}"


def test_facts_are_spread_over_the_document(sample: Sample) -> None:
    n = len(sample.pages)
    thirds = [0, 0, 0]
    for q in sample.questions:
        thirds[min(2, (q.page - 1) * 3 // n)] += 1
    assert thirds[0] >= 2 and thirds[1] >= 2 and thirds[2] >= 2, thirds


def test_retrieval_is_meaningful_but_feasible(sample: Sample) -> None:
    """Lexical retrieval finds most gold pages in its top 5, though distracters compete."""
    index = BM25(sample.pages)
    ranks = [index.rank(q.question, 5) for q in sample.questions]
    top5 = sum(q.page - 1 in r for q, r in zip(sample.questions, ranks, strict=True))
    assert top5 / len(sample.questions) >= 0.5
