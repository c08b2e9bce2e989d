"""A document's reading is kept by its OCR option too: the reading without OCR (a page left
empty) and the OCR'd one (that page read) never replace each other, and a grid opens the one it
was read with."""

from __future__ import annotations

from pathlib import Path

import pytest

import rr_core.documents as documents
from rr_core.documents import pdf_from_texts
from rr_core.jobs import DocumentRef
from rr_core.review.corpus import Item, StoredDocuments, read_corpus, reading_key
from rr_core.store import open_store
from rr_core.tokens import counter_for_model

OCR_TEXT = "Read by OCR: the service fee is twelve dollars a month."
MODEL = "gpt-4.1-mini"


@pytest.fixture
def scanned_page(monkeypatch: pytest.MonkeyPatch) -> bytes:
    """A three-page PDF whose second page has no text layer; OCR (stubbed) reads it."""
    monkeypatch.setattr(documents, "ocr_available", lambda: None)
    monkeypatch.setattr(documents, "_ocr_text", lambda page: OCR_TEXT)
    import pymupdf

    doc = pymupdf.open(
        stream=pdf_from_texts(["The first page of the agreement. " * 10, "x", "The end. " * 10])
    )
    doc.delete_page(1)
    doc.new_page(pno=1)  # a page with no text layer at all (a scan's, without its image)
    data: bytes = doc.tobytes()
    doc.close()
    return data


def test_the_reading_without_ocr_and_the_ocrd_one_are_kept_apart(scanned_page: bytes, tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.sqlite3")
    item = Item("scan.pdf", data=scanned_page)
    counter = counter_for_model(MODEL)
    (plain,) = read_corpus([item], store, model=MODEL, processes=1)
    assert plain.empty_pages == 1 and not plain.ocr
    (ocrd,) = read_corpus([item], store, model=MODEL, processes=1, ocr=True)
    assert ocrd.empty_pages == 0 and ocrd.ocr and ocrd.sha256 == plain.sha256
    # Both readings are in the store, under their own keys: the OCR'd one replaced nothing.
    assert store.get_reading(plain.sha256, reading_key(counter.label, False)) is not None
    assert store.get_reading(plain.sha256, reading_key(counter.label, True)) is not None
    # Read again either way: each finds its own reading (nothing parsed again), as it was.
    again_plain, again_ocr = (
        read_corpus([item], store, model=MODEL, processes=1, ocr=o)[0] for o in (False, True)
    )
    assert (again_plain.empty_pages, again_plain.ocr) == (1, False)
    assert (again_ocr.empty_pages, again_ocr.ocr) == (0, True)
    # A grid's job opens the reading its file was read with.
    opened = StoredDocuments(store, counter)
    assert opened.open(plain.ref).document.page(2).text == ""
    assert OCR_TEXT in opened.open(ocrd.ref).document.page(2).text
    assert plain.ref != ocrd.ref and ocrd.ref == DocumentRef.from_dict(ocrd.ref.to_dict())
    assert (
        "ocr" not in plain.to_dict() and ocrd.to_dict()["ocr"] is True
    )  # the calls key without OCR is as before


def test_with_ocr_a_reading_with_every_page_read_is_taken_as_it_is(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    store = open_store(tmp_path / "runs.sqlite3")
    item = Item("text.pdf", data=pdf_from_texts(["A page with text. " * 10, "Another page. " * 10]))
    (plain,) = read_corpus([item], store, model=MODEL, processes=1)

    def never(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("parsed again")

    monkeypatch.setattr("rr_core.review.corpus.read_item", never)
    (with_ocr,) = read_corpus([item], store, model=MODEL, processes=1, ocr=True)
    assert (
        with_ocr == plain and not with_ocr.ocr
    )  # OCR would read nothing: the same reading, not parsed again
