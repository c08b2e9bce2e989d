"""The review engine: columns and typed answers, the answer key and scores, the corpus read
once into the document store, the grid planned and estimated, and run into cells — on the
offline engine and through the real SDKs against the loopback stub (OpenAI, Anthropic, an
OpenAI-compatible server; batch mode included)."""

from __future__ import annotations

import csv
import io
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from conftest import filler_text

import rr_core.review.corpus as corpus_module
from rr_core.errors import ConfigError
from rr_core.jobs import DocumentRef
from rr_core.llm import engine_client
from rr_core.methods import parse_spec
from rr_core.review import (
    COMPARE,
    MAIN,
    AnswerType,
    Column,
    CorpusFile,
    ReviewPlan,
    StoredDocuments,
    answer_type,
    columns_csv,
    items_from_paths,
    items_from_uploads,
    parse_answer_key,
    parse_columns,
    prefix_sharing,
    read_corpus,
    retry_jobs,
    scores,
    typed_answer,
)
from rr_core.review.export import scores_json
from rr_core.review.grid import is_right
from rr_core.settings import RunSettings
from rr_core.store import SQLiteStore
from rr_core.tokens import counter_for_model
from rr_core.workbench import Engine, check_review_budget, plan_grid, read_review_corpus, review
from tests.review_kit import (
    ANSWERS_CSV,
    COLUMNS_CSV,
    CONTRACTS,
    contract_bytes,
    created_batches,
    responder,
    sync_calls,
    write_contracts,
)
from tests.stub_server import StubServer, server_error

MODEL = "gpt-4.1-mini"


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "review.sqlite3")


@pytest.fixture
def contracts(tmp_path: Path) -> Path:
    write_contracts(tmp_path / "contracts")
    return tmp_path / "contracts"


def read(paths: list[Path], store: SQLiteStore, processes: int = 1) -> list[CorpusFile]:
    items, problems = items_from_paths(paths)
    assert not problems
    return read_review_corpus(items, model=MODEL, store=store, processes=processes)


def plan_for(
    files: list[CorpusFile],
    store: SQLiteStore,
    engine: Engine | None = None,
    method: str = "rr",
    **options: Any,
) -> ReviewPlan:
    engine = engine or Engine.choose("offline")
    counter = counter_for_model(engine.counting_model())
    settings = engine.settings(method=method)
    return plan_grid(
        files, parse_columns(COLUMNS_CSV), settings, counter, store=store,
        tokenizer=engine.counting_model(), **options,
    )  # fmt: skip


# ---- columns ------------------------------------------------------------------------------------


def test_parse_columns_reads_a_playbook_with_types_aliases_instructions_and_choices() -> None:
    text = (
        "\ufeffQuestion,Type,Instruction,Choices\n"
        "Which law governs?,text,,\n"
        "Is liability capped?,Yes/No,Count only caps on both parties.,\n"
        "When was it signed?,date,,\n"
        "What is the fee?,money,,\n"
        "How many renewals?,integer,,\n"
        "Who are the parties?,list,,\n"
        "Which form is the entity?,one of,,Corporation | LLC; Partnership\n"
        "\n"
    )
    columns = parse_columns(text)  # a spreadsheet's byte-order mark first
    assert [c.type for c in columns] == [
        AnswerType.TEXT, AnswerType.YES_NO, AnswerType.DATE, AnswerType.AMOUNT, AnswerType.NUMBER,
        AnswerType.LIST, AnswerType.CHOICE,
    ]  # fmt: skip
    assert columns[1].instruction == "Count only caps on both parties."
    assert columns[-1].choices == ("Corporation", "LLC", "Partnership")
    # the question sent says the form of the answer
    assert "yes or no" in columns[1].prompt.lower() and columns[1].prompt.endswith("both parties.")
    assert "Corporation, LLC, Partnership" in columns[-1].prompt
    assert columns_csv(parse_columns(columns_csv(columns))) == columns_csv(columns)
    assert parse_columns(columns_csv(columns)) == columns


def test_the_shared_questions_file_shape_and_a_bare_list_of_questions() -> None:
    columns = parse_columns(COLUMNS_CSV)
    assert [c.type.value for c in columns] == ["text", "date", "yes-no", "amount"]
    assert columns[2].question == "May a party terminate this agreement for convenience, without cause?"
    bare = parse_columns("What is the fee?\nWho signed it?\n")
    assert [(c.question, c.type) for c in bare] == [
        ("What is the fee?", AnswerType.TEXT),
        ("Who signed it?", AnswerType.TEXT),
    ]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("question,type\nA?,text\nB?,colour\n", ["cols.csv, line 3", "colour", "yes-no"]),
        ("question,type,choices\nA?,choice,only one\n", ["cols.csv, line 2", "two or more choices"]),
        ("question,type\nWhat is the fee?,text\nwhat is  the FEE?,amount\n", ["twice"]),
        (
            "\nquestion,type\nA?,text\n\n\nB?,colour\n",
            ["cols.csv, line 6", "colour"],
        ),  # as the file numbers it
        ('question,type\n"A\nquestion?",text\nB?,colour\n', ["cols.csv, line 4"]),
        ("question,type\n", ["holds no question"]),
        ("", ["holds no question"]),
    ],
)
def test_parse_columns_errors_name_the_line_and_refuse_duplicates(text: str, needles: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_columns(text, name="cols.csv")
    for needle in needles:
        assert needle in str(caught.value)


def test_too_many_columns_are_refused() -> None:
    with pytest.raises(ConfigError, match="at most 50"):
        parse_columns("\n".join(f"Question {i}?" for i in range(51)))


@pytest.mark.parametrize("name", ["yes/no", "boolean", "Yes_No", "YES-NO"])
def test_answer_type_aliases(name: str) -> None:
    assert answer_type(name) is AnswerType.YES_NO


def typed(kind: str, answer: str, stated: bool = True, **column: Any) -> tuple[str, bool]:
    result = typed_answer(Column("q", answer_type(kind), **column), answer, stated=stated)
    return result.value, result.ok


@pytest.mark.parametrize(
    ("kind", "answer", "value"),
    [
        ("yes-no", "Yes, either party may terminate on notice.", "Yes"),
        ("yes-no", "No.", "No"),
        ("yes-no", "TRUE", "Yes"),
        ("yes-no", "Not stated", "No"),  # said as the answer: no such provision
        ("date", "made as of the 1st day of March, 2020", "2020-03-01"),
        ("date", "11/1/02", "2002-11-01"),
        ("date", "dated 7/19/2018 by the parties", "2018-07-19"),
        ("date", "June 2, 2008", "2008-06-02"),
        ("date", "Sept. 5, 2019", "2019-09-05"),
        ("date", "effective 1 March 2020 (the Effective Date)", "2020-03-01"),
        ("date", "2020-03-01", "2020-03-01"),
        ("amount", "$2.5 million", "$2,500,000"),
        ("amount", "USD 1,000,000", "$1,000,000"),
        ("amount", "4.2 million euros", "€4,200,000"),
        ("amount", "EUR 4.2 million", "€4,200,000"),
        ("amount", "£300", "£300"),
        ("amount", "US$ 10,000.50", "$10,000.50"),
        ("amount", "CHF 12", "12 CHF"),
        ("number", "approximately 1,250 units", "1,250"),
        ("number", "0.125", "0.125"),
        ("list", "apples; pears and plums", "apples; pears; plums"),
        ("list", "- Acme Corp\n- Beta LLC\n- Gamma Ltd", "Acme Corp; Beta LLC; Gamma Ltd"),
        ("text", "  the laws of   Delaware ", "the laws of Delaware"),
    ],
)
def test_typed_answer_reads_each_type(kind: str, answer: str, value: str) -> None:
    assert typed(kind, answer) == (value, True)


def test_typed_answer_choices_not_stated_and_what_cannot_be_read() -> None:
    choices = {"choices": ("New York", "York", "Delaware")}
    assert typed("choice", "the laws of New York apply", **choices) == ("New York", True)  # the longest named
    assert typed("choice", "Texas", **choices) == ("", False)
    # not stated: a yes/no column reads it as "No" (no such provision), any other type as no value
    assert typed("yes-no", "not stated in the document", stated=False) == ("No", True)
    for kind in ("text", "date", "amount", "number", "list"):
        assert typed(kind, "not stated in the document", stated=False) == ("", False)
    assert typed("date", "sometime next spring") == ("", False)
    assert typed("amount", "a reasonable fee") == ("", False)
    assert typed("yes-no", "It depends on the notice") == ("", False)
    shown = typed_answer(Column("q", AnswerType.DATE), "sometime next spring", stated=True).shown
    assert shown == "sometime next spring"  # what cannot be read is shown as given


# ---- the answer key -----------------------------------------------------------------------------


def test_parse_answer_key_alternatives_partial_dates_and_not_stated() -> None:
    key = parse_answer_key(
        "Document,Question,Answers\n"
        'folder/A.PDF,When was it made?,"11/1/02 | November 1, 2002"\n'
        "b.pdf,When was it made?,07/31/2000; 07/[]/2000\n"
        "b.pdf,Is liability capped?,\n"
        ",Orphan?,x\n"
    )
    assert len(key) == 3
    # matched by file name, case and spaces aside
    assert key.lookup("contracts/a.pdf", "when was it  made?") == ("11/1/02", "November 1, 2002")
    assert key.lookup("b.pdf", "When was it made?") == ("07/31/2000", "07/[]/2000")
    assert key.lookup("b.pdf", "Is liability capped?") == ("not stated",)
    assert key.lookup("c.pdf", "When was it made?") is None
    with pytest.raises(ConfigError, match="missing: answers"):
        parse_answer_key("document,question\na,b\n")
    with pytest.raises(ConfigError, match="holds no answer"):
        parse_answer_key("document,question,answers\n")


@pytest.mark.parametrize(
    "text",
    [
        "questions,kind\nWhat is the fee?,amount\nWhen was it signed?,date\n",
        "question;type\nWhat is the fee?;amount\nWhen was it signed?;date\n",
        "\ufeffQuestion\tAnswer_Type\nWhat is the fee?\tamount\nWhen was it signed?\tdate\n",
        "question,type\r\nWhat is the fee?,amount\r\nWhen was it signed?,date\r\n",  # Windows line ends
        "question;type\rWhat is the fee?;amount\rWhen was it signed?;date\r",  # old Mac line ends
    ],
)
def test_a_playbook_with_another_delimiter_or_header_names_is_read_right(text: str) -> None:
    columns = parse_columns(text)
    assert [(c.question, c.type) for c in columns] == [
        ("What is the fee?", AnswerType.AMOUNT),
        ("When was it signed?", AnswerType.DATE),
    ]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("question,questions\nA?,B?\n", ["line 1", "'question' and 'questions' could both be the question"]),
        ("name,kind\nA?,text\n", ["line 1", "missing: question", "Expected a header question,type"]),
        ("Topic,Notes\nA?,b\n", ["line 1", "reads as a header but names no question column"]),
        (
            'question,type\n"What is the term?,text\nWho signed?,text\nWhen?,date\n',
            ["line 2", "never closed"],
        ),
        ("question,type\nA?,text\nWhat is the fee?,amount,USD 5,000\n", ["line 3", "4 values", "2 columns"]),
        ('question,type\n"A" B,text\n', ["line 2", "not read as CSV", "a comma"]),
    ],
)
def test_a_playbook_that_cannot_be_read_right_is_refused_in_one_line(text: str, needles: list[str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_columns(text, name="cols.csv")
    message = str(caught.value)
    assert message.startswith("cols.csv, line ") and "\n" not in message
    for needle in needles:
        assert needle in message


def test_an_answer_key_with_semicolons_or_other_header_names_is_read_right() -> None:
    for text in (
        "document;question;answers\na.pdf;What is the cap?;USD 5,000,000\n",
        'File,Questions,Answer\na.pdf,What is the cap?,"USD 5,000,000"\n',
    ):
        assert parse_answer_key(text).lookup("a.pdf", "What is the cap?") == ("USD 5,000,000",)


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        (
            "document,question,answers\na.pdf,What is the cap?,USD 5,000,000\n",
            ["line 2", "5 values", "quotes"],
        ),
        ("document,question,answers\na.pdf,What is the cap?\n", ["line 2", "2 values where 3 are needed"]),
        ('document,question,answers\na.pdf,Q?,"open\nb.pdf,Q?,x\n', ["line 2", "never closed"]),
        ("What is the cap?\n", ["line 1", "the header needs document, question and answers"]),
        ("doc,question,answers\na.pdf,Q?,x\n", ["line 1", "missing: document"]),
    ],
)
def test_an_answer_key_that_cannot_be_read_right_is_refused_in_one_line(
    text: str, needles: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_answer_key(text, name="key.csv")
    message = str(caught.value)
    assert message.startswith("key.csv, line ") and "\n" not in message
    for needle in needles:
        assert needle in message


def test_no_text_makes_the_csv_readers_fail_other_than_with_a_message() -> None:
    import random

    rng = random.Random(27)
    alphabet = [
        '"',
        ",",
        ";",
        "\t",
        "\n",
        "\r",
        " ",
        "a",
        "?",
        "question",
        "type",
        "document",
        "answers",
        "\x00",
    ]
    outcomes = Counter()
    for _ in range(600):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for parse in (parse_columns, parse_answer_key):
            try:
                parse(text)
                outcomes["read"] += 1
            except ConfigError as exc:
                assert "\n" not in str(exc).strip()
                outcomes["refused"] += 1
    assert outcomes["read"] and outcomes["refused"]  # both happen; nothing else does


def right(
    kind: str, answer: str, accepted: tuple[str, ...], stated: bool = True, absent_by: str = "", **column: Any
) -> bool | None:
    col = Column("q", answer_type(kind), **column)
    return is_right(
        col, typed_answer(col, answer, stated=stated), answer, stated, accepted, absent_by=absent_by
    )


def test_is_right_compares_as_the_column_type() -> None:
    assert right("date", "the 1st day of November, 2002", ("11/1/02", "November 1, 2002"))
    assert not right("date", "November 2, 2002", ("11/1/02",))
    # CUAD's partial dates: the day is not given; the month and year must match
    assert right("date", "April 15, 2013", ("4/[]/2013",))
    assert right("date", "April ___, 2013", ("04/[]/2013",))
    assert not right("date", "May 1, 2013", ("04/[]/2013",))
    assert right("amount", "$2.5 million", ("2,500,000 dollars",))
    assert not right("amount", "$2.6 million", ("$2,500,000",))
    assert right("number", "12 renewals", ("twelve", "12")) and not right("number", "13", ("12",))
    assert right("yes-no", "Yes, on notice", ("Yes",)) and not right("yes-no", "No", ("Yes",))
    # nothing found is unanswered (None), never a "No" nor "not stated" matching the key
    assert right("yes-no", "not stated in the document", ("No",), stated=False) is None
    assert right("yes-no", "not stated in the document", ("not stated",), stated=False) is None
    assert right("text", "not stated in the document", ("not stated",), stated=False) is None
    # a model's claim that a text is not stated is scored: right only where the key says so
    assert right("text", "not stated in the document", ("not stated",), stated=False, absent_by="model")
    assert not right("text", "not stated in the document", ("Texas",), stated=False, absent_by="model")
    assert right("yes-no", "not stated in the document", ("No",), stated=False, absent_by="model") is None
    assert right("text", "the laws of the State of Delaware", ("Delaware",))
    assert not right("text", "California", ("Texas",))
    choices = {"choices": ("LLC", "Corporation")}
    assert right("choice", "It is an LLC", ("llc",), **choices)
    assert not right("choice", "It is an LLC", ("Corporation",), **choices)


# ---- the corpus ------------------------------------------------------------------------------------


def make_pdf(texts: list[str], **save: Any) -> bytes:
    doc = pymupdf.open()
    for text in texts:
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 780), text, fontsize=11)
    data: bytes = doc.tobytes(**save)
    doc.close()
    return data


def scanned_pdf() -> bytes:
    """An image-only PDF: a page with a picture and no text layer."""
    doc = pymupdf.open()
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), 0)
    pixmap.clear_with(180)
    doc.new_page().insert_image(pymupdf.Rect(50, 50, 400, 400), pixmap=pixmap)
    data: bytes = doc.tobytes()
    doc.close()
    return data


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_folder_is_walked_sorted_hidden_files_skipped_and_a_missing_path_listed(
    tmp_path: Path, contracts: Path
) -> None:
    (contracts / ".DS_Store").write_bytes(b"junk")
    items, problems = items_from_paths([contracts, tmp_path / "nowhere.pdf"])
    assert [i.name for i in items] == [f"contracts/{n}" for n in sorted(CONTRACTS)]
    assert [(p.problem, "nowhere.pdf" in p.message) for p in problems] == [("missing", True)]


def test_links_out_of_a_folder_are_listed_not_read_and_names_show_bidi_controls_as_codes(
    tmp_path: Path, contracts: Path
) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "passwd.txt").write_text("root:x:0:0:root:/root:/bin/bash")
    (contracts / "passwd.txt").symlink_to(outside / "passwd.txt")
    (contracts / "secrets").symlink_to(outside, target_is_directory=True)
    (contracts / "alpha-again.txt").symlink_to(contracts / "alpha.txt")  # inside the folder: read
    (contracts / "x\u202etxt.pdf").write_text("a name that reads backwards")
    items, problems = items_from_paths([contracts])
    names = [i.name for i in items]
    assert "contracts/passwd.txt" not in names and not any("secret" in n for n in names)
    assert "contracts/alpha-again.txt" in names and "contracts/x\u2039U+202E\u203atxt.pdf" in names
    assert [(p.name, p.problem) for p in problems] == [("contracts/passwd.txt", "link out of the folder")]
    assert "outside contracts" in problems[0].message
    uploaded, _ = items_from_uploads(
        [("\u2067evil\u2069.txt", b"x"), ("z\u200f.zip", zipped({"\u202ea.txt": b"y"}))]
    )
    assert [i.name for i in uploaded] == [
        "\u2039U+2067\u203aevil\u2039U+2069\u203a.txt",
        "z\u2039U+200F\u203a.zip/\u2039U+202E\u203aa.txt",
    ]


def test_a_zip_opens_its_documents_and_lists_a_nested_zip_and_an_unsupported_member(tmp_path: Path) -> None:
    inner = zipped({"deep.txt": b"deep"})
    archive = zipped({
        "docs/alpha.txt": contract_bytes("alpha.txt"), "docs/beta.txt": contract_bytes("beta.txt"),
        "inner.zip": inner, "logo.png": b"\x89PNG....", "__MACOSX/._alpha.txt": b"x",
    })  # fmt: skip
    (tmp_path / "bundle.zip").write_bytes(archive)
    for items, problems in (
        items_from_paths([tmp_path / "bundle.zip"]),
        items_from_uploads([("bundle.zip", archive)]),
    ):
        assert [i.name for i in items] == ["bundle.zip/docs/alpha.txt", "bundle.zip/docs/beta.txt"]
        listed = {p.name: p for p in problems}
        assert set(listed) == {"bundle.zip/inner.zip", "bundle.zip/logo.png"}
        assert "ZIP inside a ZIP" in listed["bundle.zip/inner.zip"].message
        assert (
            listed["bundle.zip/logo.png"].problem == "type not read"
            and ".png" in listed["bundle.zip/logo.png"].message
        )
    _, bad = items_from_uploads([("broken.zip", b"PK\x03\x04 not really")])
    assert [(p.name, p.problem) for p in bad] == [("broken.zip", "damaged")]


def test_an_encrypted_a_scanned_and_a_damaged_file_are_listed_and_the_others_read(store: SQLiteStore) -> None:
    good = make_pdf([f"Page {i}. The termination fee is 4.2 million euros." for i in range(30)])
    uploads = [
        ("alpha.txt", contract_bytes("alpha.txt")),
        (
            "locked.pdf",
            make_pdf(["Secret."], encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="o"),
        ),
        ("scan.pdf", scanned_pdf()),
        ("cut.pdf", good[: len(good) // 20]),  # cut short: its page tree is gone
        ("good.pdf", good),
        ("beta.txt", contract_bytes("beta.txt")),
    ]
    items, problems = items_from_uploads(uploads)
    files = read_corpus(items, store, model=MODEL, processes=1)
    assert not problems and [f.name for f in files] == [n for n, _ in uploads]  # the order given
    by = {f.name: f for f in files}
    assert [f.name for f in files if f.ok] == ["alpha.txt", "good.pdf", "beta.txt"]
    assert by["good.pdf"].pages == 30 and by["good.pdf"].tokens > 0 and by["alpha.txt"].pages == 4
    expected = {"locked.pdf": ("encrypted", "password"), "scan.pdf": ("scanned (no text layer)", "text layer"),
                "cut.pdf": ("damaged", "damaged")}  # fmt: skip
    for name, (problem, word) in expected.items():
        assert by[name].problem == problem and name in by[name].message and word in by[name].message
        assert by[name].sha256 and not by[name].ok
        assert store.get_reading(by[name].sha256, counter_for_model(MODEL).label) is None
    # the readable ones are in the store: bytes and reading
    for name in ("alpha.txt", "good.pdf", "beta.txt"):
        assert store.get_document(by[name].sha256) is not None
        assert store.get_reading(by[name].sha256, counter_for_model(MODEL).label) is not None


def test_duplicates_are_read_once_and_listed_once(store: SQLiteStore, tmp_path: Path) -> None:
    items, _ = items_from_uploads([("a.txt", contract_bytes("alpha.txt")), ("copy of a.txt", contract_bytes("alpha.txt")),
                                   ("b.txt", contract_bytes("beta.txt"))])  # fmt: skip
    files = read_corpus(items, store, model=MODEL, processes=1)
    assert [(f.name, f.duplicate_of, f.ok) for f in files] == [
        ("a.txt", "", True), ("copy of a.txt", "a.txt", False), ("b.txt", "", True)
    ]  # fmt: skip
    plan = plan_for(files, store)
    assert [d.name for d in plan.documents] == ["a.txt", "b.txt"]  # one row for the two copies


def test_reading_in_two_processes_gives_what_reading_in_this_one_gives(
    tmp_path: Path, contracts: Path
) -> None:
    (contracts / "good.pdf").write_bytes(make_pdf(["Page one of a PDF.", "Page two, the fee is $10."]))
    (contracts / "scan.pdf").write_bytes(scanned_pdf())
    here = read([contracts], SQLiteStore(tmp_path / "one.sqlite3"), processes=1)
    pooled = read([contracts], SQLiteStore(tmp_path / "two.sqlite3"), processes=2)
    assert pooled == here
    assert sum(f.ok for f in here) == 4 and [f.problem for f in here if not f.ok] == [
        "scanned (no text layer)"
    ]


def test_by_default_readers_start_only_for_what_a_second_here_has_not_read(
    tmp_path: Path, contracts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rr_core.review import corpus

    pooled: list[list[int]] = []
    in_pool = corpus._in_pool

    def watched(items: Any, todo: Any, *args: Any) -> Any:
        pooled.append(list(todo))
        return in_pool(items, todo, *args)

    monkeypatch.setattr(corpus, "_in_pool", watched)
    monkeypatch.setattr(corpus, "default_processes", lambda: 2)  # as on the 2-core machines we test on
    here = read([contracts], SQLiteStore(tmp_path / "one.sqlite3"), processes=1)
    # A corpus read within the time allowed here: no reader process (each costs ~0.5 s to start).
    monkeypatch.setattr(corpus, "READ_HERE_FIRST_S", 600.0)
    assert read([contracts], SQLiteStore(tmp_path / "two.sqlite3"), processes=None) == here
    assert pooled == []
    # No time here: the readers read it all, and it reads the same.
    monkeypatch.setattr(corpus, "READ_HERE_FIRST_S", 0.0)
    assert read([contracts], SQLiteStore(tmp_path / "three.sqlite3"), processes=None) == here
    assert len(pooled) == 1 and len(pooled[0]) == len(here)


_READER_PARENT = """
import multiprocessing, sys, threading
from pathlib import Path
from rr_core.review.corpus import Item, read_corpus
from rr_core.store import SQLiteStore

folder = Path(sys.argv[1])
items = [Item(f"doc{i}.txt", data=f"Document {i}. ".encode() * 200) for i in range(8)]

def on_file(done, total, summary):
    # the readers are up: say who they are, then hang here (the pool open) until killed
    pids = sorted(p.pid for p in multiprocessing.active_children())
    print("readers", *pids, flush=True)
    threading.Event().wait()

read_corpus(items, SQLiteStore(folder / "store.sqlite3"), model="gpt-4.1-mini", processes=2, on_file=on_file)
"""


def _running(pid: int) -> bool:
    """Whether a process is there and not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
def test_reader_processes_end_when_their_parent_is_killed(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    parent = subprocess.Popen(
        [sys.executable, "-c", _READER_PARENT, str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()  # blocks until the readers are up (or the parent ends)
        assert line.startswith("readers "), line
        readers = [int(p) for p in line.split()[1:]]
        assert len(readers) == 2 and all(_running(p) for p in readers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=60)
        deadline = time.monotonic() + 120  # generous: the readers notice within a second
        while any(_running(p) for p in readers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in readers if _running(p)]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=60)
        for pid in [p for p in locals().get("readers", []) if _running(p)]:
            os.kill(pid, signal.SIGKILL)  # left behind by a failure above: not by the next test


def test_a_second_read_of_the_same_bytes_parses_nothing(
    store: SQLiteStore, contracts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = read([contracts], store)
    seen: list[str] = []
    original = corpus_module.load_document

    def counting(data: bytes, **kwargs: Any) -> Any:
        seen.append(str(kwargs.get("filename")))
        return original(data, **kwargs)

    monkeypatch.setattr(corpus_module, "load_document", counting)
    assert read([contracts], store) == first  # paths: hashed, their stored reading found
    items, _ = items_from_uploads([(f.name, (contracts / Path(f.name).name).read_bytes()) for f in first])
    assert read_corpus(items, store, model=MODEL, processes=1) == first  # uploads too
    assert seen == []
    # another tokenizer counts the pages again: parsed once more
    read_corpus(items[:1], store, model="claude-sonnet-4-5", processes=1)
    assert len(seen) == 1


def test_stored_documents_open_from_the_reading_and_fall_back_to_the_bytes(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = counter_for_model(MODEL)
    data = contract_bytes("gamma.txt")
    sha = store.put_document(data, "gamma.txt")  # bytes only, no reading yet
    parsed: list[int] = []
    original = corpus_module.load_document
    monkeypatch.setattr(corpus_module, "load_document", lambda *a, **k: parsed.append(1) or original(*a, **k))
    document = StoredDocuments(store, counter).document(sha, "gamma.txt")
    assert parsed == [1] and len(document.pages) == 4 and "California" in document.page(2).text
    assert store.get_reading(sha, counter.label) is not None  # the reading is kept now
    again = StoredDocuments(store, counter).open(DocumentRef(sha256=sha, name="gamma.txt")).document
    assert parsed == [1]  # opened from the reading
    assert [p.text for p in again.pages] == [p.text for p in document.pages] and again.sha256 == sha
    with pytest.raises(ConfigError, match="not in the document store"):
        StoredDocuments(store, counter).document("0" * 64, "lost.pdf")


# ---- the plan and its estimate -------------------------------------------------------------------------


def test_jobs_one_per_document_for_rr_one_per_cell_for_a_one_question_method(
    store: SQLiteStore, contracts: Path
) -> None:
    files = read([contracts], store)
    rr = plan_for(files, store)
    assert len(rr.jobs) == 3 and all(len(j.questions) == 4 for j in rr.jobs)
    assert {j.meta["document"] for j in rr.jobs} == {f.sha256 for f in files}
    assert [j.meta["columns"] for j in rr.jobs] == [[0, 1, 2, 3]] * 3
    baseline = plan_for(files, store, method="baseline")
    assert len(baseline.jobs) == 12 and all(len(j.questions) == 1 for j in baseline.jobs)
    assert (
        Counter((j.meta["document"], j.meta["columns"][0]) for j in baseline.jobs).most_common(1)[0][1] == 1
    )
    # the column's type reaches the question sent
    assert any("Answer yes or no" in q for q in rr.jobs[0].questions)
    # a comparison on a sample of rows
    compared = plan_for(
        files, store, compare=Engine.choose("offline").settings(method="baseline"), compare_rows=2
    )
    assert compared.roles == (MAIN, COMPARE) and len(compared.compare_documents) == 2
    assert len(compared.jobs) == 3 + 2 * 4


def test_the_estimate_batch_is_half_of_now_and_the_several_questions_share_is_below_one(
    store: SQLiteStore, contracts: Path
) -> None:
    plan = plan_for(read([contracts], store), store)
    e = plan.estimate
    assert e.calls == 3 * (1 + 4)  # a retrieval pass and an answer call per question, each document
    assert e.input_tokens > 0 and e.cost.known and e.usd("now") > 0
    assert e.usd("batch") == pytest.approx(e.usd("now", cached=True) / 2, rel=0.01)
    assert e.alone_ratio is not None and 0 < e.alone_ratio < 1


def test_twenty_questions_cost_at_most_a_quarter_of_asking_each_alone(
    store: SQLiteStore, tmp_path: Path
) -> None:
    import random

    # 30 short pages each: the answer calls read the few pages retrieved, the pass reads them all
    rng = random.Random(5)
    uploads = [(f"doc{i}.txt", "\f".join(filler_text(rng, 40) for _ in range(30)).encode()) for i in range(3)]
    items, _ = items_from_uploads(uploads)
    files = read_corpus(items, store, model=MODEL, processes=1)
    columns = [Column(f"What does clause {i} say about the {w}?") for i, w in enumerate(["fee", "term"] * 10)]
    engine = Engine.choose("offline")
    plan = plan_grid(files, columns, engine.settings(method="rr"), counter_for_model(MODEL), store=store)
    assert plan.estimate.alone_ratio is not None and plan.estimate.alone_ratio <= 0.25
    assert plan.estimate.sample_documents == 3


def test_documents_over_a_small_window_are_named(store: SQLiteStore, contracts: Path) -> None:
    files = read([contracts], store)
    assert plan_for(files, store, window=200_000).too_long == ()
    assert set(plan_for(files, store, window=300).too_long) == {f"contracts/{n}" for n in CONTRACTS}


def test_the_budget_is_refused_before_any_call(store: SQLiteStore, contracts: Path) -> None:
    files = read([contracts], store)
    plan = plan_for(files, store)
    usd = plan.estimate.usd("now")
    check_review_budget(plan, None)
    check_review_budget(plan, usd * 1.01)
    with pytest.raises(ConfigError, match="Nothing was sent"):
        check_review_budget(plan, usd * 0.5)
    check_review_budget(plan, usd * 0.6, "batch")  # batch is half the price
    unpriced = plan_for(
        files, store, engine=Engine("openai-compatible", "my-local-llama", base_url="http://127.0.0.1:9/v1")
    )
    with pytest.raises(ConfigError, match="no price is known"):
        check_review_budget(unpriced, 100.0)
    with pytest.raises(ConfigError, match="No document"):
        plan_for([f for f in files if False], store)


# ---- the run --------------------------------------------------------------------------------------------


def offline_run(store: SQLiteStore, contracts: Path, **options: Any) -> tuple[ReviewPlan, Any]:
    plan = plan_for(read([contracts], store), store)
    client = engine_client("offline", model="offline", counter=counter_for_model(MODEL))
    return plan, review(
        plan, client, concurrency=2, key=parse_answer_key(ANSWERS_CSV), store=store, **options
    )


def test_an_offline_grid_gives_cells_with_typed_answers_citations_and_free_cost(
    store: SQLiteStore, contracts: Path
) -> None:
    arrived: list[Any] = []
    plan, result = offline_run(store, contracts, on_cell=arrived.append)
    cells = result.cells
    assert len(cells) == 12 and arrived == cells and not result.save_error and result.batch
    by = {(c.document.split("/")[-1], c.column): c for c in cells}
    for (name, column), c in by.items():
        f = plan.document(c.document_sha256)
        assert f is not None and f.name == c.document and c.question == plan.columns[column].question
        assert c.ok and c.is_llm is False and c.paid_usd == 0.0  # a free engine never pays
        for cited in c.citations:
            assert cited.quote_check in ("verified", "approximate") and cited.page in (1, 2)
    # yes/no: stated -> "Yes" with its citation; nothing found -> "Not found" with the pages to
    # read, never "No" nor "not stated"
    for c in cells:
        if c.type == "yes-no":
            assert c.answer == "Yes" and c.found and c.citations or not c.found and not c.citations
        if not c.found:
            assert c.answer.startswith("Not found") and c.absent_by == "reader" and c.confidence == "none"
            assert c.correct is None and "not stated" not in c.answer and not c.answer.startswith("No ")
        assert bool(c.citations) == c.found
    beta = by[("beta.txt", 2)]
    assert beta.answer == "Not found; pages to read: " + ", ".join(map(str, beta.pages_to_read))
    assert not beta.found and beta.pages_to_read
    assert [by[(n, 1)].answer for n in ("alpha.txt", "beta.txt", "gamma.txt")] == [
        "2020-03-01",
        "2002-11-01",
        "2008-06-02",
    ]
    # right or wrong only where the key has an answer: gamma's cap has no row in the key
    assert by[("gamma.txt", 3)].correct is None and by[("gamma.txt", 3)].accepted == ()
    # the rest are right or wrong where answered, unanswered (None) where nothing was found
    assert all((c.correct is not None) == c.found for k, c in by.items() if k != ("gamma.txt", 3))
    # gamma's law is found (California) and marked wrong: the key says Texas, on purpose
    assert by[("gamma.txt", 0)].answer == "California" and by[("gamma.txt", 0)].correct is False
    assert by[("beta.txt", 2)].correct is None and all(
        by[(n, 1)].correct for n in ("alpha.txt", "beta.txt", "gamma.txt")
    )
    # each job's cells share its trace's cost (at the run's price), and sum to it
    for trace in result.traces:
        mine = [c for c in cells if c.run_id == trace.run_id]
        assert len(mine) == 4 and sum(c.cost_usd for c in mine) == pytest.approx(trace.cost_usd)
    assert sum(c.cost_usd for c in cells) > 0 and result.paid_usd == 0


def test_scores_per_column_and_method_and_the_main_method_on_the_same_rows(
    store: SQLiteStore, contracts: Path
) -> None:
    files = read([contracts], store)
    offline = Engine.choose("offline")
    plan = plan_for(files, store, compare=offline.settings(method="baseline"), compare_rows=2)
    client = engine_client("offline", model="offline", counter=counter_for_model(MODEL))
    result = review(plan, client, concurrency=2, key=parse_answer_key(ANSWERS_CSV), store=store)
    cells = result.cells
    assert len(cells) == 12 + 2 * 4
    listed = scores(plan, cells)
    assert scores(plan, iter(cells)) == listed  # one pass: the grid's end reads it from the store so
    assert scores(plan, reversed(cells)) == listed  # in any order
    groups = scores_json(plan, cells)
    assert list(groups) == [MAIN, COMPARE, f"{MAIN}-on-sample"]
    assert groups[COMPARE]["method"] == "Baseline" and groups[f"{MAIN}-on-sample"]["method"].endswith(
        "on the same rows"
    )
    for role, group in groups.items():
        assert [c["column"] for c in group["columns"]] == [0, 1, 2, 3]
        assert group["all"]["right"] == sum(c["right"] for c in group["columns"])
        assert group["all"]["marked"] == sum(c["marked"] for c in group["columns"])
        for entry in [*group["columns"], group["all"]]:
            assert entry["accuracy"] == (
                round(entry["right"] / entry["marked"], 4) if entry["marked"] else None
            )
    main = [c for c in cells if c.role == MAIN]
    assert groups[MAIN]["all"]["marked"] == sum(bool(c.accepted) for c in main) == 11
    assert groups[MAIN]["all"]["answered"] == sum(c.correct is not None for c in main)
    assert groups[MAIN]["all"]["right"] == sum(c.correct is True for c in main)
    sampled = set(plan.compare_documents)
    on_sample = [c for c in main if c.document_sha256 in sampled]
    assert groups[f"{MAIN}-on-sample"]["all"]["cells"] == len(on_sample) == 8
    assert groups[f"{MAIN}-on-sample"]["all"]["right"] == sum(c.correct is True for c in on_sample)
    assert len(listed) == 3 * 5


# ---- through the stubs of the three providers ------------------------------------------------------------

PROVIDERS = {
    "openai": ("gpt-4.1-mini", "url"),
    "anthropic": ("claude-sonnet-5-5", "anthropic_url"),
    "openai-compatible": ("gpt-4.1-mini", "url"),
}


def cell_key(c: Any) -> tuple[str, int]:
    return c.document, c.column


def grid(cells: list[Any]) -> list[tuple[str, int, str, bool | None]]:
    """The cells' answers in document and column order (cells arrive as their jobs finish)."""
    return sorted((c.document, c.column, c.answer, c.correct) for c in cells)


@pytest.fixture
def answering_stub() -> Iterator[StubServer]:
    with StubServer(responder) as server:
        yield server


def stub_engine(provider: str, stub: StubServer) -> Engine:
    model, url = PROVIDERS[provider]
    return Engine(provider, model, api_key="sk-test-review", base_url=getattr(stub, url))


def stub_review(
    provider: str, stub: StubServer, store: SQLiteStore, contracts: Path, **options: Any
) -> tuple[ReviewPlan, Any]:
    engine = stub_engine(provider, stub)
    counter = counter_for_model(engine.counting_model())
    files = read([contracts], store)
    plan = plan_for(files, store, engine=engine, window=engine.window())
    client = engine.client(counter)
    return plan, review(
        plan, client, concurrency=4, key=parse_answer_key(ANSWERS_CSV), store=store, **options
    )


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_the_grid_through_each_provider_cites_checks_and_never_pays_twice(
    provider: str, answering_stub: StubServer, store: SQLiteStore, contracts: Path
) -> None:
    plan, result = stub_review(provider, answering_stub, store, contracts)
    cells = result.cells
    assert len(cells) == 12 and all(c.ok for c in cells), [c.error for c in cells if c.error]
    assert sync_calls(answering_stub) == plan.estimate.calls == 15  # 3 retrievals, 12 answers
    by = {(c.document.split("/")[-1], c.column): c for c in cells}
    assert [by[("alpha.txt", i)].answer for i in range(4)] == ["Delaware", "2020-03-01", "Yes", "$2,000,000"]
    assert [by[("beta.txt", i)].answer for i in range(4)] == [
        "New York",
        "2002-11-01",
        "the model says the document does not state it",  # a yes/no without a clause: never "No"
        "$500,000",
    ]
    assert by[("beta.txt", 2)].absent_by == "model" and by[("beta.txt", 2)].correct is None
    assert (
        by[("gamma.txt", 3)].answer == "the model says the document does not state it"
        and by[("gamma.txt", 3)].correct is None
    )
    assert sum(c.correct is True for c in cells) == 9 and by[("gamma.txt", 0)].correct is False
    for c in cells:
        assert c.is_llm and all(x.quote_check == "verified" and x.page in (1, 2) for x in c.citations)
        assert bool(c.citations) == c.found
    for trace in result.traces:
        assert sum(c.cost_usd for c in cells if c.run_id == trace.run_id) == pytest.approx(trace.cost_usd)
    priced = provider != "openai-compatible"  # a compatible server's calls are assumed free
    assert (result.paid_usd > 0) is priced and (sum(c.cost_usd for c in cells) > 0) is priced
    assert sum(c.paid_usd for c in cells) == pytest.approx(result.paid_usd)
    # the same grid again over the same store: every reply from the store, nothing sent or paid
    before = len(answering_stub.requests)
    again = review(plan, stub_engine(provider, answering_stub).client(), concurrency=4,
                   key=parse_answer_key(ANSWERS_CSV), store=store)  # fmt: skip
    assert len(answering_stub.requests) == before and again.paid_usd == 0
    assert grid(again.cells) == grid(cells)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_batch_mode_sends_one_batch_per_phase_at_half_the_price(
    provider: str, store: SQLiteStore, tmp_path: Path, contracts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RR_BATCH_POLL_S", "0.2")
    with StubServer(responder) as stub:
        stub.batch_auto_complete = True
        plan, batched = stub_review(provider, stub, store, contracts, mode="batch")
        assert created_batches(stub) == 2 and sync_calls(stub) == 0  # retrievals, then answers
        assert sum(stub.batch_submissions.values()) == plan.estimate.calls
    with StubServer(responder) as stub:
        _, now = stub_review(provider, stub, SQLiteStore(tmp_path / "now.sqlite3"), contracts)
        assert created_batches(stub) == 0
    assert grid(batched.cells) == grid(now.cells)
    assert batched.paid_usd == pytest.approx(now.paid_usd / 2, rel=1e-6)
    assert (batched.paid_usd > 0) is (provider != "openai-compatible")  # a compatible server: assumed free
    for b, n in zip(sorted(batched.cells, key=cell_key), sorted(now.cells, key=cell_key), strict=True):
        assert b.cost_usd == pytest.approx(n.cost_usd / 2, rel=1e-6, abs=1e-12)


def long_contracts(folder: Path) -> Path:
    """Two contracts long enough for a provider's prompt cache (its whole text over 1,024 tokens)."""
    folder.mkdir()
    for i, state in enumerate(("Delaware", "Ohio")):
        pages = [f"Master services agreement {i}, schedule page {p}. Services are delivered weekly. " * 30
                 for p in range(8)]  # fmt: skip
        pages[5] += f" This Agreement is governed by the laws of the State of {state}."
        (folder / f"long{i}.pdf").write_bytes(make_pdf(pages))
    return folder


@pytest.mark.parametrize("mode", ["now", "batch"])
def test_a_grid_marks_for_the_prompt_cache_only_prefixes_another_call_reads(
    mode: str, store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the question after the document: R&R asks each document once (one retrieval pass
    for all columns), so nothing would read that pass's prefix: it is sent unmarked, with no
    1.25x cache write and, in a batch, in the batch (not ahead at the full price to warm a cache).
    The baseline asks each column in a run of its own over the same document: the first run
    writes the document, the others read it. The estimate says what the runner does."""
    monkeypatch.setenv("RR_BATCH_POLL_S", "0.2")
    files = read([long_contracts(tmp_path / "long")], store)
    engine = Engine("anthropic", PROVIDERS["anthropic"][0], api_key="sk-test-review")  # its settings
    counter = counter_for_model(engine.counting_model())
    columns = parse_columns(COLUMNS_CSV)
    seen: dict[str, tuple[int, int]] = {}
    for method in ("rr", "baseline"):
        settings = parse_spec(f"{method}:layout=cache-aware", engine.settings(method=method))
        plan = plan_grid(files, columns, settings, counter, store=store, tokenizer=engine.counting_model())
        sharing = prefix_sharing(plan.jobs)
        assert all(sharing(job) is (method == "baseline") for job in plan.jobs)
        with StubServer(prompt_cache=True) as stub:
            stub.batch_auto_complete = True
            result = review(plan, stub_engine("anthropic", stub).client(counter), concurrency=2, store=store,
                            mode=mode)  # fmt: skip
            cache = stub.prompt_cache
            assert cache is not None
            seen[method] = (cache.writes, cache.reads)
            sent_now = sync_calls(stub)
        assert len(result.cells) == 2 * len(columns) and all(c.ok for c in result.cells), [
            c.error for c in result.cells if c.error
        ]
        estimate = plan.estimate
        if method == "rr":
            assert estimate.cacheable_tokens == 0
            assert estimate.cached_cost.total_usd == pytest.approx(estimate.cost.total_usd)
            assert estimate.batch_cost.total_usd == pytest.approx(estimate.cost.total_usd / 2)
            if mode == "batch":
                assert sent_now == 0  # no call sent ahead of its batch
        else:
            assert estimate.cacheable_tokens > 0
            assert estimate.cached_cost.total_usd < estimate.cost.total_usd
            # Each document's first run is sent ahead of the batch at the list price: priced so.
            assert estimate.batch_cost.total_usd > estimate.cached_cost.total_usd / 2
            if mode == "batch":
                assert sent_now == 2
    assert seen["rr"] == (0, 0)
    # R&R with the baseline compared on one row: the baseline's runs over that document share
    # it (one write, the other columns read); R&R's retrieval passes are still unmarked.
    settings = parse_spec("rr:layout=cache-aware", engine.settings(method="rr"))
    compare = parse_spec("baseline:layout=cache-aware", engine.settings(method="baseline"))
    fresh = SQLiteStore(tmp_path / "mixed.sqlite3")  # no reply stored yet
    mixed = plan_grid(read([tmp_path / "long"], fresh), columns, settings, counter, store=fresh,
                      tokenizer=engine.counting_model(), compare=compare, compare_rows=1)  # fmt: skip
    sharing = prefix_sharing(mixed.jobs)
    assert [sharing(j) for j in mixed.jobs] == [j.meta["role"] == COMPARE for j in mixed.jobs]
    with StubServer(prompt_cache=True) as stub:
        stub.batch_auto_complete = True
        done = review(
            mixed, stub_engine("anthropic", stub).client(counter), concurrency=2, store=fresh, mode=mode
        )
        assert len(done.cells) == 3 * len(columns) and all(c.ok for c in done.cells)
        assert stub.prompt_cache is not None and stub.prompt_cache.writes == 1
    if mode == "now":
        assert seen["baseline"] == (2, 2 * (len(columns) - 1))  # per document: one write, the rest read
    else:  # a batch's calls are sent together: the first of each document ahead, the rest read it
        assert seen["baseline"][0] == 2 and seen["baseline"][1] >= 2 * (len(columns) - 1)


def test_a_failed_job_gives_failed_cells_and_a_retry_asks_only_those(
    store: SQLiteStore, contracts: Path
) -> None:
    broken = {"on": True}

    def failing(path: str, body: Any) -> Any:
        from tests.stub_server import prompt_of

        if broken["on"] and "GAMMA SUPPLY AGREEMENT" in prompt_of(body):
            return server_error(400, "The model refused this document.")
        return responder(path, body)

    with StubServer(failing) as stub:
        plan, result = stub_review("openai", stub, store, contracts)
        failed = [c for c in result.cells if c.error]
        assert len(failed) == 4 and {c.document for c in failed} == {"contracts/gamma.txt"}
        assert all(
            "refused this document" in (c.error or "") and c.answer == "" and c.correct is None
            for c in failed
        )
        assert all(c.status == "failed" for c in failed)
        assert sum(1 for c in result.cells if c.ok) == 8
        assert scores_json(plan, result.cells)[MAIN]["all"]["failed"] == 4
        broken["on"] = False
        before = len(stub.requests)
        retry = retry_jobs(plan, failed)
        assert len(retry) == 4 and all(len(j.questions) == 1 for j in retry)
        again = review(plan, stub_engine("openai", stub).client(), concurrency=4, jobs=retry,
                       key=parse_answer_key(ANSWERS_CSV), store=store)  # fmt: skip
        sent = stub.requests[before:]
        assert sent and all("GAMMA SUPPLY AGREEMENT" in str(r.body) for r in sent)  # only the failed row
        assert len(again.cells) == 4 and all(c.ok for c in again.cells)
        assert sorted(c.column for c in again.cells) == [0, 1, 2, 3]
        assert {c.answer for c in again.cells} >= {"California", "2008-06-02", "Yes"}


def test_export_rows_say_what_they_answer_and_are_formula_safe(store: SQLiteStore, tmp_path: Path) -> None:
    from rr_core.review.export import review_csv

    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "=cmd.txt").write_text(
        "\f".join(
            ['=HYPERLINK("x") This Agreement shall be governed by the laws of the State of Ohio.', "p2"]
        )
    )
    files = read([folder / "=cmd.txt"], store)
    plan = plan_grid(files, [Column("Which law governs?")], Engine.choose("offline").settings(method="rr"),
                     counter_for_model(MODEL), store=store)  # fmt: skip
    result = review(
        plan,
        engine_client("offline", model="offline", counter=counter_for_model(MODEL)),
        concurrency=1,
        store=store,
    )
    rows = list(csv.DictReader(io.StringIO(review_csv(plan, result.cells))))
    assert len(rows) == 1
    (row,) = rows
    assert row["document"] == "'=cmd.txt"  # kept as text, not run as a formula
    assert row["question"] == "Which law governs?" and row["document_sha256"] == files[0].sha256
    assert row["engine"].endswith("(not an LLM)") and row["paid_usd"] in ("0", "0.0")
    assert not any(v.startswith(("=", "+", "@")) for v in row.values() if v)


def test_the_workbook_keeps_every_text_as_text_verbatim_with_frozen_headers_and_filters(
    store: SQLiteStore, tmp_path: Path
) -> None:
    import dataclasses

    from openpyxl import load_workbook

    from rr_core.plans import Citation
    from rr_core.review.export import review_xlsx

    folder = tmp_path / "evil"
    folder.mkdir()
    name = "=cmd\u202etxt.exe.txt"  # a right-to-left override: the name would read "=cmdexe.txt.txt"
    (folder / name).write_text("This Agreement shall be governed by the laws of the State of Ohio.\fp2")
    files = read([folder / name], store)
    question = '=HYPERLINK("http://evil.example","click")'
    plan = plan_grid(files, [Column(question)], Engine.choose("offline").settings(method="rr"),
                     counter_for_model(MODEL), store=store)  # fmt: skip
    result = review(
        plan,
        engine_client("offline", model="offline", counter=counter_for_model(MODEL)),
        concurrency=1,
        store=store,
    )
    quote = "=SUM(A1:A9) and -3, verbatim"
    cells = [
        dataclasses.replace(
            c,
            answer="#N/A",
            citations=(Citation(page=1, quote=quote, page_label="=2+5", quote_check="verified"),),
        )
        for c in result.cells
    ]
    book = load_workbook(io.BytesIO(review_xlsx(plan, cells)))
    assert book.sheetnames == ["Answers", "Quotes", "Scores", "Costs and settings"]
    texts = [c for sheet in book for row in sheet.iter_rows() for c in row if isinstance(c.value, str)]
    assert texts and not [c.coordinate for c in texts if c.data_type != "s"]  # no formula, no error value
    shown = "=cmd\u2039U+202E\u203atxt.exe.txt"  # the override written as its code, on screen and here
    assert files[0].name == shown
    answers = book["Answers"]
    assert answers["D1"].value == f"{question} [text]" and answers["D1"].quotePrefix
    assert answers["A2"].value == files[0].name and answers["E2"].value.startswith("p. 1 (printed =2+5)")
    quotes = {h.value: c for h, c in zip(book["Quotes"][1], book["Quotes"][2], strict=True)}
    assert quotes["Quote"].value == quote and quotes["Quote"].quotePrefix  # verbatim: no apostrophe added
    assert quotes["Printed label"].value == "=2+5" and quotes["Answer"].value == "#N/A"
    assert quotes["Question"].value == question and quotes["Document"].value == files[0].name
    for sheet in book:
        assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref.startswith("A1:")
    assert book["Quotes"].auto_filter.ref == "A1:J2"
    assert book["Costs and settings"].auto_filter.ref == "A1:I2"  # the table, not the settings below it


def test_settings_of_roles_and_unknown_roles_fall_back_to_main(store: SQLiteStore, contracts: Path) -> None:
    plan = plan_for(read([contracts], store), store)
    assert plan.settings_of(COMPARE) == plan.settings and isinstance(plan.settings, RunSettings)


# ---- the offline reader's yes/no answers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "question", "found"),
    [
        ("alpha.txt", "May a party terminate this agreement for convenience, without cause?", True),
        ("alpha.txt", "Is either party's liability capped?", True),
        ("beta.txt", "May a party terminate this agreement for convenience, without cause?", False),
        ("alpha.txt", "Does the agreement restrict assignment without the other party's consent?", False),
        ("alpha.txt", "Does the agreement contain a non-compete clause?", False),
    ],
)
def test_the_offline_reader_says_yes_from_the_two_pages_an_answer_call_is_sent(
    name: str, question: str, found: bool
) -> None:
    """R&R's answer call sends only the retrieved pages: a word of the question that none of
    them holds ("without cause") must not hide the provision that is there."""
    from rr_core.reader import read_answer
    from tests.review_kit import contract_pages

    pages = list(enumerate(contract_pages(name), start=1))[:2]
    reading = read_answer(Column(question, AnswerType.YES_NO).prompt, pages)
    assert reading.found is found
    if found:
        assert reading.answer == "Yes" and [c.page for c in reading.citations] == [2]
        assert reading.citations[0].quote in pages[1][1]
