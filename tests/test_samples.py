"""The sample documents: data files that read like real documents, with findable planted facts."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from rr_core import samples
from rr_core.retrieval import BM25, sentences
from rr_core.samples import (
    Sample,
    SampleQuestion,
    get_sample,
    list_samples,
    questions_middle_first,
    split_pages,
)

MIN_PAGES = {"contract": 120, "protocol": 60}
DATA = Path(samples.__file__).resolve().parent / "data" / "samples"
# A numbered heading: "ARTICLE 7 - ...", "SCHEDULE B - ...", "APPENDIX 3 - ...", "11.6 Late ...", "B.12 ...".
HEADING = re.compile(r"^(ARTICLE \d+ - |SCHEDULE [A-Z] - |APPENDIX \d+ - |[A-Z]?\d*\.?\d+(\.\d+)* [A-Z])")


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


def test_loading_again_gives_the_same_sample() -> None:
    first = {name: get_sample(name) for name in list_samples()}
    get_sample.cache_clear()
    again = {name: get_sample(name) for name in list_samples()}
    assert again == first
    assert all(again[name] is not first[name] for name in first)


def test_samples_are_data_files_in_the_package() -> None:
    """The samples are text and JSON shipped with rr_core, and the packaging includes them."""
    for name in list_samples():
        folder = DATA / name
        assert (folder / "sample.json").is_file()
        parts = sorted(folder.glob("pages-*.txt"))
        assert parts and sum(len(split_pages(p.read_text())) for p in parts) == len(get_sample(name).pages)
    pyproject = (Path(samples.__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert '"data/samples/*/*"' in pyproject and '"data/tiktoken/*"' in pyproject


def test_split_pages() -> None:
    assert split_pages("A\nfirst\n\f\nB\nsecond\n\f\n\n") == ["A\nfirst", "B\nsecond"]


def test_metadata(sample: Sample) -> None:
    assert sample.name in list_samples()
    assert sample.title.endswith("(sample)")
    assert "fictional" in sample.description.lower()


def test_page_count(sample: Sample) -> None:
    assert len(sample.pages) >= MIN_PAGES[sample.name]


def test_the_contract_is_long_enough_for_long_context_effects(counter) -> None:  # type: ignore[no-untyped-def]
    contract = get_sample("contract")
    assert not counter.approximate  # the tokenizer ships with the project
    assert sum(counter.count_many(list(contract.pages))) >= 80_000


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


def test_no_heading_repeats(sample: Sample) -> None:
    """Each numbered heading, and each page's first line, appears once in the document."""
    headings = Counter(
        line.strip()
        for page in sample.pages
        for line in page.splitlines()
        if HEADING.match(line.strip()) and len(line) < 90
    )
    assert len(headings) > 100 if sample.name == "contract" else len(headings) > 60
    assert [h for h, n in headings.items() if n > 1] == []
    firsts = Counter(page.splitlines()[0] for page in sample.pages)
    assert [f for f, n in firsts.items() if n > 1] == []


def test_numbered_sections_run_in_order(sample: Sample) -> None:
    """Sections 3.1, 3.2 ... follow each other without gaps or jumps back."""
    last: dict[str, int] = {}
    for page in sample.pages:
        for line in page.splitlines():
            match = re.match(r"^([A-Z]?\d*)\.(\d+) [A-Z]", line)
            if not match or len(line) > 90:
                continue
            parent, number = match.group(1), int(match.group(2))
            assert number == last.get(parent, 0) + 1, f"{line!r} follows {parent}.{last.get(parent)}"
            last[parent] = number


def test_no_sentence_is_recycled(sample: Sample) -> None:
    """Sentences of six words or more appear once (the contents page lists headings, not prose)."""
    seen = Counter(
        " ".join(s.lower().split())
        for page in sample.pages
        for s in sentences(page)
        if len(s.split()) >= 6 and not HEADING.match(s)
    )
    assert [s for s, n in seen.items() if n > 1] == []


def test_pages_are_varied(sample: Sample) -> None:
    assert len(set(sample.pages)) == len(sample.pages)
    words = [set(page.lower().split()) for page in sample.pages]
    jaccards = [len(a & b) / len(a | b) for a, b in itertools.combinations(words, 2)]
    assert sum(jaccards) / len(jaccards) < 0.3
    assert max(jaccards) < 0.6  # no near-duplicate pages


def test_questions_are_well_formed(sample: Sample) -> None:
    assert len(sample.questions) >= 12
    assert len({q.question for q in sample.questions}) == len(sample.questions)
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


def test_the_questions_file_states_the_gold_pages() -> None:
    for name in list_samples():
        meta = json.loads((DATA / name / "sample.json").read_text())
        assert [q["page"] for q in meta["questions"]] == [q.page for q in get_sample(name).questions]


def test_facts_are_spread_over_the_document(sample: Sample) -> None:
    n = len(sample.pages)
    thirds = [0, 0, 0]
    for q in sample.questions:
        thirds[min(2, (q.page - 1) * 3 // n)] += 1
    assert thirds[0] >= 2 and thirds[1] >= 2 and thirds[2] >= 2, thirds


def test_retrieval_is_meaningful_but_not_trivial(sample: Sample) -> None:
    """Lexical retrieval finds most gold pages in its top 5, but distracters and paraphrased
    questions keep it from ranking every gold page first."""
    index = BM25(sample.pages)
    ranks = [index.rank(q.question, 5) for q in sample.questions]
    top5 = sum(q.page - 1 in r for q, r in zip(sample.questions, ranks, strict=True))
    top1 = sum(r[:1] == [q.page - 1] for q, r in zip(sample.questions, ranks, strict=True))
    assert top5 / len(sample.questions) >= 0.5
    assert top1 <= len(sample.questions) - 3


def test_questions_middle_first() -> None:
    sample = get_sample("contract")
    ordered = questions_middle_first("contract")
    assert sorted(q.question for q in ordered) == sorted(q.question for q in sample.questions)
    middle = (len(sample.pages) + 1) / 2
    distances = [abs(q.page - middle) for q in ordered]
    assert distances == sorted(distances)


def test_the_app_and_browser_questions_exist() -> None:
    """Screens, benchmarks and the browser test pick these questions by a word in them."""
    contract = get_sample("contract")
    convenience = [q for q in contract.questions if "convenience" in q.question]
    interest = [q for q in contract.questions if "interest rate" in q.question]
    assert len(convenience) == 1 and len(interest) == 1
    assert interest[0].page <= 40 and "1.75 percent" in interest[0].answers[0]
