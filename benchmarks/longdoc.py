"""Long benchmark documents: every page different, built from the generated samples.

A page is one of the samples' pages with its paragraphs rotated (by how many times the
sample pages have been gone through) and a line of its own at the end, so no two pages of
a 3,000-page document share their text: caches keyed by page text get no free hits, as in
a real long document. PDFs are written once per size to the temporary folder and reused.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

QUESTION = "What monthly interest rate applies to late payments?"


def page_texts(pages: int) -> list[str]:
    """``pages`` distinct page texts (contract and protocol pages, varied)."""
    from rr_core.samples import get_sample

    base = list(get_sample("contract").pages) + list(get_sample("protocol").pages)
    out = []
    for i in range(pages):
        paragraphs = base[i % len(base)].split("\n\n")
        turn = (i // len(base)) % len(paragraphs)
        paragraphs = paragraphs[turn:] + paragraphs[:turn]
        paragraphs.append(f"Record {i + 1:05d} of the benchmark binder, copy {i // len(base) + 1}.")
        out.append("\n\n".join(paragraphs))
    return out


def pdf_path(pages: int) -> Path:
    """A PDF of ``pages`` distinct pages, written on first use."""
    path = Path(tempfile.gettempdir()) / f"rr-bench-{pages}p-v1.pdf"
    if not path.exists():
        from rr_core.documents import pdf_from_texts

        data = pdf_from_texts(page_texts(pages), title="Benchmark binder")
        partial = path.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(path)
    return path


if __name__ == "__main__":
    for size in sys.argv[1:] or ["50", "3000"]:
        print(pdf_path(int(size)))
