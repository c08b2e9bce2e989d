"""Where documents come from: a file path, uploaded bytes, or a generated sample."""

from __future__ import annotations

from pathlib import Path

from rr_core.documents import Document, document_from_texts, load_document
from rr_core.errors import EmptyDocument
from rr_core.tokens import TokenCounter, counter_for_model

SAMPLE_PREFIX = "sample:"


def sample_document(name: str, counter: TokenCounter | None = None) -> Document:
    """A sample as a document. Its pages are text (the viewer typesets each page as it is shown)."""
    from rr_core.samples import get_sample

    sample = get_sample(name)
    return document_from_texts(sample.title, sample.pages, counter=counter, kind="txt")


def open_document(
    spec: str, *, password: str | None = None, counter: TokenCounter | None = None, ocr: bool = False
) -> Document:
    """Open ``spec``: a path, or a sample name (``contract``, ``sample:contract``); ``ocr``
    reads PDF pages without a text layer by OCR."""
    counter = counter or counter_for_model()
    path = Path(spec)
    if path.exists():
        return load_document(path, password=password, counter=counter, ocr=ocr)
    # The samples are generated (or read) only when no file goes by that name.
    from rr_core.samples import list_samples

    name = spec[len(SAMPLE_PREFIX) :] if spec.startswith(SAMPLE_PREFIX) else spec
    if name in list_samples():
        return sample_document(name, counter)
    samples = ", ".join(list_samples())
    raise EmptyDocument(spec, f"no such file (samples are: {samples})")
