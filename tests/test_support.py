"""Support (does the quote state this answer to this question?) and confidence (how far to
trust it): the offline reader's free verdict and the documented rule."""

from __future__ import annotations

from rr_core.confidence import HIGH_AT, assess, assess_together, rate, with_agreement
from rr_core.plans import Citation, Outcome
from rr_core.support import jurisdiction_in, kind_fits, offline_support, on_subject

LAW = "Which jurisdiction's law governs this agreement?"
DATE = "On what date was this agreement made? Answer with the date."
CAP = (
    "Is either party's liability capped? Answer yes or no; if the document has no such provision, answer no."
)


def test_a_governing_law_is_a_state_or_a_country() -> None:
    for place in ("Texas", "the State of New York", "England and Wales", "Ontario", "Delaware"):
        assert jurisdiction_in(place), place
    for not_one in ("San Francisco", "Court of Rome", "Orange County", "Acme Corporation", "Source", ""):
        assert not jurisdiction_in(not_one), not_one
    assert kind_fits(LAW, "California") and not kind_fits(LAW, "Regulatory Approvals")
    assert kind_fits(DATE, "July 1, 2017") and not kind_fits(DATE, "July 11")
    assert kind_fits(CAP, "Yes") and not kind_fits(CAP, "Maybe")


def test_the_quote_must_be_about_the_question() -> None:
    assert on_subject(LAW, "This Agreement shall be governed by the laws of the State of Texas.")
    assert not on_subject(LAW, "The Supplier shall deliver the goods to Texas within ten days.")
    # "Answer yes or no; ..." is the form of the answer, not its subject
    assert not on_subject(CAP, "If the document has no such provision, answer no.", 0.6)


def test_offline_support_supported_partial_unsupported() -> None:
    clause = "This Agreement shall be governed by the laws of the State of Texas."
    assert offline_support(LAW, "Texas", [clause])[0] == "supported"
    verdict, reason = offline_support(LAW, "Texas", ["Texas Instruments shall ship the parts."])
    assert (verdict, reason) == ("partial", "the quote is not about the question's subject")
    verdict, reason = offline_support(
        LAW, "San Francisco", ["The courts of San Francisco, under the laws of..."]
    )
    assert verdict == "partial" and "not of the asked kind" in reason and "state or a country" in reason
    assert offline_support(LAW, "Delaware", [clause]) == (
        "unsupported",
        "the quote does not contain the answer",
    )
    assert offline_support(LAW, "Texas", [])[0] == "unsupported"
    assert offline_support(LAW, None, [clause])[0] == "unchecked"
    # the reader writes dates in one form; the quote may say "the 1st day of November, 2002"
    made = "THIS AGREEMENT is made as of the 1st day of November, 2002, by and between A and B."
    assert offline_support(DATE, "November 1, 2002", [made])[0] == "supported"
    assert offline_support(DATE, "November 2, 2002", [made])[0] == "unsupported"
    # a yes or a no rests on a clause that is about the question
    cap = "Each party's aggregate liability is capped at the fees paid in the prior year."
    assert offline_support(CAP, "Yes", [cap])[0] == "supported"
    assert offline_support(CAP, "Yes", ["Notices shall be sent by registered mail."])[0] == "partial"


def _answer(answer: str, support: str, *, check: str = "verified", question: str = LAW) -> Outcome:
    outcome = Outcome(question=question, answer=answer)
    outcome.citations = [Citation(page=3, quote=f"... {answer} ...", quote_check=check)]
    outcome.support = support
    outcome.support_reason = {
        "partial": "the quote is not about the question's subject",
        "unsupported": "the quote does not contain the answer",
    }.get(support, "")
    return outcome


def test_the_confidence_rule() -> None:
    band, score, reason = rate(_answer("Texas", "supported"))
    assert band == "high" and score >= HIGH_AT and reason == ""
    band, score, reason = rate(_answer("Texas", "unsupported"))
    assert (band, reason) == ("check", "the quote does not contain the answer") and score < HIGH_AT
    assert rate(_answer("Texas", "partial"))[0] == "check"
    # a model's answer nobody checked is never high
    band, _, reason = rate(_answer("Texas", "unchecked"))
    assert band == "check" and reason == "nobody checked that the quote states the answer"
    # the wrong kind, or a quote not located on its page, pulls a supported answer down
    assert rate(_answer("Source", "supported"))[:3:2] == ("check", "the answer is not of the asked kind")
    assert rate(_answer("Texas", "supported", check="not-found"))[2] == "no quote was located on its page"
    # the retrieval margin is recorded, not scored (calibrated to weight 0): the same band
    thin = _answer("Texas", "supported")
    thin.retrieval_margin = 0.01
    assert rate(thin) == rate(_answer("Texas", "supported"))
    # nothing found, or failed: none, score 0, and the reason says who says so
    nothing = Outcome(question=LAW, answer="n/a", found=False, absent_by="reader", pages_to_read=[4, 2])
    assert rate(nothing) == ("none", 0.0, "Not found; pages to read: 4, 2")
    assert rate(Outcome(question=LAW, error="timeout")) == ("none", 0.0, "not answered")
    assert assess(_answer("Texas", "supported")).confidence == "high"


def test_agreement_between_methods() -> None:
    mine = _answer("Texas", "supported")
    assert rate(mine, others=[("Baseline", _answer("Texas", "supported"))])[0] == "high"
    band, _, reason = rate(mine, others=[("Baseline", _answer("California", "supported"))])
    assert (band, reason) == ("check", "Baseline says California")
    silent = Outcome(question=LAW, answer="n/a", found=False, absent_by="model")
    assert rate(mine, others=[("Baseline", silent)])[2] == (
        "Baseline says the model says the document does not state it"
    )
    rr, base = _answer("Texas", "supported"), _answer("Ohio", "supported")
    assess_together([("R&R", [rr]), ("Baseline", [base])])
    assert (rr.confidence, rr.confidence_reason) == ("check", "Baseline says Ohio")
    assert (base.confidence, base.confidence_reason) == ("check", "R&R says Texas")
    alone = _answer("Texas", "supported")
    assess_together([("R&R", [alone])])  # one method: nothing to agree with, nothing changed
    assert alone.confidence == ""
    assert with_agreement(0.9, "supported", "", agrees=True, label="Baseline", said="Texas")[0] == "high"
    assert with_agreement(0.9, "supported", "", agrees=False, label="Baseline", said="Ohio") == (
        "check",
        0.6,
        "Baseline says Ohio",
    )


def test_page_margin_is_the_best_pages_lead() -> None:
    from rr_core.retrieval import page_margin

    pages = [
        "This Agreement is governed by the laws of Texas. Governing law: Texas.",
        "The governing law clause appears in section 9.",
        "Payment is due within thirty days of the invoice.",
    ]
    margin = page_margin(pages, "Which law governs the agreement?")
    assert margin is not None and 0 < margin < 1
    # a page alike to the best one: no lead; no page with a word of the question, or one page:
    # nothing to rank
    assert page_margin([pages[0], pages[0]], "Which law governs the agreement?") == 0.0
    assert page_margin(pages, "zebra quantum") is None
    assert page_margin(pages[:1], "Which law governs the agreement?") is None


def test_every_outcome_records_its_retrieval_margin() -> None:
    from rr_core.documents import document_from_texts
    from rr_core.llm import OfflineEngine
    from rr_core.methods import plan_method
    from rr_core.runs import run_plans
    from rr_core.settings import RunSettings
    from rr_core.tokens import counter_for_model

    counter = counter_for_model("gpt-4.1-mini")
    document = document_from_texts(
        "supply.pdf",
        ["Cover page of the supply agreement."] * 3
        + ["This Agreement shall be governed by the laws of the State of Texas."],
        counter=counter,
    )
    settings = RunSettings(method="baseline", model="offline", provider="offline", price_model="gpt-4.1-mini")
    plan = plan_method(document, "Which state's law governs this agreement?", settings, counter)
    outcome = run_plans(document, [plan], OfflineEngine(counter))[0].outcome
    assert outcome.found and outcome.retrieval_margin is not None and outcome.retrieval_margin > 0.5
