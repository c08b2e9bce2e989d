"""The floor for ``python -m rr_core pages``: the least any program must do for that output.

Open the PDF with pymupdf, take each page's text, count its tokens with tiktoken, print a
line per page. Nothing is kept but the running total. ``--plain-import`` imports pymupdf as
it comes (its import also loads ``pymupdf.layout`` with onnxruntime, and ``pymupdf4llm``,
which this work never uses); by default those add-ons are not loaded: the true floor.

    python benchmarks/floor_pages.py FILE.pdf [--plain-import]
"""

from __future__ import annotations

import sys


def main(path: str, plain_import: bool) -> None:
    if not plain_import:
        sys.modules["pymupdf.layout"] = None  # type: ignore[assignment]
        sys.modules["pymupdf4llm"] = None  # type: ignore[assignment]
    import pymupdf
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    doc = pymupdf.open(path)
    total = 0
    lines = []
    for index, page in enumerate(doc):
        text = page.get_text()
        tokens = len(encoding.encode_ordinary(text))
        total += tokens
        lines.append(f"  page {index + 1:>4}  {tokens:>7,} tokens  {len(text):>8,} chars")
    print(f"{path}: {doc.page_count} pages, {total:,} tokens")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1], "--plain-import" in sys.argv[2:])
