"""End to end in real Chromium: upload a PDF, ask, run Baseline and R&R, see the answers,
the cost chart, the page strip with its reminder markers and the rendered page with its highlight.

Drives the real app (``streamlit run app.py`` on a free port) with Playwright and Debian's
chromium (Playwright cannot download its own browser here). Skipped when chromium or Playwright
is missing, unless ``RR_REQUIRE_BROWSER=1`` (``.ci/run`` sets it): then a missing browser fails.
Screenshots go to ``artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import browser_kit as kit
from tests.browser_kit import SMALL, STARTUP_TIMEOUT_S, settle

pytestmark = pytest.mark.browser

ROOT = kit.ROOT
SHARED = kit.SHARED
ARTIFACTS = ROOT / "artifacts" / "browser"
RUN_TIMEOUT_MS = kit.RUN_TIMEOUT_MS
REMINDER_EVERY = 2_000  # small enough that a 17-page opinion gets reminders (k = 10,000 gives none)


# ---- The document ---------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    pdf: Path
    pages: int
    question: str
    answer_words: str  # words the offline engine's answer contains
    cited_page: int


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    """A real court opinion from ../shared/data; without it, a PDF made from the contract sample."""
    opinion = SHARED / "data" / "documents" / "ca1_calvary_chapel_v_mills_2020.pdf"
    if opinion.is_file():
        return Case(
            pdf=opinion,
            pages=17,
            question="What did the district court deny?",
            answer_words="temporary restraining order",
            cited_page=9,
        )
    from rr_core.documents import pdf_from_texts
    from rr_core.samples import get_sample

    sample = get_sample("contract")
    pdf = tmp_path_factory.mktemp("pdf") / "contract_40_pages.pdf"
    pdf.write_bytes(pdf_from_texts(sample.pages[:40], title=sample.title))
    question = next(q for q in sample.questions if "interest rate" in q.question)
    return Case(
        pdf=pdf, pages=40, question=question.question, answer_words="1.75 percent", cited_page=question.page
    )


# ---- The app and the browser ------------------------------------------------------------


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with kit.new_tab(browser) as tab:
        yield tab


# ---- Helpers ------------------------------------------------------------------------------


main = kit.main_area


def shot(page: Any, name: str, *, full: bool = True) -> Path:
    """A screenshot in ``artifacts/browser/`` (see ``browser_kit.shot``)."""
    return kit.shot(page, ARTIFACTS / name, full=full)


def in_view(page: Any, locator: Any) -> bool:
    """Whether the element is inside the window as it is (no scrolling)."""
    box = locator.bounding_box()
    size = page.viewport_size
    return (
        bool(box)
        and box["y"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] + box["width"] <= size["width"]
    )


def set_slider(page: Any, label: str, value: int, step: int) -> None:
    """Move a sidebar slider with the keyboard, as a user can: Home, then right arrow steps.

    One key at a time, letting each rerun finish: a key pressed while the app reruns is lost
    (the rerun sends the widget its committed value back).
    """
    from playwright.sync_api import expect

    slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"]').filter(has_text=label).first
    thumb = slider.locator('input[type="range"]')
    minimum = int(float(thumb.get_attribute("min") or 0))
    keys = ["Home"] + ["ArrowRight"] * ((value - minimum) // step)
    for key in keys:
        thumb.press(key)
        settle(page)
    expect(thumb).to_have_value(str(value))


def both_visible_side_by_side(first: Any, second: Any) -> None:
    a, b = first.bounding_box(), second.bounding_box()
    assert a and b, "a result column has no box"
    assert abs(a["y"] - b["y"]) < 40, f"the columns do not start on the same line: {a} vs {b}"
    assert a["x"] + a["width"] <= b["x"] + 1, f"the columns overlap or are stacked: {a} vs {b}"


# ---- The tests -------------------------------------------------------------------------------


PILL_CHOSEN = 'button[data-variant="pills"][aria-pressed="true"]'


def pick(page: Any, options: list[str]) -> None:
    """Choose methods as a user does: click each one's pill (its name is on it) once."""
    from playwright.sync_api import expect

    for option in options:
        pill = main(page).get_by_role("button", name=option, exact=True)
        if pill.get_attribute("aria-pressed") != "true":
            pill.click()
            settle(page)
        expect(main(page).get_by_role("button", name=option, exact=True, pressed=True)).to_be_visible()


def chosen_methods_fully_visible(page: Any) -> list[str]:
    """The chosen methods' pills, each checked to show its whole name inside its group and the window."""
    names = []
    width = page.viewport_size["width"]
    for group in main(page).locator('[data-testid="stButtonGroup"]').all():
        frame = group.bounding_box()
        for pill in group.locator(PILL_CHOSEN).all():
            name = pill.inner_text().strip()
            box = pill.bounding_box()
            assert frame and box, name
            assert (
                frame["x"] - 1 <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1
            ), f"{name!r} is cut by its group's edge at {width} px: {box} in {frame}"
            assert box["x"] + box["width"] <= width, f"{name!r} is outside the window at {width} px"
            whole = pill.evaluate(
                "b => [...b.querySelectorAll('*'), b].every(e => e.scrollWidth <= e.clientWidth + 1)"
            )
            assert whole, f"{name!r} is shortened at {width} px"
            names.append(name)
    return names


def test_first_open_on_a_small_screen_has_run_in_view(app_url: str, page: Any) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size(SMALL)
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=STARTUP_TIMEOUT_S * 1000
    )
    expect(main(page).get_by_text(re.compile(r"Before running:"))).to_be_visible()
    settle(page)
    run = main(page).get_by_role("button", name="Run")
    assert in_view(page, run), "Run is below the visible area at 1024×768"
    shot(page, "00_first_open_1024.png", full=False)


def test_upload_ask_all_methods_and_see_answers_costs_reminders_and_the_page(
    app_url: str, page: Any, case: Case
) -> None:
    from playwright.sync_api import expect

    console_errors: list[str] = []
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    # Nothing leaves the machine: no font server, no CDN, no telemetry.
    outside: list[str] = []
    page.on(
        "request",
        lambda request: (
            outside.append(request.url)
            if not request.url.startswith((app_url, "data:", "blob:", "about:"))
            else None
        ),
    )

    # 0. First open: the sample, no key, the offline engine's note, Run in view.
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=STARTUP_TIMEOUT_S * 1000
    )
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_text("The offline engine is not an LLM")).to_be_visible()
    expect(main(page).get_by_text(re.compile(r"— [\d,]+ pages, [\d,]+ tokens"))).to_be_visible()
    expect(main(page).get_by_text(re.compile(r"Before running:"))).to_be_visible()
    settle(page)
    assert in_view(page, main(page).get_by_role("button", name="Run")), "Run is below the visible area"
    shot(page, "00_first_open.png", full=False)

    # 1. Reminders every 2,000 tokens, so the opinion's R&R retrieval call carries some.
    set_slider(page, "Reprompt interval k", REMINDER_EVERY, step=100)
    expect(thumb_value(page, "Reprompt interval k")).to_have_text("2,000")  # as the app writes numbers

    # 2. Upload the PDF.
    main(page).locator('[data-testid="stRadio"]').get_by_text("My file", exact=True).click()
    uploader = main(page).locator('[data-testid="stFileUploader"]')
    expect(uploader).to_be_visible()
    uploader.locator('input[type="file"]').set_input_files(str(case.pdf))
    expect(
        main(page).get_by_text(re.compile(rf"{re.escape(case.pdf.name)}\s*— {case.pages} pages"))
    ).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)

    # 3. The question (Ctrl+Enter submits a text area), then every method of every group.
    question = main(page).get_by_label("Question", exact=True)
    question.fill(case.question)
    question.press("Control+Enter")
    settle(page)
    pick(
        page,
        ["Reprompting", "ICR", "Chunked ICR", "Chunked R&R", "RAG", "BriefContext", "Closed-book", "Oracle"],
    )
    gold = main(page).get_by_role("textbox", name=re.compile("Gold pages for the Oracle"))
    gold.fill(str(case.cited_page))
    gold.press("Enter")
    settle(page)
    expect(main(page).get_by_text(re.compile(r"Before running: 10 runs"))).to_be_visible()

    # 4. Run.
    main(page).get_by_role("button", name="Run").click()
    expect(main(page).get_by_role("heading", name="Results")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    expect(main(page).get_by_text(re.compile(r"offline engine \(not an LLM\)"))).to_be_visible()
    cards = {
        name: main(page)
        .locator('[data-testid="stVerticalBlockBorderWrapper"], [data-testid="stVerticalBlock"]')
        .filter(has=page.get_by_role("heading", name=name, exact=True))
        .last
        for name in ("Baseline", "Reprompting", "R&R", "RAG", "BriefContext", "Closed-book", "Oracle")
    }
    for name in ("Baseline", "R&R", "Oracle"):
        card = cards[name]
        expect(card).to_be_visible()
        expect(card.locator("p").filter(has_text=re.compile(r"^Answer:"))).to_contain_text(case.answer_words)
        expect(card.locator("p").filter(has_text=re.compile(r"^Cited page:"))).to_contain_text(
            str(case.cited_page)
        )
    expect(cards["R&R"].get_by_text(re.compile(r"Quote located on p\."))).to_be_visible()
    expect(cards["R&R"].locator("p").filter(has_text=re.compile(r"^Retrieved:"))).to_be_visible()
    # Closed-book reads no page: the offline engine found nothing, which says nothing of the document
    expect(cards["Closed-book"].get_by_text("Not found", exact=True)).to_be_visible()
    both_visible_side_by_side(cards["Baseline"], cards["Reprompting"])
    cost = main(page).locator('[data-testid="stPlotlyChart"]').first
    cost.scroll_into_view_if_needed()
    expect(cost.locator(".js-plotly-plot")).to_be_visible()
    for stage in ("retrieval", "answer", "map (read groups)", "reduce (combine)", "reminder overhead"):
        expect(cost.locator(".legendtext", has_text=stage)).to_be_attached()
    expect(main(page).get_by_text("What this comparison can and cannot show")).to_be_visible()
    shot(page, "01_ask_results.png")

    # 5. The Document screen: the strip from R&R's plan, the page with its highlight.
    sidebar.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Document").click()
    expect(main(page).get_by_role("heading", name="What the model saw")).to_be_visible()
    settle(page)
    strip = main(page).locator('[data-testid="stPlotlyChart"]').first
    expect(strip.locator(".js-plotly-plot")).to_be_visible()
    expect(strip.locator(".legendtext", has_text="reminder")).to_be_attached()
    expect(strip.locator(".legendtext", has_text="cited page")).to_be_attached()
    expect(main(page).get_by_text(re.compile(r"R&R sends [1-9]\d* reminders"))).to_be_visible()
    # It opens on the answer's first citation, framed, with exactly its quote highlighted.
    steps = main(page).locator(".st-key-citation_steps")
    expect(steps.get_by_text(re.compile(rf"Citation 1 of \d+ · p\. {case.cited_page}\b"))).to_be_visible()
    viewer = main(page).locator('[data-testid="stImage"]').first
    expect(viewer.locator("img")).to_be_visible()
    caption = main(page).get_by_text(re.compile(rf"^p\. {case.cited_page}.* of {case.pages} · "))
    expect(caption).to_contain_text("citation 1 of")
    expect(caption).to_contain_text("its quote highlighted")
    expect(main(page).get_by_text("Highlighted: the quoted words only")).to_be_visible()
    image = viewer.locator("img")
    assert image.evaluate("img => img.complete && img.naturalWidth > 0"), "the page image did not load"
    shot(page, "02_document.png")

    # 6. History: the question is one row; open it.
    sidebar.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="History").click()
    expect(main(page).get_by_role("heading", name="History")).to_be_visible()
    settle(page)
    expect(main(page).get_by_text(re.compile(r"1 question, 10 runs stored"))).to_be_visible()
    shot(page, "03_history.png")

    assert not console_errors, f"errors in the page: {console_errors}"
    assert outside == [], f"requests left the machine: {outside}"


def thumb_value(page: Any, label: str) -> Any:
    """The number written on a sidebar slider's thumb."""
    slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"]').filter(has_text=label).first
    return slider.locator('[data-testid="stSliderThumbValue"]')


def test_the_name_numbers_and_a_typed_k_in_the_sidebar(app_url: str, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(app_url)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=STARTUP_TIMEOUT_S * 1000
    )
    settle(page)
    # The product's name, above the screens' links.
    logo = page.locator('[data-testid="stSidebarLogo"]')
    expect(logo).to_be_visible()
    svg = logo.evaluate("img => fetch(img.src).then(r => r.text())")  # a data: URL
    assert "R&amp;R Studio" in svg
    # Slider values written as the rest of the app writes numbers.
    expect(thumb_value(page, "Reprompt interval k")).to_have_text("10,000")
    expect(thumb_value(page, "Chunk size c")).to_have_text("20,000")
    # k = 5,000 typed in its box: a few key presses, not 50; the slider follows.
    box = page.locator('[data-testid="stSidebar"]').get_by_role(
        "spinbutton", name=re.compile("Reprompt interval k")
    )
    box.fill("5000")
    box.press("Enter")
    settle(page)
    expect(thumb_value(page, "Reprompt interval k")).to_have_text("5,000")
    expect(main(page).get_by_text(re.compile(r"k = 5,000 · N = 5"))).to_be_attached()


@pytest.mark.parametrize("size", [kit.VIEWPORT, SMALL], ids=["1440", "1024"])
def test_several_questions_with_many_methods_then_history_open(
    app_url: str, page: Any, size: dict[str, int]
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size(size)
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=STARTUP_TIMEOUT_S * 1000
    )
    settle(page)
    main(page).get_by_text("Several", exact=True).click()
    settle(page)
    main(page).get_by_role("button", name="Use all of the sample's questions").click()
    settle(page)
    methods = ["Baseline", "ICR", "R&R", "Chunked ICR", "Chunked R&R", "RAG", "BriefContext", "Oracle"]
    pick(page, methods)
    # Every chosen method shows its whole name, at both sizes.
    assert sorted(chosen_methods_fully_visible(page)) == sorted(methods)
    # Each question gives the Oracle its own page: the field is not asked for.
    expect(
        main(page).get_by_text(re.compile(r"The Oracle reads each question's own gold page"))
    ).to_be_visible()
    shot(page, f"07_several_methods_{size['width']}.png", full=False)
    main(page).get_by_role("button", name="Run").click()
    expect(main(page).get_by_text("Answers by question and method")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    expect(main(page).get_by_text("Right against the known answers")).to_be_visible()
    scores = main(page).locator("table").filter(has_text="Method and settings")
    for name in methods:
        expect(scores.get_by_role("cell", name=re.compile(rf"^{re.escape(name)}( \(|$)"))).to_have_count(1)
    expect(scores.get_by_role("cell", name=re.compile(r"^\d+\/16$"))).to_have_count(len(methods))
    main(page).get_by_text("Answers by question and method").scroll_into_view_if_needed()
    shot(page, f"08_several_table_{size['width']}.png", full=False)
    shot(page, f"09_several_ask_{size['width']}.png")

    # History → Open: the batch by question, not as cards under the first question.
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="History").click()
    expect(main(page).get_by_role("heading", name="History")).to_be_visible()
    settle(page)
    grid = main(page).locator('[data-testid="stDataFrame"]').first
    grid.click(position={"x": 12, "y": 35 + 17})  # the newest row's checkbox
    settle(page)
    header = main(page).get_by_text(re.compile(r"^16 questions asked together"))
    expect(header).to_be_visible()
    expect(main(page).get_by_role("heading", name="Baseline", exact=True)).to_have_count(0)
    header.scroll_into_view_if_needed()
    shot(page, f"10_history_open_{size['width']}.png", full=False)
    shot(page, f"11_history_open_full_{size['width']}.png")


def test_several_questions_and_the_lab(app_url: str, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(app_url)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=STARTUP_TIMEOUT_S * 1000
    )
    settle(page)
    # Several questions about the sample: one retrieval pass for all of them.
    main(page).get_by_text("Several", exact=True).click()
    settle(page)
    main(page).get_by_role("button", name="Use all of the sample's questions").click()
    settle(page)
    expect(
        main(page).get_by_text(re.compile(r"in one retrieval pass, against \$[\d.]+ asked one at a time"))
    ).to_be_attached()
    main(page).get_by_role("button", name="Run").click()
    expect(main(page).get_by_text("Answers by question and method")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    shot(page, "04_several_questions.png")

    # The Lab: the quick check with the simulated reader, free.
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Lab").click()
    expect(main(page).get_by_role("heading", name="Lab: does R&R help here?")).to_be_visible()
    settle(page)
    expect(main(page).get_by_text(re.compile(r"Before running: \d+ trials"))).to_be_visible()
    # Two lengths at the five depths, once (10 trials; the quick check's three lengths twice
    # were 30): what is checked, the results' views and their charts, any grid with two lengths
    # and several depths shows. Lengths no preset uses, nor the batch test's grid.
    for label, value in (("Lengths (tokens)", "6000, 12000"), ("Repeats per cell", "1")):
        field = main(page).get_by_label(label)
        field.fill(value)
        field.press("Enter")
        settle(page)
    main(page).get_by_role("button", name="Run the measurement").click()
    expect(main(page).get_by_text("Accuracy by where the answer sits")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    charts = main(page).locator('[data-testid="stPlotlyChart"]')
    expect(charts.first.locator(".js-plotly-plot")).to_be_visible()
    assert charts.count() >= 3
    shot(page, "05_lab.png")
    page.set_viewport_size(SMALL)
    settle(page)
    shot(page, "06_lab_1024.png", full=False)


def test_the_lab_estimates_and_its_batches_after_the_tab_is_reopened(
    app_url: str, page: Any, browser: Any
) -> None:
    from playwright.sync_api import expect

    page.goto(app_url)
    expect(page.get_by_role("heading", name="Ask a long document")).to_be_visible(
        timeout=STARTUP_TIMEOUT_S * 1000
    )
    settle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name="Lab").click()
    expect(main(page).get_by_role("heading", name="Lab: does R&R help here?")).to_be_visible()
    settle(page)
    for label in ("Now, list price, no cache", "Now, with prompt cache", "In batches, with prompt cache"):
        expect(main(page).get_by_text(re.compile(rf"^{re.escape(label)}"))).to_be_visible()
    main(page).get_by_text("In batches (half price, within 24 h)").click()
    settle(page)
    # A grid no other test runs: its calls are new, so they go out in batches (a sweep whose
    # replies are all in the run store sends nothing, in batches or not). A length no preset
    # uses, at three depths, once: what is checked (the estimates, the batches and their list
    # in the run store) a grid of any size shows, and the preset's 45 trials took 12 s.
    for label, value in (
        ("Lengths (tokens)", "8000"),
        ("Depths (% of the document)", "0, 50, 100"),
        ("Repeats per cell", "1"),
    ):
        field = main(page).get_by_label(label)
        field.fill(value)
        field.press("Enter")
        settle(page)
    expect(main(page).get_by_text(re.compile(r"in this process.*saves nothing"))).to_be_visible()
    expect(main(page).get_by_text(re.compile(r"Before running:.* in batches as"))).to_be_visible()
    main(page).get_by_text("In batches, with prompt cache").scroll_into_view_if_needed()
    shot(page, "12_lab_estimates_1440.png", full=False)
    main(page).get_by_role("button", name="Run the measurement").click()
    expect(main(page).get_by_role("button", name="Download JSON")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    expect(main(page).get_by_text(re.compile(r"· sent in batches \(provider batches"))).to_be_visible()
    settle(page)
    # The tab closed and a new one opened: a new session reads the batches from the run store.
    lab_url = page.url
    page.close()
    for size, name in ((kit.VIEWPORT, "1440"), (SMALL, "1024")):
        with kit.new_tab(browser) as tab:
            tab.set_viewport_size(size)
            tab.goto(lab_url)
            expect(main(tab).get_by_role("heading", name="Lab: does R&R help here?")).to_be_visible(
                timeout=STARTUP_TIMEOUT_S * 1000
            )
            settle(tab)
            # A new session: no results of the run in the closed tab.
            expect(main(tab).get_by_role("button", name="Download JSON")).to_have_count(0)
            section = main(tab).get_by_text("Batches in the run store", exact=True)
            section.click()
            settle(tab)
            expect(main(tab).get_by_text("Every batch here has ended")).to_be_visible()
            expect(main(tab).locator('[data-testid="stDataFrame"]').first).to_be_visible()
            section.scroll_into_view_if_needed()
            shot(tab, f"13_lab_batches_{name}.png", full=False)
