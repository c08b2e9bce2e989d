"""The offline reader types Chinese, Japanese and Korean questions as it types English ones:
언제/何时/いつ want a date, 얼마/多少/いくら a figure, 누구/谁/誰 a name, 어디/哪里/どこ a place
(and "how long", a rate, a count), and it answers with the value of that kind from the page
(a date, a sum with its unit, a duration, a rate), not the whole sentence."""

from __future__ import annotations

import pytest
from conftest import SHARED_DATA

from rr_core.reader import Want, answer_type, read_answer

KOREAN_PDF = SHARED_DATA / "nonlatin_korean_with_tables.pdf"

TYPES = [
    # Korean, Chinese, Japanese; then the English question they mean.
    ("계약은 언제 체결되었습니까?", Want.DATE),
    ("合同是何时签订的？", Want.DATE),
    ("契約はいつ締結されましたか？", Want.DATE),
    ("When was the agreement signed?", Want.DATE),
    ("보증금은 얼마입니까?", Want.FIGURE),
    ("押金是多少？", Want.FIGURE),
    ("敷金はいくらですか？", Want.FIGURE),
    ("How much is the deposit?", Want.FIGURE),
    ("누가 계약에 서명했습니까?", Want.NAME),
    ("谁签署了合同？", Want.NAME),
    ("誰が契約に署名しましたか？", Want.NAME),
    ("Who signed the agreement?", Want.NAME),
    ("본사는 어디에 있습니까?", Want.PLACE),
    ("总部在哪里？", Want.PLACE),
    ("本社はどこにありますか？", Want.PLACE),
    ("Where is the head office?", Want.PLACE),
    ("임대 기간은 얼마입니까?", Want.DURATION),  # a period asked "how much" is a duration
    ("租期多久？", Want.DURATION),
    ("連絡は何日間以内に必要ですか？", Want.DURATION),
    ("이자율은 얼마입니까?", Want.PERCENT),
    ("利率是多少？", Want.PERCENT),
    ("몇 명이 참석했습니까?", Want.COUNT),
    ("有几个仓库？", Want.COUNT),
    ("임차인은 건물을 깨끗하게 유지해야 합니까", Want.TEXT),  # no question word: a sentence
]


@pytest.mark.parametrize(("question", "want"), TYPES, ids=[q for q, _ in TYPES])
def test_question_words_give_the_same_kinds_as_english(question: str, want: Want) -> None:
    assert answer_type(question) is want


KOREAN = [
    "이 계약은 임대인 주식회사 한빛과 임차인 사이의 약정을 정한다. 임차인은 건물을 깨끗하게 유지하여야 한다.",
    "제5조 보증금. 임차인은 계약 체결 시 보증금으로 9,000,000원을 임대인에게 지급한다. 관리비는 매월 150,000원이다.",
    "제7조 기간. 이 계약은 2024년 3월 15일에 체결되었다. 임대 기간은 24개월로 한다. 연체 이자율은 연 12%로 한다.",
]
CHINESE = [
    "本合同规定了出租人与承租人之间的权利和义务。承租人应保持房屋清洁。",
    "第五条 押金。承租人在签订合同时应向出租人支付押金9,000元。物业费为每月300元。",
    "第七条 期限。本合同于2024年3月15日签订。租赁期限为24个月。逾期利率为12%。",
]
JAPANESE = [
    "この契約は賃貸人と賃借人の間の権利を定める。賃借人は建物を清潔に保たなければならない。",
    "第五条 敷金。賃借人は契約締結時に敷金として90,000円を賃貸人に支払う。管理費は月額5,000円とする。",
    "第七条 期間。本契約は2024年3月15日に締結された。賃貸期間は24ヶ月とする。遅延利率は12%とする。",
]
READS = [
    ("계약은 언제 체결되었습니까?", KOREAN, "2024년 3월 15일", 3),
    ("임차인이 지급하는 보증금은 얼마입니까?", KOREAN, "9,000,000원", 2),
    ("관리비는 얼마입니까?", KOREAN, "150,000원", 2),
    ("임대 기간은 얼마입니까?", KOREAN, "24개월", 3),
    ("연체 이자율은 얼마입니까?", KOREAN, "12%", 3),
    ("合同是何时签订的？", CHINESE, "2024年3月15日", 3),
    ("承租人应支付多少押金？", CHINESE, "9,000元", 2),
    ("物业费是多少？", CHINESE, "300元", 2),
    ("租赁期限多久？", CHINESE, "24个月", 3),
    ("契約はいつ締結されましたか？", JAPANESE, "2024年3月15日", 3),
    ("敷金はいくらですか？", JAPANESE, "90,000円", 2),
    ("管理費はいくらですか？", JAPANESE, "5,000円", 2),
]


@pytest.mark.parametrize(("question", "texts", "value", "page"), READS, ids=[q for q, *_ in READS])
def test_the_reader_answers_with_the_value_of_the_kind_asked(
    question: str, texts: list[str], value: str, page: int
) -> None:
    reading = read_answer(question, list(enumerate(texts, start=1)))
    assert reading.found, reading
    assert reading.answer == value
    assert reading.citations and reading.citations[0].page == page and value in reading.citations[0].quote


def test_a_name_or_place_it_cannot_pick_out_is_answered_with_its_sentence() -> None:
    """No capitals mark a Korean name: the reader answers with the sentence that holds it,
    as it did before it typed the question (never "not found" for want of a span)."""
    reading = read_answer("임대인은 누구입니까?", list(enumerate(KOREAN, start=1)))
    assert answer_type("임대인은 누구입니까?") is Want.NAME
    assert reading.found and "임대인" in reading.answer
    assert reading.answer == reading.citations[0].quote  # the sentence, as the page says it


@pytest.mark.skipif(not KOREAN_PDF.is_file(), reason="needs ../shared/data (the Korean card leaflet)")
@pytest.mark.parametrize(
    ("question", "want", "value"),
    [
        ("빅포인트의 유효기간은 얼마입니까?", Want.DURATION, "5년"),
        ("커피전문점의 빅포인트 적립률은 얼마입니까?", Want.PERCENT, "2%"),
        ("할인점의 빅포인트 적립률은 얼마입니까?", Want.PERCENT, "1.5%"),
        ("전월 이용금액이 얼마 이상이어야 제공됩니까?", Want.FIGURE, "40만원"),
    ],
)
def test_a_korean_question_on_the_korean_leaflet_gets_a_typed_answer(
    question: str, want: Want, value: str
) -> None:
    from rr_core.documents import load_document

    document = load_document(KOREAN_PDF.read_bytes(), filename=KOREAN_PDF.name)
    assert answer_type(question) is want
    reading = read_answer(question, [(p.number, p.text) for p in document.pages])
    assert reading.found and reading.answer == value, reading
    assert value in reading.citations[0].quote
