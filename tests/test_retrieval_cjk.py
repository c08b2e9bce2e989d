"""Offline search and reading in scripts without spaces (Chinese, Japanese) and in Korean:
the terms are the character pairs of each run's content, so a question's words meet the
page's although no space or particle separates them the same way."""

from __future__ import annotations

import json

import pytest
from conftest import word_counter

from rr_core.llm import LLMRequest, OfflineEngine
from rr_core.outputs import AnswerOut
from rr_core.prompts import build_layout, instructions
from rr_core.retrieval import BM25, terms

KOREAN = [
    "이 계약은 임대인과 임차인 사이의 약정을 정한다. 임차인은 건물을 깨끗하게 유지하여야 한다.",
    "제5조 보증금. 임차인은 계약 체결 시 보증금으로 구백만 원을 임대인에게 지급한다. 보증금은 계약 종료 후 반환된다.",
    "관리비는 매월 말일에 납부한다. 전기요금은 임차인이 부담한다.",
]
CHINESE = [
    "本合同规定了出租人与承租人之间的权利和义务。承租人应保持房屋清洁。",
    "第五条 押金。承租人在签订合同时应向出租人支付押金九百欧元。合同终止后押金予以退还。",
    "物业费于每月月底支付。电费由承租人承担。",
]
JAPANESE = [
    "この契約は賃貸人と賃借人の間の権利を定める。賃借人は建物を清潔に保たなければならない。",
    "第五条 敷金。賃借人は契約締結時に敷金として九百ユーロを賃貸人に支払う。",
    "管理費は毎月末日に支払う。電気料金は賃借人が負担する。",
]
CASES = [
    ("임차인이 지급하는 보증금은 얼마입니까?", KOREAN, "보증금으로 구백만 원"),
    ("承租人应支付多少押金?", CHINESE, "支付押金九百欧元"),
    ("賃借人が支払う敷金はいくらですか?", JAPANESE, "敷金として九百ユーロ"),
]


def reply_to(question: str, texts: list[str]) -> dict:  # type: ignore[type-arg]
    pages = list(enumerate(texts, start=1))
    layout = build_layout(instructions("answer", question), pages, questions=[question])
    completion = OfflineEngine(word_counter()).complete(
        LLMRequest(prompt=layout.render(), schema=AnswerOut, model="offline", layout=layout)
    )
    reply: dict = json.loads(completion.text)  # type: ignore[type-arg]
    return reply


def test_words_with_and_without_particles_share_their_terms() -> None:
    assert set(terms("임차인이")) == set(terms("임차인은")) == {"임차", "차인"}
    assert set(terms("承租人应支付多少押金")) == {"承租", "租人", "支付", "押金"}
    assert set(terms("賃借人が支払う敷金")) == {"賃借", "借人", "支払", "敷金"}
    assert terms("The fee is 4.2 million (보증금)") == ["fee", "4.2", "million", "보증", "증금"]


@pytest.mark.parametrize(("question", "texts", "_"), CASES, ids=["korean", "chinese", "japanese"])
def test_bm25_ranks_the_page_that_answers_first(question: str, texts: list[str], _: str) -> None:
    assert BM25(texts).rank(question, 3)[0] == 1


@pytest.mark.parametrize(("question", "texts", "words"), CASES, ids=["korean", "chinese", "japanese"])
def test_the_offline_engine_finds_the_answer_on_its_page(question: str, texts: list[str], words: str) -> None:
    reply = reply_to(question, texts)
    assert reply["found"] is True, reply
    assert reply["page"] == "2" and words in reply["quote"]


def test_cjk_sentences_end_at_full_width_marks() -> None:
    from rr_core.retrieval import sentences

    assert sentences(CHINESE[1]) == [
        "第五条 押金。",
        "承租人在签订合同时应向出租人支付押金九百欧元。",
        "合同终止后押金予以退还。",
    ]
    assert sentences(KOREAN[2]) == ["관리비는 매월 말일에 납부한다.", "전기요금은 임차인이 부담한다."]
