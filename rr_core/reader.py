"""The offline engine's extractive reader: what kind of answer a question wants, the short
span of that kind in the passage that matches the question best, or "not found".

It is not an LLM and does not pretend to be one. Passages are ranked by BM25 (``retrieval``);
then the reader keeps only what can honestly stand as an answer:

- a question is typed by its wording: "when" wants a date, "how long / within how many days" a
  duration, "what rate / share" a percentage, "how much / what was the fee" a figure, "how
  many" a count, "who / which party" a name, "where / which law governs" a place, "what are
  the ..." a list; other questions want a sentence;
- headings, table-of-contents lines, signature and certification boilerplate and template
  blanks ("[to be completed]") are never an answer; a heading or a label ("Lead Principal
  Investigator", a table row's first cell) points at the text after it instead;
- a passage counts only when it carries enough of the question's weighted words (a quarter
  for a typed answer, which its kind checks as well; 40% for a sentence), and a typed question
  is answered only by a span of its type: otherwise the answer is "not found", with the pages
  most worth reading, best first.

The answer is the short span; each citation quotes the sentence, table row or list item it
stands in, as the page says it (white space aside).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from rr_core.retrieval import BM25, PageTerms, page_terms, sentence_scores, terms


class Want(Enum):
    """The kind of answer a question asks for."""

    DATE = "date"
    DURATION = "duration"
    PERCENT = "percent"
    FIGURE = "figure"  # an amount of money or a quantity with its unit
    COUNT = "count"
    RATIO = "ratio"
    CODE = "code"  # a number that identifies: protocol, fax, docket...
    NAME = "name"
    PLACE = "place"
    LIST = "list"
    TEXT = "text"  # a sentence
    YES_NO = "yes-no"  # the question says to answer yes or no: yes, with the passage that says so


# What a question says of its answer's form ("Answer yes or no; ...", "Answer with the date."),
# as the review grid words its columns: read for the kind of answer, then left out of the terms.
_ASKS_FORM = re.compile(r"(?:^|(?<=[.?!]))\s*Answer (?:yes or no|with)\b[^.?!]*[.?!]?", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\banswer yes or no\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Citation:
    """A page and the words on it that the answer rests on."""

    page: int
    quote: str


@dataclass(frozen=True, slots=True)
class Reading:
    """What the reader found: an answer with its citations, or not found and the pages to
    read (best first)."""

    found: bool
    answer: str
    citations: tuple[Citation, ...] = ()
    pages_to_read: tuple[int, ...] = ()


# ---- What a question wants -------------------------------------------------------------------

_TIME_UNIT = r"(?:second|minute|hour|day|business day|calendar day|week|month|year|quarter)s?"
_FIGURE_NOUNS = (
    "revenue revenues sales income profit profits loss losses margin margins expense expenses cost costs "
    "spend spending price prices fee fees amount cap caps limit limits capital cash asset assets liability "
    "liabilities debt dividend dividends earnings salary compensation budget payment payments charge "
    "charges fine fines penalty penalties damages value consideration premium deductible commitment rent "
    "sum balance temperature weight size dose dosage level threshold distance height volume area capacity "
    "population deposit bonus royalty royalties interest proceeds valuation turnover ebitda eps"
).split()
_NAME_NOUNS = (
    "party parties person people company companies firm firms entity entities judge justice author "
    "sponsor investigator chair chairman chairperson officer director lender borrower buyer seller "
    "licensor licensee supplier customer vendor counsel attorney lawyer auditor trustee agent manager "
    "representative executive president signatory employer employee contractor"
).split()
_PLACE_NOUNS = (
    "jurisdiction jurisdictions state states country countries city cities province place location venue "
    "seat court courts county law laws"
).split()
_LIST_NOUNS = (
    "criteria requirements conditions obligations reasons factors risks events steps items types "
    "categories elements exceptions exclusions components causes grounds duties rights measures "
    "responsibilities procedures assessments objectives endpoints services deliverables"
).split()


def _words(question: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:['’][a-z]+)?", question.lower())


_BE = frozenset(
    "is was are were be been does do did must will would shall should can could may might has have had".split()
)
_ARTICLES = frozenset("the a an this that these those its their each".split())
_STOP_HEAD = frozenset(
    "of for in on at to by from under with about after before during between per as that which who "
    "applies apply applied used set charged paid required".split()
)


def _head(words: list[str], after: int) -> list[str]:
    """The noun phrase a question asks about: the words after "what" or "which" ("what fixed
    dollar amount", "what is the protocol number of ..."), up to a verb or a preposition."""
    rest = words[after:]
    if rest[:1] and rest[0] in _BE:
        rest = rest[1:]
    while rest[:1] and rest[0] in _ARTICLES:
        rest = rest[1:]
    head = []
    for word in rest[:5]:
        if word in _BE or word in _STOP_HEAD:
            break
        head.append(word)
    return head


def _kind_of_head(head: list[str], q: str) -> Want | None:
    """The kind a noun phrase names, if it names one."""
    bare = [w.removesuffix("'s").removesuffix("’s") for w in head]
    if bare and bare[0] in _NAME_NOUNS:  # "which party bears the cost"
        return Want.NAME
    joined = " ".join(bare)
    if any(w in ("ratio",) for w in bare):
        return Want.RATIO
    if (
        bare
        and bare[-1] in ("number", "no", "id", "identifier", "code")
        and not re.search(r"\bhow many\b", q)
    ):
        return Want.CODE
    if any(w in ("date", "day", "year", "month", "deadline") for w in bare):
        return Want.DATE
    if any(w in ("period", "duration", "timeframe", "timeline") for w in bare) or re.search(
        r"\bnotice\b", joined
    ):
        return Want.DURATION
    if any(w in ("rate", "rates", "percentage", "percent", "share", "proportion", "fraction") for w in bare):
        return Want.PERCENT
    if any(w in _FIGURE_NOUNS or w in ("minimum", "maximum") for w in bare):
        return Want.FIGURE
    if any(w in _LIST_NOUNS for w in bare):
        return Want.LIST
    if any(w in ("law", "laws", "jurisdiction", "governing") for w in bare) or any(
        w in _PLACE_NOUNS[:12] for w in bare
    ):
        return Want.PLACE
    if any(w in _NAME_NOUNS for w in bare):
        return Want.NAME
    return None


# Chinese, Japanese and Korean questions: their question words, read for the same kinds as the
# English ones. Order matters: "how long" before "how much" ("얼마나 오래" holds "얼마"), a
# rate or a count before a figure ("적립률은 얼마", "多少个"), and a period asked "how much"
# ("유효기간은 얼마") is a duration.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_HOW_MUCH = r"얼마|多少|いくら|どのくらい|どれくらい|多长|多長|幾多"
_CJK_WANTS: tuple[tuple[Want, re.Pattern[str]], ...] = (
    (
        Want.DURATION,
        re.compile(
            r"얼마나\s*(?:오래|동안|걸)|몇\s*(?:년|개월|달|주|일|시간|분)\s*(?:간|동안)?|多久|多长时间|多長時間|"
            r"几年|幾年|几个月|幾個月|几天|幾天|何年間|何日間|何か月|何ヶ月|何カ月|何週間|何時間"
        ),
    ),
    (Want.DURATION, re.compile(rf"(?:기간|기한|期间|期間|期限).*(?:{_CJK_HOW_MUCH})")),
    (
        Want.PERCENT,
        re.compile(
            r"몇\s*(?:퍼센트|%)|百分之几|百分之幾|何パーセント|何%|[률율](?:은|는|이|가)?\s|[率例](?:是|は|为|為)"
        ),
    ),
    (
        Want.COUNT,
        re.compile(
            r"몇\s*(?:개|명|건|회|번|곳)|几个|幾個|多少个|多少個|几名|幾名|多少人|何人|何個|何件|何回|いくつ"
        ),
    ),
    (Want.FIGURE, re.compile(rf"{_CJK_HOW_MUCH}|몇\s*원|何円")),
    (
        Want.DATE,
        re.compile(
            r"언제|며칠|몇\s*(?:월|년도)|何时|何時|什么时候|什麼時候|哪天|哪一天|哪年|いつ|何日に|何年に|날짜|日期|日付"
        ),
    ),
    (Want.NAME, re.compile(r"누구|누가|谁|誰|だれ|どなた")),
    (
        Want.PLACE,
        re.compile(
            r"어디|哪里|哪裡|哪儿|哪兒|何处|何處|どこ|어느\s*(?:나라|국가|도시|지역)|哪个国家|哪個國家"
        ),
    ),
)


def _cjk_want(question: str) -> Want | None:
    """The kind a Chinese, Japanese or Korean question asks for, by its question words (None:
    not such a question, or none of them)."""
    if not _CJK.search(question):
        return None
    return next((want for want, words in _CJK_WANTS if words.search(question)), None)


def answer_type(question: str) -> Want:
    """The kind of answer ``question`` asks for, from its wording alone."""
    if _YES_OR_NO.search(question):
        return Want.YES_NO
    question = _ASKS_FORM.sub(" ", question)
    cjk = _cjk_want(question)
    if cjk is not None:
        return cjk
    words = _words(question)
    q = " ".join(words)
    if not words:
        return Want.TEXT
    if re.search(r"\bhow (long|soon|often|frequently)\b", q) or re.search(
        rf"\b(how many|what number of) {_TIME_UNIT}\b", q
    ):
        return Want.DURATION
    if re.search(r"\bhow (much|large|big|high|heavy|far|low|small|old)\b", q):
        return Want.FIGURE
    if re.search(r"\bhow many\b", q):
        return Want.COUNT
    if "when" in words[:3]:  # not "... when no roles are named"
        return Want.DATE
    if words[0] in ("who", "whom", "whose"):
        return Want.NAME
    if words[0] == "where":
        return Want.PLACE
    if words[0] in ("list", "identify", "enumerate", "name"):
        return Want.LIST
    wh = next((k for k, w in enumerate(words[:4]) if w in ("what", "which")), None)
    if wh is not None:
        head = _head(words, wh + 1)
        kind = _kind_of_head(head, q)
        plural = bool(head) and head[-1].endswith("s") and not head[-1].endswith(("ss", "'s", "’s"))
        after = words.index(head[-1], wh + 1) + 1 if head else wh + 1
        verb = words[after] if after < len(words) else ""
        if kind is None and words[0] in ("above", "below", "over", "under", "beyond", "up"):
            return Want.FIGURE  # "Above what body mass index ..."
        are = verb in ("are", "were") or words[wh + 1 : wh + 2] in (["are"], ["were"])
        if kind in (Want.NAME, Want.PLACE, None) and plural and are:
            return Want.LIST
        if kind is Want.LIST and not are and not plural:
            return Want.TEXT
        if kind is not None:
            return kind
        if plural and verb in ("are", "were") or re.match(r"(?:what|which) \w+ (?:are|were) ", q):
            return Want.LIST
    if re.search(r"\bgovern", q) and re.search(r"\blaws?\b", q):
        return Want.PLACE
    return Want.TEXT


# ---- Spans of each kind ------------------------------------------------------------------------

_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
    r"hundred|thousand|a hundred|a thousand)"
)
_WORDS_NUMBER = rf"{_NUMBER_WORD}(?:[- ](?:and )?{_NUMBER_WORD}){{0,3}}"
# Atomic: a number is read whole, once. (Backtracking into "123,456,789" to split it at its
# commas made a line of comma-grouped figures take seconds.)
_DIGITS = r"(?>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_NUM = rf"(?:{_DIGITS}|\b{_WORDS_NUMBER}\b)(?:\s*\(\s*{_DIGITS}\s*\))?"
_RANGE = rf"{_NUM}(?:\s*(?:to|-|–|—|and|or)\s*{_NUM})?"
_QUALIFIER = (
    r"(?:(?:at least|at most|up to|not (?:less|more) than|no (?:less|more|later) than|more than|less than|"
    r"fewer than|within|approximately|about|around|over|under|above|below|a minimum of|a maximum of|"
    r"every|each|per)\s+)?"
)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sept?\.?|Oct\.?|Nov\.?|Dec\.?)"
)
_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
    "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
).split()
_ORDINAL_WORD = (
    r"(?:(?:twenty|thirty)[- ](?:"
    + "|".join(_ORDINALS[:9])
    + r")|twentieth|thirtieth|"
    + "|".join(_ORDINALS)
    + ")"
)
_DATE = re.compile(
    rf"\b(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|(?:\d{{1,2}}(?:st|nd|rd|th)?|(?i:{_ORDINAL_WORD}))\s+(?:day\s+of\s+)?{_MONTH},?\s+\d{{4}}"
    rf"|{_MONTH},?\s+\d{{4}}"
    r"|\d{4}-\d{2}-\d{2}"
    r"|\d{1,2}/\d{1,2}/\d{2,4}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!,?\s*\d))"
)
_YEAR = re.compile(r"(?<![\d,.$])\b(?:1[89]|20)\d{2}\b(?!\d|%|,\d)")
_DURATION = re.compile(rf"\b{_QUALIFIER}{_RANGE}\s*-?\s*(?:\w+\s+)?{_TIME_UNIT}\b(?:['’])?", re.IGNORECASE)
_PERCENT = re.compile(
    rf"(?:{_QUALIFIER})(?:(?:{_DIGITS}),\s*)*(?:(?:{_DIGITS}),?\s+(?:and|or|to)\s+)?{_NUM}\s*"
    r"(?:%|\bpercent\b|\bper cent\b|\bpercentage points?\b)(?:\s*\(\s*\d+(?:\.\d+)?\s*%\s*\))?"
    r"(?:\s+(?:per|a|each)\s+(?:month|year|annum|quarter|day))?",
    re.IGNORECASE,
)
_CURRENCY = r"(?:US\$|C\$|A\$|\$|€|£|¥|\b(?:USD|EUR|GBP|CAD|AUD|CHF|JPY|CNY|INR|SEK|NOK|DKK)\b)"
_SCALE = r"(?:\s*(?:million|billion|thousand|trillion|bn|mn|m|k)\b)?"
_UNIT = (
    r"(?:mg/kg|mg/m2|mg|micrograms?|mcg|µg|g/dL|g/L|kg/m2|kg|grams?|g\b|pg/mL|ng/mL|mL/min(?:/1\.73\s*m2)?|"
    r"mL|ml|milliliters?|millilitres?|liters?|litres?|L\b|ounces?|oz\b|mmHg|mmol/L|degrees?(?:\s+(?:C|F|Celsius|"
    r"Fahrenheit))?|°\s*[CF]|square[- ]f(?:oo|ee)t|sq\.?\s*ft|square met(?:er|re)s?|acres?|hectares?|miles?|"
    r"km|kilomet(?:er|re)s?|met(?:er|re)s?|feet|foot|inches|cm|mm|cubic feet per second|CFS|work-hours?|"
    r"hours?|shares|units|tablets|capsules|doses|beds|employees|people|persons|participants|subjects|"
    r"patients|pages|copies|barrels|tons|tonnes|MW|kWh|GB|TB)"
)
_MONEY = re.compile(
    rf"{_QUALIFIER}(?:{_CURRENCY}\s?(?:{_DIGITS}){_SCALE}(?:\s+(?:dollars|euros|pounds))?"
    rf"|(?:{_DIGITS}|{_WORDS_NUMBER}){_SCALE}\s+(?:(?:US|U\.S\.|Canadian|Australian)\s+)?"
    r"(?:dollars|euros|pounds|francs|yen|USD|EUR|GBP|CAD|CHF))",
    re.IGNORECASE,
)
_QUANTITY = re.compile(rf"{_QUALIFIER}{_RANGE}\s*-?\s*{_UNIT}(?![a-z])", re.IGNORECASE)
_BARE_FIGURE = re.compile(
    r"(?<![\w.,/-])\(?\d{1,3}(?:,\d{3})+(?:\.\d+)?\)?(?![\w,/-])|(?<![\w.,/-])\d+\.\d+(?![\w.,/-])"
)
_COUNT = re.compile(rf"{_QUALIFIER}{_RANGE}", re.IGNORECASE)
_RATIO = re.compile(r"\b\d+(?:\s*:\s*\d+)+\b|\b\d+ to \d+(?: to \d+)+\b")
_CODE = re.compile(
    r"\+?\(?\d[\d ()./-]{6,}\d"
    r"|\b[A-Z][A-Z0-9]*(?:[-–/][A-Z0-9]+)+\b"
    r"|\b[A-Z]{2,}\d[\w-]*\b"
    r"|\b\d+[-–]\d+[-–]?\d*\b"
)
# Capitalised words that run together: a person, an organisation, a place. "of" and "the"
# may join them ("Province of Ontario", "People's Republic of China").
_CAPITAL_WORD = r"(?:[A-Z][\w'’.-]*[\w.]|[A-Z]\.)"
_NAME = re.compile(
    rf"(?:(?:Dr|Mr|Ms|Mrs|Prof|Professor|Justice|Judge|Sir|Dame)\.?\s+)?{_CAPITAL_WORD}"
    rf"(?:(?:\s+|\s+(?i:of|of the|de|van|von|der|da|del|la|le|y|and)\s+){_CAPITAL_WORD}){{0,6}}"
)
_HONORIFIC = re.compile(r"^(?:Dr|Mr|Ms|Mrs|Prof|Professor|Justice|Judge|Sir|Dame)\b")
_MONTHS_AND_DAYS = frozenset(
    "january february march april may june july august september october november december monday "
    "tuesday wednesday thursday friday saturday sunday".split()
)
_NOT_NAMES = frozenset(
    "the this that these those a an each every any all no if in on at by for to of and or but as it its "
    "such under upon with within where when while after before during section article schedule exhibit "
    "appendix table figure part chapter page note see id ibid inc ltd llc co corp plc ag sa gmbh i ii iii "
    "iv v vi vii viii ix x yes pp".split()
)


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    text: str
    strength: int  # higher: a more specific match of the kind wanted


def _spans(text: str, want: Want, question_words: set[str], *, year_will_do: bool = True) -> list[_Span]:
    out: list[_Span] = []
    if want not in (Want.NAME, Want.PLACE) and not _NUMBERISH.search(text):
        return out  # no digit and no number word: no figure, date, duration or code (and no regex to run)

    if _CJK.search(text):
        out.extend(_cjk_spans(text, want))

    def add(pattern: re.Pattern[str], strength: int) -> None:
        if (pattern is _PERCENT and not _PERCENTISH.search(text)) or (
            pattern is _MONEY and not _MONEYISH.search(text)
        ):
            return
        for m in pattern.finditer(text):
            value = m.group(0).strip(" ,;:")
            if value and any(ch.isalnum() for ch in value):
                start = m.start() + m.group(0).find(value)
                out.append(_Span(start, start + len(value), value, strength))

    if want is Want.DATE:
        add(_DATE, 2)
        if year_will_do:  # "when ...", "in what year": a year alone may answer; "on what date" it does not
            add(_YEAR, 1)
    elif want is Want.DURATION:
        add(_DURATION, 2)
    elif want is Want.PERCENT:
        # A rate of money ("an hourly rate", "the fee rate") is an amount per unit.
        money_rate = bool(question_words & _MONEY_RATE_WORDS)
        add(_PERCENT, 1 if money_rate else 2)
        add(_MONEY, 2 if money_rate else 1)
    elif want is Want.FIGURE:
        add(_MONEY, 3)
        add(_QUANTITY, 2)
        add(_PERCENT, 2)
        add(_DURATION, 1)
        add(_BARE_FIGURE, 1)
    elif want is Want.COUNT:
        for m in _COUNT.finditer(text):
            value = m.group(0).strip(" ,;:")
            if not value or _is_reference_number(text, m.start(), m.end()):
                continue
            # The noun counted, when the question names it ("20 subjects").
            follow = re.match(r"\s*(?:(million|billion|thousand)\s+)?([A-Za-z][\w-]*)", text[m.end() :])
            strength = 1
            if follow and follow.group(1) and _stem(follow.group(2)) in question_words:
                value += f" {follow.group(1)} {follow.group(2)}"  # "408 million shares"
                strength = 3
            elif follow and not follow.group(1) and _stem(follow.group(2)) in question_words:
                value += " " + follow.group(2)
                strength = 3
            elif follow and (follow.group(1) or follow.group(2)).lower() not in (
                "percent",
                "per",
                "am",
                "pm",
                "a.m",
                "p.m",
            ):
                strength = 2
            start = m.start() + m.group(0).find(m.group(0).strip(" ,;:"))
            out.append(_Span(start, start + len(value), value, strength))
        out = [s for s in out if not _inside_date(text, s)]
    elif want is Want.RATIO:
        add(_RATIO, 2)
    elif want is Want.CODE:
        add(_CODE, 2)
        out = [s for s in out if any(ch.isdigit() for ch in s.text) and not _DATE.fullmatch(s.text)]
    elif want in (Want.NAME, Want.PLACE):
        for m in _NAME.finditer(text):
            name = _trim_name(m.group(0), question_words)
            if not name:
                continue
            start = m.start() + m.group(0).find(name)
            words = name.split()
            strong = len(words) >= 2 or _HONORIFIC.match(name) or (name.isupper() and len(name) > 3)
            if want is Want.NAME and not strong:
                continue  # one capitalised word ("Week", "Tarrant") is too weak to name a person
            if all(w.strip(".,").lower() in _TITLE_WORDS for w in words):
                continue  # "Assistant Attorney General": a title, not whose it is
            if want is Want.PLACE and any(w.strip(".,").lower() in _INSTRUMENT_WORDS for w in words):
                continue  # "Arbitration Act of Ontario": a law's name, not a place
            if want is Want.PLACE and len(words) == 1 and text[max(0, start - 4) : start].lower() == "the ":
                continue  # "the Territory": a defined term, not a place's name
            strength = 2 if strong else 1
            out.append(_Span(start, start + len(name), name, strength))
    return out


# Values as Chinese, Japanese and Korean write them: a number, then its unit or counter
# ("2015년 1월 1일", "5年", "40만원", "3,000元", "2%", "20名").
_CJK_NUM = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_CJK_DATE = re.compile(
    r"\d{4}\s*[年년]\s*\d{1,2}\s*[月월]\s*(?:\d{1,2}\s*[日일号號])?|\d{1,2}\s*[月월]\s*\d{1,2}\s*[日일号號]"
)
_CJK_YEAR = re.compile(r"\d{4}\s*[年년](?:도|度)?")
_CJK_DURATION = re.compile(
    rf"{_CJK_NUM}\s*(?:개월|개년|년간|년|주간|주일|주|일간|일|시간|분|"
    r"个月|個月|ヶ月|か月|カ月|ケ月|年間|年|週間|周|週|天|日間|日|小时|小時|時間|分钟|分鐘|分)"
)
_CJK_MONEY = re.compile(
    rf"(?:[₩¥￥$]\s*{_CJK_NUM}(?:\s*(?:만|억|천|万|億|千|百万))?|{_CJK_NUM}\s*(?:만|억|천|万|億|千|百万)?\s*"
    r"(?:원|元|円|엔|위안|달러|美元|ドル|人民币|人民幣))"
)
_CJK_PERCENT = re.compile(rf"{_CJK_NUM}\s*(?:%|％|퍼센트|パーセント)|百分之\s*{_CJK_NUM}")
_CJK_COUNT = re.compile(rf"{_CJK_NUM}\s*(?:개|명|건|회|번|곳|个|個|名|人|件|次|回|社)")
_CJK_SPANS = {
    Want.DATE: ((_CJK_DATE, 2), (_CJK_YEAR, 1)),
    Want.DURATION: ((_CJK_DURATION, 2),),
    Want.PERCENT: ((_CJK_PERCENT, 2),),
    Want.FIGURE: ((_CJK_MONEY, 3), (_CJK_PERCENT, 2), (_CJK_DURATION, 1)),
    Want.COUNT: ((_CJK_COUNT, 3),),
}


def _cjk_spans(text: str, want: Want) -> list[_Span]:
    """The values of the kind asked for as Chinese, Japanese and Korean text writes them."""
    out: list[_Span] = []
    for pattern, strength in _CJK_SPANS.get(want, ()):
        out.extend(_Span(m.start(), m.end(), m.group(0), strength) for m in pattern.finditer(text))
    return out


# Cheap tests that say when the costly patterns may match at all.
_NUMBERISH = re.compile(rf"\d|\b{_NUMBER_WORD}|{_ORDINAL_WORD}", re.IGNORECASE)
_PERCENTISH = re.compile(r"%|percent|per cent", re.IGNORECASE)
_MONEYISH = re.compile(rf"[$€£¥]|{_CURRENCY}|dollar|euro|pound|franc|\byen\b", re.IGNORECASE)
_MONEY_RATE_WORDS = frozenset(terms("hourly daily weekly monthly fee fees price charge charged cost dollar"))
_TITLE_WORDS = frozenset(
    "assistant associate deputy chief attorney general solicitor counsel senior junior vice president "
    "executive officer director manager secretary treasurer chair chairman chairperson member judge "
    "justice circuit district magistrate clerk principal investigator lead national coordinating "
    "medical monitor sponsor representative committee board council department office division "
    "steering court agreement party parties customer supplier company the of and".split()
)
_INSTRUMENT_WORDS = frozenset(
    "act acts rules rule convention code regulation regulations statute treaty law laws agreement "
    "section article schedule clause".split()
)


def _stem(word: str) -> str:
    found = terms(word)
    return found[0] if found else word.lower()


def _is_reference_number(text: str, start: int, end: int) -> bool:
    """A number that names something ("Section 5", "Order 14", "No. 3", "5.05(b)") rather than
    counting it."""
    before = text[max(0, start - 14) : start]
    if re.search(
        r"(?:Section|Sections|Article|Order|No\.|Nos\.|Part|Page|Pages|Table|Figure|Appendix|Schedule|Exhibit|"
        r"Rule|Chapter|Version|Visit|Week|Day|Grade|Phase|Item|Count|Form|Step|Tier|Class|Level|§+|Pp?\.)\s*$",
        before,
    ):
        return True
    after = text[end : end + 2]
    return bool(re.match(r"\(\w|\.\d|[:/]", after)) or bool(_YEAR.fullmatch(text[start:end].strip()))


def _inside_date(text: str, span: _Span) -> bool:
    return any(m.start() <= span.start and span.end <= m.end() for m in _DATE.finditer(text))


def _trim_name(name: str, question_words: set[str]) -> str:
    words = name.split()
    # Leading and trailing words that are not part of a name, or that the question itself says.
    while words and (
        words[0].lower().strip(".,") in _NOT_NAMES
        or _stem(words[0].strip(".,")) in question_words
        or words[0].lower() in ("of", "the", "and")
    ):
        words = words[1:]
    while words and (
        words[-1].lower().strip(".,") in _NOT_NAMES or words[-1].lower() in ("of", "the", "and")
    ):
        words = words[:-1]
    if words and _stem(words[-1].strip(".,")) in question_words:
        return ""  # "Steering Committee" for "which committee": a kind of what is asked, not a name
    if not words or all(w.lower().strip(".,") in _MONTHS_AND_DAYS for w in words):
        return ""
    text = " ".join(words).strip(",;:")
    if text.endswith(".") and len(words[-1]) > 4:  # a sentence's full stop, not "T." or "Inc."
        text = text[:-1]
    if len(text) < 3 or not any(ch.islower() for ch in text) and len(words) == 1 and len(text) <= 3:
        return ""
    return text


# ---- What is never an answer --------------------------------------------------------------------

_TOC = re.compile(r"(?:\.\s*){4,}|(?:…\s*){2,}|_{4,}\s*\d+\s*$")
_BLANK = re.compile(
    r"\[\s*(?:to be (?:completed|determined|agreed|confirmed|inserted|provided)|insert\b[^\]]*|tbd|tbc|"
    r"[●•_x.\s-]*|date|name|amount|[a-z ]*\bhere)\s*\]|_{3,}|\bTBD\b|\bTBC\b",
    re.IGNORECASE,
)
_BOILERPLATE = re.compile(
    r"\bI have reviewed this\b|\bpursuant to (?:section|rule) (?:302|906|13a-14|15d-14)|\bSarbanes-Oxley\b|"
    r"\bBased on my knowledge\b|\bI(?:,[^,]{1,60},)? (?:hereby )?certify\b|\bIN WITNESS WHEREOF\b|\bhas duly caused\b|"
    r"\bthe undersigned\b|^\s*/s/|^\s*By:\s*$|^\s*(?:Signature|Name|Title|Date|Print|Signed)\s*:?\s*$|"
    r"\bPage \d+ of \d+\b|\bAll rights reserved\b|\bForward-looking statements?\b|\bIndicate by check mark\b",
    re.IGNORECASE,
)
# Words one of which every boilerplate pattern holds (the short-line ones are tried on short pieces).
_BOILERPLATE_KEYS = (
    "reviewed", "pursuant to", "sarbanes", "my knowledge", "certify", "witness whereof", "duly caused",
    "undersigned", "/s/", "page ", "rights reserved", "forward-looking", "check mark",
)  # fmt: skip
_NUMBERED_HEADING = re.compile(
    r"^(?:(?:ARTICLE|SECTION|SCHEDULE|APPENDIX|EXHIBIT|ANNEX|PART|CHAPTER|ITEM)\b|[A-Z]?\d+(?:\.\d+)*\.?\s+[A-Z])",
    re.IGNORECASE,
)


@lru_cache(maxsize=32_768)
def unusable(piece: str) -> bool:
    """A table-of-contents line, boilerplate or a template blank: never an answer, never a quote."""
    # Cheap tests first: most sentences hold none of what the patterns look for.
    if (".." in piece or ". ." in piece or "…" in piece or "____" in piece) and _TOC.search(piece):
        return True
    if ("[" in piece or "___" in piece or "TB" in piece) and _BLANK.search(piece):
        return True
    lowered = piece.lower()
    if (len(piece) <= 16 or any(key in lowered for key in _BOILERPLATE_KEYS)) and _BOILERPLATE.search(piece):
        return True
    return piece[-1:].isdigit() and _toc_entry(piece)


_TOC_ENTRY = re.compile(r"^([A-Z][^.!?:;]*[A-Za-z)])\s+(\d{1,3})$")


def _toc_entry(piece: str) -> bool:
    """A title and a page number ("Financial Statements 1", "Risk Factors 18"): a contents
    line even without dot leaders. (A table row has figures: "Products 60,584 63,355".)"""
    entry = _TOC_ENTRY.match(piece)
    return entry is not None and len(entry.group(1).split()) >= 2 and is_heading(entry.group(1))


@lru_cache(maxsize=32_768)
def is_heading(piece: str) -> bool:
    """A heading or a label: short, no sentence's end, and set as a title (capitals, a number,
    a colon at the end)."""
    words = piece.split()
    if not words or len(words) > 12 or piece.rstrip().endswith((".", "?", "!", ";")) and not piece.isupper():
        return False
    if piece.rstrip().endswith(":") or piece.isupper() or _NUMBERED_HEADING.match(piece):
        return True
    capitals = sum(1 for w in words if w[:1].isupper() or not w[:1].isalpha())
    small = sum(
        1
        for w in words
        if w.lower() in ("of", "and", "the", "for", "to", "in", "on", "a", "an", "or", "with")
    )
    return capitals + small == len(words) and len(words) <= 8


def answer_like(text: str) -> bool:
    """Whether ``text`` may stand as an answer: no heading, boilerplate or blank."""
    return bool(text.strip()) and not unusable(text) and not is_heading(text)


# ---- Reading ---------------------------------------------------------------------------------

# Words that say what kind of answer is wanted, not what it is about: they rarely stand in
# the passage that answers ("On what date ..." is answered by "... on 1 April 2025").
_CUE_WORDS = frozenset(
    terms(
        "date day year month time when long many much number amount percentage percent share "
        "rate ratio name list identify value size often soon period duration level"
    )
)
# Words that rank what is asked for ("the key exclusion criteria", "the main risks"), not what
# it is: a list says them rarely, so they count towards neither what a passage must carry.
_EMPHASIS = frozenset(terms("key main major principal important essential chief significant"))
# Fewer pages than this are weighed as if pages that hold none of the question's words made up
# the rest: an answer call sends only the few pages retrieval picked, for holding the question's
# words, and over them the subject of the question ("exclusion", on four of five pages) would
# weigh next to nothing beside a word on one ("main"). A weight must not depend on how many
# pages were sent: R&R reads on its five pages what Baseline reads on all of them.
_PRIOR_PAGES = 20
_FIGURES = frozenset({Want.FIGURE, Want.PERCENT, Want.COUNT, Want.DURATION, Want.CODE, Want.RATIO})
_CANDIDATES = 60  # sentences looked at, best first
# Share of the question's weighted words a passage must carry: a typed answer is checked by
# its kind as well, so it may rest on a paraphrase; a sentence answer has nothing else.
_MIN_COVER = {True: 0.25, False: 0.4}
_LIST_ITEMS = 8


@dataclass(frozen=True, slots=True)
class _Unit:
    """A passage that may hold an answer: a sentence, or a label with what follows it."""

    page_index: int
    sentence: int
    last: int  # index of the last sentence it takes in
    text: str
    value_from: int  # where the label ends and its value starts (0: no label)


class _Reader:
    def __init__(self, question: str, pages: Sequence[tuple[int, str]]) -> None:
        self.want = answer_type(question)
        question = " ".join(_ASKS_FORM.sub(" ", question).split()) or question
        self.question = question
        self.pages = pages
        self.read: list[PageTerms] = page_terms([text for _, text in pages])
        self.page_index = BM25.from_counts(page.counts for page in self.read)
        self.page_scores = self.page_index.scores(question)  # also works out each term's idf
        # A lone letter ("Apple's" gives "apple" and "s") says nothing about what is asked.
        asked = [t for t in dict.fromkeys(terms(question)) if len(t) > 1 or t.isdigit()]
        self.asked = set(asked)
        content = [t for t in asked if t not in _CUE_WORDS and t not in _EMPHASIS] or asked
        self.weights = {t: self._weight(t) for t in content}
        # A yes/no question asks whether a provision exists, in its own words or the
        # document's ("without cause", "for convenience"): over the few pages an answer call is
        # sent, a word of the question none of them holds would outweigh every word they do
        # hold, and the provision would go unseen. Such a word weighs as the heaviest found.
        if self.want is Want.YES_NO:
            present = {t for t in self.weights if any(t in page.counts for page in self.read)}
            heaviest = max((w for t, w in self.weights.items() if t in present), default=0.0)
            if heaviest > 0:
                self.weights = {t: w if t in present else min(w, heaviest) for t, w in self.weights.items()}
        # What a "what/which X" question is about: a figure, a rate or a count of X that the
        # document never names is not in it ("What was the dividend per share?" is not
        # answered by the earnings per share).
        words = _words(question)
        wh = next((k for k, w in enumerate(words[:4]) if w in ("what", "which")), None)
        head = set(terms(" ".join(_head(words, wh + 1)))) - _CUE_WORDS if wh is not None else set()
        self.head = head if self.want in _FIGURES else set()
        self.governing = self.want is Want.PLACE and bool(_ASKS_GOVERNING_LAW.search(question))
        self.year_will_do = bool(
            re.search(
                r"\b(?:when|year)\b|언제|何时|何時|什么时候|什麼時候|哪年|いつ", question, re.IGNORECASE
            )
        )
        # A Chinese, Japanese or Korean question whose value is not found in the form looked for
        # (a name or a place: no capitals to find them by) is answered with its sentence.
        self.cjk = bool(_CJK.search(question))
        self.bound = next((said for asked_for, said in _BOUNDS if asked_for.search(question)), None)
        self.total = sum(self.weights.values())

    def _named(self, term: str) -> bool:
        """Whether the pages use the word, in any of its forms: "repurchase" stems apart from
        "repurchased" ("repurchas") and "ends" from "end", so a word sharing its first letters
        (all but its last, at most five) will do."""
        if any(term in page.counts for page in self.read):
            return True
        stem = term[: min(len(term) - 1, 5)]
        return len(stem) >= 3 and any(k.startswith(stem) for page in self.read for k in page.counts)

    def _weight(self, term: str) -> float:
        """The word's idf over the pages read, at least ``_PRIOR_PAGES`` of them (the others
        taken to lack it)."""
        holding = sum(1 for page in self.read if term in page.counts)
        unseen = max(len(self.read), _PRIOR_PAGES) - holding
        return math.log(1 + (unseen + 0.5) / (holding + 0.5))

    def cover(self, words: set[str]) -> float:
        if self.total <= 0:
            return 0.0
        return sum(w for t, w in self.weights.items() if t in words) / self.total

    def ranked(self) -> list[tuple[float, int, int]]:
        """(weight, page index, sentence index) of the best sentences, best first; equal
        weights in document order."""
        scores = sentence_scores(self.read, self.question, b=0.3)
        page_scores = self.page_scores

        def weighted() -> list[tuple[float, int, int]]:
            out: list[tuple[float, int, int]] = []
            for j, sentence_score in enumerate(scores):
                if sentence_score is None:
                    continue
                bonus = 0.1 * page_scores[j]
                out.extend((s + bonus, j, i) for i, s in enumerate(sentence_score) if s > 0)
            return out

        return heapq.nsmallest(_CANDIDATES, weighted(), key=lambda c: (-c[0], c[1], c[2]))

    def unit(self, j: int, i: int) -> _Unit:
        """The sentence, or, for a heading or label, the label with the sentence(s) after it
        on its page (a table row's cells, a form's value)."""
        sentences = self.read[j].sentences
        text = sentences[i]
        if not is_heading(text) or i + 1 >= len(sentences):
            if _INITIAL_END.search(text) and i + 1 < len(sentences):  # "Susan T." | "Iannaccone, MD"
                return _Unit(j, i, i + 1, f"{text} {sentences[i + 1]}", 0)
            return _Unit(j, i, i, text, 0)
        last = i + 1
        # A table row's cells: figures that follow one another.
        while (
            last + 1 < len(sentences)
            and last - i < 6
            and _is_cell(sentences[last])
            and _is_cell(sentences[last + 1])
        ):
            last += 1
        if _INITIAL_END.search(sentences[last]) and last + 1 < len(sentences):
            last += 1
        value = " ".join(sentences[i + 1 : last + 1])
        return _Unit(j, i, last, f"{text} {value}", len(text) + 1)

    def quote(self, unit: _Unit) -> str:
        """The unit as the page says it (white space aside): a label and its value may have
        marks between them that are not sentences (a "$" cell, a bullet)."""
        sentences = self.read[unit.page_index].sentences
        if unit.last == unit.sentence:
            return unit.text  # the sentence, or the row of a table written in it
        flat = " ".join(self.pages[unit.page_index][1].split())
        first, final = sentences[unit.sentence], sentences[unit.last]
        start = flat.find(first)
        end = flat.find(final, start + len(first)) if start >= 0 else -1
        if start < 0 or end < 0 or end - start > 4 * len(unit.text) + 40:
            return unit.text
        return flat[start : end + len(final)]

    def pages_to_read(self, limit: int = 5) -> tuple[int, ...]:
        return tuple(self.pages[i][0] for i in self.page_index.rank(self.question, limit))

    def not_found(self) -> Reading:
        pages = self.pages_to_read()
        if not self.pages:
            return Reading(False, "n/a")
        where = ", ".join(str(p) for p in pages) if pages else "none shares a word with the question"
        return Reading(False, f"Not found by the offline engine; pages to read: {where}", (), pages)

    def answer(self) -> Reading:
        if not self.pages or not self.asked or not any(page.sentences for page in self.read):
            return self.not_found()
        if self.head and not any(self.head & page.counts.keys() for page in self.read):
            return self.not_found()
        # A figure of a place or a name the document never uses ("net sales in Antarctica"):
        # no figure it gives is that one. (Names only: a verb of the question, "applies",
        # "ends", is often not the document's word.)
        names = set(terms(" ".join(re.findall(r"(?<=\s)[A-Z][a-z]+", self.question))))
        if self.want in _FIGURES and any(
            w >= 0.15 * self.total and not self._named(t) for t, w in self.weights.items() if t in names
        ):
            return self.not_found()
        if self.want is Want.DATE and _ASKS_AGREEMENT_DATE.search(self.question):
            preamble = self._preamble_date()
            if preamble is not None:
                return preamble
        if (self.want in (Want.FIGURE, Want.PERCENT, Want.COUNT) and _ASKS_PERIOD.search(self.question)) or (
            self.want is Want.TEXT and _PERIOD_PHRASE.search(self.question)
        ):
            # "What was the provision for income taxes for the three months ended ...": a
            # statement's row, whatever the question's wording says of the answer's kind.
            row = self._table_figure()
            if row is not None:
                return row
        candidates = self.ranked()
        if self.want is Want.LIST:
            found = self._list(candidates)
        elif self.want is Want.YES_NO:
            found = self._yes_no(candidates)
        elif self.want is Want.TEXT:
            found = self._sentence(candidates)
        else:
            found = self._span(candidates)
            if found is None and self.cjk:
                found = self._sentence(candidates)
        return found or self.not_found()

    # -- the three ways of answering --

    def _units(self, candidates: list[tuple[float, int, int]]) -> list[tuple[float, _Unit]]:
        """Candidate passages that carry enough of the question, best first, each once."""
        out: list[tuple[float, _Unit]] = []
        seen: set[tuple[int, int]] = set()
        for weight, j, i in candidates:
            unit = self.unit(j, i)
            if (j, i) in seen or unusable(unit.text[: unit.value_from or None]):
                continue
            seen.add((j, i))
            words = set(self.read[j].sentence_terms[i])
            if i > 0 and self.want is not Want.TEXT:  # "It is chaired by ..." continues the sentence before
                words.update(self.read[j].sentence_terms[i - 1])
            for k in range(unit.sentence + 1, unit.last + 1):
                words.update(self.read[j].sentence_terms[k])
            if self.cover(words) >= _MIN_COVER[self.want not in (Want.TEXT, Want.LIST, Want.YES_NO)]:
                out.append((weight, unit))
        return out

    def _span(self, candidates: list[tuple[float, int, int]]) -> Reading | None:
        question_words = self.asked
        best: tuple[float, _Span, _Unit] | None = None
        first_weight = 0.0  # of the best-ranked passage holding a span of the kind asked
        # The most a span's kind, place and bound can add to a passage's score, and its label:
        # a passage whose score cannot reach the best one's even so is not read for spans.
        most = (1.0 + 0.15 * (4 if self.want in _FIGURES or self.want is Want.DATE else 10)) * 1.5
        for weight, unit in self._units(candidates):
            if weight < first_weight * 0.3:
                break
            if best is not None and weight * (0.25 + self.cover(self._words(unit))) ** 3 * most <= best[0]:
                continue
            value = unit.text[unit.value_from :]
            if unusable(value) and not unit.value_from:
                continue
            if not unit.value_from and _ROW_BREAK.search(value):
                value = self._best_row(value)
                unit = _Unit(unit.page_index, unit.sentence, unit.last, value, 0)
            spans = [
                s
                for s in _spans(value, self.want, question_words, year_will_do=self.year_will_do)
                if not _BLANK.search(s.text)
                # a count the question itself states ("during the nine months") is not its answer
                and not (
                    self.want is Want.COUNT
                    and re.search(rf"(?<![\w.,]){re.escape(s.text)}(?![\w.,])", self.question, re.IGNORECASE)
                )
            ]
            if self.governing:  # "governed by PRC laws", "Delaware law governs"
                spans += [
                    _Span(m.start(1), m.end(1), m.group(1), 2)
                    for m in _LAW_OF_PLACE.finditer(value)
                    if _jurisdiction(m.group(1)) is not None
                ]
            if not spans:
                continue
            if self.want in (Want.NAME, Want.PLACE):
                spans = _proper_first(spans, self.pages[unit.page_index][1])
            if self.want is Want.PLACE:
                # A place follows "in", "at", "of" or "is"; "the laws of", "seated in" say so best.
                spans = [
                    _Span(
                        x.start,
                        x.end,
                        _bare_place(x.text),
                        x.strength + 2 * _placed(value, x, question_words),
                    )
                    for x in spans
                    if _PLACE_AFTER.search(value[max(0, x.start - 50) : x.start])
                    or (
                        self.governing
                        and re.search(
                            r"\bgoverned\s+by\s+(?:the\s+)?$", value[max(0, x.start - 30) : x.start], re.I
                        )
                    )
                ]
                if self.governing:  # a governing law is a state's or a country's, not a city's or a court's
                    spans = [
                        _Span(x.start, x.end, place, x.strength)
                        for x in spans
                        if (place := _jurisdiction(x.text)) is not None
                    ]
                if not spans:
                    continue
            if self.bound is not None:  # "at most" wants the span that says "up to a maximum of"
                spans = [
                    _Span(
                        x.start,
                        x.end,
                        x.text,
                        x.strength + (self.bound.search(value[max(0, x.start - 30) : x.end]) is not None),
                    )
                    for x in spans
                ]
            anchors = _term_positions(unit.text, question_words)
            step = 40
            if self.cjk:
                # Character pairs: the question's subject is its pairs the passage holds least
                # often ("커피" once, "빅포인트" in every row), and a character says about as
                # much as an English word.
                held = {t: unit.text.count(t) for t in question_words if _CJK.search(t) and t in unit.text}
                if held:
                    fewest = min(held.values())
                    anchors = _term_positions(unit.text, {t for t, n in held.items() if n == fewest})
                step = 8
            span = max(
                spans,
                key=lambda s: (
                    s.strength,
                    -(_distance(s, anchors, unit.value_from, self.want) // step),
                    -s.start,
                ),
            )
            # A passage that carries more of the question counts more than one that repeats a
            # few of its words (a table row under its section's label: "Diluted" under
            # "Earnings per share").
            cover = self.cover(self._words(unit))
            score = weight * (0.25 + cover) ** 3 * (1.0 + 0.15 * span.strength)
            if _labelled(value, span, self.weights):  # "Argued April 23, 2013" for "when was it argued"
                score *= 1.5
            first_weight = first_weight or weight
            if best is None or score > best[0]:
                best = (score, span, unit)
        if best is None:
            return None
        _, span, unit = best
        page = self.pages[unit.page_index][0]
        return Reading(True, _plain_date(span.text), (Citation(page, self.quote(unit)),))

    def _table_figure(self) -> Reading | None:
        """The figure of the asked period and column from a financial statement's row: "Total
        net sales" for "the three months ended June 25, 2022" is the row's cell under that
        date, in that period's columns."""
        asked = _asked_column(self.question)
        if asked is None:
            return None
        period_words = set(terms(asked.words)) | _ASKING_VERBS
        weights = {t: w for t, w in self.weights.items() if t not in period_words}
        rows: list[tuple[int, _Row, int]] = []
        for j, (number, text) in enumerate(self.pages):
            if not any(t in self.read[j].counts for t in weights):
                continue
            for row in _table_rows(text):
                column = asked.column(row.header)
                if column is not None and column < len(row.cells):
                    rows.append((number, row, column))
        # A word of the question that the document uses but no row's label does ("NVIDIA's
        # revenue", "how much cash did it hold") says whose or how, not which row.
        labelled: set[str] = set()
        for _, row, _ in rows:
            labelled.update(terms(row.label))
        if any(not any(t in page.counts for page in self.read) for t in weights):
            return None  # a row never names what the document never does ("in Antarctica")
        # Only while such words weigh less than the rest: "effective" in "effective tax rate",
        # with no row so labelled, is what is asked, and "net of tax" is not it.
        kept = {t: w for t, w in weights.items() if t in labelled}
        if sum(kept.values()) > sum(weights.values()) - sum(kept.values()):
            weights = kept
        total = sum(weights.values())
        if total <= 0:
            return None
        best: tuple[float, int, _Row, int] | None = None
        for number, row, column in rows:
            said = set(terms(row.label))
            cover = sum(w for t, w in weights.items() if t in said) / total
            # The row's own label names what its figure is; its section only places it: "Total
            # assets" (under "Non-current assets:") is the total assets, "Total current assets"
            # is not, and "Gross margin: Products" is not the gross margin.
            own = set(terms(row.own or row.label))
            own_cover = sum(w for t, w in weights.items() if t in own) / total
            extra = len(own - weights.keys())  # "Net sales: Products" is not "total net sales"
            # Of two labels alike, the shorter: "Provision for income taxes", not "Income before
            # provision for income taxes".
            score = cover + 0.5 * own_cover - 0.01 * extra - 0.002 * len((row.own or row.label).split())
            if cover >= 0.6 and (best is None or score > best[0]):
                best = (score, number, row, column)
        if best is None:
            return None
        _, number, row, column = best
        return Reading(True, row.cells[column], (Citation(number, row.quote),))

    def _preamble_date(self) -> Reading | None:
        """An agreement's date as its first page states it: "This Agreement is made as of ...",
        "dated as of ...", "entered into this 1st day of ..."."""
        for j, (number, _) in enumerate(self.pages):
            if number > _PREAMBLE_PAGES:
                continue
            for sentence in self.read[j].sentences:
                said = _PREAMBLE.search(sentence)
                if said is None or unusable(sentence):
                    continue
                date = _DATE.match(sentence, said.end())
                if date is not None and not _BLANK.search(date.group(0)):
                    return Reading(True, _plain_date(date.group(0)), (Citation(number, sentence),))
        return None

    def _yes_no(self, candidates: list[tuple[float, int, int]]) -> Reading | None:
        """Yes, with the passage that says so; No only with a clause that says the opposite
        ("either party may assign ... without consent" for "is assignment restricted?") and
        none on the pages read that says yes; else not found. A question whose ask the reader
        cannot read (no act it knows) is answered Yes by the passage that matches it best."""
        sense = _question_sense(self.question)
        if sense is not None:
            units = [unit for _, unit in self._units(candidates)]
            seen = {(unit.page_index, unit.sentence) for unit in units}
            # A clause that plainly says it need not repeat the question's words ("Rogers may
            # terminate this Agreement, at any time, upon sixty days' notice"): every sentence
            # naming the act is read as well, after the best-matching ones.
            for j, page in enumerate(self.read):
                for i, sentence in enumerate(page.sentences):
                    if (j, i) not in seen and sense.act.search(sentence):
                        units.append(_Unit(j, i, i, sentence, 0))
            stances = [
                (_stance(sense, unit.text), unit)
                for unit in units
                if not unit.value_from and answer_like(unit.text)
            ]
            for stance, unit in stances:
                if stance > 0:
                    return Reading(True, "Yes", (Citation(self.pages[unit.page_index][0], unit.text),))
            for stance, unit in stances:
                if stance < 0:
                    return Reading(True, "No", (Citation(self.pages[unit.page_index][0], unit.text),))
            return None  # a sentence that only shares the question's words says neither
        said = self._sentence(candidates)
        return Reading(True, "Yes", said.citations) if said is not None else None

    def _words(self, unit: _Unit) -> set[str]:
        found = set(terms(unit.text))
        if unit.sentence > 0:
            found.update(self.read[unit.page_index].sentence_terms[unit.sentence - 1])
        return found

    def _best_row(self, table: str) -> str:
        """The row of a table written as text ("| a | b | | c | d |") that carries most of the
        question, read with the header row's words."""
        rows = _ROW_BREAK.split(table)
        header = set(terms(rows[0]))
        best = max(
            rows[1:] or rows,
            key=lambda row: self.cover(header | set(terms(row))) + 0.01 * self.cover(set(terms(row))),
        )
        return best

    def _sentence(self, candidates: list[tuple[float, int, int]]) -> Reading | None:
        units = self._units(candidates)
        head = _head(_words(self.question), 1) if _words(self.question)[:1] in (["what"], ["which"]) else []
        if head and units:
            # "What is the primary endpoint?": a sentence that says what it is comes first,
            # among those nearly as relevant as the best.
            said = re.compile(
                r"\b"
                + r"\W+".join(re.escape(w) for w in head)
                + r"\w*\s*(?:\([^)]*\)\s*)?(?:is|are|was|will be|shall be|means|:)\s",
                re.IGNORECASE,
            )
            top = units[0][0]
            units.sort(key=lambda wu: not (wu[0] >= 0.5 * top and said.search(wu[1].text)))
        for _, unit in units:
            page = self.pages[unit.page_index][0]
            if unit.value_from:  # a heading that matches: the text after it answers
                value = self.read[unit.page_index].sentences[unit.sentence + 1]
                if not answer_like(value):
                    continue
                return Reading(True, _bare_item(value), (Citation(page, value),))
            if answer_like(unit.text):
                return Reading(True, _bare_item(unit.text), (Citation(page, unit.text),))
        return None

    def _list(self, candidates: list[tuple[float, int, int]]) -> Reading | None:
        """The list under the best-matching label; where the same label stands again (the
        criteria in a synopsis cut by a page break, and in full in the body), the longest."""
        best: tuple[int, Reading] | None = None
        label = ""
        for _, unit in self._units(candidates):
            anchor = " ".join(self.read[unit.page_index].sentences[unit.sentence].lower().split())
            if best is not None and anchor != label:
                continue
            found = self._list_at(unit)
            if found is None:
                continue
            if len(found.citations) < 2:  # a sentence that says it: as found
                if best is None:
                    return found
                continue
            if best is None:
                label = anchor
            if best is None or len(found.citations) > best[0]:
                best = (len(found.citations), found)
        return best[1] if best is not None else None

    def _list_at(self, unit: _Unit) -> Reading | None:
        """The list under a label (an item a cited line), or the sentence that states it."""
        j, i = unit.page_index, unit.sentence
        sentences = self.read[j].sentences
        anchor = sentences[i]
        page = self.pages[j][0]
        if is_heading(anchor) or anchor.rstrip(" •-*").endswith(":"):
            bulleted = anchor.rstrip().endswith(tuple(_BULLETS.strip()))
            items: list[str] = []
            for k in range(i + 1, min(len(sentences), i + 1 + 3 * _LIST_ITEMS)):
                item = sentences[k]
                if items and _ends_list(item):
                    break
                if unusable(item) or (not items and _INTRODUCES.search(item)):
                    continue  # "... if any of the following apply:" introduces, is not an item
                if not is_heading(item) or _LIST_ITEM.match(item) or items or len(item.split()) <= 4:
                    items.append(item)
                if len(items) >= _LIST_ITEMS:
                    break
                # Bullets set on lines of their own end each item but the last ("Death •").
                if bulleted and not item.rstrip().endswith(tuple(_BULLETS.strip())):
                    break
            if len(items) >= 2:
                shown = [_bare_item(item) for item in items]
                return Reading(True, "; ".join(shown), tuple(Citation(page, item) for item in items))
            return None
        if not answer_like(anchor):
            return None
        inline = _INLINE_LIST.search(anchor)
        answer = inline.group(0) if inline else _bare_item(anchor)
        return Reading(True, answer, (Citation(page, anchor),))


# A question about when an agreement was made, and how a preamble says it.
_ASKS_AGREEMENT_DATE = re.compile(
    r"\b(?:agreement|contract)\b.*\b(?:made|entered|dated|signed|executed|effective|concluded)\b|"
    r"\b(?:date|effective date) of (?:this|the) (?:agreement|contract)\b|\beffective date\b",
    re.IGNORECASE,
)
_PREAMBLE = re.compile(
    r"\b(?:made|entered into|dated|executed|effective|concluded)(?:\s+and\s+(?:entered\s+into|effective))?"
    r"(?:\s+(?:as\s+of|on|at|this|effective|and\s+effective))*(?:\s+the)?\s+",
    re.IGNORECASE,
)
_PREAMBLE_PAGES = 2  # an agreement states its date on its first page or two

# ---- A financial statement's rows and columns ---------------------------------------------------

_PERIOD = r"(?:(?:three|six|nine|twelve|3|6|9|12|thirteen|twenty-six|thirty-nine|fifty-two|13|26|39|52)\s+(?:months|weeks)|(?:fiscal\s+)?years?|quarters?)\s+ended"
_PERIOD_PHRASE = re.compile(_PERIOD, re.IGNORECASE)
_ASKS_PERIOD = re.compile(rf"{_PERIOD}|\b(?:as of|at)\s+{_MONTH}\s+\d", re.IGNORECASE)
_CELL = re.compile(r"^\(?-?\$?\s*\d{1,3}(?:,\d{3})*(?:\.\d+)?\)?(?:\s?%)?$|^[—–-]$")
_LINE_ROW = re.compile(
    r"^(?P<label>[A-Za-z][^$\d]*?[A-Za-z):])\s+(?P<cells>(?:\$?\s*\(?\d[\d,.]*\)?%?\s*){2,})$"
)


def _period_key(text: str) -> str:
    """A period phrase as a key: "Three Months Ended" and "3 months ended" are "3 months"."""
    words = text.lower().split()
    numbers = {"three": "3", "six": "6", "nine": "9", "twelve": "12", "thirteen": "13", "twenty-six": "26",
               "thirty-nine": "39", "fifty-two": "52"}  # fmt: skip
    if words[0] in ("fiscal", "year", "years"):
        return "year"
    if words[0].startswith("quarter"):
        return "3 months"
    return f"{numbers.get(words[0], words[0])} {words[1]}"


def _date_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


@dataclass(frozen=True, slots=True)
class _Row:
    """A table row: its label (with its section's, "Net sales: Products"), its cells, the
    header's columns above it ((period, date) each) and the row as the page says it."""

    label: str
    cells: tuple[str, ...]
    header: tuple[tuple[str, str], ...]
    quote: str
    own: str = ""  # the row's own label, without its section's ("Total assets")


@dataclass(frozen=True, slots=True)
class _AskedColumn:
    period: str  # "3 months", "year" or "" (a balance sheet's date alone)
    date: str
    words: str  # the question's words that name the column

    def column(self, header: tuple[tuple[str, str], ...]) -> int | None:
        matches = [
            k
            for k, (period, date) in enumerate(header)
            if date == self.date and (not self.period or not period or period == self.period)
        ]
        return matches[0] if len(matches) == 1 else None


# What a question does with a figure ("how much cash did it hold", "what did it spend on"): not
# what a table row is labelled.
_ASKING_VERBS = frozenset(
    terms(
        "hold held have had spend spent report reported record recorded generate generated pay paid "
        "earn earned incur incurred make made own owned recognize recognized"
    )
)


def _asked_column(question: str) -> _AskedColumn | None:
    date = _DATE.search(question)
    if date is None or not re.search(r"\d{4}", date.group(0)):
        return None
    period = _PERIOD_PHRASE.search(question)
    words = f"{period.group(0) if period else ''} {date.group(0)} as of at ended"
    return _AskedColumn(_period_key(period.group(0)) if period else "", _date_key(date.group(0)), words)


def _header_columns(lines: list[str]) -> tuple[tuple[str, str], ...]:
    """The columns a header names, from its lines: periods ("Three Months Ended", each over
    as many dates as there are dates per period) and dates ("June 25," "2022")."""
    text = " ".join(lines)
    periods = [_period_key(m.group(0)) for m in _PERIOD_PHRASE.finditer(text)]
    dates = [_date_key(m.group(0)) for m in _DATE.finditer(text) if re.search(r"\d{4}", m.group(0))]
    # The days on one line and the years on the next ("June 25," "June 26," ... "2022" "2021"):
    # each day takes its year in turn.
    days = re.findall(rf"{_MONTH}\s+\d{{1,2}}\b", text)
    years = re.findall(r"\b(?:19|20)\d{2}\b", text)
    if len(days) > len(dates) and len(days) == len(years):
        dates = [_date_key(f"{day}, {year}") for day, year in zip(days, years, strict=True)]
    if not dates:
        return ()
    if not periods:
        return tuple(("", d) for d in dates)
    if len(dates) % len(periods):
        return ()
    per = len(dates) // len(periods)
    return tuple((periods[k // per], d) for k, d in enumerate(dates))


@lru_cache(maxsize=256)
def _table_rows(text: str) -> tuple[_Row, ...]:
    """The rows of the financial tables on a page, a cell a line or a row a line, each with
    the header above it."""
    if not _PERIOD_PHRASE.search(text) and not re.search(r"\d{1,3},\d{3}", text):
        return ()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    rows: list[_Row] = []
    header: tuple[tuple[str, str], ...] = ()
    header_lines: list[str] = []
    under_header = 0  # rows read under the current header: a header line after them starts another
    section = ""
    k = 0
    while k < len(lines):
        line = lines[k]
        if len(line.split()) <= 6 and (
            _PERIOD_PHRASE.search(line)
            or (_DATE.search(line) and not _CELL.match(line))
            or (header_lines and re.fullmatch(r"(?:19|20)\d{2}", line))
        ):
            if under_header:
                header_lines, under_header = [], 0
            header_lines.append(line)
            header = _header_columns(header_lines)
            k += 1
            continue
        inline = _LINE_ROW.match(line)
        if inline:
            found = tuple(re.findall(r"\(?\d[\d,.]*\)?%?", inline.group("cells")))
            label = inline.group("label")
            rows.append(_Row(f"{section} {label}".strip(), found, header, line, label))
            under_header += 1
            k += 1
            continue
        if re.search(r"[A-Za-z]", line) and not _CELL.match(line):
            cells_at = k + 1
            cells: list[str] = []
            end = k
            while cells_at < len(lines) and (_CELL.match(lines[cells_at]) or lines[cells_at] == "$"):
                if lines[cells_at] != "$":
                    cells.append(lines[cells_at].replace("$", "").strip())
                end = cells_at
                cells_at += 1
            if len(cells) >= 2 and header:
                rows.append(
                    _Row(
                        f"{section} {line}".strip(), tuple(cells), header, " ".join(lines[k : end + 1]), line
                    )
                )
                under_header += 1
                k = end + 1
                continue
            if line.endswith(":"):
                section = line
            elif len(cells) == 0 and not line.endswith(":"):
                section = "" if len(line.split()) > 8 else section
        k += 1
    return tuple(rows)


# ---- Whether a clause says yes or no -------------------------------------------------------------

# What a yes/no question asks: whether something is restricted (assignment without consent, a
# capped liability), or whether a party may do something (terminate for convenience).
_ASKS_RESTRICTION = re.compile(
    r"\b(?:restrict\w*|prohibit\w*|forbid\w*|capped|cap|limited|limit(?:ed|s)?|require\w*\s+(?:\w+\s+){0,3}consent)\b",
    re.IGNORECASE,
)
_ASKS_PERMISSION = re.compile(
    r"^\s*(?:may|can|could|is\s+\w+\s+(?:permitted|allowed|entitled))\b", re.IGNORECASE
)
_NEGATION = re.compile(
    r"\b(?:not|neither|nor|no\s+(?:party|one|person|right)|never|cannot|in no event|prohibited|void)\b|n['’]t\b",
    re.IGNORECASE,
)
# A refusal, as opposed to a "not" in "not less than ninety days' notice".
_REFUSES = re.compile(
    r"\b(?:may|shall|can|will|must)\s+not\b|\bcannot\b|\bno\s+(?:party|one|person|right)\b|\bneither\b|\bin no event\b",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(
    r"\b(?:except|excepting|provided|notwithstanding|other than|unless|save|subject to|only|solely|but)\b",
    re.IGNORECASE,
)
_PERMITS = re.compile(
    r"\b(?:may|can|is free to|are free to|shall be free to|(?:shall|will)?\s*(?:have|has) the (?:right|discretion) to|"
    r"is entitled to|are entitled to|is permitted to)\b",
    re.IGNORECASE,
)
_WITHOUT_CONSENT = re.compile(
    r"\bwithout\b[^.;]{0,60}?\b(?:consent|approval|permission)\b|\bfreely\b", re.IGNORECASE
)
_CONSENT = re.compile(r"\b(?:consent|approval|approve|permission)\b", re.IGNORECASE)
_CAPS = re.compile(
    r"\b(?:shall not exceed|will not exceed|not to exceed|in no event|(?<!not )limited to|cap|capped|maximum|aggregate liability)\b",
    re.IGNORECASE,
)
_UNLIMITED = re.compile(r"\bunlimited\b", re.IGNORECASE)
_AT_WILL = re.compile(
    r"\b(?:for convenience|without cause|for any reason|for no reason|at any time|at will|"
    r"(?:upon|on|with|by giving|giving)\s+(?:at least\s+)?(?:\S+\s+){0,3}(?:days|months)['’]?\s+(?:\(\S+\)\s+)?(?:prior\s+)?(?:written\s+)?notice)\b",
    re.IGNORECASE,
)
_CHANGE_OF_CONTROL = re.compile(r"\bchange (?:of|in) control\b|\bchange-of-control\b", re.IGNORECASE)
_FOR_CAUSE = re.compile(
    r"\b(?:for cause|breach|default|insolven\w*|bankrupt\w*|force majeure|in the event|if|occurrence|following|mutual\w*|unanimous\w*)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Sense:
    """A yes/no question's ask: ``restriction`` (is something restricted or capped) or a
    permission, and the act it is about ("assign", "terminat")."""

    restriction: bool
    cap: bool
    act: re.Pattern[str]
    control: bool = False  # a change of control: does it give a right (consent, termination)?


_ACTS = (
    "assign",
    "transfer",
    "terminat",
    "sublicens",
    "subcontract",
    "disclos",
    "compet",
    "solicit",
    "renew",
)


def _question_sense(question: str) -> _Sense | None:
    """What a yes/no question asks, when its wording says (else None: yes or not found only)."""
    lowered = question.lower()
    act = next((a for a in _ACTS if a in lowered), None)
    capped = bool(re.search(r"\bliabilit", lowered)) and bool(re.search(r"\b(?:cap|capped|limit)", lowered))
    if capped:
        return _Sense(True, True, re.compile(r"\bliab(?:ility|ilities|le)\b", re.IGNORECASE))
    if re.search(r"\bchange (?:of|in) control\b", lowered):
        return _Sense(False, False, _CHANGE_OF_CONTROL, control=True)
    if act is None:
        return None
    pattern = re.compile(rf"\b{act}\w*", re.IGNORECASE)
    if _ASKS_RESTRICTION.search(question):
        return _Sense(True, False, pattern)
    if _ASKS_PERMISSION.search(question) and _AT_WILL.search(question):
        return _Sense(False, False, pattern)
    return None


def _stance(sense: _Sense, text: str) -> int:
    """+1: the clause says yes to the question; -1: it says no; 0: neither, or not plainly."""
    if not sense.act.search(text):
        return 0
    negated = bool(_NEGATION.search(text))
    excepted = bool(_EXCEPTION.search(text))
    if sense.control:  # "upon a change of control of Supplier, Customer may terminate"
        if re.search(r"\bterminat\w*|\bconsent\b|\bapproval\b", text, re.IGNORECASE) and not re.search(
            r"\bshall not (?:be deemed|constitute|require)\b|\bmay assign\b[^.;]*\bchange (?:of|in) control",
            text,
            re.IGNORECASE,
        ):  # not "Premier may assign this Agreement if it ... undergoes a change in control"
            return 1
        return 0
    if sense.cap:
        if _UNLIMITED.search(text) and not negated and not excepted and not _CAPS.search(text):
            return -1
        return 1 if _CAPS.search(text) else 0
    if sense.restriction:
        if negated and _CONSENT.search(text):
            return 1  # "neither party may assign ... without the other's consent"
        if re.search(
            r"\b(?:subject to|requires?|conditioned (?:up)?on)\b[^.;]{0,40}\bconsent", text, re.IGNORECASE
        ):
            return 1
        if _PERMITS.search(text) and _WITHOUT_CONSENT.search(text) and not negated and not excepted:
            return -1  # "either party may assign this agreement without the other's consent"
        return 0
    # A permission: "either party may terminate for convenience" (yes); "may not terminate
    # except for cause", "may terminate only for cause" (no).
    if (
        _PERMITS.search(text)
        and _AT_WILL.search(text)
        and not _REFUSES.search(text)
        and (not _FOR_CAUSE.search(text) or re.search(r"for convenience|without cause", text, re.IGNORECASE))
    ):
        return 1
    act = sense.act.pattern.removeprefix("\\b").removesuffix("\\w*")
    refused = re.search(
        rf"\b(?:(?:may|shall|can|will)\s+not\s+(?:be\s+)?|(?:no|neither)\s+party\s+(?:may|shall|can)\s+){act}\w*"
        rf"[^.;]{{0,80}}\b(?:except|other than|unless|save)\b",
        text,
        re.IGNORECASE,
    )
    only = re.search(
        rf"\b{act}\w*[^.;]{{0,60}}\b(?:only|solely)\b[^.;]{{0,30}}\bfor cause\b", text, re.IGNORECASE
    )
    if _FOR_CAUSE.search(text) and (refused or only):
        return -1
    return 0


_INTRODUCES = re.compile(r"\bfollowing\b|:\s*[•▪●◦*-]?$")
_BULLETS = " •▪●◦*-–"


def _ends_list(item: str) -> bool:
    """A numbered or capitalised heading, a section's bare number ("2.3"), or a new label:
    the list before it is over."""
    return bool(
        _NUMBERED_HEADING.match(item)
        or re.fullmatch(r"\d+(?:\.\d+)+\.?", item.strip())
        or (item.isupper() and len(item) > 3)
        or item.rstrip(_BULLETS).endswith(":")
    )


def _bare_item(item: str) -> str:
    """An item without its number or bullet, for the answer (the citation keeps them)."""
    return _LIST_ITEM.sub("", item, count=1).strip(_BULLETS)


_INITIAL_END = re.compile(r"(?:^|\s)[A-Z]\.$")
_ROW_BREAK = re.compile(r"(?<=\|)\s+(?=\|)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•▪●◦]|\(?[0-9]{1,2}[.)]|\(?[a-z][.)]|\([ivx]+\))\s+")
_INLINE_LIST = re.compile(
    rf"{_CAPITAL_WORD}(?:\s+{_CAPITAL_WORD})*(?:,\s+{_CAPITAL_WORD}(?:\s+{_CAPITAL_WORD})*)+,?\s+(?:and|or)\s+"
    rf"{_CAPITAL_WORD}(?:\s+{_CAPITAL_WORD})*"
)


# A question that asks for a bound, and how a passage states one.
_BOUNDS = (
    (
        re.compile(
            r"\b(?:at most|maximum|no more than|not more than|up to|longest|at the latest)\b", re.IGNORECASE
        ),
        re.compile(
            r"\b(?:up to|maximum|at most|not (?:more|later) than|no (?:more|later) than|not exceed|cap)",
            re.IGNORECASE,
        ),
    ),
    (
        re.compile(
            r"\b(?:at least|minimum|no less than|not less than|shortest|at the earliest)\b", re.IGNORECASE
        ),
        re.compile(
            r"\b(?:at least|minimum|not less than|no less than|no earlier than|not earlier than)",
            re.IGNORECASE,
        ),
    ),
)
_PLACE_KINDS = frozenset("State Province Commonwealth County City Canton Republic Kingdom".split())


def _proper_first(spans: list[_Span], page: str) -> list[_Span]:
    """Names made of proper nouns rank first: a capitalised word that the page also writes in
    lower case ("Steering Committee", "the committee") is a common noun set as a title."""
    out = []
    for span in spans:
        words = [w.strip(".,'’") for w in span.text.split() if w[:1].isupper() and w not in _PLACE_KINDS]
        common = sum(1 for w in words if len(w) > 1 and re.search(rf"\b{re.escape(w.lower())}\b", page))
        strength = span.strength + (2 if common == 0 else 1 if common < len(words) else 0)
        out.append(_Span(span.start, span.end, span.text, strength))
    return out


_PLACE_BEFORE = re.compile(
    r"\b(laws?|courts?|located|seated|seat|situated|held|venue|sitting)\s+(?:\w+\s+){0,2}?(?:of|in|at|is)\s+(?:the\s+)?"
    r"(?:(?:State|Commonwealth|Province|Republic|Kingdom|County|City|Canton)\s+of\s+(?:the\s+)?)?$",
    re.IGNORECASE,
)
_PLACE_AFTER = re.compile(
    r"\b(?:in|at|of|is|be|near|within)\s+(?:the\s+)?"
    r"(?:(?:State|Commonwealth|Province|Republic|Kingdom|County|City|Canton)\s+of\s+(?:the\s+)?)?$",
    re.IGNORECASE,
)
_PLACE_PREFIX = re.compile(
    r"^(?:the\s+)?(?:State|Commonwealth|Province|County|City|Canton)\s+of\s+(?:the\s+)?", re.IGNORECASE
)


def _bare_place(text: str) -> str:
    """ "State of New York" said as "New York" (a republic or a kingdom keeps its name)."""
    return _PLACE_PREFIX.sub("", text) or text


_PLACE_WORD = re.compile(r"^(?:State|Commonwealth|Province|Republic|Kingdom|County|City|Canton|Emirate)\b")


def _placed(text: str, span: _Span, question_words: set[str]) -> int:
    """How surely the words before a name make it the place asked for: 2 when they are the
    question's own ("the laws of ..." for a governing law, "seated in ..." for a seat), 1 for
    another place phrase ("courts located in ...", "State of ..."), else 0."""
    before = _PLACE_BEFORE.search(text[max(0, span.start - 50) : span.start])
    if before:
        word = before.group(1).lower()
        return 2 if {_stem(word), _stem(word.rstrip("s"))} & question_words else 1
    return 1 if _PLACE_WORD.match(span.text) else 0


_ASKS_GOVERNING_LAW = re.compile(
    r"\bgovern|\blaws?\b.*\b(?:apply|applies|applicable)\b|\bchoice of law\b", re.IGNORECASE
)
_LAW_OF_PLACE = re.compile(r"\b([A-Z][\w.'’]*(?:\s+[A-Z][\w.'’]*){0,3})\s+(?:[Ll]aws?|LAWS?)\b")
_US_STATES = (
    "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|"
    "Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|"
    "Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|"
    "North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|South Dakota|"
    "Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|Wisconsin|Wyoming|District of Columbia|"
    "Puerto Rico"
)
_PROVINCES = (
    "Ontario|Quebec|British Columbia|Alberta|Manitoba|Saskatchewan|Nova Scotia|New Brunswick|"
    "Newfoundland and Labrador|Prince Edward Island|New South Wales|Victoria|Queensland|Western Australia"
)
_COUNTRIES = (
    "United States of America|United States|USA|U\\.S\\.A\\.|Canada|Mexico|Brazil|Argentina|Chile|Colombia|Peru|"
    "England and Wales|England|Wales|Scotland|Northern Ireland|United Kingdom|Ireland|France|Germany|Italy|Spain|"
    "Portugal|Netherlands|The Netherlands|Belgium|Luxembourg|Switzerland|Austria|Denmark|Sweden|Norway|Finland|"
    "Iceland|Poland|Czech Republic|Hungary|Greece|Cyprus|Malta|Israel|Turkey|Russia|Russian Federation|Ukraine|"
    "India|Pakistan|China|People['’]s Republic of China|PRC|P\\.R\\.C\\.|Hong Kong|Hong Kong SAR|Macau|Taiwan|Japan|"
    "Korea|South Korea|Republic of Korea|Singapore|Malaysia|Thailand|Vietnam|Indonesia|Philippines|Australia|"
    "New Zealand|South Africa|Nigeria|Kenya|Egypt|United Arab Emirates|Dubai|Saudi Arabia|Qatar|Bermuda|"
    "Cayman Islands|British Virgin Islands|Bahamas|Jersey|Guernsey|Isle of Man|Liechtenstein|Monaco"
)
_JURISDICTION = re.compile(
    rf"^(?:the\s+)?(?:(?:State|Commonwealth|Province|Republic|Kingdom|Federal Republic)\s+of\s+(?:the\s+)?)?"
    rf"({_US_STATES}|{_PROVINCES}|{_COUNTRIES}|Papua New Guinea)(?![\w'’])",
    re.IGNORECASE,
)
_CANONICAL = {
    " ".join(name.replace("\\", "").lower().split()): name.replace("\\", "")
    for name in f"{_US_STATES}|{_PROVINCES}|{_COUNTRIES}|Papua New Guinea".split("|")
}
# A name that goes on after a place's is something else's: a company, a court, a city's part.
_NOT_A_JURISDICTION = re.compile(
    r"(?i:bank|mutual|instruments|inc|corp|corporation|company|co|llc|ltd|l\.p|university|court|courts|"
    r"county|city|power|energy|electric|gas|water|capital|trust|partners|holdings|group|stock|exchange|"
    r"department|board|district|circuit|times|post|life|insurance|national)\b"
)


def _jurisdiction(text: str) -> str | None:
    """The state, province or country a name is or begins with ("State of New York" is New
    York); None for a city, a court or a company ("Washington Mutual Bank", "Court of Rome")."""
    found = _JURISDICTION.match(text.strip())
    if found is None:
        return None
    if _NOT_A_JURISDICTION.match(text.strip()[found.end() :].strip(" ,.")):
        return None
    name = _CANONICAL.get(" ".join(found.group(1).lower().replace("’", "'").split()), found.group(1))
    if name.upper().replace(".", "") == "PRC":
        name = "People's Republic of China"
    kind = re.match(r"(?:the\s+)?(Republic|Kingdom|Federal Republic)\s+of\s+", found.group(0), re.IGNORECASE)
    return f"{kind.group(1).title()} of {name}" if kind else name


_ORDINAL_DATE = re.compile(
    rf"^(\d{{1,2}}|{_ORDINAL_WORD})(?:st|nd|rd|th)?\s+day\s+of\s+({_MONTH}),?\s+(\d{{4}})$", re.IGNORECASE
)


def _plain_date(text: str) -> str:
    """ "the 1st (first) day of November, 2002" read as "November 1, 2002"; other spans as written."""
    m = _ORDINAL_DATE.match(text)
    if not m:
        return text
    day = m.group(1).lower().replace(" ", "-")
    if not day.isdigit():
        tens, _, unit = day.rpartition("-")
        day = (
            str((20 if tens == "twenty" else 30 if tens == "thirty" else 0) + _ORDINALS.index(unit) + 1)
            if unit in _ORDINALS
            else {"twentieth": "20", "thirtieth": "30"}[unit]
        )
    return f"{m.group(2)} {int(day)}, {m.group(3)}"


def _is_cell(sentence: str) -> bool:
    """A table cell holding a figure: "$", "81,797", "(1,234)", "12.5%", "—"."""
    return bool(re.fullmatch(r"[$€£(]?\s*[\d,.]*\d[\d,.]*\s*[)%]?|[$€£—–-]", sentence.strip()))


def _labelled(text: str, span: _Span, weights: dict[str, float]) -> bool:
    """Whether one of the question's own words stands right before the span, as its label
    ("Argued April 23, 2013", "dated as of May 1, 2020", "Total net sales $ 82,959")."""
    before = re.findall(r"[^\W_]+", text[max(0, span.start - 30) : span.start])[-3:]
    return any(_stem(word) in weights for word in before)


def _term_positions(text: str, question_words: set[str]) -> list[int]:
    positions = []
    for m in re.finditer(r"[^\W_]+", text):
        if _stem(m.group(0)) in question_words:
            positions.append(m.start())
    # Chinese, Japanese and Korean terms are character pairs inside words: found where they stand.
    for term in question_words:
        if _CJK.search(term):
            at = text.find(term)
            while at >= 0:
                positions.append(at)
                at = text.find(term, at + 1)
    return sorted(positions)


def _distance(span: _Span, anchors: list[int], value_from: int, want: Want) -> float:
    """How far the span is from the question's words in the passage; a figure is looked for
    after its label (a table row, "revenue was $X") before it is looked for before."""
    if value_from:
        return float(span.start - value_from)
    if not anchors:
        return float(span.start)
    best = float("inf")
    for at in anchors:
        if span.start >= at:
            gap = float(span.start - at)
        else:
            gap = float(at - span.end) * (1.5 if want in (Want.FIGURE, Want.PERCENT, Want.COUNT) else 1.0)
        best = min(best, gap)
    return best


def read_answer(question: str, pages: Sequence[tuple[int, str]]) -> Reading:
    """The answer to ``question`` from ``pages`` ((number, text), in prompt order)."""
    return _Reader(question, pages).answer()
