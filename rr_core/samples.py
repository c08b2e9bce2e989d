"""Generated sample documents with planted facts, for demos and retrieval checks.

The product ships no third-party text, so its samples are written here from templates:
a long Master Services Agreement (``contract``) and a long clinical-study protocol
(``protocol``). Every company, person, drug and number in them is fictional.

Each sample carries questions whose answer is stated on exactly one page, while other
pages talk about the same subjects (and state near-miss values), so that finding the
right page takes more than matching a keyword. Generation is deterministic (a seeded
``random.Random``), uses the standard library only and takes well under a tenth of a second.

How a sample is made: an outline of sections (``_Section``), each with a page count, an
optional builder for fixed content (cover page, definitions, tables) and a topic
(``_Topic``) whose phrase pools top every page up to a realistic length. Facts and
distracters are planted into given pages (``_Plant``); a question's gold page is then
the one page that contains its first answer.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class SampleQuestion:
    """A question whose answer is stated on exactly one page (1-based)."""

    question: str
    answers: tuple[str, ...]
    page: int


@dataclass(frozen=True, slots=True)
class Sample:
    """A generated document: its page texts and the questions planted in it."""

    name: str
    title: str
    description: str
    pages: tuple[str, ...]
    questions: tuple[SampleQuestion, ...]


# ---- Template engine -------------------------------------------------------------------

Pools = Mapping[str, tuple[str, ...]]

# ``{name}`` or ``{name2}``: a slot filled from pool ``name``; a capitalised name
# (``{Actor}``) fills from the lower-case pool and capitalises the result.
_SLOT = re.compile(r"\{([A-Za-z_]+?)(\d*)\}")
_Block = tuple[str | None, str]  # (clause title to number, or None for raw text; text)

_PAGE_WORDS = (380, 500)  # the range each page's target length is drawn from
_PAGE_MAX = 580  # stop topping up before passing this, once the page is long enough
_PAGE_MIN = 340


def _lines(text: str) -> tuple[str, ...]:
    """The non-blank lines of a block of template text, stripped."""
    return tuple(line.strip() for line in text.strip().splitlines() if line.strip())


def _words(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True, slots=True)
class _Topic:
    """What a section talks about: clause titles and phrase pools for its sentences.

    Pool keys: ``ob_<g>`` (obligations of actor group ``g``, verb phrases), ``cond`` and
    ``remedy`` (aligned lists: condition ``i`` goes with consequence ``i``), ``neg``
    (prohibited acts), ``stmt`` (whole sentences) and ``ack`` (acknowledged facts).
    """

    titles: tuple[str, ...]
    pools: Mapping[str, tuple[str, ...]]


def _topic(titles: str, **pools: str) -> _Topic:
    """A topic from blocks of template lines, one template per line."""
    return _Topic(_lines(titles), {key: _lines(text) for key, text in pools.items()})


@dataclass(frozen=True, slots=True)
class _Style:
    """How one sample writes: shared pools, who acts, and its sentence patterns."""

    pools: Pools
    actors: Mapping[str, tuple[tuple[str, str], ...]]  # group -> (actor, other) pairs
    patterns: tuple[str, ...]
    list_leads: tuple[str, ...]
    bullets: str  # "alpha" for (a), (b)...; otherwise the bullet itself
    shared: _Topic | None = None  # boilerplate that any section may use now and then


_TOPIC_KEYS = frozenset({"ob", "cond", "remedy", "neg", "stmt", "ack"})
# Slots that keep their first value within a given topic phrase, so that a rule stated on
# two pages states the same number both times.
_STICKY = frozenset({"days", "amount", "pct", "pdays", "week", "timing"})


class _Exhausted(Exception):
    """Every phrase of a topic pool is already on the current page."""


def _needs(pattern: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _SLOT.finditer(pattern)) & _TOPIC_KEYS


class _Writer:
    """Fills templates from pools with a seeded generator, cycling through each pool."""

    def __init__(self, seed: int, style: _Style) -> None:
        self.rng = random.Random(seed)
        self.style = style
        self._decks: dict[tuple[str, ...], list[str]] = {}
        self._needs = {p: _needs(p) for p in style.patterns}
        self.page_used: set[str] = set()  # topic phrases already on the current page
        self.section_titles: list[str] = []  # clause titles used so far in the section
        self.page_pools: Pools = {}  # extra pools for the current page
        self._sticky: dict[tuple[str, str], str] = {}  # (topic phrase, slot) -> value

    def new_page(self, pools: Pools | None = None) -> None:
        """Forget the phrases used so far, so the next page may use them again."""
        self.page_used = set()
        self.page_pools = pools or {}

    def draw(self, options: Sequence[str], avoid: Collection[str] = ()) -> str:
        """The next option from a shuffled deck of ``options``, skipping ``avoid`` if it can."""
        key = tuple(options)
        deck = self._decks.get(key)
        if not deck:
            deck = list(key)
            self.rng.shuffle(deck)
            self._decks[key] = deck
        for i in range(len(deck) - 1, -1, -1):
            if deck[i] not in avoid:
                return deck.pop(i)
        fresh = [o for o in key if o not in avoid]
        return self.rng.choice(fresh) if fresh else deck.pop()

    def stick(self, phrase: str) -> str:
        """``phrase`` with its numeric and timing slots fixed to the values it had before."""

        def slot(match: re.Match[str]) -> str:
            if match.group(1) not in _STICKY:
                return match.group(0)
            key = (phrase, match.group(0))
            if key not in self._sticky:
                self._sticky[key] = self.fill(match.group(0))
            return self._sticky[key]

        return _SLOT.sub(slot, phrase)

    def fill(
        self,
        template: str,
        local: Pools | None = None,
        fixed: Mapping[str, str] | None = None,
        strict: bool = False,
    ) -> str:
        """``template`` with every slot filled; one value per slot name per call.

        With ``strict``, raise ``_Exhausted`` rather than repeat a topic phrase on a page.
        """
        chosen: dict[str, str] = dict(fixed or {})
        local = local or {}

        def slot(match: re.Match[str]) -> str:
            name, suffix = match.group(1), match.group(2)
            capital = name[0].isupper()
            base = name[0].lower() + name[1:]
            key = base + suffix
            if key not in chosen:
                options = local.get(base) or self.page_pools.get(base) or self.style.pools.get(base)
                if not options:
                    raise KeyError(f"no pool for template slot {{{name}{suffix}}}")
                if base in _TOPIC_KEYS:
                    if strict and self.page_used.issuperset(options):
                        raise _Exhausted(base)
                    value = self.draw(options, avoid=self.page_used)
                    self.page_used.add(value)
                    value = self.stick(value)
                else:
                    value = self.draw(options, avoid=chosen.values())
                chosen[key] = _SLOT.sub(slot, value)
            value = chosen[key]
            return value[:1].upper() + value[1:] if capital else value

        return _SLOT.sub(slot, template)

    def _actor(
        self, topic: _Topic, group: str | None = None
    ) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
        groups = [g for g in self.style.actors if f"ob_{g}" in topic.pools]
        if group is None:
            group = self.rng.choice(groups) if groups else next(iter(self.style.actors))
        actor, other = self.rng.choice(self.style.actors[group])
        local = dict(topic.pools)
        if f"ob_{group}" in topic.pools:
            local["ob"] = topic.pools[f"ob_{group}"]
        return {"actor": actor, "other": other}, local

    def sentence(self, topic: _Topic, fixed: Mapping[str, str], last: str = "") -> tuple[str, str]:
        """One sentence on ``topic`` and the pattern it used (not ``last`` unless it must).

        Phrases already on the page are avoided: other patterns are tried, then the shared
        boilerplate, and only then is a phrase repeated.
        """
        shared = self.style.shared
        topics = [shared, topic] if shared is not None and self.rng.random() < 0.12 else [topic, shared]
        for strict in (True, False):
            for candidate in (t for t in topics if t is not None):
                for _ in range(4):
                    try:
                        return self._sentence(candidate, fixed, last, strict)
                    except _Exhausted:
                        continue
        raise AssertionError("unreachable: a non-strict sentence always succeeds")

    def _sentence(self, topic: _Topic, fixed: Mapping[str, str], last: str, strict: bool) -> tuple[str, str]:
        have = set(topic.pools) | ({"ob"} if any(k.startswith("ob_") for k in topic.pools) else set())
        eligible = [p for p in self.style.patterns if self._needs[p] <= have]
        pattern = self.rng.choice([p for p in eligible if p != last] or eligible)
        parties, local = self._actor(topic)
        fixed = {**parties, **fixed}
        if "cond" in self._needs[pattern]:
            # A condition and its consequence are written as a pair: draw them together.
            conds = topic.pools["cond"]
            if strict and self.page_used.issuperset(conds):
                raise _Exhausted("cond")
            cond = self.draw(conds, avoid=self.page_used)
            self.page_used.add(cond)
            remedy = topic.pools["remedy"][conds.index(cond)]
            cond, remedy = self.stick(cond), self.stick(remedy)
            fixed["cond"], fixed["remedy"] = self.fill(cond, local, fixed), self.fill(remedy, local, fixed)
        return self.fill(pattern, local, fixed, strict), pattern

    def clause(self, topic: _Topic, fixed: Mapping[str, str]) -> _Block:
        """A titled clause: a short paragraph, or now and then an enumerated list."""
        used = set(self.section_titles)
        template = self.draw(
            topic.titles, avoid=used if not used.issuperset(topic.titles) else self.section_titles[-4:]
        )
        self.section_titles.append(template)
        title = self.fill(template, fixed=fixed)
        groups = [
            g for g in self.style.actors if len(set(topic.pools.get(f"ob_{g}", ())) - self.page_used) >= 4
        ]
        if groups and self.rng.random() < 0.22:
            group = self.rng.choice(groups)
            parties, _ = self._actor(topic, group)
            lead = self.fill(self.draw(self.style.list_leads), fixed={**parties, **fixed})
            pool = topic.pools[f"ob_{group}"]
            templates: list[str] = []
            for _ in range(min(self.rng.randint(3, 5), len(pool))):
                item = self.draw(pool, avoid={*templates, *self.page_used})
                if item not in templates:
                    templates.append(item)
            self.page_used.update(templates)
            items = [self.fill(self.stick(t), fixed={**parties, **fixed}) for t in templates]
            return title, lead + "\n" + self._enumerate(items)
        sentences: list[str] = []
        pattern = ""
        for _ in range(self.rng.choice((2, 3, 3, 4, 4, 5))):
            text, pattern = self.sentence(topic, fixed, pattern)
            if text not in sentences:
                sentences.append(text)
        return title, " ".join(sentences)

    def _enumerate(self, items: Sequence[str]) -> str:
        if self.style.bullets != "alpha":
            return "\n".join(f"{self.style.bullets} {item[:1].upper()}{item[1:]}." for item in items)
        lines = []
        for i, item in enumerate(items):
            end = "." if i == len(items) - 1 else ("; and" if i == len(items) - 2 else ";")
            lines.append(f"({chr(ord('a') + i)}) {item}{end}")
        return "\n".join(lines)


# ---- Document assembly -----------------------------------------------------------------


@dataclass(slots=True)
class _PagePlan:
    """Fixed content for one page; prose clauses are added around it to fill the page."""

    blocks: list[_Block] = field(default_factory=list)
    tail: list[_Block] = field(default_factory=list)  # kept last (e.g. a signature block)
    fixed: dict[str, str] = field(default_factory=dict)  # slot values for this page's prose
    fill: bool = True
    topic: _Topic | None = None  # overrides the section's topic for this page's prose
    pools: dict[str, tuple[str, ...]] = field(default_factory=dict)  # extra pools for this page


_Builder = Callable[[_Writer, "_Section"], list[_PagePlan]]


@dataclass(frozen=True, slots=True)
class _Section:
    """One part of the outline: a heading, a page count and how its pages are made."""

    key: str
    heading: str
    pages: int
    topic: _Topic | None = None
    prefix: str = ""  # clause numbers: "10" gives 10.1, 10.2...; "" gives none
    build: _Builder | None = None
    contents: bool = False  # this section is the table of contents


@dataclass(frozen=True, slots=True)
class _Plant:
    """A clause placed on a given page of a section: a fact or a distracter."""

    section: str
    page: int  # 0-based within the section
    title: str | None
    text: str


@dataclass(frozen=True, slots=True)
class _Fact:
    """A question; its gold page is the only page containing its first answer."""

    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Spec:
    """Everything needed to generate one sample."""

    name: str
    title: str
    description: str
    seed: int
    style: _Style
    sections: tuple[_Section, ...]
    plants: tuple[_Plant, ...]
    facts: tuple[_Fact, ...]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table as text lines, cells separated by " | "."""
    return "\n".join(" | ".join(cells) for cells in (header, *rows))


def _page_text(
    heading: str, blocks: Sequence[_Block], prefix: str, counter: list[int], titles: list[str]
) -> str:
    """One page: the heading line, then each block, titled blocks numbered in sequence."""
    parts = [heading]
    for title, text in blocks:
        if title is None:
            parts.append(text)
            continue
        counter[0] += 1
        number = f"{prefix}.{counter[0]}" if prefix else ""
        titles.append(f"{number} {title}".strip())
        parts.append(f"{number} {title}".strip() + "\n" + text)
    return "\n\n".join(parts)


def _section_pages(w: _Writer, section: _Section, plants: Sequence[_Plant], titles: list[str]) -> list[str]:
    """The section's page texts: its fixed content and plants, topped up with prose clauses."""
    plans = section.build(w, section) if section.build else [_PagePlan() for _ in range(section.pages)]
    if len(plans) != section.pages:
        raise RuntimeError(f"section {section.key!r} builds {len(plans)} pages, not {section.pages}")
    counter = [0]
    pages = []
    # Titles of fixed blocks and plants count as used, so prose clauses do not repeat them.
    fixed_titles = [t for plan in plans for t, _ in plan.blocks if t]
    w.section_titles = fixed_titles + [p.title for p in plants if p.section == section.key and p.title]
    for index, plan in enumerate(plans):
        heading = section.heading if index == 0 else f"{section.heading} (continued)"
        extra: list[_Block] = [
            (p.title, w.fill(p.text, fixed=plan.fixed))
            for p in plants
            if p.section == section.key and p.page == index
        ]
        body = list(plan.blocks)
        words = _words(heading) + sum(_words(t) for _, t in (*body, *extra, *plan.tail))
        target = w.rng.randint(*_PAGE_WORDS)
        topic = plan.topic or section.topic
        w.new_page(plan.pools)
        while topic is not None and plan.fill and words < target:
            block = w.clause(topic, plan.fixed)
            if words + _words(block[1]) > _PAGE_MAX and words >= _PAGE_MIN:
                break
            body.append(block)
            words += _words(block[1]) + _words(block[0] or "")
        for block in extra:
            body.insert(w.rng.randint(0, len(body)), block)
        pages.append(_page_text(heading, [*body, *plan.tail], section.prefix, counter, titles))
    return pages


_SMALL_WORDS = frozenset({"an", "and", "for", "in", "of", "on", "or", "the", "to", "with"})


def _title_case(heading: str) -> str:
    """A heading in title case, small words in lower case except after a dash."""
    words = heading.lower().split()
    return " ".join(
        w if i and w in _SMALL_WORDS and words[i - 1] != "-" else w[:1].upper() + w[1:]
        for i, w in enumerate(words)
    )


def _contents_page(heading: str, sections: Sequence[_Section], titles: Mapping[str, list[str]]) -> str:
    lines = [heading, "", "Each part of this document is listed below with its opening sections.", ""]
    for section in sections:
        opening = "; ".join(titles.get(section.key, [])[:3])
        lines.append(_title_case(section.heading) + (f": {opening}" if opening else ""))
    return "\n".join(lines)


def _generate(spec: _Spec) -> Sample:
    """Build a sample's pages section by section, then locate each question's gold page."""
    w = _Writer(spec.seed, spec.style)
    pages: list[str] = []
    titles: dict[str, list[str]] = {}
    contents_at: tuple[int, int] | None = None  # (page index, section index)
    for number, section in enumerate(spec.sections):
        if section.contents:
            contents_at = (len(pages), number)
            pages.append("")
            continue
        titles[section.key] = []
        pages.extend(_section_pages(w, section, spec.plants, titles[section.key]))
    if contents_at is not None:
        page, number = contents_at
        heading = spec.sections[number].heading
        pages[page] = _contents_page(heading, spec.sections[number + 1 :], titles)
    questions = []
    for fact in spec.facts:
        hits = [i for i, page in enumerate(pages) if fact.answers[0].lower() in page.lower()]
        if len(hits) != 1:
            raise RuntimeError(
                f"sample {spec.name!r}: answer {fact.answers[0]!r} is on pages {[h + 1 for h in hits]}"
            )
        questions.append(SampleQuestion(fact.question, fact.answers, hits[0] + 1))
    return Sample(spec.name, spec.title, spec.description, tuple(pages), tuple(questions))


# ---- Sample 1: a Master Services Agreement -------------------------------------------------

_CUSTOMER = "Brightwater Provisions, Inc."
_SUPPLIER = "Kestrel Meridian Technologies LLC"

_C_POOLS: Pools = {
    "days": _lines("""
        two (2) Business Days
        three (3) Business Days
        five (5) Business Days
        ten (10) Business Days
        fifteen (15) Business Days
        seven (7) days
        fourteen (14) days
        twenty (20) days
        thirty (30) days
        sixty (60) days
        ninety (90) days
    """),
    "event": _lines("""
        receipt of the relevant invoice
        the Service Commencement Date
        receipt of written notice from the Customer
        the end of each Measurement Period
        delivery of the relevant Deliverable
        submission of the relevant Change Request
        the expiry of the applicable cure period
        Acceptance of the relevant Milestone
        the start of each Contract Year
        the date on which the issue is first identified
        the relevant governance meeting
        the Customer's written request
    """),
    "timing": _lines("""
        within {days} after {event}
        promptly following {event}
        within {days} of a written request from the Customer
        at least once in each Contract Year
        on a monthly basis
        on a quarterly basis
        before each meeting of the {committee}
        throughout the Term
        as soon as reasonably practicable and in any event within {days}
        in accordance with {doc}
        for the duration of the applicable Statement of Work
    """),
    "doc": _lines("""
        the applicable Statement of Work
        Schedule D (Governance)
        Schedule B (Service Levels and Service Credits)
        Schedule C (Charges)
        Schedule I (Exit Plan)
        Schedule F (Security Requirements)
        Schedule E (Data Processing Addendum)
        the Procedures Manual
        the Transition Plan
        the Change Control Procedure
        the Policies
    """),
    "committee": _lines("""
        Executive Steering Committee
        Operational Management Committee
        Contract Management Board
        Technical Architecture Board
        Security Working Group
        Service Review Board
    """),
    "ref": _lines("""
        Section {a}.{b}
        Article {a}
        Section {a}.{b}
        Schedule {sch}
    """),
    "a": tuple(str(n) for n in range(2, 24)),
    "b": tuple(str(n) for n in range(1, 8)),
    "sch": tuple("ABCDEFGHIJK"),
    "record": _lines("""
        reasonable supporting documentation
        a written report describing the matter in reasonable detail
        copies of the relevant records
        an updated version of the Procedures Manual
        a certificate signed by an authorized officer
        evidence of compliance reasonably satisfactory to {other}
        the underlying calculations and source data
        minutes of the relevant meetings
    """),
    "service": _lines("""
        application maintenance services
        end-user support services
        data center hosting services
        network management services
        service desk services
        cloud infrastructure services
        payroll processing services
        warehouse systems support services
        disaster recovery services
        release management services
        database administration services
        identity and access management services
    """),
    "system": _lines("""
        the order management platform
        the ERP finance instance
        the warehouse control system
        the customer loyalty database
        the e-commerce storefront
        the HR information system
        the transport management system
        the enterprise data warehouse
        the supplier portal
        the point-of-sale estate
    """),
    "deliverable": _lines("""
        the monthly performance report
        the capacity forecast
        the root cause analysis report
        the quarterly business review pack
        the security assessment report
        the asset register
        the disaster recovery test report
        the invoice reconciliation statement
        the technology roadmap
        the continuous improvement plan
    """),
    "amount": _lines("""
        USD 25,000
        USD 40,000
        USD 75,000
        USD 100,000
        USD 250,000
        USD 500,000
        USD 750,000
        USD 1,000,000
        USD 2,500,000
    """),
    "pct": _lines("""
        two percent (2%)
        three percent (3%)
        five percent (5%)
        ten percent (10%)
        fifteen percent (15%)
        twenty percent (20%)
        twenty-five percent (25%)
    """),
    "location": _lines("""
        Baltimore, Maryland
        Columbus, Ohio
        Dallas, Texas
        Pune, India
        Manila, Philippines
        Wroclaw, Poland
        Monterrey, Mexico
        Dublin, Ireland
    """),
    "role": _lines("""
        Service Delivery Manager
        Transition Manager
        Contract Manager
        Finance Lead
        Security Manager
        Chief Architect
        Problem Manager
        Customer Relationship Manager
    """),
    "joint": _lines("""
        meet in good faith to agree any necessary adjustments
        escalate the matter to the {committee}
        document the agreed position in a Change Note
        review the relevant provisions of {doc}
    """),
}

_C_BOILERPLATE = _topic(
    titles="General",
    stmt="""
        The rights and remedies in this Section are in addition to, and not in substitution for, any other rights or remedies under this Agreement.
        Each party shall bear its own costs of complying with this Section unless this Agreement expressly provides otherwise.
        Any consent or approval required under this Section shall be given in writing and may be given subject to reasonable conditions.
        The obligations in this Section apply to the Supplier's Affiliates and Subcontractors to the extent they perform any part of the Services.
        The parties shall act reasonably and in good faith in performing their obligations under this Section.
        Where this Section refers to a report or plan, it shall be delivered in the format agreed by the Operational Management Committee.
        A failure by the Customer to exercise a right under this Section within a particular time does not prevent it from exercising that right later.
        References in this Section to the Services include, where the context permits, the Transition Services and the Termination Assistance Services.
        The Supplier shall record each action taken under this Section in the service management tool so that it can be audited.
        Nothing in this Section obliges the Customer to disclose information that is subject to legal privilege.
        The Customer Contract Manager may delegate any of the Customer's functions under this Section to a named deputy by written notice.
        Any dispute about the operation of this Section shall be resolved in accordance with Article 22.
        Costs that the Supplier incurs because it failed to comply with this Section are not recoverable from the Customer.
        The Supplier shall ensure that the Procedures Manual reflects the requirements of this Section at all times.
        This Section does not limit the Supplier's obligations under Schedule F (Security Requirements).
        Where the Customer acts reasonably in exercising its rights under this Section, the Supplier is not entitled to any relief or additional Charges.
    """,
)

_C_TOWER = _topic(
    titles="""
        Scope of the {tower} Tower
        {tower} Responsibilities
        {tower} Dependencies
        {tower} Reporting
        {tower} Exclusions
        {tower} Tools
        {tower} Operating Model
    """,
    ob_s="""
        perform {activity} for all in-scope sites and users
        document the procedure for {activity} in the Procedures Manual before the Service Commencement Date
        report monthly on the volumes and outcomes of {activity}
        use the Customer's service management tool to record {activity}
        assign a named team lead for {activity}
        review the process for {activity} with the Customer at least twice in each Contract Year
    """,
    ob_c="""
        give the Supplier the access rights needed for {activity}
        approve changes to the process for {activity} that affect its business users
    """,
    cond="""
        the Customer asks for {activity} outside the Service Hours for the {tower} tower
        volumes for {activity} exceed the baseline in Schedule C for two consecutive months
        {activity} depends on a third-party product that has reached end of support
    """,
    remedy="""
        the Supplier shall perform the work on a reasonable-efforts basis, and any overtime shall be charged at the rates in Schedule C
        the parties shall review the baseline at the next meeting of the Contract Management Board
        the Supplier shall notify the Technical Architecture Board and propose a supported alternative
    """,
    stmt="""
        The {tower} tower is delivered from the Service Locations identified for it in Schedule J.
        Work requested by the Customer that is not listed for the {tower} tower is treated as a Project unless it is an implied service under Article 2.
        The Supplier's tower lead for {tower} attends the monthly Operational Management Committee.
        Hardware and third-party software used by the {tower} tower remain the financial responsibility of the Customer unless Schedule C states otherwise.
        For the {tower} tower, the Supplier's responsibilities include {activity}.
        The Supplier shall keep the knowledge base for the {tower} tower current, including the procedure for {activity}.
        Service Levels applicable to the {tower} tower are set out in Schedule B.
    """,
)

_C_STYLE = _Style(
    pools=_C_POOLS,
    actors={
        "s": (("the Supplier", "the Customer"),),
        "c": (("the Customer", "the Supplier"),),
    },
    patterns=_lines("""
        {Actor} shall {ob}.
        {Actor} shall {ob}.
        Without limiting {ref}, {actor} shall {ob}.
        Except as otherwise provided in {doc}, {actor} shall {ob}.
        {Actor} shall, at its own cost, {ob}.
        {Actor} shall {ob} and shall, upon request, provide {other} with {record}.
        If {cond}, {remedy}.
        If {cond}, {remedy}.
        Where {cond}, {remedy}, without prejudice to any other right or remedy under this Agreement.
        The Supplier shall not {neg} without the prior written consent of the Customer.
        The Supplier shall not, and shall ensure that its Subcontractors do not, {neg}.
        {stmt}
        {stmt}
        {stmt}
        {stmt}
        Each party acknowledges that {ack}.
    """),
    list_leads=_lines("""
        Without limiting its other obligations under this Agreement, {actor} shall:
        In performing its obligations under this Article, {actor} shall:
        Unless {doc} provides otherwise, {actor} shall:
    """),
    bullets="alpha",
    shared=_C_BOILERPLATE,
)

_C_INTERPRETATION = _topic(
    titles="""
        Interpretation
        Headings and References
        Order of Precedence
        Construction
        Currency and Calculations
        Business Days and Time Periods
        Statutory References
        No Presumption Against the Drafter
    """,
    stmt="""
        In this Agreement, unless the context otherwise requires, words in the singular include the plural and words in the plural include the singular.
        The headings in this Agreement are for convenience only and do not affect its interpretation.
        A reference to a statute or statutory provision includes that statute or provision as amended, extended or re-enacted from time to time.
        The words "including" and "includes" are to be read as if followed by the words "without limitation".
        A reference to a party includes that party's permitted successors and permitted assigns.
        In the event of any conflict between the body of this Agreement and a Schedule, the body of this Agreement prevails unless the Schedule expressly states otherwise.
        In the event of any conflict between a Statement of Work and this Agreement, this Agreement prevails except for provisions of the Statement of Work that are expressly identified as overriding a specific Section.
        All amounts stated in this Agreement are in United States dollars unless expressly stated otherwise.
        Where a period of time is to run from a given day or event, it is calculated exclusive of that day or the day of that event.
        If the last day for performing an act falls on a day that is not a Business Day, the act shall be performed on the next Business Day.
        No rule of construction applies to the disadvantage of a party on the basis that the party prepared this Agreement or any part of it.
        A reference to writing or written includes email but does not include any other form of electronic message unless expressly stated.
        References to Articles, Sections and Schedules are to the articles, sections and schedules of this Agreement.
        Any obligation on a party not to do something includes an obligation not to allow that thing to be done.
    """,
)

_C_SERVICES = _topic(
    titles="""
        Provision of the Services
        Scope of the Services
        Implied Services
        Service Standards
        Customer Responsibilities
        Service Locations
        Use of Customer Systems
        Compliance with Policies
        Cooperation with Third Parties
        Non-Exclusivity
        Technology Refresh
        Service Hours
        Volume Fluctuations
    """,
    ob_s="""
        perform the {service} with the care, skill and diligence of a leading provider of similar services
        provide all labour, tools and equipment necessary to deliver the {service}, except where {doc} identifies them as Customer resources
        comply with the Policies notified to it in writing, as updated by the Customer from time to time
        cooperate with the Customer's other suppliers to the extent required for the efficient operation of {system}
        refresh the hardware and software used to provide the {service} in line with the technology roadmap
        perform the Services only from the Service Locations listed in Schedule J
        maintain sufficient capacity to absorb seasonal volume increases in the {service}
        notify the Customer in writing of any circumstance that is likely to prevent it from performing the {service}
        keep the Procedures Manual accurate and complete for all {service}
        provide knowledge transfer to Customer personnel on {system} on reasonable request
    """,
    ob_c="""
        provide the Supplier with reasonable access to {system} and the relevant Customer premises
        perform the Customer Responsibilities identified in {doc}
        appoint a single point of contact for day-to-day matters relating to the {service}
        inform the Supplier of planned business events that may materially increase demand for the {service}
    """,
    cond="""
        the Customer fails to perform a Customer Responsibility and that failure prevents the Supplier from performing the Services
        a service, function or responsibility not specifically described in this Agreement is an inherent part of the {service}
        the Customer asks the Supplier to perform services from a location that is not listed in Schedule J
        a third-party supplier of the Customer reasonably requires information held by the Supplier
        demand for the {service} exceeds the forecast volumes by more than {pct} in any month
    """,
    remedy="""
        the Supplier shall be excused from its failure to perform to the extent the failure is caused by the Customer's non-performance, provided that it notifies the Customer promptly
        that service, function or responsibility shall be deemed included within the Services and provided at no additional charge
        any resulting adjustment to the Charges shall be agreed through the Change Control Procedure
        the Supplier shall provide the information within {days}, subject to the third party agreeing to reasonable confidentiality terms
        the parties shall {joint}
    """,
    neg="""
        relocate the performance of any Services to a location that is not listed in Schedule J
        introduce new software or technology that materially affects {system}
        use any Customer System for a purpose other than the provision of the Services
    """,
    stmt="""
        This Agreement is not exclusive, and the Customer may obtain services similar to the Services from third parties or perform them itself.
        The Services include the services, functions and responsibilities performed by Customer personnel during the twelve months before the Effective Date, to the extent they fall within the scope of Schedule A.
        The Supplier is responsible for the {service} regardless of whether it uses its own personnel or an approved Subcontractor to deliver them.
        The Supplier shall perform the {service} during the Service Hours set out in Schedule A, and outside those hours on an on-call basis for Severity 1 Incidents.
        Where the Services interface with {system}, the Supplier is responsible for the interface up to the demarcation point described in {doc}.
        The Customer may, on reasonable notice, add further {service} to the scope of this Agreement at the rates set out in Schedule C.
        The Supplier shall treat the Customer's peak trading periods, including the weeks before Thanksgiving and the year-end holidays, as change freeze periods unless the Customer agrees otherwise.
        Each Statement of Work forms a separate contract incorporating the terms of this Agreement.
    """,
    ack="""
        the Customer is relying on the Supplier's expertise in the provision of the {service}
        it has had an adequate opportunity to conduct due diligence on the Customer's operating environment before the Effective Date
    """,
)

_C_SOW = _topic(
    titles="""
        Statements of Work
        Content of Statements of Work
        Projects
        Milestones and Deliverables
        Acceptance Testing
        Rejected Deliverables
        Project Personnel
        Project Reporting
        Delays
        Completion of Projects
    """,
    ob_s="""
        prepare a draft Statement of Work for each Project using the form in Schedule K
        describe in each Statement of Work the Deliverables, Milestones, acceptance criteria and applicable Charges
        deliver each Deliverable to the Customer for acceptance testing on or before its scheduled Milestone date
        correct any Deliverable that fails its acceptance tests and resubmit it {timing}
        report progress on each Project in {deliverable}
        maintain a risk and issues log for each Project and share it with the Customer {timing}
        provide a suitably qualified Project manager for each Project with a value above {amount}
    """,
    ob_c="""
        carry out acceptance testing of each Deliverable {timing}
        notify the Supplier in writing of each failed acceptance test, with reasonable details of the failure
        make available the Customer subject-matter experts identified in the applicable Statement of Work
    """,
    cond="""
        a Deliverable fails its acceptance tests for a second time
        the Customer does not notify the Supplier of a failed acceptance test within the acceptance period
        the Supplier anticipates that a Milestone will be missed
        a Project is delayed by more than {days} for reasons attributable to the Supplier
    """,
    remedy="""
        the Customer may, at its option, reject the Deliverable and recover all Charges paid for it, or accept it subject to a reasonable reduction in the Charges
        the Deliverable shall be deemed accepted, but deemed acceptance does not relieve the Supplier of its warranty obligations
        the Supplier shall notify the Customer promptly and submit a recovery plan within {days}
        the Customer may withhold payment of the Milestone Charges until the Milestone is achieved
    """,
    neg="""
        commence work on a Project before the relevant Statement of Work has been signed by both parties
        charge for any Project work that exceeds the estimate in the Statement of Work by more than {pct}
    """,
    stmt="""
        No Statement of Work is binding unless it is signed by an authorized representative of each party.
        Each Statement of Work shall identify whether its Charges are calculated on a fixed-price, time-and-materials or capped time-and-materials basis.
        Acceptance of a Deliverable does not waive any right of the Customer in respect of defects that could not reasonably have been discovered during acceptance testing.
        The acceptance criteria for each Deliverable shall be objective, measurable and agreed before testing begins.
        Milestone Charges become payable only on Acceptance of the relevant Milestone.
        The Customer may at any time, by written notice, suspend a Project, and the parties shall agree the consequences of the suspension through the Change Control Procedure.
        Unless a Statement of Work states otherwise, the Supplier owns the project plan and is responsible for keeping it current.
    """,
)

_C_TRANSITION = _topic(
    titles="""
        Transition Services
        Transition Plan
        Transition Milestones
        Knowledge Transfer
        Transferring Contracts
        Readiness Testing
        Service Commencement
        Transition Delays
        Transformation Projects
    """,
    ob_s="""
        perform the Transition Services in accordance with the Transition Plan
        complete knowledge transfer from the Customer's incumbent suppliers for {system}
        conduct readiness testing for each service tower before the Service Commencement Date
        maintain a transition risk register and review it with the Customer weekly
        minimise disruption to the Customer's business during the migration of {system}
        obtain any third-party consents required for the transfer of the Transferring Contracts
        provide a dedicated Transition Manager until the final transition Milestone has been achieved
    """,
    ob_c="""
        procure that its incumbent suppliers cooperate with the Supplier's knowledge transfer activities
        make the Customer personnel named in the Transition Plan available for knowledge transfer sessions
        review and approve the readiness test results {timing}
    """,
    cond="""
        the Supplier fails to achieve a transition Milestone by its Milestone date
        a readiness test is not passed for a service tower
        the migration of {system} causes an unplanned outage during business hours
        a third-party consent required for a Transferring Contract cannot be obtained
    """,
    remedy="""
        the Supplier shall pay the Customer delay payments calculated in accordance with Schedule C, which are the Customer's sole financial remedy for that delay unless the delay exceeds {days}
        the Service Commencement Date for that service tower shall be postponed until the readiness test is passed
        the Supplier shall restore the affected service immediately and deliver a root cause analysis within {days}
        the Supplier shall implement an alternative arrangement that delivers the same functionality at no additional cost to the Customer
    """,
    neg="""
        change the sequence of the transition Milestones set out in the Transition Plan
        decommission any Customer System during transition
    """,
    stmt="""
        The Transition Plan sets out the activities, responsibilities, Milestones and acceptance criteria for the transition of each service tower.
        Transition shall be performed in waves, beginning with the service desk and end-user support services, followed by the hosting and application services.
        During transition the Customer remains responsible for the services that have not yet reached their Service Commencement Date.
        The Supplier shall not be entitled to any Charges for the Transition Services other than the Transition Charges set out in Schedule C.
        Each Transformation Project shall be documented in a separate Statement of Work.
        Knowledge transfer includes shadowing, reverse shadowing and the documentation of all standard operating procedures for {system}.
    """,
)

_C_SERVICE_LEVELS = _topic(
    titles="""
        Service Levels
        Measurement and Reporting
        Service Level Failures
        Service Credits
        Root Cause Analysis
        Earnback
        Additions and Deletions of Service Levels
        Continuous Improvement
        Exceptions
        Critical Service Level Default
    """,
    ob_s="""
        meet or exceed each Service Level from the applicable Service Commencement Date
        measure its performance against each Service Level using the tools and methods described in Schedule B
        deliver {deliverable} to the Customer {timing}
        perform a root cause analysis of each Service Level failure and implement the agreed corrective actions
        retain the raw measurement data for each Measurement Period for at least two years
        propose improvements to the measurement tools at least once in each Contract Year
    """,
    ob_c="""
        review the monthly Service Level report and notify the Supplier of any disputed measurements {timing}
        allocate the Pool Allocation Percentages among the Critical Service Levels in accordance with Schedule B
    """,
    cond="""
        the Supplier fails to meet a Critical Service Level in any Measurement Period
        the Supplier fails to meet the same Critical Service Level in three consecutive Measurement Periods
        a Service Level failure is caused by a Customer System for which the Supplier is not responsible
        the Supplier fails to deliver the monthly Service Level report on time
        a Key Measurement is missed in four Measurement Periods in any rolling twelve-month period
    """,
    remedy="""
        the Supplier shall credit the Customer with the Service Credit calculated in accordance with Schedule B
        the failure shall constitute a Critical Service Level Default for the purposes of Article 20
        the Supplier shall be relieved of responsibility for that failure to the extent of the Customer's contribution to it
        the Customer may treat every Critical Service Level as missed for that Measurement Period
        the parties shall {joint}
    """,
    neg="""
        change the measurement methodology for any Service Level
        exclude any Incident from the Service Level calculations on grounds not listed in Schedule B
    """,
    stmt="""
        Service Credits are a price adjustment reflecting the reduced value of the Services and are not an estimate of the loss suffered by the Customer.
        Service Credits shall be shown as a deduction on the invoice for the month following the Measurement Period in which the failure occurred.
        The Customer may add new Service Levels or promote a Key Measurement to a Critical Service Level on {days} notice, no more than twice in each Contract Year.
        The Service Level targets for the Critical Service Levels shall be reset at the start of each Contract Year in accordance with the continuous improvement mechanism in Schedule B.
        The payment of Service Credits does not limit the Customer's right to claim damages or to terminate this Agreement for material breach.
        Where a Service Level is measured by sampling, the sample size and sampling method shall be agreed by the {committee}.
        Incidents caused by a Force Majeure Event, or by a change freeze requested by the Customer, are excluded from the Service Level calculations.
    """,
)

_C_PERSONNEL = _topic(
    titles="""
        Supplier Personnel
        Key Personnel
        Replacement of Personnel
        Background Checks
        Subcontractors
        Approved Subcontractors
        Conduct at Customer Sites
        Non-Solicitation
        Personnel Turnover
        Training
        Responsibility for Subcontractors
    """,
    ob_s="""
        ensure that all Supplier Personnel have the skills, qualifications and experience needed to perform the {service}
        carry out background checks on all Supplier Personnel with access to {system}, to the extent permitted by Applicable Law
        keep the rate of voluntary turnover of Key Personnel below {pct} in any rolling twelve-month period
        provide the Customer with a replacement candidate for any departing Key Personnel {timing}
        ensure that Supplier Personnel comply with the site rules when working at Customer premises
        remain responsible for the acts and omissions of its Subcontractors as if they were its own
        flow down to each Subcontractor obligations at least as protective of the Customer as those in this Agreement
        provide annual security and privacy training to all Supplier Personnel
    """,
    ob_c="""
        provide Supplier Personnel working on Customer premises with reasonable office space and facilities
        notify the Supplier of any conduct by Supplier Personnel that it considers unacceptable
    """,
    cond="""
        the Customer reasonably objects to any individual member of the Supplier Personnel
        a member of the Key Personnel leaves the Supplier's employment or becomes unable to work
        the Supplier proposes to engage a new Subcontractor for any part of the {service}
        a Subcontractor suffers an insolvency event or fails to perform
        the Supplier reassigns a member of the Key Personnel without the Customer's consent
    """,
    remedy="""
        the Supplier shall remove that individual from the Services and provide a suitably qualified replacement {timing}
        the Supplier shall ensure an orderly handover to the replacement without additional charge to the Customer
        the Supplier shall submit the proposed Subcontractor for approval together with a summary of its security controls
        the Supplier shall perform the affected Services itself or through another approved Subcontractor without interruption
        the Supplier shall credit the Customer with {amount} as a price adjustment for the resulting loss of continuity
    """,
    neg="""
        subcontract any of the Services to a Subcontractor that is not listed in Schedule H
        reassign any Key Personnel during the first eighteen months of their assignment
        allow any Supplier Personnel to access Customer Data from a location outside the approved Service Locations
    """,
    stmt="""
        Supplier Personnel are not employees of the Customer, and the Supplier is solely responsible for their wages, benefits and taxes.
        The Key Personnel positions are listed in Schedule G, together with the individuals who hold them on the Effective Date.
        Approval of a Subcontractor by the Customer does not relieve the Supplier of any of its obligations under this Agreement.
        Neither party shall solicit for employment any employee of the other party who was directly involved in the Services during the preceding twelve months, except through general advertising.
        The Supplier shall maintain a current list of all Supplier Personnel with remote access to {system} and make it available to the Customer on request.
        The Customer may interview candidates for Key Personnel positions before their appointment.
    """,
)

_C_GOVERNANCE = _topic(
    titles="""
        Governance Structure
        Relationship Managers
        Committees
        Meetings and Minutes
        Reports
        Procedures Manual
        Customer Satisfaction Surveys
        Benchmarking
        Innovation
    """,
    ob_s="""
        participate in the governance bodies described in Schedule D
        prepare and circulate an agenda for each meeting of the {committee} at least three Business Days before the meeting
        produce {deliverable} and present it to the {committee}
        conduct an annual customer satisfaction survey of the Customer's users of the {service}
        propose at least two innovation initiatives each Contract Year that could reduce the Customer's costs
        update the Procedures Manual within {days} after any change to the operating procedures
        ensure that its {role} attends each meeting of the {committee}
    """,
    ob_c="""
        nominate senior representatives to each governance body described in Schedule D
        provide timely decisions on matters escalated to the {committee}
    """,
    cond="""
        a governance body cannot reach agreement on a matter within its remit
        the annual customer satisfaction score falls below the target in Schedule D
        the Customer elects to benchmark the Charges against comparable services
    """,
    remedy="""
        the matter shall be escalated to the next level of the governance structure and, if not resolved, dealt with under Article 22
        the Supplier shall prepare and implement an improvement plan approved by the {committee}
        the benchmarker's findings shall be reviewed by the {committee}, and the Charges shall be adjusted where they exceed the upper quartile of the benchmark sample
    """,
    stmt="""
        The {committee} meets at least monthly during transition and is chaired by a representative of the Customer.
        Minutes of each governance meeting shall be circulated within five Business Days and are deemed approved unless either party objects at the next meeting.
        The governance bodies have no authority to amend this Agreement; any amendment requires a written instrument signed by both parties.
        The Relationship Managers are each party's primary point of contact for the overall relationship under this Agreement.
        The Procedures Manual describes how the Supplier will perform and deliver the Services and is updated at least annually.
        The Customer may benchmark the Charges no more than once in any eighteen-month period, and not before the end of the second Contract Year.
    """,
)

_C_CHANGE = _topic(
    titles="""
        Change Control Procedure
        Change Requests
        Impact Assessments
        Emergency Changes
        Changes in Law
        Operational Changes
        Implementation of Changes
    """,
    ob_s="""
        respond to each Change Request with an impact assessment {timing}
        describe in each impact assessment the effect of the proposed change on the Charges, the Service Levels and {system}
        implement each approved change in accordance with the agreed Change Note
        maintain a change log recording the status of each Change Request
        absorb the cost of operational changes that do not affect the Charges or the Service Levels
    """,
    ob_c="""
        submit each Change Request in writing using the form in the Procedures Manual
        approve or reject each impact assessment {timing}
    """,
    cond="""
        a change is required urgently to protect the security or availability of {system}
        a change in Applicable Law affects the performance of the Services
        the Customer does not respond to an impact assessment within the agreed period
        the parties cannot agree on the impact of a proposed change
    """,
    remedy="""
        the Supplier may implement the change without prior approval, provided that it notifies the Customer within one Business Day and follows the Change Control Procedure retrospectively
        the Supplier shall implement the change, and the costs shall be borne as set out in Schedule C
        the Change Request shall be deemed withdrawn
        either party may refer the matter to the dispute resolution procedure in Article 22
    """,
    neg="""
        make any change that increases the Charges or reduces the Service Levels
        refuse a Change Request that is technically feasible and consistent with good industry practice
    """,
    stmt="""
        No change to the Services, the Charges or this Agreement shall be effective unless it is agreed in a Change Note signed by both parties.
        The Supplier shall not charge for the preparation of impact assessments unless the Customer has agreed in advance that the assessment requires more than five person-days of effort.
        Changes to the Charges resulting from a change shall be calculated using the rates set out in Schedule C.
        Operational changes that do not affect the Charges, the Service Levels or the scope of the Services may be agreed by the Relationship Managers.
        The Supplier bears the cost of complying with changes in Applicable Law that apply to providers of information technology services generally.
    """,
)

_C_CHARGES = _topic(
    titles="""
        Charges
        Base Charges
        Additional Resource Charges
        Reduced Resource Credits
        Pass-Through Expenses
        Expenses
        Cost of Living Adjustment
        Taxes
        Withholding Taxes
        Most Favoured Customer
        Currency
    """,
    ob_s="""
        invoice the Charges only in accordance with the methodology set out in Schedule C
        bear all costs of performing the Services other than those expressly identified as Customer costs
        obtain the Customer's written approval before incurring any Pass-Through Expense above {amount}
        pass on to the Customer the full benefit of any discount obtained from third-party vendors on Pass-Through Expenses
        calculate the Additional Resource Charges and Reduced Resource Credits for each resource unit at the end of each month
        pay all taxes assessed on its net income, property and personnel
    """,
    ob_c="""
        pay the Charges set out in Schedule C in accordance with Article 10
        pay sales, use and similar taxes properly invoiced by the Supplier in respect of the Services
        reimburse pre-approved travel expenses in accordance with its travel policy
    """,
    cond="""
        the actual consumption of a resource unit exceeds the baseline volume by more than the deadband
        the actual consumption of a resource unit falls below the baseline volume by more than the deadband
        a taxing authority requires the Customer to withhold tax from any payment to the Supplier
        the Supplier offers substantially similar services to another customer on more favourable terms
        the cost of living index rises by more than the cap in any Contract Year
    """,
    remedy="""
        the Supplier may invoice Additional Resource Charges at the rates set out in Schedule C
        the Supplier shall credit the Customer with Reduced Resource Credits at the rates set out in Schedule C
        the Customer may deduct the tax from the payment and shall provide the Supplier with the receipt issued by the taxing authority
        the Supplier shall offer the same terms to the Customer with effect from the date they were first offered to the other customer
        the adjustment shall be limited to the cap stated in Schedule C
    """,
    neg="""
        invoice any Charges that are not set out in Schedule C or an executed Statement of Work
        recharge to the Customer any cost of its own corporate overheads
    """,
    stmt="""
        The Charges set out in Schedule C are the only amounts payable by the Customer for the Services.
        The Base Charges cover the baseline volumes of each resource unit, and variations are dealt with through Additional Resource Charges and Reduced Resource Credits.
        The Charges are fixed for the first two Contract Years and may thereafter be adjusted only in accordance with the cost of living mechanism in Schedule C.
        Each party is responsible for its own costs of negotiating and executing this Agreement.
        The Supplier may not recover any Charges that it fails to invoice within one hundred eighty days after the end of the month in which the Services were performed.
        Pass-Through Expenses are paid by the Customer at cost, without mark-up, handling fee or administrative charge.
    """,
)

_C_INVOICING = _topic(
    titles="""
        Invoicing
        Form of Invoices
        Payment Terms
        Disputed Amounts
        Set-Off
        Credits
        Payment Method
        Invoice Corrections
        Purchase Orders
        Electronic Invoicing
    """,
    ob_s="""
        submit a single consolidated invoice for the Charges in respect of each month in arrears
        show on each invoice the Charges for each service tower, the applicable Service Credits and any taxes separately
        submit each invoice electronically through the Customer's supplier portal
        include the relevant purchase order number on each invoice
        provide with each invoice reasonable detail of the calculation of any Additional Resource Charges and Reduced Resource Credits
        issue a credit note for any amount invoiced in error {timing}
    """,
    ob_c="""
        pay each undisputed invoice by electronic funds transfer to the account designated by the Supplier
        notify the Supplier of any disputed invoice amount, with reasonable details of the dispute, {timing}
        issue purchase orders in sufficient amounts to cover the Charges expected for each Contract Year
    """,
    cond="""
        the Customer disputes any invoiced amount in good faith
        an invoice does not meet the requirements of this Article
        a credit owed to the Customer exceeds the amounts to be invoiced in the remaining months of the Term
        a disputed amount is resolved in favour of the Supplier
        the Contract Managers cannot resolve a dispute about an invoice
    """,
    remedy="""
        the Customer may withhold the disputed amount while paying the undisputed remainder of the invoice
        the Customer may return the invoice to the Supplier for correction, and the payment period shall not begin until a compliant invoice is received
        the Supplier shall pay the balance to the Customer within thirty (30) days after the end of the Term
        the Customer shall pay the resolved amount within fifteen (15) Business Days after resolution
        the dispute shall be handled in accordance with Article 22, and the Supplier shall continue to perform the Services
    """,
    neg="""
        suspend the Services because of a good-faith dispute about any invoiced amount
        assign or factor any receivable arising under this Agreement
    """,
    stmt="""
        Payment of an invoice does not constitute acceptance of the Services or of the amounts invoiced, and the Customer may dispute any amount paid within twelve months after payment.
        The Customer may set off against any amount payable to the Supplier any amount that the Supplier owes to the Customer under this Agreement.
        Service Credits and other credits shall be deducted from the next invoice issued after they accrue.
        Invoices shall be addressed to the Customer's accounts payable department and copied to the Customer Contract Manager.
        Any purchase order terms that conflict with this Agreement are of no effect.
        The Supplier shall not submit invoices for Project Charges before the relevant Milestone has been accepted.
    """,
)

_C_AUDIT = _topic(
    titles="""
        Records
        Audit Rights
        Conduct of Audits
        Regulatory Audits
        Audit Findings
        Overcharges
        Financial Reports
        Controls Reports
    """,
    ob_s="""
        maintain complete and accurate records relating to the Services and the Charges for at least six years after the end of the Term
        provide auditors with access to the Supplier's premises, personnel, systems and records relating to the Services
        provide the Customer with an independent controls report covering the Services {timing}
        remediate each audit finding in accordance with the agreed remediation plan
        cooperate with any audit by a regulator with jurisdiction over the Customer
    """,
    ob_c="""
        give the Supplier at least {days} notice of any audit, except where a regulator requires a shorter period
        ensure that any third-party auditor it appoints is bound by obligations of confidentiality
        bear its own costs of any audit, subject to the exception for material overcharges
    """,
    cond="""
        an audit reveals that the Supplier has overcharged the Customer
        an audit reveals an overcharge of more than {pct} of the Charges for the audited period
        an audit identifies a material weakness in the Supplier's controls
        the Supplier's controls report contains a qualified opinion
    """,
    remedy="""
        the Supplier shall credit the overcharged amount against the next invoice
        the Supplier shall also reimburse the Customer for the reasonable costs of the audit
        the Supplier shall deliver a remediation plan within {days} and implement it at its own cost
        the Customer may require the Supplier to engage an independent auditor, at the Supplier's cost, to verify the remediation
    """,
    neg="""
        destroy any records relating to the Services while an audit or dispute is pending
        restrict the scope of any audit required by a regulator
    """,
    stmt="""
        The Customer may audit the Supplier's compliance with this Agreement no more than once in any Contract Year, except for audits required by a regulator or following a Security Incident.
        Audits shall be conducted during normal business hours and in a manner that does not unreasonably disrupt the Supplier's operations.
        The Supplier may require any third-party auditor to sign a confidentiality agreement in a reasonable form.
        Audit rights extend to the records of any Subcontractor that performs a material part of the Services.
        The controls report shall be prepared in accordance with a recognized attestation standard by an independent firm of accountants.
    """,
)

_C_IP = _topic(
    titles="""
        Customer Materials
        Supplier Materials
        Developed Materials
        Licence to Supplier Materials
        Third-Party Software
        Open Source Software
        Residual Knowledge
        Moral Rights
        Escrow
    """,
    ob_s="""
        assign to the Customer all rights in the Developed Materials on creation
        identify in each Statement of Work any Supplier Materials that will be embedded in a Deliverable
        obtain all licences to Third-Party Software needed to provide the {service}
        disclose any open source software included in a Deliverable, together with the applicable licence
        deposit the source code of the Supplier Materials used for {system} with the escrow agent
        waive, or procure the waiver of, any moral rights in the Developed Materials
    """,
    ob_c="""
        grant the Supplier a licence to use the Customer Materials solely to provide the Services
        notify the Supplier of any third-party licence restrictions that apply to the Customer Materials
    """,
    cond="""
        a Deliverable embeds Supplier Materials
        a licence to Third-Party Software cannot be transferred to the Customer on expiry or termination
        a release event occurs under the escrow agreement
        any open source software is licensed on terms that would require disclosure of Customer source code
    """,
    remedy="""
        the Supplier grants the Customer a perpetual, irrevocable, royalty-free licence to use those Supplier Materials as part of the Deliverable
        the Supplier shall notify the Customer before using that software and identify an alternative
        the Customer may obtain the deposited materials and use them to support {system}
        the Supplier shall not use that software without the Customer's prior written approval
    """,
    neg="""
        use Customer Materials for the benefit of any other customer
        incorporate into any Deliverable open source software licensed under a copyleft licence
    """,
    stmt="""
        As between the parties, the Customer owns all Customer Materials and the Supplier owns all Supplier Materials.
        Nothing in this Agreement prevents either party from using the general skills, know-how and experience retained in the unaided memory of its personnel, provided that it does not disclose Confidential Information.
        Developed Materials include all software, documentation and other materials created by or on behalf of the Supplier specifically for the Customer under this Agreement.
        The licence to Supplier Materials survives expiry or termination of this Agreement to the extent needed for the Customer to receive the Termination Assistance Services.
        Each party reserves all rights not expressly granted under this Agreement.
    """,
)

_C_CONFIDENTIALITY = _topic(
    titles="""
        Confidential Information
        Obligations of Confidentiality
        Exclusions
        Compelled Disclosure
        Return or Destruction
        Equitable Relief
        Publicity
        Duration of Obligations
    """,
    ob_s="""
        disclose the Customer's Confidential Information only to Supplier Personnel who need to know it to perform the Services
        protect the Customer's Confidential Information using at least the degree of care it uses to protect its own information of a similar nature
        return or securely destroy the Customer's Confidential Information at the end of the Term
        certify in writing that it has complied with its return and destruction obligations
        notify the Customer promptly of any unauthorized disclosure of the Customer's Confidential Information
    """,
    ob_c="""
        use the Supplier's pricing information only for the purposes of this Agreement
        limit disclosure of the Supplier's Confidential Information to its employees, advisers and benchmarkers with a need to know
    """,
    cond="""
        a party is required by law or by a court order to disclose the other party's Confidential Information
        a party breaches or threatens to breach this Article
        Confidential Information is retained in automatic backup systems that cannot practically be purged
    """,
    remedy="""
        that party shall, to the extent lawful, give the other party prompt notice so that it may seek a protective order
        the other party may seek injunctive relief without proving actual damage, in addition to any other remedy
        that information shall remain subject to this Article until it is overwritten in the ordinary course
    """,
    neg="""
        issue any press release or public statement referring to the Customer
        use the Customer's name or trademarks in any marketing material
    """,
    stmt="""
        Confidential Information does not include information that is or becomes publicly available other than through a breach of this Agreement.
        Confidential Information does not include information that the receiving party develops independently without use of the disclosing party's Confidential Information.
        The obligations in this Article survive for five years after the end of the Term, except in respect of trade secrets and Customer Data, for which they continue indefinitely.
        The terms of this Agreement, including the Charges, are the Confidential Information of both parties.
        Each party is responsible for any breach of this Article by its employees, agents and subcontractors.
    """,
)

_C_DATA = _topic(
    titles="""
        Customer Data
        Processing of Personal Data
        Data Processing Addendum
        International Transfers
        Data Subject Requests
        Data Retention
        Security Incidents
        Data Location
        Data Protection Impact Assessments
    """,
    ob_s="""
        process Personal Data only on the documented instructions of the Customer
        assist the Customer in responding to requests from Data Subjects
        keep a record of all processing activities carried out on behalf of the Customer
        ensure that persons authorized to process Personal Data are subject to obligations of confidentiality
        assist the Customer with any data protection impact assessment relating to {system}
        delete or return all Personal Data at the end of the provision of the Services
        maintain the Customer Data within the data centers listed in Schedule J
    """,
    ob_c="""
        ensure that it has a lawful basis for the Personal Data it provides to the Supplier
        give the Supplier documented instructions on the processing of Personal Data
    """,
    cond="""
        the Supplier believes that an instruction of the Customer infringes Applicable Law
        the Supplier receives a request from a Data Subject directly
        a transfer of Personal Data outside the United States is proposed
        a regulator requests information about the processing of Customer Data
    """,
    remedy="""
        the Supplier shall inform the Customer immediately and may suspend that processing until the instruction is confirmed or amended
        the Supplier shall forward the request to the Customer without responding to it, unless the Customer authorizes a response
        the transfer may only take place on the basis of a transfer mechanism approved by the Customer
        the Supplier shall notify the Customer before responding, to the extent legally permitted
    """,
    neg="""
        transfer Customer Data to any country that is not listed in Schedule E
        engage any sub-processor that is not listed in Schedule E
        sell, rent or otherwise commercialize Customer Data
    """,
    stmt="""
        As between the parties, the Customer owns all Customer Data, and the Supplier acquires no rights in it other than the right to process it to provide the Services.
        The Data Processing Addendum in Schedule E sets out the subject matter, duration, nature and purpose of the processing and the categories of Personal Data and Data Subjects.
        The Supplier's obligations under this Article apply equally to any sub-processor engaged in accordance with Schedule E.
        Customer Data shall be encrypted in transit and at rest using the standards set out in Schedule F.
        Neither party shall be liable for a failure to comply with this Article to the extent the failure results from the other party's breach.
    """,
)

_C_SECURITY = _topic(
    titles="""
        Security Requirements
        Security Program
        Access Controls
        Vulnerability Management
        Penetration Testing
        Business Continuity and Disaster Recovery
        Security Testing
        Security Audits
        Malicious Code
    """,
    ob_s="""
        maintain an information security program that meets the requirements of Schedule F
        apply security patches to all systems used to provide the {service} in accordance with Schedule F
        commission an independent penetration test of the systems supporting the Services at least annually
        maintain and test a business continuity and disaster recovery plan for the {service}
        use up-to-date anti-malware software on all systems that access Customer Data
        enforce multi-factor authentication for all remote access to {system}
        review user access rights to {system} at least quarterly
    """,
    ob_c="""
        notify the Supplier of any changes to its Policies that affect the security of the Services
        participate in disaster recovery tests where its participation is reasonably required
    """,
    cond="""
        a penetration test identifies a vulnerability rated critical or high
        a disaster affects a Service Location
        the Supplier becomes aware of malicious code in any system used to provide the Services
        the Supplier's security program no longer meets the requirements of Schedule F
    """,
    remedy="""
        the Supplier shall remediate the vulnerability within the period set out in Schedule F and report the remediation to the Security Working Group
        the Supplier shall invoke the disaster recovery plan and restore the affected Services within the recovery time objectives in Schedule F
        the Supplier shall remove the malicious code and restore any affected data at its own cost
        the Supplier shall remedy the deficiency at its own cost and report progress to the Security Working Group
    """,
    neg="""
        disable or reduce any security control described in Schedule F
        store Customer Data on removable media or personal devices
    """,
    stmt="""
        The Supplier's security program shall be aligned with a recognized information security standard and certified by an accredited body.
        The results of penetration tests shall be shared with the Customer in summary form, together with the remediation status of each finding.
        The Supplier shall designate a Security Manager responsible for the security of the Services.
        Disaster recovery tests shall be carried out at least annually and the results reported to the {committee}.
        The Customer may conduct its own security testing of the systems used to provide the Services on reasonable notice.
    """,
)

_C_WARRANTIES = _topic(
    titles="""
        Mutual Warranties
        Supplier Warranties
        Performance Warranty
        Deliverable Warranty
        Compliance with Laws
        Anti-Bribery
        Disclaimer
        Sanctions and Export Control
    """,
    ob_s="""
        perform the Services in a professional and workmanlike manner in accordance with good industry practice
        ensure that each Deliverable conforms to its specification for ninety (90) days after Acceptance
        comply with all Applicable Laws in performing the Services
        maintain all licences, permits and approvals required to perform the {service}
        ensure that no Deliverable contains malicious code, time bombs or similar disabling devices
        comply with all applicable anti-bribery and anti-corruption laws
    """,
    cond="""
        a Deliverable fails to conform to its specification during the warranty period
        the Supplier breaches the anti-bribery warranty
        a Deliverable infringes any export control law
    """,
    remedy="""
        the Supplier shall correct the non-conformity at no charge {timing}
        the Customer may terminate this Agreement immediately by written notice
        the Supplier shall take all steps necessary to bring the Deliverable into compliance at its own cost
    """,
    stmt="""
        Each party warrants that it has full power and authority to enter into and perform this Agreement.
        Each party warrants that the execution and performance of this Agreement do not breach any other agreement to which it is a party.
        The Supplier warrants that it is not subject to any sanction imposed by a governmental authority with jurisdiction over the Services.
        Except as expressly set out in this Agreement, neither party makes any other warranty, express or implied, including any implied warranty of merchantability or fitness for a particular purpose.
        The Supplier warrants that the information it provided to the Customer during the procurement process was accurate and complete in all material respects.
    """,
)

_C_INDEMNITIES = _topic(
    titles="""
        Indemnification by the Supplier
        Indemnification by the Customer
        Intellectual Property Infringement
        Indemnification Procedures
        Mitigation
        Employment Claims
        Exclusions from Indemnity
    """,
    ob_s="""
        defend the Customer against any third-party claim that the Services or any Deliverable infringe that third party's intellectual property rights
        indemnify the Customer against any losses arising from claims by Supplier Personnel relating to their employment
        indemnify the Customer against any fines imposed by a regulator as a result of the Supplier's breach of Article 14
        procure for the Customer the right to continue using an infringing Deliverable or modify it to be non-infringing
    """,
    ob_c="""
        defend the Supplier against any third-party claim that the Customer Materials infringe that third party's intellectual property rights
        give the indemnifying party prompt notice of any claim covered by this Article
    """,
    cond="""
        a claim arises from a modification of a Deliverable made by the Customer without the Supplier's approval
        the indemnified party settles a claim without the indemnifying party's consent
        the indemnifying party fails to assume the defence of a claim within {days}
        an injunction is issued that prevents the Customer from using a Deliverable
    """,
    remedy="""
        the Supplier shall have no obligation to indemnify the Customer for that claim to the extent it arises from the modification
        the indemnifying party is released from its obligations in respect of that claim
        the indemnified party may defend the claim itself at the indemnifying party's expense
        the Supplier shall, at its option and expense, procure a licence, modify the Deliverable or refund the Charges paid for it
    """,
    stmt="""
        The indemnifying party shall have sole control of the defence and settlement of any claim, provided that it may not agree any settlement that imposes an obligation on the indemnified party without its consent.
        The indemnified party shall provide reasonable cooperation in the defence of a claim at the indemnifying party's expense.
        Each party shall take reasonable steps to mitigate any loss for which it seeks an indemnity.
        The indemnities in this Article are in addition to any other remedy available to the indemnified party.
    """,
)

_C_LIABILITY = _topic(
    titles="""
        Exclusions of Liability
        Indirect Losses
        Recoverable Losses
        Unlimited Liability
        Limitation of Liability
        Duty to Mitigate
        Application of Limits
    """,
    cond="""
        a loss falls within more than one category of recoverable loss
        a claim arises from the gross negligence or wilful misconduct of a party
        the Customer recovers Service Credits in respect of a failure that also gives rise to a claim for damages
    """,
    remedy="""
        the loss may be recovered only once
        the limitations in this Article do not apply to that claim
        the amount of the Service Credits shall be deducted from the damages recoverable for that failure
    """,
    stmt="""
        Neither party shall be liable for any indirect, incidental or consequential loss, or for any loss of profits, revenue or goodwill, even if it was advised of the possibility of that loss.
        Nothing in this Agreement limits either party's liability for death or personal injury caused by its negligence, for fraud or for any other liability that cannot be limited by law.
        The following are recoverable by the Customer as direct losses: the cost of procuring replacement services, the cost of restoring lost or corrupted data, and regulatory fines to the extent permitted by law.
        The limitations of liability in this Article apply whether the claim arises in contract, tort (including negligence), breach of statutory duty or otherwise.
        The Customer's obligation to pay the Charges is not subject to the limitations in this Article.
        Service Credits do not count towards the cap on the Supplier's liability.
        Each party's liability for a wrongful abandonment of the Services by the Supplier is unlimited.
        The amount of any liability counts against the cap for the Contract Year in which the event giving rise to the claim occurred.
    """,
)

_C_INSURANCE = _topic(
    titles="""
        Required Insurance
        Insurance Certificates
        Insurers
        Subcontractor Insurance
        Claims
        No Limitation
    """,
    ob_s="""
        maintain the insurance policies required by this Article throughout the Term and for six years afterwards
        provide the Customer with certificates of insurance {timing}
        name the Customer as an additional insured on its commercial general liability policy
        notify the Customer at least {days} before any cancellation or material change of a required policy
        ensure that its Subcontractors maintain insurance appropriate to their part of the Services
        pursue any claim under its policies diligently where the Customer has suffered a loss
    """,
    cond="""
        the Supplier fails to maintain any required insurance
        an insurer of the Supplier becomes insolvent or its rating falls below the required level
    """,
    remedy="""
        the Customer may purchase that insurance and deduct the premium from the Charges
        the Supplier shall replace the policy with one issued by a suitably rated insurer within {days}
    """,
    stmt="""
        All required insurance shall be placed with insurers rated A- or better by a recognized rating agency.
        The insurance required by this Article does not limit the Supplier's liability under this Agreement.
        Workers' compensation insurance shall be maintained as required by the laws of each jurisdiction in which Supplier Personnel work.
        Policies written on a claims-made basis shall have a retroactive date no later than the Effective Date.
        Deductibles and self-insured retentions are the responsibility of the Supplier.
    """,
)

_C_TERMINATION = _topic(
    titles="""
        Term
        Renewal
        Termination for Cause
        Termination for Convenience
        Termination on Change of Control
        Termination for Insolvency
        Partial Termination
        Termination Charges
        Consequences of Termination
        Survival
        Supplier Termination Rights
    """,
    ob_s="""
        continue to perform the Services in full until the effective date of termination
        provide the Termination Assistance Services in accordance with Article 21 and Schedule I
        return all Customer property in its possession on the effective date of termination
        refund any Charges paid in advance for Services not performed
    """,
    ob_c="""
        pay all undisputed Charges for Services performed up to the effective date of termination
        pay any Termination Charges payable under Schedule C
    """,
    cond="""
        either party commits a material breach that is not remedied within thirty (30) days after written notice
        either party becomes insolvent, makes an assignment for the benefit of creditors or has a receiver appointed
        the Supplier undergoes a change of control in favour of a competitor of the Customer
        the Supplier commits a Critical Service Level Default
        the Customer fails to pay undisputed Charges exceeding two months of Base Charges within sixty (60) days after a final notice
        the Customer terminates part of the Services
    """,
    remedy="""
        the other party may terminate this Agreement by written notice with immediate effect
        the other party may terminate this Agreement immediately by written notice, to the extent permitted by Applicable Law
        the Customer may terminate this Agreement within {days} after being notified of the change of control
        the Customer may terminate this Agreement, or the affected Statement of Work, without paying any Termination Charges
        the Supplier may terminate this Agreement, and that is the Supplier's sole right to terminate this Agreement
        the Charges shall be reduced in accordance with the methodology set out in Schedule C
    """,
    stmt="""
        This Agreement begins on the Effective Date and continues for an Initial Term of five Contract Years, unless terminated earlier in accordance with this Article.
        The Customer may extend the Term on one or more occasions by up to a total of twenty-four months by giving written notice before the end of the then-current Term.
        Termination of this Agreement does not affect any rights or remedies that have accrued before termination.
        The provisions of this Agreement that by their nature are intended to survive termination shall survive, including Articles 12, 13, 14, 17, 18 and 22.
        Termination of a Statement of Work does not terminate this Agreement or any other Statement of Work.
        The Supplier has no right to terminate this Agreement other than as expressly set out in this Article.
    """,
)

_C_EXIT = _topic(
    titles="""
        Termination Assistance Services
        Exit Plan
        Exit Manager
        Transfer of Assets
        Transfer of Contracts
        Knowledge Transfer on Exit
        Personnel on Exit
        Continuity of Service
        Exit Information
    """,
    ob_s="""
        maintain an Exit Plan that complies with Schedule I and update it at least annually
        provide the Termination Assistance Services needed for the orderly transfer of the Services to the Customer or a successor supplier
        appoint an Exit Manager with responsibility for the delivery of the Exit Plan
        provide the Customer and any successor supplier with the exit information described in Schedule I
        continue to meet the Service Levels during the Termination Assistance Period
        transfer to the Customer, at net book value, any dedicated assets used exclusively to provide the Services
        assign to the Customer or its nominee any Third-Party Contracts used exclusively to provide the Services
    """,
    ob_c="""
        procure that any successor supplier cooperates with the Supplier during exit
        pay for Termination Assistance Services that exceed the scope of the Exit Plan at the rates in Schedule C
    """,
    cond="""
        the Customer requests Termination Assistance Services beyond those described in the Exit Plan
        the Supplier fails to provide the Termination Assistance Services
        a Third-Party Contract cannot be assigned
    """,
    remedy="""
        the Supplier shall provide them at the rates set out in Schedule C
        the Customer may seek specific performance, the parties acknowledging that damages would not be an adequate remedy
        the Supplier shall use commercially reasonable efforts to obtain equivalent rights for the Customer
    """,
    neg="""
        reduce the number of Supplier Personnel assigned to the Services during the Termination Assistance Period
        make any changes to the Services during the Termination Assistance Period
    """,
    stmt="""
        The Termination Assistance Services are provided at no additional charge to the extent they are performed by Supplier Personnel already assigned to the Services.
        The Exit Plan describes the activities, responsibilities and timetable for the transfer of each service tower.
        The Supplier's obligations under this Article apply regardless of the reason for expiry or termination, including termination by the Supplier for non-payment.
        The Customer may require the Supplier to provide the Termination Assistance Services in stages, one service tower at a time.
    """,
)

_C_DISPUTES = _topic(
    titles="""
        Dispute Resolution
        Informal Resolution
        Escalation
        Mediation
        Arbitration
        Expert Determination
        Injunctive Relief
        Continued Performance
    """,
    ob_s="""
        continue to perform the Services in full while any dispute is being resolved
        provide the expert with all information reasonably required to determine a dispute
    """,
    ob_c="""
        continue to pay the undisputed Charges while any dispute is being resolved
        provide the expert with all information reasonably required to determine a dispute
    """,
    cond="""
        a dispute is not resolved by the Relationship Managers within ten (10) Business Days
        a dispute is not resolved by the {committee} within fifteen (15) Business Days after escalation
        a dispute relates to the calculation of Charges or the measurement of Service Levels
        mediation does not resolve the dispute within thirty (30) days after the appointment of the mediator
    """,
    remedy="""
        either party may escalate the dispute to the {committee}
        either party may refer the dispute to non-binding mediation
        either party may refer it to an independent expert, whose determination is final and binding save in the case of manifest error
        either party may refer the dispute to arbitration in accordance with this Article
    """,
    stmt="""
        The parties shall attempt in good faith to resolve any dispute arising out of or in connection with this Agreement through the procedure in this Article.
        Nothing in this Article prevents either party from seeking urgent injunctive relief from a court of competent jurisdiction.
        The arbitral tribunal shall consist of three arbitrators, one appointed by each party and the third by the two party-appointed arbitrators.
        The arbitration shall be conducted in English, and the award shall be final and binding on the parties.
        The costs of mediation shall be shared equally between the parties, and each party shall bear its own legal costs.
        All negotiations under this Article are confidential and without prejudice to the parties' rights in any later proceedings.
    """,
)

_C_GENERAL = _topic(
    titles="""
        Notices
        Assignment
        Force Majeure
        Entire Agreement
        Amendment
        Waiver
        Severability
        Relationship of the Parties
        Third-Party Rights
        Counterparts
        Governing Law
        Further Assurance
        Costs
    """,
    cond="""
        a party is prevented from performing its obligations by a Force Majeure Event
        a Force Majeure Event continues for more than {days}
        any provision of this Agreement is held invalid or unenforceable
        the Supplier wishes to assign this Agreement to an Affiliate
    """,
    remedy="""
        that party's obligations are suspended for as long as the Force Majeure Event continues, provided that it uses reasonable efforts to mitigate its effects
        the Customer may terminate the affected Services by written notice without paying any Termination Charges
        that provision shall be modified to the minimum extent necessary to make it enforceable, and the remainder of this Agreement shall continue in effect
        it may do so only with the Customer's prior written consent, which shall not be unreasonably withheld
    """,
    stmt="""
        Notices under this Agreement shall be in writing and delivered by hand, by courier or by email with confirmation of transmission to the addresses set out in this Section.
        This Agreement constitutes the entire agreement between the parties relating to its subject matter and supersedes all prior agreements and understandings.
        No failure or delay in exercising any right under this Agreement operates as a waiver of that right.
        Nothing in this Agreement creates a partnership, joint venture or agency relationship between the parties.
        This Agreement may be executed in counterparts, each of which is an original and all of which together constitute one instrument.
        This Agreement and any dispute arising out of it are governed by the laws of the State of New York, without regard to its conflict of laws rules.
        Except as expressly provided, no person other than the parties has any right to enforce any term of this Agreement.
        The Customer may assign this Agreement to any Affiliate or to a purchaser of all or substantially all of its business without the Supplier's consent.
        Each party shall, at the request of the other, execute such further documents as may reasonably be required to give effect to this Agreement.
        A Force Majeure Event does not excuse the Supplier from implementing its business continuity and disaster recovery plan.
    """,
)

_C_LOCATIONS = _topic(
    titles="""
        Approved Service Locations
        Changes to Service Locations
        Site Security
        Offshore Delivery
        Data Center Standards
    """,
    ob_s="""
        maintain physical security at each Service Location in accordance with Schedule F
        notify the Customer of any proposal to open a new Service Location at least {days} in advance
        ensure that each offshore Service Location has redundant network connectivity to the Customer's network
        maintain separate, access-controlled work areas for Supplier Personnel performing the {service}
        keep badge access records for the {location} Service Location for at least one year
    """,
    cond="""
        a Service Location becomes unavailable for more than one Business Day
        the Supplier proposes to move work between Service Locations
    """,
    remedy="""
        the Supplier shall transfer the affected work to a designated recovery location in accordance with the business continuity plan
        the proposal shall be dealt with through the Change Control Procedure, and any savings shall be shared equally
    """,
    stmt="""
        The data centers listed in this Schedule are the only locations at which Customer Data may be stored.
        Each data center shall be designed to at least a Tier III standard with concurrent maintainability.
        Offshore Service Locations may be used only for the service towers identified against them in this Schedule.
    """,
)

# Fixed content of the contract: cover, definitions and the Schedules' tables.

_C_RECITALS = _lines("""
    A. The Customer is a wholesale distributor of packaged foods and provisions to grocery retailers, restaurants and institutional caterers in the eastern and central United States, operating eleven distribution centers and a fleet of temperature-controlled vehicles.
    B. The Customer wishes to outsource the operation and support of its information technology environment, including its service desk, hosting, network and application services, to a single accountable supplier.
    C. Following a competitive procurement process, the Customer selected the Supplier on the basis of its proposal, its experience with distribution businesses and the commitments it made during due diligence.
    D. The Supplier has represented that it has the skills, resources and experience required to provide the Services in accordance with this Agreement.
    E. The parties wish to set out in this Agreement the terms on which the Supplier will provide the Services and on which further Projects may be commissioned under Statements of Work.
""")


def _contract_cover(w: _Writer, section: _Section) -> list[_PagePlan]:
    parties = (
        f'This MASTER SERVICES AGREEMENT (this "Agreement") is entered into as of 14 March 2023 (the "Effective Date") '
        f"by and between {_CUSTOMER}, a Delaware corporation having its principal office at 1180 Harbor Point Drive, "
        f'Baltimore, Maryland 21230 (the "Customer"), and {_SUPPLIER}, a Texas limited liability company having its '
        f'principal office at 4400 Cedar Ridge Parkway, Austin, Texas 78731 (the "Supplier"). The Customer and the '
        f'Supplier are each referred to as a "party" and together as the "parties".'
    )
    closing = (
        "NOW, THEREFORE, in consideration of the mutual covenants set out in this Agreement and for other good and "
        "valuable consideration, the receipt and sufficiency of which are acknowledged, the parties agree as follows. "
        "This Agreement consists of these terms and conditions, the Schedules listed in the table of contents and "
        "each Statement of Work executed under it. The Schedules form part of this Agreement and have effect as if "
        "set out in full in its body. Capitalized terms used in a Schedule have the meanings given to them in "
        "Article 1 unless the Schedule defines them differently."
    )
    blocks: list[_Block] = [
        (None, f"between\n{_CUSTOMER}\nand\n{_SUPPLIER}\n\nContract reference: BWP-ITO-2023-001"),
        (None, parties),
        (None, "RECITALS\n" + "\n".join(_C_RECITALS)),
        (None, closing),
    ]
    return [_PagePlan(blocks, fill=False)]


_C_DEFINITIONS = _lines("""
    Acceptance|means the Customer's written confirmation that a Deliverable or Milestone meets its acceptance criteria, and "Accepted" shall be construed accordingly.
    Additional Resource Charges|means the charges payable for consumption of a resource unit above its baseline volume, calculated in accordance with Schedule C.
    Affiliate|means, in relation to a party, any entity that directly or indirectly controls, is controlled by or is under common control with that party, where control means ownership of more than fifty percent of the voting interests.
    Applicable Law|means all laws, regulations, binding codes of practice and orders of any governmental authority that apply to a party or to the Services from time to time.
    Base Charges|means the fixed monthly charges for each service tower set out in Schedule C, which cover the baseline volumes of each resource unit.
    Business Day|means any day other than a Saturday, a Sunday or a public holiday in the State of Maryland.
    Change Control Procedure|means the procedure for agreeing changes to this Agreement, the Services or the Charges set out in Article 8.
    Change Note|means a written record of a change agreed in accordance with the Change Control Procedure, signed by both parties.
    Charges|means the Base Charges, Additional Resource Charges, Project Charges, Transition Charges and any other charges payable under this Agreement, less any Reduced Resource Credits and Service Credits.
    Confidential Information|means all information of a party or its Affiliates that is disclosed to or obtained by the other party in connection with this Agreement and that is marked as confidential or would reasonably be regarded as confidential.
    Contract Year|means each successive period of twelve months beginning on the Service Commencement Date for the service desk services or an anniversary of that date.
    Critical Service Level|means each Service Level designated as critical in Schedule B, the failure of which may give rise to a Service Credit.
    Critical Service Level Default|means the failure to meet the same Critical Service Level in three consecutive Measurement Periods, or in any five Measurement Periods within a rolling twelve-month period.
    Customer Data|means all data, including Personal Data, that is provided by or on behalf of the Customer, or generated, processed or stored by the Supplier in providing the Services.
    Customer Materials|means all materials, software and information owned by or licensed to the Customer and made available to the Supplier under this Agreement.
    Customer Responsibilities|means the obligations of the Customer identified as such in Schedule A or in a Statement of Work.
    Customer Systems|means the hardware, software and networks owned, leased or licensed by the Customer, including the order management platform and the warehouse control system.
    Data Subject|means an identified or identifiable natural person to whom Personal Data relates.
    Deliverable|means any item, document, software or other material to be delivered by the Supplier under a Statement of Work.
    Developed Materials|means all materials created by or on behalf of the Supplier specifically for the Customer under this Agreement, excluding the Supplier Materials.
    Exit Plan|means the plan for the orderly transfer of the Services described in Article 21 and Schedule I, as updated from time to time.
    Force Majeure Event|means an event beyond the reasonable control of the affected party, including fire, flood, epidemic, war, terrorism and failure of public utilities, but excluding labour disputes involving Supplier Personnel and any event whose effects would have been prevented by the Supplier's business continuity plan.
    Incident|means any event that causes, or may cause, an interruption to or reduction in the quality of the Services.
    Initial Term|means the period of five Contract Years beginning on the Effective Date, unless terminated earlier.
    Key Measurement|means each Service Level designated as a key measurement in Schedule B, which is reported monthly but does not attract Service Credits.
    Key Personnel|means the individuals who hold the positions listed in Schedule G and any approved replacement.
    Measurement Period|means a calendar month, unless Schedule B specifies a different period for a particular Service Level.
    Milestone|means an event or date identified as a milestone in the Transition Plan or in a Statement of Work.
    Monthly Base Charges|means the Base Charges payable in respect of a single calendar month.
    Pass-Through Expenses|means third-party charges that are paid by the Customer at cost and are identified as pass-through expenses in Schedule C.
    Personal Data|means any information relating to a Data Subject that is processed by the Supplier in connection with this Agreement.
    Policies|means the Customer's information security, acceptable use, vendor management and site policies notified to the Supplier in writing.
    Procedures Manual|means the operational manual prepared and maintained by the Supplier under Article 7, describing how the Services are delivered.
    Project|means a discrete piece of work outside the scope of the recurring Services that is commissioned under a Statement of Work.
    Reduced Resource Credits|means the credits due to the Customer for consumption of a resource unit below its baseline volume, calculated in accordance with Schedule C.
    Security Incident|means any actual or reasonably suspected unauthorized access to, or acquisition, loss, alteration or disclosure of, Customer Data or the systems used to provide the Services.
    Service Commencement Date|means, for each service tower, the date on which the Supplier assumes full responsibility for the relevant Services following the successful completion of readiness testing.
    Service Credit|means the amount credited to the Customer when the Supplier fails to meet a Critical Service Level, calculated in accordance with Schedule B.
    Service Credit Cap|means, for any month, twelve percent (12%) of the Monthly Base Charges invoiced for that month, being the maximum aggregate amount of Service Credits payable for that month.
    Service Level|means each Critical Service Level and Key Measurement set out in Schedule B.
    Service Locations|means the locations from which the Services may be provided, as listed in Schedule J.
    Statement of Work|means a document in substantially the form of Schedule K, describing a Project and signed by both parties.
    Subcontractor|means any third party engaged by the Supplier to perform part of the Services, including the approved subcontractors listed in Schedule H.
    Supplier Materials|means all materials, tools and software owned by or licensed to the Supplier that exist before the Effective Date or are developed independently of this Agreement.
    Supplier Personnel|means all employees, agents and individual contractors of the Supplier and its Subcontractors who are engaged in performing the Services.
    Termination Assistance Services|means the services described in Article 21 and Schedule I that the Supplier provides to facilitate the transfer of the Services on expiry or termination.
    Third-Party Contracts|means the contracts between the Supplier and third parties under which goods or services used to provide the Services are obtained.
    Transition Plan|means the plan for the transition of the Services to the Supplier, attached to the transition Statement of Work and updated under Article 4.
""")


def _contract_definitions(w: _Writer, section: _Section) -> list[_PagePlan]:
    entries = [f'"{term}" {text}' for term, text in (line.split("|", 1) for line in _C_DEFINITIONS)]
    plans = [
        _PagePlan([("Definitions", "In this Agreement the following terms have the meanings set out below.")])
    ]
    words = 0
    for entry in entries:
        if words > 430:
            plans.append(_PagePlan())
            words = 0
        plans[-1].blocks.append((None, entry))
        words += _words(entry)
    for plan in plans[:-1]:
        plan.fill = False
    while len(plans) < section.pages:
        plans.append(_PagePlan())
    return plans


# (tower, service slot value, description, service hours, in-scope activities separated by ";")
_C_TOWERS = (
    (
        "Service Desk",
        "service desk services",
        "The Supplier operates a single point of contact for all users of the Customer's information technology, handling Incidents, service requests and questions by telephone, chat, email and the self-service portal.",
        "24 hours a day, 7 days a week, in English and Spanish",
        "logging and categorizing every contact; first-line diagnosis and resolution; password resets and account unlocks; dispatching to resolver groups; user communications during major Incidents; maintaining the knowledge base",
    ),
    (
        "End-User Support",
        "end-user support services",
        "The Supplier supports the Customer's desktops, laptops, handheld scanners, printers and mobile devices at headquarters and at each distribution center.",
        "06:00 to 22:00 Eastern Time on Business Days, with on-call cover at weekends",
        "deskside support at staffed sites; imaging and deployment of devices; hardware break-fix coordination with manufacturers; management of the device inventory; secure disposal of retired devices",
    ),
    (
        "Data Center Hosting",
        "data center hosting services",
        "The Supplier hosts the Customer's production and non-production servers in the data centers listed in Schedule J and manages the operating systems, storage and backup environment.",
        "24 hours a day, 7 days a week",
        "server provisioning and decommissioning; operating system administration and patching; storage management; backup and restore; capacity monitoring; batch scheduling and job monitoring",
    ),
    (
        "Network Management",
        "network management services",
        "The Supplier manages the Customer's wide area network, local area networks at each site, wireless networks in the warehouses and the connections to carriers and trading partners.",
        "24 hours a day, 7 days a week",
        "monitoring of network devices and circuits; configuration management; firewall rule administration; coordination with carriers; wireless site surveys; remote access service management",
    ),
    (
        "Application Maintenance",
        "application maintenance services",
        "The Supplier maintains and supports the Customer's business applications, including corrective maintenance, minor enhancements and application monitoring.",
        "07:00 to 19:00 Eastern Time on Business Days, with on-call cover for Severity 1 Incidents",
        "corrective maintenance; minor enhancements of up to forty hours each; application monitoring; release packaging; regression testing; maintaining technical documentation",
    ),
    (
        "Database Administration",
        "database administration services",
        "The Supplier administers the Customer's relational and analytical databases, including performance tuning, upgrades and the protection of Customer Data at rest.",
        "24 hours a day, 7 days a week",
        "database installation and upgrades; performance tuning; backup verification; access provisioning; encryption key rotation; archiving of historical data",
    ),
    (
        "Cloud Infrastructure",
        "cloud infrastructure services",
        "The Supplier manages the Customer's public cloud accounts, including landing zones, infrastructure as code, cost management and the integration of cloud workloads with the hosted estate.",
        "24 hours a day, 7 days a week",
        "account and subscription management; infrastructure as code pipelines; cost reporting and optimization; cloud security posture monitoring; migration of workloads approved by the Technical Architecture Board",
    ),
    (
        "Disaster Recovery",
        "disaster recovery services",
        "The Supplier maintains the ability to recover the Customer's critical applications at the secondary data center within the recovery time and recovery point objectives in Schedule F.",
        "24 hours a day, 7 days a week when invoked; planning activities on Business Days",
        "maintaining recovery runbooks; replication monitoring; annual recovery tests; post-test reporting; invocation and failback management",
    ),
    (
        "Identity and Access Management",
        "identity and access management services",
        "The Supplier administers user identities, privileged accounts and access rights across the Customer Systems in accordance with the Policies.",
        "07:00 to 19:00 Eastern Time on Business Days; emergency revocation 24 hours a day",
        "joiner, mover and leaver processing; privileged account management; quarterly access recertification; single sign-on configuration; multi-factor authentication support",
    ),
)


def _contract_towers(w: _Writer, section: _Section) -> list[_PagePlan]:
    plans = []
    for name, service, description, hours, activities in _C_TOWERS:
        bullets = "\n".join(f"- {a[:1].upper()}{a[1:]}" for a in activities.split("; "))
        text = f"{description}\nService Hours: {hours}.\nIn-scope activities:\n{bullets}"
        plans.append(
            _PagePlan(
                [(f"Service Tower: {name}", text)],
                fixed={"service": service, "tower": name},
                topic=_C_TOWER,
                pools={"activity": tuple(activities.split("; "))},
            )
        )
    return plans


def _plan(*blocks: str | _Block, fill: bool = True, **fixed: str) -> _PagePlan:
    """A page plan from raw strings (unnumbered) and (title, text) blocks."""
    out: list[_Block] = [(None, b) if isinstance(b, str) else b for b in blocks]
    return _PagePlan(out, fixed=dict(fixed), fill=fill)


def _contract_service_levels(w: _Writer, section: _Section) -> list[_PagePlan]:
    header = ("Ref", "Service Level", "Target", "Measurement", "Type")
    availability = _table(
        header,
        [
            ("CSL-02", "Availability - Tier 2 Applications", "99.7 percent", "Monthly", "Critical"),
            ("CSL-03", "Availability - Tier 3 Applications", "99.5 percent", "Monthly", "Key Measurement"),
            (
                "CSL-04",
                "Availability - Wide Area Network (distribution centers)",
                "99.8 percent",
                "Monthly",
                "Critical",
            ),
            ("CSL-05", "Availability - Warehouse wireless network", "99.6 percent", "Monthly", "Critical"),
            (
                "CSL-06",
                "Availability - Non-production environments",
                "98.5 percent",
                "Monthly",
                "Key Measurement",
            ),
        ],
    )
    incidents = _table(
        ("Severity", "Response", "Resolution", "Target", "Type"),
        [
            ("Severity 1", "15 minutes", "4 hours", "95 percent", "Critical"),
            ("Severity 2", "30 minutes", "8 hours", "95 percent", "Critical"),
            ("Severity 3", "4 hours", "3 Business Days", "90 percent", "Key Measurement"),
            ("Severity 4", "1 Business Day", "10 Business Days", "90 percent", "Key Measurement"),
        ],
    )
    desk = _table(
        header,
        [
            ("CSL-11", "Average speed to answer (telephone)", "60 seconds", "Monthly", "Critical"),
            ("CSL-12", "Call abandonment rate", "below 6 percent", "Monthly", "Critical"),
            ("CSL-13", "First contact resolution", "72 percent", "Monthly", "Critical"),
            (
                "KM-14",
                "User satisfaction (post-ticket survey)",
                "4.2 out of 5",
                "Quarterly",
                "Key Measurement",
            ),
            ("KM-15", "Knowledge article currency", "95 percent reviewed", "Quarterly", "Key Measurement"),
        ],
    )
    example = _table(
        ("Critical Service Level", "Pool Allocation", "Result", "Credit"),
        [
            ("CSL-02 Tier 2 Availability", "20 percent", "missed", "USD 16,900"),
            ("CSL-11 Speed to answer", "15 percent", "met", "nil"),
            ("CSL-13 First contact resolution", "10 percent", "missed", "USD 8,450"),
        ],
    )
    key = _table(
        header,
        [
            ("KM-21", "Security patches applied within policy", "98 percent", "Monthly", "Key Measurement"),
            ("KM-22", "Changes implemented without Incident", "97 percent", "Monthly", "Key Measurement"),
            ("KM-23", "Root cause analyses delivered on time", "95 percent", "Monthly", "Key Measurement"),
            ("KM-24", "Asset register accuracy (sample audit)", "98 percent", "Quarterly", "Key Measurement"),
            (
                "KM-25",
                "Backup jobs completed successfully",
                "99 percent",
                "Daily, reported monthly",
                "Key Measurement",
            ),
        ],
    )
    return [
        _plan(
            (
                "Service Level Methodology",
                "This Schedule sets out the Service Levels, the way each is measured and the way Service Credits are calculated. Tier 1 Applications are the order management platform, the e-commerce storefront and the warehouse control system.",
            )
        ),
        _plan(
            (
                "Availability Service Levels",
                "Availability is measured at the application layer from synthetic transactions run every five minutes.\n"
                + availability,
            )
        ),
        _plan(
            (
                "Incident Response and Resolution",
                "Response and resolution times are measured from the time the Incident is logged until the user confirms resolution.\n"
                + incidents,
            )
        ),
        _plan(("Service Desk Service Levels", desk)),
        _plan(
            (
                "Calculation of Service Credits",
                "The Service Credit for a missed Critical Service Level equals the At-Risk Amount multiplied by its Pool Allocation Percentage. The following worked example assumes monthly Base Charges of USD 845,000 and an At-Risk Amount of USD 84,500.\n"
                + example,
            )
        ),
        _plan(("Key Measurements", key)),
    ]


def _contract_charges(w: _Writer, section: _Section) -> list[_PagePlan]:
    monthly = (412_350, 268_900, 731_400, 356_150, 588_700, 197_250, 243_800, 129_600, 151_450)
    rows = [
        (name, *(f"USD {round(base * (0.97**year)):,}" for year in range(5)))
        for (name, *_), base in zip(_C_TOWERS, monthly, strict=True)
    ]
    base = _table(("Service Tower", "Year 1", "Year 2", "Year 3", "Year 4", "Year 5"), rows)
    units = _table(
        ("Resource Unit", "Baseline (monthly)", "ARC rate", "RRC rate", "Deadband"),
        [
            ("Service desk contacts", "21,500 contacts", "USD 14.20", "USD 11.90", "plus or minus 5 percent"),
            ("Supported devices", "6,840 devices", "USD 31.75", "USD 26.10", "plus or minus 5 percent"),
            (
                "Managed servers (virtual)",
                "1,120 servers",
                "USD 188.00",
                "USD 151.00",
                "plus or minus 3 percent",
            ),
            (
                "Managed servers (physical)",
                "146 servers",
                "USD 612.00",
                "USD 497.00",
                "plus or minus 3 percent",
            ),
            ("Storage (usable terabytes)", "1,480 TB", "USD 46.50", "USD 37.25", "plus or minus 7 percent"),
            ("Application support hours", "9,600 hours", "USD 88.00", "USD 70.40", "plus or minus 5 percent"),
        ],
    )
    roles = (
        ("Program Director", 262),
        ("Solution Architect", 231),
        ("Project Manager", 189),
        ("Business Analyst", 152),
        ("Senior Developer", 171),
        ("Developer", 126),
        ("Test Analyst", 109),
        ("Database Administrator", 164),
        ("Network Engineer", 158),
        ("Service Desk Analyst", 74),
    )
    card = _table(
        ("Role", "Onshore (USD/hour)", "Nearshore (USD/hour)", "Offshore (USD/hour)"),
        [
            (role, f"{rate:.2f}", f"{round(rate * 1.26) / 2:.2f}", f"{round(rate * 0.82) / 2:.2f}")
            for role, rate in roles
        ],
    )
    termination = _table(
        ("Termination effective in", "Unrecovered transition costs", "Wind-down charge"),
        [
            ("Contract Year 1", "USD 3,950,000", "USD 610,000"),
            ("Contract Year 2", "USD 2,960,000", "USD 470,000"),
            ("Contract Year 3", "USD 1,975,000", "USD 330,000"),
            ("Contract Year 4", "USD 985,000", "USD 190,000"),
            ("Contract Year 5", "nil", "USD 90,000"),
        ],
    )
    delays = _table(
        ("Transition Milestone", "Milestone date", "Delay payment per day", "Maximum"),
        [
            ("TM-1 Service desk cutover", "1 June 2023", "USD 6,500", "USD 195,000"),
            ("TM-2 End-user support cutover", "1 July 2023", "USD 5,000", "USD 150,000"),
            ("TM-3 Network management cutover", "1 September 2023", "USD 7,500", "USD 225,000"),
            ("TM-4 Hosting migration complete", "1 December 2023", "USD 12,000", "USD 360,000"),
            ("TM-5 Application services cutover", "1 February 2024", "USD 9,000", "USD 270,000"),
        ],
    )
    return [
        _plan(
            (
                "Base Charges",
                "The Monthly Base Charges for each service tower in each Contract Year are set out below. They reflect the productivity commitment of three percent per year offered in the Supplier's proposal.\n"
                + base,
            )
        ),
        _plan(("Resource Units and Baselines", units)),
        _plan(
            (
                "Rate Card",
                "The following hourly rates apply to Projects charged on a time-and-materials basis and are fixed for the first two Contract Years.\n"
                + card,
            )
        ),
        _plan(
            (
                "Time-and-Materials Work",
                "Time-and-materials work is recorded in timesheets approved weekly by the Customer's project lead.",
            )
        ),
        _plan(
            (
                "Cost of Living Adjustment",
                "From the start of the third Contract Year the Charges may be adjusted annually by the change in the cost of living index, subject to a cap of three and one half percent.",
            )
        ),
        _plan(
            (
                "Termination Charges",
                "The Termination Charges payable on termination for convenience are the sum of the two amounts below for the Contract Year in which termination takes effect, pro-rated monthly.\n"
                + termination,
            )
        ),
        _plan(("Transition Charges and Delay Payments", delays)),
    ]


def _contract_governance(w: _Writer, section: _Section) -> list[_PagePlan]:
    committees = _table(
        ("Body", "Chair", "Members", "Frequency"),
        [
            (
                "Executive Steering Committee",
                "Customer Chief Information Officer",
                "Supplier Account Executive; Customer Chief Financial Officer",
                "Quarterly",
            ),
            (
                "Contract Management Board",
                "Customer Contract Manager",
                "Supplier Contract Manager; Finance Leads",
                "Monthly",
            ),
            (
                "Operational Management Committee",
                "Customer Head of IT Operations",
                "Service Delivery Manager; tower leads",
                "Monthly",
            ),
            (
                "Technical Architecture Board",
                "Customer Enterprise Architect",
                "Supplier Chief Architect; security representatives",
                "Every two months",
            ),
            (
                "Security Working Group",
                "Customer Chief Information Security Officer",
                "Supplier Security Manager",
                "Monthly",
            ),
        ],
    )
    reports = _table(
        ("Report", "Frequency", "Due", "Recipient"),
        [
            (
                "Service Level performance report",
                "Monthly",
                "8th Business Day",
                "Operational Management Committee",
            ),
            (
                "Capacity and demand forecast",
                "Quarterly",
                "15th Business Day",
                "Technical Architecture Board",
            ),
            ("Security status report", "Monthly", "5th Business Day", "Security Working Group"),
            (
                "Financial report and invoice reconciliation",
                "Monthly",
                "10th Business Day",
                "Contract Management Board",
            ),
            (
                "Innovation and improvement report",
                "Semi-annually",
                "With the quarterly pack",
                "Executive Steering Committee",
            ),
        ],
    )
    escalation = _table(
        ("Level", "Customer", "Supplier", "Time to resolve"),
        [
            ("1", "Head of IT Operations", "Service Delivery Manager", "10 Business Days"),
            ("2", "Contract Manager", "Contract Manager", "10 Business Days"),
            ("3", "Chief Information Officer", "Account Executive", "15 Business Days"),
        ],
    )
    return [
        _plan(("Governance Bodies", committees)),
        _plan(("Governance Reports", reports)),
        _plan(("Escalation Path", escalation)),
        _plan(),
    ]


def _contract_dpa(w: _Writer, section: _Section) -> list[_PagePlan]:
    details = _lines("""
        Subject matter: the provision of the Services under the Agreement.
        Duration: the Term and the Termination Assistance Period, and any further period during which the Supplier retains Customer Data.
        Categories of Data Subjects: employees and contractors of the Customer; employees of the Customer's customers and suppliers; consumers who use the Customer's loyalty program.
        Categories of Personal Data: names, business contact details, employee identification numbers, payroll and benefits data, loyalty account details and delivery addresses.
        Special categories: limited health data contained in occupational health records held in the HR information system.
    """)
    subprocessors = _table(
        ("Sub-processor", "Processing", "Location"),
        [
            ("Harrowgate Data Centers Inc.", "Colocation of hosted servers", "Ashburn, Virginia"),
            ("Lumenfold Cloud Services", "Public cloud infrastructure", "United States regions"),
            ("Trevanion Support Services Pvt. Ltd.", "Service desk and application support", "Pune, India"),
            ("Ostrava Digital s.r.o.", "Database administration", "Ostrava, Czech Republic"),
            ("Quillmark Archival LLC", "Offsite backup media storage", "Frederick, Maryland"),
        ],
    )
    return [
        _plan(("Details of Processing", "\n".join(details))),
        _plan(("Approved Sub-processors", subprocessors)),
        _plan(),
        _plan(),
        _plan(),
    ]


_C_CONTROLS = (
    (
        "Governance",
        "an information security policy approved by senior management and reviewed annually; a named Security Manager; a risk register reviewed quarterly; security clauses in all Subcontractor agreements; annual security awareness training with completion tracked",
    ),
    (
        "Access Control",
        "unique user identities; multi-factor authentication for remote and privileged access; removal of leaver access within one Business Day; quarterly recertification of privileged accounts; session recording for administrator access to production",
    ),
    (
        "Vulnerability Management",
        "weekly authenticated scans of all hosted servers; remediation of critical vulnerabilities within seventy-two (72) hours; remediation of high vulnerabilities within fourteen (14) days; annual independent penetration test; tracking of exceptions approved by the Security Working Group",
    ),
    (
        "Encryption",
        "encryption of Customer Data at rest using AES-256 or stronger; TLS 1.2 or higher for data in transit; key management in a hardware security module; key rotation at least annually; no storage of keys alongside encrypted data",
    ),
    (
        "Logging and Monitoring",
        "centralized logging of security events; retention of logs for at least one year; a security operations center staffed at all times; alerting on privileged account use; monthly review of firewall rule changes",
    ),
    (
        "Resilience",
        "a recovery time objective of four hours for Tier 1 Applications; a recovery point objective of fifteen minutes for Tier 1 Applications; annual disaster recovery tests; geographically separate secondary data center; documented failback procedures",
    ),
)


def _contract_security(w: _Writer, section: _Section) -> list[_PagePlan]:
    plans = []
    for domain, controls in _C_CONTROLS:
        items = "\n".join(f"({chr(97 + i)}) {c}" for i, c in enumerate(controls.split("; ")))
        plans.append(
            _plan(
                (
                    f"{domain} Controls",
                    "The Supplier shall implement and maintain at least the following controls:\n" + items,
                )
            )
        )
    return plans


def _contract_personnel(w: _Writer, section: _Section) -> list[_PagePlan]:
    supplier = _table(
        ("Key Personnel position", "Name", "Base location", "Minimum commitment"),
        [
            ("Supplier Account Executive", "Marguerite Oyelaran", "Austin, Texas", "50 percent"),
            ("Service Delivery Manager", "Rajiv Castellanos", "Baltimore, Maryland", "100 percent"),
            ("Transition Manager", "Halvard Nkemelu", "Baltimore, Maryland", "100 percent until TM-5"),
            ("Chief Architect", "Saoirse Valdivieso", "Dallas, Texas", "60 percent"),
            ("Security Manager", "Tobias Wren-Adeyemi", "Austin, Texas", "50 percent"),
        ],
    )
    customer = _table(
        ("Customer position", "Name", "Location"),
        [
            ("Chief Information Officer", "Lorraine Pettigrew", "Baltimore, Maryland"),
            ("Customer Relationship Manager", "Desmond Achterberg", "Baltimore, Maryland"),
            ("Contract Manager", "Yolanda Brisbois", "Columbus, Ohio"),
            ("Chief Information Security Officer", "Ibrahim Feldkamp", "Baltimore, Maryland"),
        ],
    )
    return [
        _plan(
            (
                "Supplier Key Personnel",
                "The following individuals hold the Key Personnel positions on the Effective Date.\n"
                + supplier,
            )
        ),
        _plan(
            (
                "Customer Representatives",
                "For information, the Customer's principal representatives on the Effective Date are listed below. They are not Key Personnel.\n"
                + customer,
            )
        ),
        _plan(),
    ]


def _contract_subcontractors(w: _Writer, section: _Section) -> list[_PagePlan]:
    table = _table(
        ("Subcontractor", "Services", "Location", "Access to Customer Data"),
        [
            (
                "Trevanion Support Services Pvt. Ltd.",
                "Service desk (overnight), application support",
                "Pune, India",
                "Yes",
            ),
            ("Ostrava Digital s.r.o.", "Database administration", "Ostrava, Czech Republic", "Yes"),
            (
                "Fieldline Technical Services Inc.",
                "Deskside break-fix at distribution centers",
                "Multiple US sites",
                "Limited",
            ),
            ("Harrowgate Data Centers Inc.", "Colocation facilities", "Ashburn, Virginia", "Physical only"),
            ("Corrigan Cabling Co.", "Structured cabling and wireless surveys", "Columbus, Ohio", "No"),
        ],
    )
    return [_plan(("Approved Subcontractors", table)), _plan(), _plan()]


def _contract_exit(w: _Writer, section: _Section) -> list[_PagePlan]:
    activities = _table(
        ("Exit activity", "Owner", "Timing"),
        [
            ("Confirm exit scope and successor supplier contacts", "Customer", "Start of exit"),
            ("Deliver updated asset and contract registers", "Supplier", "Within 10 Business Days"),
            ("Knowledge transfer workshops for each service tower", "Supplier", "Weeks 2 to 12"),
            ("Parallel running of the service desk", "Both", "As agreed in the Exit Plan"),
            ("Transfer of Customer Data and certificate of deletion", "Supplier", "Final month"),
        ],
    )
    return [_plan(("Exit Plan Structure", activities)), _plan(), _plan(), _plan(), _plan()]


def _contract_locations(w: _Writer, section: _Section) -> list[_PagePlan]:
    table = _table(
        ("Service Location", "Type", "Service towers"),
        [
            ("Baltimore, Maryland (Customer headquarters)", "Onsite", "End-user support; governance"),
            ("Dallas, Texas", "Supplier delivery center", "Network management; hosting operations"),
            ("Ashburn, Virginia", "Primary data center", "Hosting; database; disaster recovery"),
            ("Columbus, Ohio", "Secondary data center", "Disaster recovery; backup"),
            ("Monterrey, Mexico", "Nearshore center", "Service desk (Spanish); application support"),
            ("Pune, India", "Offshore center", "Application maintenance; overnight service desk"),
        ],
    )
    return [_plan(("Approved Service Locations", table)), _plan(), _plan()]


def _contract_sow_form(w: _Writer, section: _Section) -> list[_PagePlan]:
    form = _lines("""
        Statement of Work number: [insert]
        Project title: [insert]
        Customer project sponsor: [insert name and position]
        Supplier project manager: [insert name]
        Background and objectives: [describe the business need and the outcome sought]
        Scope: [list the activities in scope and any exclusions]
        Deliverables: [list each Deliverable with its acceptance criteria]
        Milestones: [list each Milestone with its date and any Milestone Charges]
        Charging basis: [fixed price / time and materials / capped time and materials]
        Customer Responsibilities: [list any dependencies on the Customer]
        Assumptions and risks: [list]
        Key Personnel for the Project: [list, if any]
    """)
    return [_plan(("Form of Statement of Work", "\n".join(form))), _plan(), _plan()]


def _contract_general(w: _Writer, section: _Section) -> list[_PagePlan]:
    signature = (
        "IN WITNESS WHEREOF, the parties have caused this Agreement to be executed by their duly authorized "
        "representatives as of the Effective Date.\n\n"
        f"{_CUSTOMER}\nBy: ______________________\nName: Lorraine Pettigrew\nTitle: Chief Information Officer\n\n"
        f"{_SUPPLIER}\nBy: ______________________\nName: Everett Sandoval-Kraus\nTitle: President"
    )
    plans = [_PagePlan() for _ in range(section.pages)]
    plans[-1].tail.append((None, signature))
    return plans


def _article(
    key: str, number: int, name: str, pages: int, topic: _Topic, build: _Builder | None = None
) -> _Section:
    return _Section(key, f"ARTICLE {number} - {name}", pages, topic, str(number), build)


def _schedule(
    key: str, letter: str, name: str, pages: int, topic: _Topic, build: _Builder | None = None
) -> _Section:
    return _Section(key, f"SCHEDULE {letter} - {name}", pages, topic, letter, build)


_CONTRACT_SECTIONS = (
    _Section("cover", "MASTER SERVICES AGREEMENT", 1, build=_contract_cover),
    _Section("contents", "TABLE OF CONTENTS", 1, contents=True),
    _article("definitions", 1, "DEFINITIONS AND INTERPRETATION", 5, _C_INTERPRETATION, _contract_definitions),
    _article("services", 2, "THE SERVICES", 4, _C_SERVICES),
    _article("sow", 3, "STATEMENTS OF WORK AND PROJECTS", 3, _C_SOW),
    _article("transition", 4, "TRANSITION AND TRANSFORMATION", 3, _C_TRANSITION),
    _article("service_levels", 5, "SERVICE LEVELS", 3, _C_SERVICE_LEVELS),
    _article("personnel", 6, "PERSONNEL AND SUBCONTRACTING", 3, _C_PERSONNEL),
    _article("governance", 7, "GOVERNANCE", 2, _C_GOVERNANCE),
    _article("change", 8, "CHANGE CONTROL", 2, _C_CHANGE),
    _article("charges", 9, "CHARGES AND TAXES", 3, _C_CHARGES),
    _article("invoicing", 10, "INVOICING AND PAYMENT", 4, _C_INVOICING),
    _article("audit", 11, "RECORDS AND AUDIT", 2, _C_AUDIT),
    _article("ip", 12, "INTELLECTUAL PROPERTY", 3, _C_IP),
    _article("confidentiality", 13, "CONFIDENTIALITY", 3, _C_CONFIDENTIALITY),
    _article("data", 14, "DATA PROTECTION", 3, _C_DATA),
    _article("security", 15, "INFORMATION SECURITY", 3, _C_SECURITY),
    _article("warranties", 16, "REPRESENTATIONS AND WARRANTIES", 3, _C_WARRANTIES),
    _article("indemnities", 17, "INDEMNITIES", 3, _C_INDEMNITIES),
    _article("liability", 18, "LIMITATION OF LIABILITY", 3, _C_LIABILITY),
    _article("insurance", 19, "INSURANCE", 2, _C_INSURANCE),
    _article("termination", 20, "TERM AND TERMINATION", 4, _C_TERMINATION),
    _article("exit", 21, "TERMINATION ASSISTANCE", 2, _C_EXIT),
    _article("disputes", 22, "DISPUTE RESOLUTION", 3, _C_DISPUTES),
    _article("general", 23, "GENERAL PROVISIONS", 3, _C_GENERAL, _contract_general),
    _schedule("sched_a", "A", "SERVICES DESCRIPTION", 9, _C_SERVICES, _contract_towers),
    _schedule(
        "sched_b", "B", "SERVICE LEVELS AND SERVICE CREDITS", 6, _C_SERVICE_LEVELS, _contract_service_levels
    ),
    _schedule("sched_c", "C", "CHARGES", 7, _C_CHARGES, _contract_charges),
    _schedule("sched_d", "D", "GOVERNANCE", 4, _C_GOVERNANCE, _contract_governance),
    _schedule("sched_e", "E", "DATA PROCESSING ADDENDUM", 5, _C_DATA, _contract_dpa),
    _schedule("sched_f", "F", "SECURITY REQUIREMENTS", 6, _C_SECURITY, _contract_security),
    _schedule("sched_g", "G", "KEY PERSONNEL", 3, _C_PERSONNEL, _contract_personnel),
    _schedule("sched_h", "H", "APPROVED SUBCONTRACTORS", 3, _C_PERSONNEL, _contract_subcontractors),
    _schedule("sched_i", "I", "EXIT PLAN", 5, _C_EXIT, _contract_exit),
    _schedule("sched_j", "J", "SERVICE LOCATIONS", 3, _C_LOCATIONS, _contract_locations),
    _schedule("sched_k", "K", "FORM OF STATEMENT OF WORK", 3, _C_SOW, _contract_sow_form),
)

# Facts (answered by the questions below) and near-miss distracters on other pages.
_CONTRACT_PLANTS = (
    _Plant(
        "invoicing",
        2,
        "Late Payment",
        "Any undisputed amount that the Customer fails to pay by its due date shall bear interest from the due date until the date of payment at the rate of 1.75 percent per month or, if lower, the maximum rate permitted by Applicable Law. Interest does not accrue on amounts withheld in good faith while a dispute about them is pending. The Supplier shall invoice accrued interest separately and may not deduct it from credits owed to the Customer.",
    ),
    _Plant(
        "audit",
        1,
        "Refund of Overcharges",
        "If an audit reveals that the Customer has been overcharged, the Supplier shall refund the overcharged amount within thirty (30) days, together with interest at the rate of 0.5 percent per month from the date of the overpayment until the date of the refund.",
    ),
    _Plant(
        "sched_c",
        4,
        "Early Payment Discount",
        "If the Customer pays an undisputed invoice within ten (10) days after receiving it, the Customer may deduct an early payment discount of 1.25 percent of the invoiced Base Charges. No discount applies to Pass-Through Expenses.",
    ),
    _Plant(
        "data",
        1,
        "Notification of Security Incidents",
        "The Supplier shall notify the Customer of any Security Incident without undue delay and in any event within thirty-six (36) hours after becoming aware of it. The notice shall describe the nature of the Security Incident, the categories and approximate number of Data Subjects and records concerned, the likely consequences and the measures taken or proposed to address it. The Supplier shall provide updates at least daily until the Security Incident is contained.",
    ),
    _Plant(
        "sched_e",
        2,
        "Assistance with Regulatory Notifications",
        "Where the Customer is required to notify a supervisory authority of a personal data breach, which may have to be done within seventy-two (72) hours, the Supplier shall provide all information in its possession that the Customer reasonably requires for the notification. The Supplier shall forward any request from a Data Subject to the Customer within five (5) Business Days of receipt.",
    ),
    _Plant(
        "liability",
        1,
        "Cap on Liability",
        "Subject to the exclusions in this Article, each party's total aggregate liability arising out of or in connection with this Agreement in any Contract Year shall not exceed the greater of USD 6,400,000 and one hundred fifty percent (150%) of the Charges paid or payable in the twelve months preceding the event giving rise to the claim.",
    ),
    _Plant(
        "liability",
        2,
        "Data Protection Liability",
        "The Supplier's aggregate liability for breaches of Article 14 (Data Protection) and Article 15 (Information Security) is subject to a separate cap of USD 11,500,000 over the whole Term, which is in addition to and does not erode the general cap.",
    ),
    _Plant(
        "insurance",
        0,
        "Professional Liability Insurance",
        "The Supplier shall maintain professional liability (errors and omissions) insurance with limits of not less than USD 20,000,000 per claim and in the aggregate, covering the Supplier's liability for negligent acts, errors and omissions in the performance of the Services.",
    ),
    _Plant(
        "insurance",
        1,
        "Other Required Insurance",
        "The Supplier shall also maintain commercial general liability insurance with limits of not less than USD 5,000,000 per occurrence, cyber liability insurance with limits of not less than USD 10,000,000 per claim, and crime insurance covering employee dishonesty with limits of not less than USD 2,000,000.",
    ),
    _Plant(
        "termination",
        2,
        "Termination for Convenience by the Customer",
        "The Customer may terminate this Agreement, in whole or in part, for convenience by giving the Supplier not less than one hundred twenty (120) days' prior written notice. On such termination the Customer shall pay the applicable Termination Charges set out in Schedule C, and no other amount is payable by reason of the termination.",
    ),
    _Plant(
        "termination",
        0,
        "Extension of the Term",
        "To extend the Term, the Customer must give the Supplier written notice at least one hundred eighty (180) days before the expiry of the then-current Term. If the Customer does not extend, the Agreement expires at the end of the Term without further notice.",
    ),
    _Plant(
        "sow",
        1,
        "Termination of Projects",
        "The Customer may terminate any individual Project for convenience by giving the Supplier thirty (30) days' written notice, in which case the Customer shall pay for the work performed up to the date of termination and for any non-cancellable commitments approved in the Statement of Work.",
    ),
    _Plant(
        "disputes",
        1,
        "Arbitration",
        "Any dispute that is not resolved under the preceding Sections shall be finally settled by arbitration administered by the International Centre for Dispute Resolution in accordance with its International Arbitration Rules. The seat of arbitration shall be Toronto, Ontario, and judgment on the award may be entered in any court having jurisdiction.",
    ),
    _Plant(
        "disputes",
        0,
        "Place of Mediation",
        "Any mediation under this Article shall take place in Chicago, Illinois, before a single mediator agreed by the parties or, failing agreement within ten (10) Business Days, appointed by the mediation provider.",
    ),
    _Plant(
        "sched_b",
        0,
        "Tier 1 Availability",
        "The Availability Service Level for Tier 1 Applications is 99.95 percent in each Measurement Period, measured at the application layer and excluding scheduled maintenance windows agreed at least five (5) Business Days in advance. It is a Critical Service Level with a Pool Allocation Percentage of twenty-five percent.",
    ),
    _Plant(
        "sched_b",
        4,
        "Cap on Key Measurement Credits",
        "Where the Customer promotes a Key Measurement to a Critical Service Level during a Contract Year, Service Credits for that Service Level are limited to four percent (4%) of the Monthly Base Charges until the start of the next Contract Year.",
    ),
    _Plant(
        "sched_c",
        3,
        "Blended Rate",
        "Where a Statement of Work charged on a time-and-materials basis does not specify the mix of roles, the Supplier shall charge a single blended hourly rate of USD 142.50 for all Supplier Personnel, irrespective of role or location.",
    ),
    _Plant(
        "exit",
        0,
        "Initial Exit Plan",
        "The Supplier shall deliver the first draft of the Exit Plan within ninety (90) days after the Effective Date, and the Customer shall provide its comments within thirty (30) days after receipt.",
    ),
    _Plant(
        "sched_i",
        2,
        "Termination Assistance Period",
        "The Termination Assistance Period begins on the date on which notice of termination is given or, for expiry, twelve months before the end of the Term, and continues for up to eighteen (18) months after the effective date of termination or expiry, as the Customer may require.",
    ),
)

_CONTRACT_FACTS = (
    _Fact(
        "On what date does the Master Services Agreement take effect?", ("14 March 2023", "March 14, 2023")
    ),
    _Fact(
        "What is the Service Credit Cap, expressed as a share of the Monthly Base Charges?",
        ("twelve percent (12%)", "12%", "twelve percent", "12 percent"),
    ),
    _Fact(
        "What interest rate applies to undisputed amounts that the Customer pays late?",
        ("1.75 percent per month", "1.75% per month", "1.75%", "1.75 percent"),
    ),
    _Fact(
        "Within how many hours must the Supplier notify the Customer of a Security Incident?",
        ("thirty-six (36) hours", "36 hours", "thirty-six hours"),
    ),
    _Fact(
        "What fixed dollar amount is used in each party's annual aggregate liability cap?",
        ("USD 6,400,000", "$6,400,000", "6,400,000", "$6.4 million", "6.4 million"),
    ),
    _Fact(
        "What minimum limit of professional liability (errors and omissions) insurance must the Supplier carry?",
        ("USD 20,000,000", "$20,000,000", "20,000,000", "$20 million", "20 million"),
    ),
    _Fact(
        "How much prior written notice must the Customer give to terminate the Agreement for convenience?",
        ("one hundred twenty (120) days", "120 days", "one hundred twenty days"),
    ),
    _Fact(
        "Where is the seat of arbitration for disputes under the Agreement?", ("Toronto, Ontario", "Toronto")
    ),
    _Fact("What availability target applies to Tier 1 Applications?", ("99.95 percent", "99.95%", "99.95")),
    _Fact(
        "What blended hourly rate applies to time-and-materials work when the roles are not specified?",
        ("USD 142.50", "$142.50", "142.50"),
    ),
    _Fact("Who holds the Supplier Account Executive position?", ("Marguerite Oyelaran",)),
    _Fact(
        "For how long after termination or expiry can the Termination Assistance Period continue?",
        ("eighteen (18) months", "18 months", "eighteen months"),
    ),
)


# ---- Sample 2: a clinical-study protocol ---------------------------------------------------

_DRUG = "corvalinib"
_SPONSOR = "Nordvale Therapeutics AG"

_P_POOLS: Pools = {
    "pdays": _lines("""
        24 hours
        48 hours
        3 days
        7 days
        14 days
        28 days
        30 days
    """),
    "week": ("4", "8", "12", "16", "26", "39", "52"),
    "pevent": _lines("""
        the Screening visit
        randomization
        the first dose of study intervention
        the last dose of study intervention
        the Investigator becoming aware of the event
        the End-of-Treatment visit
        the unscheduled visit
        receipt of the data query
    """),
    "timing": _lines("""
        at each scheduled visit
        at Screening and at Weeks {week} and {week2}
        within {pdays} of {pevent}
        before {pevent}
        at the End-of-Treatment visit
        throughout the study
        as specified in the Schedule of Activities
        at every visit from Week {week} onward
        at the time of {pevent}
    """),
    "doc": _lines("""
        the Schedule of Activities
        the Laboratory Manual
        the Pharmacy Manual
        the Spirometry Manual
        the IRT User Guide
        the Monitoring Plan
        the Data Management Plan
        the Statistical Analysis Plan
        the Safety Management Plan
        the Imaging Charter
    """),
    "proc": _lines("""
        the visit windows
        the spirometry procedures
        the sample handling instructions
        the dosing instructions
        the blinding procedures
        the informed consent process
        the eligibility criteria
    """),
    "recipient": _lines("""
        the Sponsor
        the IRB/IEC as required by local regulations
        the study monitor
        the medical monitor
    """),
    "lab": _lines("""
        ALT
        AST
        total bilirubin
        serum creatinine
        hemoglobin
        platelet count
        alkaline phosphatase
        potassium
    """),
    "sample": _lines("""
        pharmacokinetic samples
        biomarker samples
        safety laboratory samples
        pregnancy tests
        genetic samples (where consented)
    """),
}

_P_BOILERPLATE = _topic(
    titles="General",
    stmt="""
        Any deviation from {proc} must be documented in the source records and reported to {recipient}.
        All procedures will be performed by appropriately qualified and trained site staff listed on the delegation log.
        Source documents must be completed contemporaneously and retained at the site as described in Section 14.
        Unscheduled assessments may be performed at any time if clinically indicated, and their results will be entered in the eCRF.
        The timing of procedures relative to dosing must be recorded in the source documents.
        Where local regulations are more stringent than this protocol, the local requirements apply.
        Further operational detail is provided in {doc}, which does not change the requirements of this protocol.
        Questions about the interpretation of this section should be addressed to the medical monitor before the procedure is performed.
        Visits may be conducted at the participant's home by a qualified mobile nurse where permitted by local regulations and agreed with the Sponsor.
        Data from assessments performed outside the visit window will be included in the analyses as described in the Statistical Analysis Plan.
        The Sponsor will provide site staff with training on this section before the first participant is screened at the site.
        Participants will be reimbursed for reasonable travel expenses in accordance with the approved informed consent form.
    """,
)

_P_STYLE = _Style(
    pools=_P_POOLS,
    actors={
        "i": (
            ("the Investigator", "the Sponsor"),
            ("site staff", "the Investigator"),
            ("the Investigator or a qualified designee", "the Sponsor"),
            ("the study coordinator", "the Investigator"),
        ),
        "s": (("the Sponsor", "the Investigator"), ("the Sponsor or its designee", "the Investigator")),
        "p": (("the participant", "site staff"), ("each participant", "the Investigator")),
    },
    patterns=_lines("""
        {Actor} will {ob}.
        {Actor} must {ob}.
        {Actor} must {ob}.
        {Actor} is expected to {ob}.
        If {cond}, {remedy}.
        If {cond}, {remedy}.
        When {cond}, {remedy}.
        Site staff must not {neg}.
        {stmt}
        {stmt}
        {stmt}
        {stmt}
        {stmt}
    """),
    list_leads=_lines("""
        {Actor} will:
        At each relevant visit, {actor} will:
        In addition, {actor} must:
        To meet this requirement, {actor} will:
    """),
    bullets="-",
    shared=_P_BOILERPLATE,
)

_P_DESIGN = _topic(
    titles="""
        Overall Design
        Part A (Dose-Ranging)
        Part B (Confirmatory)
        Rationale for Study Design
        Rationale for Placebo Control
        Rationale for Dose Selection
        Study Duration
        End of Study Definition
        Interim Decision Between Parts
        Number of Sites and Countries
        Stratification
    """,
    ob_i="""
        confirm eligibility using the IRT system before randomizing each participant
        explain to each participant that they may receive placebo
        keep the screening log current, including the reason for each screen failure
        complete the End-of-Study eCRF page for each randomized participant
    """,
    ob_s="""
        inform all Investigators in writing when enrollment into Part A is complete
        notify regulatory authorities and IRBs/IECs of the end of the study within the required timelines
        communicate the dose selected for Part B to sites without revealing the Part A results by treatment group
        provide the IRT system used for randomization and drug assignment
    """,
    cond="""
        the Part A dose-selection analysis indicates that no dose meets the pre-specified criteria
        enrollment into Part B is slower than planned
        a participant completes the treatment period
        the Sponsor decides to terminate the study early
    """,
    remedy="""
        the study will stop after Part A and participants will complete the safety follow-up
        the Sponsor may open additional sites in participating countries after notifying the relevant authorities
        the participant may be offered entry into the open-label extension study, subject to its own consent process
        the Investigator will promptly inform participants and ensure appropriate follow-up
    """,
    stmt="""
        The study consists of a Screening period of up to 35 days, a double-blind treatment period and a safety follow-up period.
        Part A explores the dose-response relationship, and Part B confirms the efficacy and safety of the selected dose.
        Participants randomized in Part A continue on their assigned treatment until the end of Part A and are not re-randomized into Part B.
        Randomization is stratified by region and by background antifibrotic therapy status at Screening.
        The end of the study is defined as the date of the last visit of the last participant in Part B.
        A placebo comparator is appropriate because all participants continue to receive standard of care, including approved antifibrotic therapy where applicable.
        An independent Data Monitoring Committee reviews unblinded safety data throughout both parts of the study.
        The seamless design allows participants from both parts to contribute to the long-term safety database while keeping the confirmatory analysis independent of Part A.
        The selected Part B dose will be documented in a memorandum to the Trial Master File before the first Part B participant is randomized.
        A treatment duration of 52 weeks in Part B is considered the minimum needed to characterize the effect on the rate of lung function decline.
        Participants and site staff remain blinded to the dose selected for Part B until the end of the study.
        Sites that enrolled participants in Part A may also enroll participants in Part B once the Part B dose has been selected.
        Enrollment into Part B is paused while the Part A dose-selection analysis is performed, which is expected to take about 8 weeks.
        The study population reflects the population for which corvalinib is intended, including participants with and without background antifibrotic therapy.
    """,
)


_P_POPULATION = _topic(
    titles="""
        Screen Failures
        Rescreening
        Lifestyle Considerations
        Meals and Dietary Restrictions
        Diagnosis Confirmation
        Eligibility Review
        Retesting of Laboratory Values
    """,
    ob_i="""
        review all inclusion and exclusion criteria before randomization and document the review in the source records
        submit the HRCT images and, where available, the lung biopsy report for central review of the IPF diagnosis
        record the reason for each screen failure in the eCRF
        obtain a new informed consent before any rescreening procedure
    """,
    ob_p="""
        avoid grapefruit and grapefruit juice from Screening until the end of the follow-up period
        avoid excessive exposure to sunlight and use sun protection because of the potential for photosensitivity
        refrain from starting pulmonary rehabilitation during the first 12 weeks of treatment unless medically necessary
    """,
    cond="""
        a participant fails Screening because of a laboratory value that is likely to be transient
        the central reviewer does not confirm the diagnosis of IPF
        a participant's spirometry at Screening does not meet the acceptability criteria
    """,
    remedy="""
        the laboratory test may be repeated once within the Screening period
        the participant is not eligible and must be recorded as a screen failure
        the test may be repeated within 7 days, and eligibility will be based on the repeat test
    """,
    neg="""
        grant waivers or exemptions from any eligibility criterion
        randomize a participant before the central confirmation of the IPF diagnosis has been received
    """,
    stmt="""
        Prospective approval of protocol deviations to recruitment and enrollment criteria, also known as protocol waivers or exemptions, is not permitted.
        Participants who do not meet the criteria for participation may be rescreened once, at the discretion of the Investigator.
        Screen failures are defined as participants who consent to participate but are not subsequently randomized.
        A minimal set of screen failure information is collected to ensure transparent reporting of screen failure participants.
        The diagnosis of IPF must be made according to current international guidelines and confirmed by the central imaging reviewer.
    """,
)

_P_INTERVENTION = _topic(
    titles="""
        Study Intervention Administered
        Preparation, Handling and Accountability
        Dispensing
        Measures to Minimize Bias
        Blinding
        Emergency Unblinding
        Treatment Compliance
        Dose Modification
        Missed Doses
        Overdose
        Packaging and Labeling
    """,
    ob_i="""
        dispense study intervention only to participants randomized in the study
        record the number of tablets dispensed and returned at each visit
        instruct participants to take the tablets with a meal and with a glass of water
        ensure that study intervention is stored in a secure, temperature-monitored area with access limited to authorized staff
        contact the medical monitor before resuming study intervention after an interruption of more than 14 days
        return or destroy unused study intervention only after reconciliation by the study monitor
    """,
    ob_s="""
        provide study intervention in child-resistant bottles labeled in accordance with local requirements
        supply matching placebo tablets that are identical in appearance, taste and packaging to the active tablets
        provide the IRT system for emergency unblinding
    """,
    ob_p="""
        bring all used and unused bottles of study intervention to each visit
        record any missed doses in the dosing diary
        swallow the tablets whole without crushing or chewing them
    """,
    cond="""
        a participant misses a dose by more than 12 hours
        a participant has a temperature excursion report for study intervention at home
        the Investigator needs to know the treatment assignment to manage a medical emergency
        compliance by tablet count is below 80 percent at two consecutive visits
        an overdose is suspected
    """,
    remedy="""
        the missed dose should be skipped and the next dose taken at the usual time
        the affected bottles must be quarantined until the Sponsor confirms that they may be used
        the Investigator may unblind the participant's treatment through the IRT system, ideally after contacting the medical monitor
        the Investigator will counsel the participant and document the reasons for non-compliance
        the participant should be monitored closely, and the overdose must be reported to the Sponsor within 24 hours
    """,
    neg="""
        use study intervention for any purpose other than this study
        share the treatment assignment with the participant or the study monitor after an emergency unblinding
    """,
    stmt="""
        Study intervention is supplied as film-coated tablets of corvalinib 50 mg (and 75 mg for Part A) and matching placebo.
        The Investigator is responsible for the accountability, reconciliation and record maintenance of study intervention.
        All participants, Investigators, site staff and Sponsor personnel involved in the conduct of the study remain blinded to treatment assignment until database lock.
        Treatment assignment is made by the IRT system using a central randomization schedule generated by an independent statistician.
        Only participants enrolled in the study may receive study intervention, and only authorized site staff may supply or administer it.
        Compliance will be assessed by tablet counts and review of the dosing diary at each visit.
        Temperature logs must be reviewed on each working day, and any excursion must be reported to the Sponsor within one working day.
        There is no specific antidote for corvalinib, and overdose should be managed with supportive care.
    """,
)

_P_CONMED = _topic(
    titles="""
        Permitted Medications
        Prohibited Medications
        Background Antifibrotic Therapy
        Rescue Medicine
        CYP3A4 Inhibitors and Inducers
        Vaccinations
        Recording of Concomitant Medications
    """,
    ob_i="""
        record all medications taken within 30 days before Screening in the eCRF, including over-the-counter products and herbal supplements
        review concomitant medications at every visit and update the eCRF
        consult the medical monitor before starting any medication that is a strong or moderate CYP3A4 inhibitor
        document the reason for any change in background antifibrotic therapy
    """,
    ob_p="""
        inform site staff before starting any new medication, including over-the-counter products
        keep a list of current medications and bring it to each visit
    """,
    cond="""
        a participant requires a short course of a strong CYP3A4 inhibitor
        an acute exacerbation of IPF occurs
        a participant's background antifibrotic therapy is discontinued because of intolerance
        a participant receives a prohibited medication
    """,
    remedy="""
        study intervention should be interrupted during the course and for 3 days afterwards
        the participant may receive corticosteroids and other treatment according to local practice, and study intervention may be interrupted at the Investigator's discretion
        the participant may continue study intervention, and the change must be recorded in the eCRF
        the Investigator must contact the medical monitor to decide whether the participant may continue study intervention
    """,
    stmt="""
        Participants may continue stable background therapy with an approved antifibrotic if the dose has been stable for at least 12 weeks before Screening.
        Inactivated vaccines, including seasonal influenza and pneumococcal vaccines, are permitted during the study.
        Supplemental oxygen is permitted and must be recorded, including the flow rate used during the 6-minute walk test.
        Strong inducers of CYP3A4, such as rifampicin and carbamazepine, are prohibited because they are expected to reduce corvalinib exposure substantially.
        Investigational drugs other than corvalinib are prohibited from 30 days before Screening until the end of the follow-up period.
        Systemic corticosteroids at doses above 15 mg of prednisone or equivalent per day are prohibited except for the treatment of an acute exacerbation.
    """,
)

_P_DISCONTINUATION = _topic(
    titles="""
        Discontinuation of Study Intervention
        Temporary Interruption
        Rechallenge
        Liver Chemistry Stopping Criteria
        QTc Stopping Criteria
        Participant Withdrawal from the Study
        Lost to Follow-Up
        Pregnancy
    """,
    ob_i="""
        make every effort to keep participants who discontinue study intervention in the study until their planned final visit
        perform the End-of-Treatment assessments within 14 days after the last dose in any participant who discontinues study intervention early
        attempt to contact a participant who fails to return for a visit at least three times, including one letter to the last known address
        document the primary reason for discontinuation in the eCRF
        repeat liver chemistry tests within 72 hours for any participant with elevated transaminases
    """,
    cond="""
        a participant withdraws consent
        a participant cannot be contacted after the required attempts
        a participant becomes pregnant
        the QTcF interval increases to more than 500 ms or by more than 60 ms from baseline, confirmed on a repeat ECG
        liver enzymes return to baseline after an interruption and the Investigator wishes to restart study intervention
    """,
    remedy="""
        no further study procedures will be performed, but data already collected may be used
        the participant will be considered lost to follow-up and their vital status will be checked in public records where permitted
        study intervention must be discontinued immediately, and the pregnancy must be followed until its outcome is known
        study intervention must be discontinued permanently
        rechallenge may be considered only after discussion with the medical monitor
    """,
    stmt="""
        Discontinuation of study intervention does not mean withdrawal from the study, and the remaining study procedures should be completed as scheduled.
        A participant may withdraw from the study at any time at their own request, without giving a reason and without affecting their future medical care.
        The Investigator may discontinue study intervention if continuation would not be in the participant's best interest.
        Liver chemistry stopping and increased monitoring criteria have been designed to assure participant safety and to evaluate the etiology of any liver event.
        Participants who permanently discontinue study intervention will not be replaced.
    """,
)

_P_EFFICACY = _topic(
    titles="""
        Spirometry
        Forced Vital Capacity
        Diffusing Capacity
        6-Minute Walk Test
        Patient-Reported Outcomes
        Fibrosis Symptom Diary
        High-Resolution Computed Tomography
        Acute Exacerbations
        Respiratory Hospitalizations
        Order of Assessments
    """,
    ob_i="""
        perform spirometry using the centrally provided spirometer and follow the procedures in the Spirometry Manual
        ensure that the same technician performs spirometry for a participant at every visit, where possible
        upload each spirometry session to the central reading vendor within 48 hours
        measure oxygen saturation at rest, after at least 15 minutes of sitting, before each 6-minute walk test
        review the Fibrosis Symptom Diary for completeness at each visit
        administer the health-related quality of life questionnaire {timing}
        record each suspected acute exacerbation of IPF and submit the supporting documents for adjudication
        ensure that participants complete questionnaires themselves, in a quiet area, before discussing their health with site staff
    """,
    ob_p="""
        complete the Fibrosis Symptom Diary each evening on the electronic device provided
        refrain from using short-acting bronchodilators for at least 4 hours before spirometry
        avoid smoking and strenuous exercise on the day of each clinic visit
    """,
    cond="""
        a spirometry session does not meet the acceptability and repeatability criteria
        a participant uses supplemental oxygen during the 6-minute walk test
        the central reader flags a spirometry session as unacceptable
        a participant has a suspected acute exacerbation of IPF
    """,
    remedy="""
        up to eight maneuvers may be performed to obtain three acceptable efforts
        the same oxygen flow rate must be used at every subsequent test
        the session should be repeated within 7 days where possible
        the Investigator will collect HRCT images and laboratory results and send them to the adjudication committee
    """,
    stmt="""
        FVC will be measured in milliliters and expressed as absolute values and as percent of the predicted value using the reference equations in the Spirometry Manual.
        Spirometry sessions will be over-read centrally, and the centrally reviewed values will be used for the analyses.
        The 6-minute walk test will be performed in an indoor corridor of at least 30 meters, following the standardized instructions.
        Distance walked, oxygen saturation and the Borg dyspnea score will be recorded for each 6-minute walk test.
        HRCT scans will be acquired at full inspiration using the acquisition parameters in the Imaging Charter and read centrally by two blinded radiologists.
        Quantitative lung fibrosis scores will be derived from the HRCT scans as an exploratory endpoint.
        Acute exacerbations of IPF will be adjudicated by an independent committee blinded to treatment assignment.
        Patient-reported outcomes will be collected before any other assessments at the visit to avoid bias.
    """,
)

_P_SAFETY_ASSESS = _topic(
    titles="""
        Physical Examinations
        Vital Signs
        Electrocardiograms
        Clinical Safety Laboratory Tests
        Liver Function Monitoring
        Pregnancy Testing
        Suicidal Ideation and Behavior
        Skin Assessment
    """,
    ob_i="""
        perform a complete physical examination at Screening and a symptom-directed examination at other visits
        collect blood samples for the central laboratory {timing}
        check {lab} results from the central laboratory {timing}
        measure blood pressure and pulse rate in the seated position after at least 5 minutes of rest
        obtain triplicate 12-lead ECGs at Screening, Day 1 and Week {week}
        review all laboratory reports promptly and document the clinical significance of each abnormal value
        record any clinically significant abnormal laboratory value as an adverse event
        perform a urine pregnancy test before dosing at each visit in participants of childbearing potential
        examine sun-exposed skin at each visit and record any photosensitivity reaction
    """,
    cond="""
        a laboratory value meets the criteria for increased liver chemistry monitoring
        a serum pregnancy test is positive
        an ECG shows a clinically significant abnormality
        a laboratory sample is hemolyzed or cannot be analyzed
    """,
    remedy="""
        liver chemistry tests must be repeated weekly until the values return to baseline
        study intervention must be stopped and the Sponsor notified within 24 hours
        the ECG must be repeated and, if confirmed, reviewed with a cardiologist
        the sample should be redrawn as soon as possible, ideally within 7 days
    """,
    stmt="""
        All protocol-required laboratory tests will be performed by the central laboratory, and local results may be used only for urgent clinical decisions.
        ECGs will be transmitted electronically to the central ECG laboratory and read by a cardiologist blinded to treatment assignment.
        Vital signs include systolic and diastolic blood pressure, pulse rate, respiratory rate, body temperature and oxygen saturation at rest.
        Body weight will be measured at every visit and height at Screening only.
        The Investigator must review, sign and date each laboratory report within 5 working days after receipt.
        Abnormal laboratory findings that are associated with the underlying disease are not considered adverse events unless the Investigator judges them to be more severe than expected.
    """,
)

_P_PK = _topic(
    titles="""
        Pharmacokinetics
        Sparse Sampling
        Intensive Sampling Substudy
        Sample Handling
        Biomarkers
        Genetics
        Storage and Future Use of Samples
    """,
    ob_i="""
        record the actual date and time of each pharmacokinetic sample and of the preceding dose
        collect {sample} {timing}
        process, label and ship {sample} according to the Laboratory Manual
        obtain separate consent before collecting genetic samples
        store biomarker samples frozen at minus 80 degrees C until shipment
        ensure that participants take the morning dose at the site on pharmacokinetic sampling days
    """,
    cond="""
        a pharmacokinetic sample is collected outside its time window
        a participant does not consent to genetic sampling
        a shipment of {sample} is delayed or arrives thawed
    """,
    remedy="""
        the sample is still collected and the actual time is recorded
        the participant may still take part in all other parts of the study
        the central laboratory will notify the site and the Sponsor, and the affected samples will be documented as not evaluable
    """,
    stmt="""
        Plasma concentrations of corvalinib and its major metabolite M4 will be measured using a validated method.
        Population pharmacokinetic modeling will be used to describe the exposure of corvalinib and its relationship with efficacy and safety endpoints.
        Biomarkers of fibroblast activity and extracellular matrix turnover, including fictional markers FRK3-p and CTX-M, will be measured in serum.
        Samples may be stored for up to 15 years after the end of the study for future research related to corvalinib or fibrotic lung disease.
        Participants may request the destruction of their stored samples at any time.
    """,
)

_P_SAFETY_REPORTING = _topic(
    titles="""
        Time Period for Collecting Adverse Event Information
        Method of Detecting Adverse Events
        Follow-Up of Adverse Events
        Regulatory Reporting Requirements
        Serious Adverse Events
        Adverse Events of Special Interest
        Pregnancy Reporting
        Disease-Related Events
        Assessment of Causality
        Assessment of Intensity
    """,
    ob_i="""
        record all adverse events from the signing of informed consent until the end of the follow-up period
        assess the intensity of each adverse event and its relationship to study intervention
        follow each adverse event until it resolves, stabilizes or the participant is lost to follow-up
        report each serious adverse event to the Sponsor within 24 hours of becoming aware of it
        report adverse events of special interest to the Sponsor within 24 hours, using the same process as for serious adverse events
        provide follow-up information on serious adverse events as soon as it becomes available
        report pregnancies in participants and in partners of male participants within 24 hours
    """,
    ob_s="""
        report suspected unexpected serious adverse reactions to regulatory authorities within the required timelines
        inform Investigators of safety information that may affect the conduct of the study
        maintain the reference safety information in the Investigator's Brochure
    """,
    cond="""
        the electronic data capture system is unavailable
        the Investigator does not have all the information about a serious adverse event
        an adverse event meets the definition of drug-induced liver injury
        an event is an expected feature of IPF progression
    """,
    remedy="""
        the paper serious adverse event form must be used, and the information entered in the system once it is available
        the initial report must still be sent within the required time and completed with follow-up reports
        it must be reported as an adverse event of special interest
        it will be recorded as an efficacy endpoint and not reported as a serious adverse event unless it is fatal or the Investigator considers it related to study intervention
    """,
    stmt="""
        An adverse event is any untoward medical occurrence in a participant, temporally associated with the use of study intervention, whether or not considered related to it.
        A serious adverse event is any adverse event that results in death, is life-threatening, requires or prolongs hospitalization, results in persistent disability or is a congenital anomaly.
        Adverse events of special interest for this study are drug-induced liver injury, severe diarrhea, photosensitivity reactions and QT prolongation.
        The Investigator's assessment of causality must be provided for every serious adverse event, even if the information is incomplete.
        Intensity will be graded as mild, moderate or severe according to the definitions in Appendix 3.
        The Sponsor has a legal responsibility to notify local regulatory authorities and IRBs/IECs about the safety of study intervention.
    """,
)

_P_STATISTICS = _topic(
    titles="""
        Statistical Hypotheses
        Analysis Sets
        Primary Endpoint Analysis
        Secondary Endpoint Analyses
        Multiplicity
        Handling of Missing Data
        Sensitivity Analyses
        Subgroup Analyses
        Safety Analyses
        Interim Analysis
        Part A Dose Selection
    """,
    ob_s="""
        finalize the Statistical Analysis Plan before the unblinding of Part A data
        document any changes to the planned analyses in the clinical study report
        provide the Data Monitoring Committee with unblinded summaries prepared by an independent statistical group
    """,
    cond="""
        a participant discontinues study intervention but continues to attend visits
        a participant has no post-baseline FVC measurement
        the primary analysis is statistically significant
        the assumptions of the mixed model are not met
    """,
    remedy="""
        their measurements will be included in the primary analysis according to the treatment policy strategy
        the participant will be included in the analysis with missing data handled by multiple imputation
        the key secondary endpoints will be tested in the hierarchical order specified in the Statistical Analysis Plan
        a non-parametric sensitivity analysis will be performed
    """,
    stmt="""
        The Full Analysis Set includes all randomized participants and will be analyzed according to the randomized treatment.
        The Safety Set includes all participants who received at least one dose of study intervention and will be analyzed according to the treatment actually received.
        The primary endpoint will be analyzed with a random coefficient regression model including treatment, time, treatment-by-time interaction, region and baseline FVC.
        Missing data will be assumed to be missing at random in the primary analysis, and tipping-point analyses will assess the robustness of this assumption.
        Subgroup analyses will be performed by age group, sex, region, baseline FVC percent predicted and background antifibrotic therapy.
        Safety data will be summarized descriptively by treatment group, and no formal statistical testing of safety data is planned.
        Type I error is controlled at a two-sided alpha level of 0.05 for the primary and key secondary endpoints in Part B.
        Part A data will not be combined with Part B data for the confirmatory analyses.
        The estimand for the primary endpoint follows the treatment policy strategy for discontinuation of study intervention and for changes in background therapy.
        Deaths will be handled with a composite strategy, in which the worst observed rate of decline is imputed.
        Continuous secondary endpoints will be analyzed with a mixed model for repeated measures including baseline value, visit, treatment and their interaction.
        Time-to-event endpoints will be analyzed with a Cox proportional hazards model stratified by the randomization factors.
        Exposure-response relationships will be explored graphically and by regression modeling.
    """,
)

_P_OVERSIGHT = _topic(
    titles="""
        Data Monitoring Committee
        Adjudication Committee
        Steering Committee
        Monitoring
        Quality Tolerance Limits
        Site Closure
    """,
    ob_s="""
        perform risk-based monitoring, including on-site and remote source data verification, as described in the Monitoring Plan
        define quality tolerance limits before the first participant is randomized and report any breach in the clinical study report
        close a site early if the Investigator repeatedly fails to comply with the protocol or GCP
    """,
    ob_i="""
        give the study monitor direct access to source documents, the eCRF and the site files
        attend the Investigator meeting or complete equivalent training before screening participants
    """,
    cond="""
        the Data Monitoring Committee recommends a change to the study
        a quality tolerance limit is breached
    """,
    remedy="""
        the Sponsor will decide whether to accept the recommendation and will inform Investigators and regulatory authorities as required
        the Sponsor will investigate the cause and document corrective and preventive actions
    """,
    stmt="""
        The Data Monitoring Committee operates under a charter that defines its membership, responsibilities and meeting schedule.
        The Data Monitoring Committee reviews unblinded safety data approximately every six months and may request additional reviews at any time.
        The Steering Committee, composed of external experts and Sponsor representatives, provides scientific advice on the conduct of the study and remains blinded.
        Members of the Data Monitoring Committee have no other involvement in the study and declare any conflict of interest.
        The Adjudication Committee reviews every suspected acute exacerbation of IPF and every death, using the definitions in its charter.
        Monitoring visits will be performed at least every 8 weeks while participants are on treatment at the site, and more often at sites with high enrollment.
        The Sponsor's quality assurance department may audit any site, and regulatory authorities may inspect any site, at any time during or after the study.
    """,
)

_P_ETHICS = _topic(
    titles="""
        Regulatory and Ethical Considerations
        Informed Consent Process
        Data Protection
        Financial Disclosure
        Publication Policy
        Dissemination of Clinical Study Data
        Data Quality Assurance
        Source Documents
        Record Retention
        Study and Site Start and Closure
    """,
    ob_i="""
        obtain written informed consent from each participant before any study-specific procedure
        give each participant a copy of the signed informed consent form
        retain all essential documents for at least 25 years after the end of the study, or longer if required by local regulations
        report serious breaches of the protocol or GCP to the Sponsor within 24 hours
        ensure that the IRB/IEC has approved the protocol and the informed consent form before the site is activated
    """,
    ob_s="""
        submit the protocol, amendments and informed consent forms to regulatory authorities as required
        register the study in public clinical trial registries before the first participant is enrolled
        publish the results of the study regardless of their outcome
        pseudonymize participant data before it is transferred to the Sponsor
    """,
    cond="""
        the informed consent form is updated with new information
        a participant cannot read the informed consent form
        a serious breach of GCP is identified
    """,
    remedy="""
        participants must be reconsented at their next visit
        an impartial witness must be present during the consent discussion and sign the form
        the Sponsor will notify the regulatory authorities within the required timelines
    """,
    stmt="""
        This study will be conducted in accordance with the protocol, the Declaration of Helsinki, ICH Good Clinical Practice and applicable laws and regulations.
        Participants will be assigned a unique identifier, and any participant records transferred to the Sponsor will contain the identifier only.
        The Sponsor will not use the study data for any purpose that is not described in the informed consent form.
        The results of this study may be submitted for publication by the Steering Committee in accordance with the clinical trial agreement.
        Summary results will be posted in public registries within 12 months after the end of the study.
        Source data are all information in original records necessary for the reconstruction and evaluation of the study.
    """,
)


_P_VISITS = _topic(
    titles="""
        Visit Windows
        Screening Period
        Treatment Period Visits
        End-of-Treatment Visit
        Follow-Up Visit
        Unscheduled Visits
        Remote Visits
    """,
    ob_i="""
        schedule each visit relative to Day 1 and within the window shown in the Schedule of Activities
        complete all Screening assessments within 35 days before Day 1
        perform the End-of-Treatment visit for every participant who stops study intervention, whatever the reason
        contact the participant by telephone between scheduled visits if a visit is more than 4 weeks away
        review the dosing diary with the participant {timing}
    """,
    ob_p="""
        attend the clinic in the morning, before taking the daily dose of study intervention, on visit days
        bring the dosing diary and all study intervention bottles to each clinic visit
    """,
    cond="""
        a visit cannot take place within its window
        a participant cannot travel to the site because of illness or local restrictions
    """,
    remedy="""
        the visit should be performed as soon as possible and later visits kept on the original schedule
        the visit may be conducted remotely, except for spirometry, ECGs and blood sampling
    """,
    stmt="""
        Visit windows are plus or minus 3 days up to Week 12 and plus or minus 7 days thereafter.
        The follow-up visit takes place 4 weeks after the last dose of study intervention.
        Day 1 is the day of randomization and of the first dose of study intervention.
        Assessments at the End-of-Treatment visit replace those of any scheduled visit on the same day.
    """,
)


def _protocol_title(w: _Writer, section: _Section) -> list[_PagePlan]:
    fields = _lines("""
        Protocol title: A Randomized, Double-Blind, Placebo-Controlled, Seamless Phase II/III Study to Evaluate the Efficacy and Safety of Corvalinib (NVX-2218) in Adults with Idiopathic Pulmonary Fibrosis
        Short title: CORVAL-IPF
        Protocol number: NVT-2218-204
        Investigational product: corvalinib (NVX-2218), film-coated tablets, 50 mg
        Phase: II/III
        Indication: Idiopathic pulmonary fibrosis (IPF)
        Sponsor: Nordvale Therapeutics AG, Rheinhafenstrasse 118, 4057 Basel, Switzerland
        Regulatory identifiers: IND 158306; EU CT 2023-508871-14-00
        Protocol version: 3.0 (Amendment 2), dated 9 October 2024
        Replaces: version 2.0 (Amendment 1), dated 17 January 2024
    """)
    confidentiality = (
        "CONFIDENTIALITY STATEMENT\nThis document contains confidential information belonging to the Sponsor. "
        "Except as required by applicable law or regulation, no part of it may be disclosed to any person other "
        "than the Investigator, the site staff, the IRB/IEC and regulatory authorities without the written "
        "permission of the Sponsor. These restrictions apply equally to all future information supplied to you "
        "that is indicated as privileged or confidential. This protocol and all names, products and data in it "
        "are fictional and were generated as a sample document."
    )
    changes = _lines("""
        - Clarified the central review process for the diagnosis of IPF and the timelines for image submission.
        - Added photosensitivity reactions to the adverse events of special interest, following review of Phase Ib data.
        - Extended the Screening period from 28 to 35 days to allow repeat spirometry.
        - Added an optional remote visit at Week 39 for participants who live far from the site.
        - Updated the contraception requirements for male participants in line with the Investigator's Brochure.
        - Corrected typographical errors and aligned the Schedule of Activities with the body of the protocol.
    """)
    return [
        _plan(
            "\n".join(fields),
            confidentiality,
            "SUMMARY OF CHANGES IN AMENDMENT 2\nThe main changes made in this amendment, and the reasons for them, are:\n"
            + "\n".join(changes),
            fill=False,
        )
    ]


def _protocol_approval(w: _Writer, section: _Section) -> list[_PagePlan]:
    sponsor = (
        "SPONSOR APPROVAL\nThis protocol has been approved by the Sponsor. The signature below documents the approval "
        "of protocol version 3.0.\n\nSignature: ______________________  Date: ____________\n"
        "Dr. Henrike Valstad, Vice President, Clinical Development, Nordvale Therapeutics AG"
    )
    contacts = _lines("""
        MEDICAL MONITOR AND EMERGENCY CONTACTS
        Medical monitor: Dr. Tomas Ferreira-Lind, Nordvale Therapeutics AG
        Medical monitor telephone (24-hour coverage): +41 61 555 0177
        Clinical operations lead: Mirela Sundqvist, Nordvale Therapeutics AG
        Contact details for serious adverse event reporting are given in Section 11.
    """)
    investigator = (
        "INVESTIGATOR AGREEMENT\nI have read this protocol and agree to conduct the study as outlined in it, in "
        "accordance with ICH Good Clinical Practice and all applicable regulatory requirements. I will ensure that "
        "all persons assisting me with the study are adequately informed about the protocol, the study intervention "
        "and their study-related duties. I will not implement any deviation from or change to the protocol without "
        "agreement from the Sponsor and prior review and approval from the IRB/IEC, except where necessary to "
        "eliminate an immediate hazard to participants.\n\nInvestigator name: ______________________\n"
        "Signature: ______________________  Date: ____________\nSite number: ________"
    )
    return [_PagePlan([(None, sponsor), (None, "\n".join(contacts))], tail=[(None, investigator)])]


def _protocol_synopsis(w: _Writer, section: _Section) -> list[_PagePlan]:
    pages = (
        _lines("""
            Title: A Randomized, Double-Blind, Placebo-Controlled, Seamless Phase II/III Study to Evaluate the Efficacy and Safety of Corvalinib in Adults with Idiopathic Pulmonary Fibrosis
            Sponsor: Nordvale Therapeutics AG
            Phase: II/III (seamless, two-part design)
            Rationale: Corvalinib is an oral inhibitor of the fibroblast kinase FRK-3 with antifibrotic activity in nonclinical models and an acceptable safety profile in Phase I studies.
            Objectives and endpoints: see Section 4 for the full list; in brief, Part A characterizes the dose-response of corvalinib, and Part B confirms the efficacy and safety of the selected dose.
            Overall design: Part A is a dose-ranging part in which participants are randomized to one of two doses of corvalinib or placebo for 26 weeks. Part B is a confirmatory part with a 52-week treatment period.
        """),
        _lines("""
            Population: adults aged 40 years or older with IPF diagnosed within the past 7 years, confirmed by central review of HRCT.
            Planned number of participants: approximately 132 participants will be randomized in Part A, and approximately 486 participants will be randomized in Part B.
            Number of sites: approximately 140 sites in North America, Europe and the Asia-Pacific region.
            Intervention groups: Part A - corvalinib 75 mg once daily, corvalinib 150 mg once daily or placebo; Part B - the dose selected from Part A or placebo (see Section 7).
            Duration of participation: up to 35 days of Screening, 26 weeks (Part A) or 52 weeks (Part B) of treatment, and 4 weeks of follow-up.
        """),
        _lines("""
            Statistical methods: the primary endpoint of each part is analyzed with a random coefficient regression model; details are given in Section 12.
            Data Monitoring Committee: yes, an independent committee reviews unblinded safety data throughout the study.
            Interim analysis: a dose-selection analysis is performed when all Part A participants have completed Week 26.
            Study period: first participant randomized in the second quarter of 2024; last participant's last visit expected in the fourth quarter of 2026.
        """),
    )
    return [_PagePlan([(None, "\n".join(fields))]) for fields in pages]


def _soa(visits: Sequence[str], rows: Sequence[tuple[str, str]]) -> str:
    """A schedule-of-activities table: each row's pattern marks visits with X and others with -."""
    body = [(name, *("X" if mark == "x" else "-" for mark in pattern)) for name, pattern in rows]
    return _table(("Procedure", *visits), body)


def _protocol_soa(w: _Writer, section: _Section) -> list[_PagePlan]:
    part_a = _soa(
        ("Scr", "D1", "W2", "W4", "W8", "W12", "W18", "W26/EOT", "FU"),
        (
            ("Informed consent", "x........"),
            ("Eligibility review", "xx......."),
            ("Medical history", "x........"),
            ("Physical examination", "xx.x..x.x."),
            ("Vital signs and weight", "xxxxxxxxx"),
            ("12-lead ECG", "xx.x.x.x."),
            ("Spirometry", "xx.xxxxx."),
            ("DLCO", "x......x."),
            ("6-minute walk test", "xx...x.x."),
            ("HRCT", "x......x."),
            ("Hematology and chemistry", "xxxxxxxxx"),
            ("Pregnancy test", "xx.xxxxxx"),
            ("Pharmacokinetic samples", ".x.x.x.x."),
            ("Biomarker samples", ".x...x.x."),
            ("Dispense study intervention", ".x.xxxx.."),
            ("Adverse events", "xxxxxxxxx"),
        ),
    )
    part_b = _soa(
        ("Scr", "D1", "W4", "W12", "W26", "W39", "W52/EOT", "FU"),
        (
            ("Informed consent", "x......."),
            ("Eligibility review", "xx......"),
            ("Physical examination", "xx..x.xx"),
            ("Vital signs and weight", "xxxxxxxx"),
            ("12-lead ECG", "xx.xx.x."),
            ("Spirometry", "xxxxxxx."),
            ("DLCO", "x...x.x."),
            ("6-minute walk test", "xx..x.x."),
            ("Questionnaires", ".x.xxxx."),
            ("HRCT", "x.....x."),
            ("Hematology and chemistry", "xxxxxxxx"),
            ("Liver tests (extra, Weeks 2 and 6)", ".x......"),
            ("Pharmacokinetic samples", "..xxx..."),
            ("Dispense study intervention", ".xxxxx.."),
            ("Adverse events", "xxxxxxxx"),
        ),
    )
    notes = _lines("""
        Abbreviations: Scr = Screening; D = Day; W = Week; EOT = End of Treatment; FU = follow-up visit, 4 weeks after the last dose.
        Visits are scheduled relative to Day 1; the windows are given in Section 10.
        Spirometry at Screening is performed twice, at least 7 days apart, to confirm stability.
        Pharmacokinetic samples are taken before dosing at each marked visit and, in the intensive substudy, at additional times after dosing.
        Liver tests marked for Weeks 2 and 6 are taken at a local laboratory or by a mobile nurse and sent to the central laboratory.
    """)
    return [
        _plan(("Schedule of Activities - Part A", part_a)),
        _plan(("Schedule of Activities - Part B", part_b)),
        _plan(("Notes to the Schedules of Activities", "\n".join(notes))),
    ]


def _protocol_objectives(w: _Writer, section: _Section) -> list[_PagePlan]:
    part_a = _table(
        ("Objectives", "Endpoints"),
        [
            (
                "Primary: to characterize the dose-response of corvalinib on lung function",
                "Change from baseline in FVC percent predicted at Week 26",
            ),
            (
                "Secondary: to evaluate the safety and tolerability of two doses of corvalinib",
                "Incidence of adverse events, laboratory abnormalities and discontinuations due to adverse events",
            ),
            (
                "Secondary: to characterize the pharmacokinetics of corvalinib",
                "Trough plasma concentrations and model-derived exposure at steady state",
            ),
            (
                "Exploratory: to explore effects on biomarkers of fibrosis",
                "Change from baseline in serum FRK3-p and CTX-M at Week 26",
            ),
        ],
    )
    part_b = _table(
        ("Objectives", "Endpoints"),
        [
            (
                "Key secondary: to evaluate the effect on exercise capacity",
                "Change from baseline in 6-minute walk distance at Week 52",
            ),
            (
                "Key secondary: to evaluate the effect on disease progression",
                "Time to first acute exacerbation of IPF, respiratory hospitalization or death",
            ),
            (
                "Secondary: to evaluate the effect on symptoms",
                "Change from baseline in the Fibrosis Symptom Diary cough and dyspnea scores at Week 52",
            ),
            (
                "Safety: to evaluate the long-term safety of corvalinib",
                "Incidence of adverse events and adverse events of special interest",
            ),
        ],
    )
    return [
        _plan(("Part A Objectives and Endpoints", part_a)),
        _plan(("Part B Objectives and Endpoints", part_b)),
    ]


_P_INCLUSION = _lines("""
    Participant is aged 40 years or older at the time of signing the informed consent form.
    Participant has a diagnosis of IPF according to current international guidelines, made within 7 years before Screening and confirmed by central review of HRCT and, where available, lung biopsy.
    Participant has extent of fibrosis greater than extent of emphysema on the Screening HRCT, as assessed by the central reviewer.
    Participant has a diffusing capacity of the lung for carbon monoxide (DLCO), corrected for hemoglobin, of at least 30 percent of predicted at Screening.
    Participant has a ratio of forced expiratory volume in one second to FVC of at least 0.70 at Screening.
    Participant has a forced vital capacity (FVC) of at least 48 percent of predicted at Screening, based on the centrally reviewed value.
    Participant, if receiving an approved antifibrotic therapy, has been on a stable dose for at least 12 weeks before Screening and intends to continue it unchanged.
    Participant is able to walk at least 150 meters in the 6-minute walk test at Screening.
    Participant of childbearing potential agrees to use highly effective contraception as described in Appendix 2.
    Participant is capable of giving signed informed consent and complying with the requirements of this protocol.
""")

_P_EXCLUSION = _lines("""
    Interstitial lung disease other than IPF, including disease associated with connective tissue disease, occupational exposure or drugs.
    Airway obstruction or significant pulmonary hypertension requiring specific treatment.
    Acute exacerbation of IPF or lower respiratory tract infection within 12 weeks before Screening.
    Lung transplant expected within 12 months, or listing for lung transplant at Screening.
    ALT or AST above 2 x ULN or total bilirubin above the upper limit of normal at Screening.
    Estimated glomerular filtration rate below 30 mL/min/1.73 m2 at Screening.
    QTcF above 450 ms in men or above 470 ms in women at Screening, or a history of long QT syndrome.
    Myocardial infarction, unstable angina or stroke within 6 months before Screening.
    Malignancy within 5 years before Screening, except adequately treated basal cell carcinoma of the skin or cervical carcinoma in situ.
    Current smoking or use of nicotine-containing products within 3 months before Screening.
    Treatment with a strong CYP3A4 inhibitor or inducer that cannot be stopped before Day 1.
    Known hypersensitivity to corvalinib or to any excipient of the tablets.
    Pregnancy or breastfeeding.
    Participation in another interventional clinical study within 30 days or 5 half-lives before Screening, whichever is longer.
    Any condition that, in the opinion of the Investigator, would put the participant at undue risk or interfere with the study assessments.
""")


def _protocol_population(w: _Writer, section: _Section) -> list[_PagePlan]:
    def criteria(prefix: str, items: Sequence[str], start: int) -> str:
        return "\n".join(f"{prefix}{start + i}. {text}" for i, text in enumerate(items))

    return [
        _plan(
            (
                "Inclusion Criteria",
                "Participants are eligible to be included in the study only if all of the following criteria apply:\n"
                + criteria("I", _P_INCLUSION, 1),
            )
        ),
        _plan(
            (
                "Exclusion Criteria",
                "Participants are excluded from the study if any of the following criteria apply:\n"
                + criteria("E", _P_EXCLUSION[:8], 1),
            )
        ),
        _plan(("Exclusion Criteria (continued)", criteria("E", _P_EXCLUSION[8:], 9))),
        _plan(),
    ]


def _protocol_intervention(w: _Writer, section: _Section) -> list[_PagePlan]:
    arms = _table(
        ("Arm", "Intervention", "Dose and regimen", "Part"),
        [
            ("A1", "corvalinib", "75 mg once daily", "A"),
            ("A2", "corvalinib", "150 mg once daily", "A"),
            ("A3", "placebo", "matching tablets once daily", "A"),
            ("B1", "corvalinib", "dose selected from Part A", "B"),
            ("B2", "placebo", "matching tablets once daily", "B"),
        ],
    )
    return [
        _plan(
            (
                "Study Interventions Administered",
                arms
                + "\nIn Part A the 75 mg dose is given as one 75 mg tablet with two placebo tablets, and the 150 mg dose as three 50 mg tablets, so that every participant takes three tablets once daily.",
            )
        ),
        _plan(),
        _plan(),
        _plan(),
    ]


def _protocol_assessments(w: _Writer, section: _Section) -> list[_PagePlan]:
    pk = _table(
        ("Visit", "Sample times", "Participants"),
        [
            ("Week 4", "pre-dose", "All Part B participants"),
            ("Week 12", "pre-dose and 2 hours post-dose", "All Part B participants"),
            ("Week 26", "pre-dose", "All Part B participants"),
            (
                "Week 4 (substudy)",
                "pre-dose and 1, 2, 4, 6 and 8 hours post-dose",
                "Intensive PK substudy (about 40 participants)",
            ),
        ],
    )
    topics = (_P_EFFICACY,) * 3 + (_P_SAFETY_ASSESS,) * 3 + (_P_PK,) * 2
    plans = [_PagePlan(topic=topic) for topic in topics]
    plans[6].blocks.append(("Pharmacokinetic Sampling Schedule", pk))
    return plans


def _protocol_labs(w: _Writer, section: _Section) -> list[_PagePlan]:
    labs = _table(
        ("Panel", "Parameters"),
        [
            (
                "Hematology",
                "hemoglobin, hematocrit, red blood cell count, white blood cell count with differential, platelet count",
            ),
            (
                "Clinical chemistry",
                "sodium, potassium, calcium, glucose, urea, serum creatinine, eGFR, total protein, albumin",
            ),
            (
                "Liver tests",
                "ALT, AST, alkaline phosphatase, gamma-glutamyl transferase, total and direct bilirubin, INR",
            ),
            (
                "Urinalysis",
                "specific gravity, pH, protein, glucose, ketones, blood, leukocyte esterase by dipstick",
            ),
            (
                "Other screening tests",
                "hepatitis B surface antigen, hepatitis C antibody, HIV test where required locally, FSH where needed",
            ),
            (
                "Pregnancy tests",
                "serum at Screening; urine before dosing at each visit in participants of childbearing potential",
            ),
        ],
    )
    return [_plan(("Protocol-Required Laboratory Tests", labs))]


def _protocol_ae_definitions(w: _Writer, section: _Section) -> list[_PagePlan]:
    grading = _table(
        ("Intensity", "Definition"),
        [
            (
                "Mild",
                "an event that is easily tolerated, causes minimal discomfort and does not interfere with everyday activities",
            ),
            (
                "Moderate",
                "an event that causes sufficient discomfort to interfere with normal everyday activities",
            ),
            (
                "Severe",
                "an event that prevents normal everyday activities; a severe event is not necessarily serious",
            ),
        ],
    )
    causality = _table(
        ("Relationship", "Definition"),
        [
            ("Related", "there is a reasonable possibility that study intervention caused the event"),
            ("Not related", "there is no reasonable possibility that study intervention caused the event"),
        ],
    )
    return [_plan(("Assessment of Intensity", grading), ("Assessment of Causality", causality))]


_P_ABBREVIATIONS = _lines("""
    AE: adverse event
    AESI: adverse event of special interest
    ALT: alanine aminotransferase
    AST: aspartate aminotransferase
    CTX-M: fictional marker of matrix turnover
    CYP3A4: cytochrome P450 3A4
    DLCO: diffusing capacity of the lung for carbon monoxide
    DMC: Data Monitoring Committee
    ECG: electrocardiogram
    eCRF: electronic case report form
    eGFR: estimated glomerular filtration rate
    EOT: End of Treatment
    FEV1: forced expiratory volume in one second
    FRK-3: fibroblast regulatory kinase 3 (fictional)
    FSH: follicle-stimulating hormone
    FU: follow-up
    FVC: forced vital capacity
    GCP: Good Clinical Practice
    HRCT: high-resolution computed tomography
    ICH: International Council for Harmonisation
    INR: international normalized ratio
    IPF: idiopathic pulmonary fibrosis
    IRB/IEC: Institutional Review Board / Independent Ethics Committee
    IRT: interactive response technology
    PK: pharmacokinetic(s)
    QTcF: QT interval corrected using Fridericia's formula
    SAE: serious adverse event
    SUSAR: suspected unexpected serious adverse reaction
    ULN: upper limit of normal
    6MWT: 6-minute walk test
    BMI: body mass index
    CRO: contract research organization
    EDC: electronic data capture
    FAS: Full Analysis Set
    IB: Investigator's Brochure
    ILD: interstitial lung disease
    MMRM: mixed model for repeated measures
    PPS: Per-Protocol Set
    QD: once daily
    SoA: Schedule of Activities
    TMF: Trial Master File
    Baseline: the last value obtained before the first dose of study intervention, usually on Day 1.
    Estimand: a precise description of the treatment effect that the study aims to estimate, reflecting how intercurrent events are handled.
    Intercurrent event: an event after treatment starts, such as discontinuation of study intervention or death, that affects the interpretation or existence of the measurements.
    Study intervention: corvalinib or matching placebo, as assigned by the IRT system.
    Background therapy: an approved antifibrotic medicine taken at a stable dose before and during the study.
    Acute exacerbation of IPF: an acute, clinically significant respiratory deterioration with new bilateral ground-glass opacities, not fully explained by cardiac failure or fluid overload.
""")


def _protocol_abbreviations(w: _Writer, section: _Section) -> list[_PagePlan]:
    return [
        _plan(
            "The following abbreviations and specialist terms are used in this protocol.",
            "\n".join(_P_ABBREVIATIONS),
            fill=False,
        )
    ]


def _protocol_introduction(w: _Writer, section: _Section) -> list[_PagePlan]:
    nonclinical = _table(
        ("Study", "Species", "Duration", "Main findings"),
        [
            (
                "Repeat-dose toxicity",
                "Rat",
                "26 weeks",
                "reversible ALT increases at the highest dose; no effects at the mid dose",
            ),
            (
                "Repeat-dose toxicity",
                "Dog",
                "39 weeks",
                "soft feces and emesis; mild, reversible hepatocellular hypertrophy",
            ),
            (
                "Embryo-fetal development",
                "Rabbit",
                "gestation days 6 to 19",
                "skeletal variations at exposures above the expected clinical exposure",
            ),
            (
                "Phototoxicity",
                "In vitro 3T3 assay",
                "single exposure",
                "positive; photosensitivity is treated as a potential risk",
            ),
            (
                "Safety pharmacology",
                "Dog (telemetry)",
                "single dose",
                "no effect on QTc at 8 times the expected clinical exposure",
            ),
            ("Genotoxicity", "In vitro and in vivo", "standard battery", "negative"),
        ],
    )
    pk = _table(
        ("Parameter (single 150 mg dose, fed)", "Geometric mean"),
        [
            ("Maximum concentration", "1,840 ng/mL"),
            ("Time to maximum concentration (median)", "2.0 hours"),
            ("Area under the curve", "31,200 ng.h/mL"),
            ("Terminal half-life", "21 hours"),
            ("Accumulation ratio at steady state", "1.6"),
        ],
    )
    aes = _table(
        ("Adverse event (Phase Ib, 12 weeks)", "Corvalinib (n=32)", "Placebo (n=16)"),
        [
            ("Diarrhea", "9 (28%)", "2 (13%)"),
            ("Nausea", "7 (22%)", "2 (13%)"),
            ("Fatigue", "5 (16%)", "3 (19%)"),
            ("Cough", "4 (13%)", "3 (19%)"),
            ("Rash or photosensitivity reaction", "3 (9%)", "0"),
            ("ALT increased", "2 (6%)", "0"),
            ("Serious adverse events", "1 (3%)", "1 (6%)"),
        ],
    )
    return [
        _plan(
            (
                "Idiopathic Pulmonary Fibrosis",
                "Idiopathic pulmonary fibrosis (IPF) is a chronic, progressive fibrosing interstitial lung disease of unknown cause that occurs primarily in older adults and is more common in men and in former smokers. Repetitive injury to the alveolar epithelium is thought to trigger aberrant wound healing, with activation of fibroblasts, their differentiation into myofibroblasts and the excessive deposition of extracellular matrix. The disease is characterized by a progressive decline in lung function, worsening dyspnea and cough, reduced exercise capacity and a median survival of three to five years after diagnosis. Acute exacerbations, which occur in about 10 percent of patients each year, carry a high short-term mortality.",
            ),
            (
                "Current Treatment Options and Unmet Need",
                "Two antifibrotic medicines are approved for IPF. Both slow the rate of decline in lung function by about half over one year, but neither halts or reverses the disease, and neither has shown a clear effect on symptoms or quality of life. Their use is often limited by gastrointestinal adverse effects, photosensitivity and liver test abnormalities, and a substantial proportion of patients discontinue treatment within the first year. Lung transplantation is an option for only a small minority. There is therefore a high unmet need for better tolerated treatments that can be used alone or in combination with existing therapy.",
            ),
            (
                "Corvalinib",
                "Corvalinib (NVX-2218) is an oral, selective inhibitor of the fictional fibroblast regulatory kinase FRK-3, which acts downstream of several profibrotic growth factors and mediates myofibroblast differentiation and matrix deposition. Because FRK-3 is expressed mainly in activated fibroblasts, its inhibition is expected to reduce fibrosis with limited effects on other tissues. Corvalinib does not inhibit the targets of the approved antifibrotics, which supports its evaluation on top of background therapy.",
            ),
            (
                "Rationale for the Study",
                "The nonclinical activity of corvalinib, its selectivity for activated fibroblasts and the favorable tolerability seen in the Phase Ib study support the evaluation of its efficacy and safety in a larger population. A seamless Phase II/III design allows the dose to be selected on the basis of 26-week data and then confirmed in a 52-week comparison with placebo, without a gap between the two parts and with a shared set of sites and procedures.",
            ),
            fill=False,
        ),
        _plan(
            (
                "Nonclinical Studies",
                "In bleomycin-induced and silica-induced lung fibrosis models in mice and rats, corvalinib given therapeutically reduced lung collagen content, improved histological fibrosis scores and preserved lung compliance in a dose-dependent manner. The main nonclinical safety studies are summarized below; full details are in the Investigator's Brochure.\n"
                + nonclinical,
            ),
            (
                "Clinical Pharmacology",
                "Corvalinib has been given to 96 healthy volunteers in single and multiple ascending dose studies, a food-effect study and a drug-interaction study. It is rapidly absorbed, and food increases exposure by about 30 percent, so it is taken with a meal. Corvalinib is metabolized mainly by CYP3A4, and exposure increased about threefold with a strong CYP3A4 inhibitor.\n"
                + pk,
            ),
            (
                "Drug-Interaction Potential",
                "Corvalinib is a weak inhibitor of the transporter P-gp in vitro but did not change the exposure of a sensitive P-gp substrate in healthy volunteers. It does not induce CYP enzymes at clinically relevant concentrations. Co-administration with the approved antifibrotics did not change the exposure of either medicine to a clinically relevant extent in a dedicated interaction cohort.",
            ),
            fill=False,
        ),
        _plan(
            (
                "Clinical Experience in IPF",
                "In a 12-week, randomized, placebo-controlled Phase Ib study in 48 participants with IPF, corvalinib was generally well tolerated. The most common adverse events are shown below. Transient, asymptomatic elevations of ALT occurred in two participants and resolved after interruption of dosing; neither met the criteria for drug-induced liver injury. The mean decline in FVC over 12 weeks was smaller with corvalinib than with placebo, although the study was not designed to show a difference.\n"
                + aes,
            ),
            (
                "Benefit-Risk Assessment",
                "The potential risks of corvalinib include hepatotoxicity, gastrointestinal intolerance, photosensitivity and embryo-fetal toxicity. These risks are mitigated in this study by the eligibility criteria, regular liver test monitoring with defined interruption and stopping rules, advice on sun protection, highly effective contraception and review of unblinded safety data by an independent Data Monitoring Committee. The anticipated benefit is a reduction in the rate of lung function decline, alone or on top of standard antifibrotic therapy. Considering the nonclinical and clinical data, the risk mitigation measures and the unmet medical need, the benefit-risk balance is considered favorable.",
            ),
            (
                "Rationale for Dose Selection",
                "The doses tested in Part A were chosen to span the exposure range associated with near-maximal target inhibition in nonclinical models. The lower dose is expected to give about 60 percent inhibition of FRK-3 at trough and the higher dose more than 85 percent. Doses above this range were associated with more gastrointestinal adverse events in healthy volunteers without additional target inhibition.",
            ),
            fill=False,
        ),
    ]


def _protocol_contraception(w: _Writer, section: _Section) -> list[_PagePlan]:
    methods = _table(
        ("Method", "Category", "Notes"),
        [
            (
                "Combined hormonal contraception (oral, vaginal, transdermal)",
                "Highly effective",
                "associated with inhibition of ovulation",
            ),
            ("Progestogen-only implant", "Highly effective", "user-independent"),
            ("Intrauterine device or hormonal intrauterine system", "Highly effective", "user-independent"),
            ("Bilateral tubal occlusion", "Highly effective", "user-independent"),
            (
                "Vasectomized partner",
                "Highly effective",
                "if the partner is the sole sexual partner and azoospermia is confirmed",
            ),
            (
                "Sexual abstinence",
                "Highly effective",
                "only if it is the usual and preferred lifestyle of the participant",
            ),
            (
                "Male or female condom, cap or diaphragm with spermicide",
                "Not highly effective",
                "not acceptable as a sole method",
            ),
        ],
    )
    text = _lines("""
        A participant of childbearing potential is anyone who is fertile after menarche and until becoming postmenopausal, unless permanently sterile by hysterectomy, bilateral salpingectomy or bilateral oophorectomy.
        Postmenopausal status is defined as no menses for 12 months without an alternative medical cause; a high FSH level may be used to confirm it in participants not using hormonal contraception.
        Participants of childbearing potential must use a highly effective method from Screening until 30 days after the last dose, and male participants with partners of childbearing potential must use a condom from the first dose until 90 days after the last dose.
        The Investigator must review the contraceptive method at each visit and record it in the eCRF.
    """)
    pregnancy = (
        "If a participant becomes pregnant, study intervention is stopped at once and the participant continues in the "
        "study for safety follow-up. The pregnancy is followed until its outcome, and the health of the infant is "
        "followed for 12 months after birth with the consent of the parent. Pregnancies in the partners of male "
        "participants are followed in the same way after separate consent from the partner. Elective terminations "
        "and spontaneous abortions are reported, and any congenital anomaly is reported as a serious adverse event."
    )
    return [
        _plan(
            ("Definitions and Requirements", " ".join(text)),
            ("Contraceptive Methods", methods),
            ("Pregnancy During the Study", pregnancy),
            fill=False,
        )
    ]


def _protocol_prohibited(w: _Writer, section: _Section) -> list[_PagePlan]:
    header = ("Medication class", "Examples", "Restriction")
    first = _table(
        header,
        [
            (
                "Strong CYP3A4 inhibitors",
                "ketoconazole, itraconazole, clarithromycin, ritonavir",
                "prohibited; short courses require interruption of study intervention",
            ),
            (
                "Moderate CYP3A4 inhibitors",
                "erythromycin, fluconazole, diltiazem, verapamil",
                "use with caution after discussion with the medical monitor",
            ),
            (
                "Strong and moderate CYP3A4 inducers",
                "rifampicin, carbamazepine, phenytoin, efavirenz",
                "prohibited; see Section 8 for the washout",
            ),
            (
                "Systemic immunosuppressants",
                "azathioprine, mycophenolate, cyclosporine",
                "prohibited; see Section 8 for the washout",
            ),
            ("Other investigational products", "any", "prohibited from 30 days before Screening"),
        ],
    )
    second = _table(
        header,
        [
            (
                "Systemic corticosteroids",
                "prednisone, methylprednisolone",
                "up to 15 mg prednisone equivalent per day; higher doses only for acute exacerbations",
            ),
            (
                "Photosensitizing medications",
                "tetracyclines, amiodarone, hydrochlorothiazide",
                "permitted with strict sun protection",
            ),
            (
                "Anticoagulants",
                "warfarin, direct oral anticoagulants",
                "permitted; INR monitoring as clinically indicated",
            ),
            ("Proton pump inhibitors", "omeprazole, pantoprazole", "permitted; no dose adjustment needed"),
            ("Herbal products", "St John's wort, goldenseal", "prohibited"),
        ],
    )
    return [
        _plan(
            (
                "Prohibited and Restricted Medications",
                "The lists below are not exhaustive. Site staff should consult the medical monitor about any medication not listed.\n"
                + first,
            )
        ),
        _plan(("Other Restricted Medications", second)),
    ]


def _protocol_liver(w: _Writer, section: _Section) -> list[_PagePlan]:
    workup = _table(
        ("Assessment", "Purpose"),
        [
            (
                "Repeat ALT, AST, alkaline phosphatase, bilirubin and INR",
                "confirm the abnormality and follow its course",
            ),
            ("Hepatitis A, B, C and E serology", "exclude viral hepatitis"),
            ("Cytomegalovirus and Epstein-Barr virus testing", "exclude other viral causes"),
            ("Liver ultrasound", "exclude biliary obstruction and structural disease"),
            ("Alcohol and recreational drug history", "identify other causes of liver injury"),
            ("Review of concomitant medications and supplements", "identify other hepatotoxic products"),
        ],
    )
    return [
        _plan(
            (
                "Follow-Up of Liver Events",
                "For any participant who meets a liver chemistry interruption or stopping criterion in Section 9, the following assessments should be performed and the results recorded in the liver event eCRF.\n"
                + workup,
            )
        )
    ]


def _protocol_diary(w: _Writer, section: _Section) -> list[_PagePlan]:
    items = _lines("""
        1. How severe was your cough today? (0 = no cough, 10 = worst imaginable cough)
        2. How often did coughing disturb your activities today? (never, rarely, sometimes, often, all the time)
        3. How short of breath were you when walking on level ground? (0 to 10)
        4. How short of breath were you when climbing one flight of stairs? (0 to 10, or did not do)
        5. How tired did you feel today? (0 to 10)
        6. Did you need to rest during your usual daily activities? (yes or no)
        7. How well did you sleep last night? (very well, well, fairly, poorly, very poorly)
        8. Did you wake up because of cough or breathlessness? (number of times)
        9. How much did your lung condition limit your social activities today? (not at all to completely)
        10. Did you use extra oxygen today, and for how many hours?
    """)
    return [
        _plan(
            (
                "Fibrosis Symptom Diary Items",
                "The diary is completed each evening on the electronic device provided. Items are presented in the order below, one per screen, in the participant's language.\n"
                + "\n".join(items),
            )
        )
    ]


def _protocol_countries(w: _Writer, section: _Section) -> list[_PagePlan]:
    rows = _lines("""
        Germany: genetic sampling requires a separate consent form approved by the ethics committee, and samples may be stored for no more than 10 years.
        France: participants must be affiliated with a social security scheme, and the total annual compensation for participation may not exceed the national cap.
        Japan: the Investigator must report serious adverse events to the head of the medical institution as well as to the Sponsor.
        Canada: the qualified investigator undertaking must be signed before the site is activated.
        Australia: the study is conducted under the clinical trial notification scheme, and the site must notify the approving ethics committee of serious breaches.
        Republic of Korea: HIV testing at Screening is not performed unless clinically indicated.
        Poland: the insurance certificate for participants must be kept in the Investigator Site File.
        United Kingdom: participants who lose capacity during the study are withdrawn, and data collected up to that point are retained.
        United States: the study is conducted under an investigational new drug application, and the Investigator must complete the required investigator statement and financial disclosure forms.
        Spain: the Investigator must obtain the approval of the site's management before the site initiation visit.
        Italy: the site pharmacist is responsible for receipt and storage of study intervention, and temperature records are kept by the pharmacy.
        Netherlands: participants receive a copy of the insurance statement with the participant information sheet.
    """)
    return [
        _plan(
            (
                "Country-Specific Requirements",
                "The following requirements apply in addition to the body of this protocol in the countries listed.\n"
                + "\n".join(rows),
            )
        )
    ]


def _protocol_amendments(w: _Writer, section: _Section) -> list[_PagePlan]:
    first = _lines("""
        - Added an intensive pharmacokinetic substudy at selected sites to better characterize exposure in participants receiving background antifibrotic therapy.
        - Added quarterly liver test monitoring by mobile nurses between Weeks 26 and 52, following a request from a regulatory authority.
        - Clarified that participants who discontinue study intervention continue all visits, so that the treatment policy strategy can be applied.
        - Changed the Fibrosis Symptom Diary from a paper to an electronic format.
        - Allowed rescreening once for participants who failed Screening because of spirometry quality.
    """)
    return [
        _plan(
            (
                "Amendment 1 (version 2.0, 17 January 2024)",
                "Amendment 1 was a substantial amendment made before the first participant was randomized. Its main changes were:\n"
                + "\n".join(first),
            )
        ),
        _plan(
            (
                "Amendment 2 (version 3.0, 9 October 2024)",
                "Amendment 2 is summarized on the title page of this protocol. It was made after Part A enrollment had started and does not affect participants already randomized.",
            )
        ),
    ]


def _protocol_safety(w: _Writer, section: _Section) -> list[_PagePlan]:
    timelines = _table(
        ("Type of report", "Initial report", "Follow-up", "Form"),
        [
            (
                "Serious adverse event",
                "within 24 hours",
                "within 24 hours of new information",
                "SAE report form",
            ),
            (
                "Adverse event of special interest",
                "within 24 hours",
                "as for serious adverse events",
                "AESI supplement and SAE report form",
            ),
            (
                "Pregnancy",
                "within 24 hours",
                "at the end of each trimester and at outcome",
                "pregnancy report form",
            ),
            (
                "Overdose or medication error with an adverse event",
                "within 24 hours",
                "as needed",
                "SAE report form",
            ),
            ("Non-serious adverse event", "in the eCRF within 5 working days", "at each visit", "eCRF"),
        ],
    )
    aesi = _table(
        ("Adverse event of special interest", "Definition used in this study", "Additional data"),
        [
            (
                "Drug-induced liver injury",
                "meets the liver chemistry stopping criteria in Section 9",
                "liver event eCRF and follow-up tests in Appendix 5",
            ),
            (
                "Severe diarrhea",
                "diarrhea of severe intensity or needing intravenous fluids",
                "stool tests, concomitant medications",
            ),
            (
                "Photosensitivity reaction",
                "skin reaction in sun-exposed areas judged related to light exposure",
                "photographs where the participant agrees",
            ),
            (
                "QT prolongation",
                "QTcF above 500 ms or an increase of more than 60 ms from baseline",
                "triplicate ECGs and electrolytes",
            ),
        ],
    )
    return [
        _plan(
            (
                "Reporting Timelines",
                "The table below summarizes the timelines for reporting to the Sponsor. Day 0 is the day on which the Investigator or site staff become aware of the event.\n"
                + timelines,
            )
        ),
        _plan(),
        _plan(),
        _plan(("Adverse Events of Special Interest", aesi)),
    ]


def _protocol_statistics(w: _Writer, section: _Section) -> list[_PagePlan]:
    sets = _table(
        ("Analysis set", "Definition", "Used for"),
        [
            ("Screened Set", "all participants who signed informed consent", "disposition"),
            (
                "Full Analysis Set",
                "all randomized participants, by randomized treatment",
                "efficacy analyses",
            ),
            (
                "Per-Protocol Set",
                "Full Analysis Set participants without important protocol deviations affecting efficacy",
                "sensitivity analyses",
            ),
            (
                "Safety Set",
                "all participants who took at least one dose, by treatment received",
                "safety analyses",
            ),
            ("PK Set", "participants with at least one evaluable concentration", "pharmacokinetic analyses"),
        ],
    )
    hierarchy = _table(
        ("Order", "Hypothesis tested in Part B", "Condition to proceed"),
        [
            ("1", "Primary endpoint: corvalinib versus placebo", "two-sided p below 0.05"),
            ("2", "Change in 6-minute walk distance at Week 52", "previous test significant"),
            (
                "3",
                "Time to first acute exacerbation, respiratory hospitalization or death",
                "previous test significant",
            ),
            ("4", "Change in Fibrosis Symptom Diary dyspnea score at Week 52", "previous test significant"),
            ("5", "Change in Fibrosis Symptom Diary cough score at Week 52", "previous test significant"),
        ],
    )
    selection = _table(
        ("Part A result", "Decision"),
        [
            (
                "Both doses meet the efficacy criterion and are acceptably tolerated",
                "select 150 mg unless its safety profile is worse",
            ),
            ("Only one dose meets the efficacy criterion", "select that dose if acceptably tolerated"),
            ("Neither dose meets the efficacy criterion", "do not start Part B"),
        ],
    )
    return [
        _plan(("Analysis Sets", sets)),
        _plan(),
        _plan(("Testing Hierarchy", hierarchy)),
        _plan(
            (
                "Part A Dose Selection Rules",
                "The dose for Part B is chosen by an internal Sponsor committee, separate from the study team, using the rules below. The efficacy criterion is a posterior probability of at least 80 percent that the true effect on FVC exceeds 40 mL at Week 26.\n"
                + selection,
            )
        ),
        _plan(),
    ]


def _protocol_oversight(w: _Writer, section: _Section) -> list[_PagePlan]:
    bodies = _table(
        ("Committee", "Composition", "Blinded", "Meets"),
        [
            (
                "Data Monitoring Committee",
                "two pulmonologists, a hepatologist and a statistician",
                "no",
                "about every 6 months",
            ),
            (
                "Steering Committee",
                "six external investigators and two Sponsor representatives",
                "yes",
                "twice a year",
            ),
            (
                "Adjudication Committee",
                "three pulmonologists and a thoracic radiologist",
                "yes",
                "as events accrue",
            ),
            (
                "Independent Statistical Group",
                "statisticians and programmers of a contract research organization",
                "no",
                "supports the DMC",
            ),
        ],
    )
    return [_plan(("Study Committees", bodies)), _plan()]


def _part(
    key: str, number: int, name: str, pages: int, topic: _Topic | None, build: _Builder | None = None
) -> _Section:
    return _Section(key, f"{number} {name}", pages, topic, str(number), build)


def _appendix(
    key: str, number: int, name: str, pages: int, topic: _Topic | None, build: _Builder | None = None
) -> _Section:
    return _Section(key, f"APPENDIX {number} - {name}", pages, topic, f"A{number}", build)


_PROTOCOL_SECTIONS = (
    _Section("title", "CLINICAL STUDY PROTOCOL", 1, build=_protocol_title),
    _Section(
        "approval", "PROTOCOL APPROVAL AND INVESTIGATOR AGREEMENT", 1, _P_ETHICS, build=_protocol_approval
    ),
    _Section("contents", "TABLE OF CONTENTS", 1, contents=True),
    _part("synopsis", 1, "PROTOCOL SYNOPSIS", 3, _P_DESIGN, _protocol_synopsis),
    _part("soa", 2, "SCHEDULE OF ACTIVITIES", 3, _P_VISITS, _protocol_soa),
    _part("background", 3, "INTRODUCTION", 3, None, _protocol_introduction),
    _part("objectives", 4, "OBJECTIVES AND ENDPOINTS", 2, _P_STATISTICS, _protocol_objectives),
    _part("design", 5, "STUDY DESIGN", 3, _P_DESIGN),
    _part("population", 6, "STUDY POPULATION", 4, _P_POPULATION, _protocol_population),
    _part("intervention", 7, "STUDY INTERVENTION", 4, _P_INTERVENTION, _protocol_intervention),
    _part("conmed", 8, "CONCOMITANT THERAPY", 3, _P_CONMED),
    _part(
        "discontinuation",
        9,
        "DISCONTINUATION OF STUDY INTERVENTION AND PARTICIPANT WITHDRAWAL",
        3,
        _P_DISCONTINUATION,
    ),
    _part("assessments", 10, "STUDY ASSESSMENTS AND PROCEDURES", 8, None, _protocol_assessments),
    _part("safety", 11, "ADVERSE EVENTS AND SAFETY REPORTING", 4, _P_SAFETY_REPORTING, _protocol_safety),
    _part("statistics", 12, "STATISTICAL CONSIDERATIONS", 5, _P_STATISTICS, _protocol_statistics),
    _part("oversight", 13, "STUDY OVERSIGHT AND DATA MONITORING", 2, _P_OVERSIGHT, _protocol_oversight),
    _part("ethics", 14, "ETHICAL, REGULATORY AND DATA HANDLING CONSIDERATIONS", 3, _P_ETHICS),
    _appendix("labs", 1, "CLINICAL LABORATORY TESTS", 1, _P_SAFETY_ASSESS, _protocol_labs),
    _appendix("contraception", 2, "CONTRACEPTION AND PREGNANCY", 1, None, _protocol_contraception),
    _appendix(
        "ae_definitions",
        3,
        "ADVERSE EVENT DEFINITIONS AND GRADING",
        1,
        _P_SAFETY_REPORTING,
        _protocol_ae_definitions,
    ),
    _appendix("prohibited", 4, "PROHIBITED AND RESTRICTED MEDICATIONS", 2, _P_CONMED, _protocol_prohibited),
    _appendix("liver", 5, "LIVER SAFETY FOLLOW-UP", 1, _P_DISCONTINUATION, _protocol_liver),
    _appendix("diary", 6, "FIBROSIS SYMPTOM DIARY", 1, _P_EFFICACY, _protocol_diary),
    _appendix("countries", 7, "COUNTRY-SPECIFIC REQUIREMENTS", 1, _P_ETHICS, _protocol_countries),
    _appendix("amendments", 8, "PROTOCOL AMENDMENT HISTORY", 2, _P_ETHICS, _protocol_amendments),
    _appendix("abbreviations", 9, "ABBREVIATIONS", 1, None, _protocol_abbreviations),
)

_PROTOCOL_PLANTS = (
    _Plant(
        "objectives",
        1,
        "Part B Primary Objective and Endpoint",
        "The primary objective of Part B is to demonstrate that corvalinib reduces the progression of IPF compared with placebo. The primary efficacy endpoint for Part B is the annual rate of decline in forced vital capacity (FVC), in mL, over 52 weeks, based on centrally reviewed spirometry.",
    ),
    _Plant(
        "design",
        1,
        "Randomization in Part A",
        "In Part A, participants are randomized in a 1:1:1 ratio to corvalinib 75 mg once daily, corvalinib 150 mg once daily or placebo, stratified by background antifibrotic therapy status.",
    ),
    _Plant(
        "design",
        2,
        "Randomization in Part B",
        "In Part B, eligible participants are randomized in a 2:1 ratio to corvalinib or matching placebo, stratified by region and by background antifibrotic therapy status. A higher allocation to active treatment was chosen to increase the safety database for corvalinib while retaining a concurrent placebo group.",
    ),
    _Plant(
        "intervention",
        1,
        "Dosing in Part B",
        "In Part B, participants randomized to active treatment receive corvalinib 150 mg orally once daily, taken as three 50 mg tablets with the morning meal. Participants randomized to placebo take three matching placebo tablets in the same way.",
    ),
    _Plant(
        "intervention",
        2,
        "Dose Reduction",
        "Participants who do not tolerate the assigned dose because of gastrointestinal adverse events may have the dose reduced once to 100 mg once daily, taken as two tablets, after discussion with the medical monitor. Re-escalation to the assigned dose is permitted once the event has resolved.",
    ),
    _Plant(
        "intervention",
        3,
        "Storage",
        "Corvalinib and placebo tablets must be stored at 15 to 25 degrees C in the original bottles, protected from moisture. The site must record the minimum and maximum storage temperatures every working day.",
    ),
    _Plant(
        "conmed",
        1,
        "Washout of Immunosuppressants",
        "Systemic immunosuppressants, including azathioprine, mycophenolate, cyclosporine and cyclophosphamide, are prohibited during the study and must have been discontinued at least 56 days before randomization.",
    ),
    _Plant(
        "conmed",
        2,
        "Washout of CYP3A4 Inducers",
        "Strong and moderate CYP3A4 inducers must have been stopped at least 14 days before the first dose of study intervention, and St John's wort at least 21 days before the first dose.",
    ),
    _Plant(
        "discontinuation",
        0,
        "Liver Chemistry Stopping Criteria",
        "Study intervention must be permanently discontinued if ALT or AST exceeds 5 x ULN, regardless of symptoms or bilirubin, or if ALT or AST exceeds 3 x ULN together with total bilirubin above 2 x ULN or an INR above 1.5. The event must be reported as an adverse event of special interest.",
    ),
    _Plant(
        "discontinuation",
        1,
        "Interruption for Liver Test Elevations",
        "Study intervention must be interrupted if ALT or AST exceeds 3 x ULN without meeting a stopping criterion. Liver tests must be repeated within 72 hours and then weekly, and dosing may resume when the values fall below 2 x ULN.",
    ),
    _Plant(
        "assessments",
        0,
        "Timing of Spirometry",
        "At every clinic visit, spirometry must be started between 08:00 and 11:00 in the morning, before the daily dose of study intervention, and at approximately the same time of day as the Screening spirometry for that participant.",
    ),
    _Plant(
        "assessments",
        1,
        "Timing of the 6-Minute Walk Test",
        "The 6-minute walk test is performed at least 30 minutes after spirometry. Where two walk tests are needed at Screening, they must be at least 1 hour apart.",
    ),
    _Plant(
        "safety",
        2,
        "Reporting of Serious Adverse Events to the Sponsor",
        "Serious adverse events must be reported on the SAE report form by fax to the Sponsor's pharmacovigilance department at +41 61 555 0192, or through the electronic data capture system when it is available, within 24 hours of the Investigator becoming aware of the event.",
    ),
    _Plant(
        "safety",
        4,
        "Reporting of Pregnancies",
        "Pregnancies must be reported on the pregnancy report form by email to the Sponsor's pregnancy reporting mailbox, pregnancy.reports@nordvale.example, within 24 hours of the Investigator becoming aware of them.",
    ),
    _Plant(
        "statistics",
        1,
        "Sample Size for Part B",
        "The sample size for Part B is based on the primary endpoint. Assuming a treatment difference of 110 mL per year, a common standard deviation of 210 mL per year, a two-sided alpha of 0.05 and 90 percent power, and allowing for a dropout rate of 18 percent, the planned number of participants is sufficient to detect the assumed difference with a 2-to-1 allocation.",
    ),
    _Plant(
        "statistics",
        3,
        "Sample Size for Part A",
        "The Part A sample size of 44 participants per group allows the dose-response to be characterized with adequate precision, allowing for a discontinuation rate of 10 percent. Part A is not powered for formal hypothesis testing.",
    ),
    _Plant(
        "oversight",
        0,
        "Membership of the Data Monitoring Committee",
        "The independent Data Monitoring Committee is chaired by Dr. Ilse Marquardt, a pulmonologist with no other involvement in the study. Its other members are a second pulmonologist, a hepatologist and an independent statistician.",
    ),
    _Plant(
        "oversight",
        1,
        "Steering and Adjudication Committees",
        "The Steering Committee is chaired by Prof. Anika Salvesen, the coordinating investigator. The Adjudication Committee for acute exacerbations of IPF is chaired by Dr. Kwabena Osei-Lindqvist and includes two further pulmonologists and a thoracic radiologist.",
    ),
)

_PROTOCOL_FACTS = (
    _Fact("What is the protocol number of the CORVAL-IPF study?", ("NVT-2218-204",)),
    _Fact("How many participants are planned to be randomized in Part B?", ("486 participants", "486")),
    _Fact(
        "What is the primary efficacy endpoint of Part B?",
        (
            "annual rate of decline in forced vital capacity",
            "annual rate of decline in FVC",
            "rate of decline in FVC",
        ),
    ),
    _Fact("In what ratio are participants randomized to corvalinib or placebo in Part B?", ("2:1", "2 to 1")),
    _Fact("What minimum FVC, as a percentage of predicted, is required at Screening?", ("48 percent", "48%")),
    _Fact(
        "What dose of corvalinib do participants in Part B receive?",
        ("150 mg orally once daily", "150 mg once daily", "150 mg"),
    ),
    _Fact(
        "At what temperature must corvalinib tablets be stored?",
        ("15 to 25 degrees C", "15-25 degrees C", "15 to 25 C", "15-25 C"),
    ),
    _Fact(
        "How long before randomization must systemic immunosuppressants have been discontinued?",
        ("56 days", "8 weeks"),
    ),
    _Fact(
        "Above what ALT or AST level must study intervention be stopped permanently, regardless of bilirubin?",
        ("5 x ULN", "5 times the upper limit of normal", "5x ULN"),
    ),
    _Fact(
        "Within what time window must spirometry be started at clinic visits?",
        ("between 08:00 and 11:00", "08:00 to 11:00", "8:00 to 11:00"),
    ),
    _Fact("To which fax number must serious adverse event reports be sent?", ("+41 61 555 0192",)),
    _Fact("What dropout rate was assumed for the Part B sample size?", ("18 percent", "18%")),
    _Fact("Who chairs the independent Data Monitoring Committee?", ("Ilse Marquardt", "Dr. Ilse Marquardt")),
)


# ---- Public API ----------------------------------------------------------------------------

_SPECS: dict[str, _Spec] = {
    "contract": _Spec(
        name="contract",
        title="Master Services Agreement (generated sample)",
        description=(
            "A generated, entirely fictional IT outsourcing Master Services Agreement between "
            f"{_CUSTOMER} and {_SUPPLIER}, with its Schedules."
        ),
        seed=20230314,
        style=_C_STYLE,
        sections=_CONTRACT_SECTIONS,
        plants=_CONTRACT_PLANTS,
        facts=_CONTRACT_FACTS,
    ),
    "protocol": _Spec(
        name="protocol",
        title="Clinical Study Protocol CORVAL-IPF (generated sample)",
        description=(
            "A generated, entirely fictional Phase II/III clinical-study protocol for the invented drug "
            f"{_DRUG} in idiopathic pulmonary fibrosis, sponsored by the invented {_SPONSOR}."
        ),
        seed=20241009,
        style=_P_STYLE,
        sections=_PROTOCOL_SECTIONS,
        plants=_PROTOCOL_PLANTS,
        facts=_PROTOCOL_FACTS,
    ),
}


def list_samples() -> list[str]:
    """The names of the generated samples, in display order."""
    return list(_SPECS)


@lru_cache(maxsize=4)
def get_sample(name: str) -> Sample:
    """The generated sample called ``name``; raises ``ValueError`` for an unknown name."""
    spec = _SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown sample {name!r}; choose one of: {', '.join(_SPECS)}")
    return _generate(spec)


def questions_middle_first(name: str) -> list[SampleQuestion]:
    """A sample's questions, those deepest in the middle of the document first: where
    long-context models lose details, so where R&R has the most to show."""
    sample = get_sample(name)
    middle = (len(sample.pages) + 1) / 2
    return sorted(sample.questions, key=lambda q: (abs(q.page - middle), q.page))
