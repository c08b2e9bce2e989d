"""Development check of the sample documents: page lengths, tokens, headings, repeated
sentences, where each answer is, and how BM25 ranks the gold pages.

    python scripts/sample_check.py [contract|protocol]

Authoring: pages live in rr_core/data/samples/<name>/pages-*.txt, separated by form feeds
(a line holding only "@@@" is turned into a form feed by --fix)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rr_core.retrieval import BM25, sentences  # noqa: E402
from rr_core.samples import get_sample  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402

HEADING = re.compile(r"^(ARTICLE \d+|SCHEDULE [A-Z]+|\d+(\.\d+)*\.?)\s+\S.*$")


def fix(name: str) -> None:
    for part in sorted((ROOT / "rr_core" / "data" / "samples" / name).glob("pages-*.txt")):
        text = part.read_text()
        fixed = re.sub(r"(?m)^@@@\s*$", "\f", text)
        if fixed != text:
            part.write_text(fixed)


def check(name: str) -> None:
    get_sample.cache_clear()
    sample = get_sample(name)
    counter = counter_for_model("gpt-4o")
    words = [len(p.split()) for p in sample.pages]
    tokens = counter.count_many(list(sample.pages))
    print(f"{name}: {len(sample.pages)} pages, {sum(words):,} words, {sum(tokens):,} tokens")
    for number, (w, page) in enumerate(zip(words, sample.pages, strict=True), start=1):
        flag = "" if 380 <= w <= 650 else "  <-- length"
        bad = sorted(
            {ch for ch in page if not (ch == "\n" or 32 <= ord(ch) < 127 or 0xA0 <= ord(ch) <= 0xFF)}
        )
        if flag or bad:
            print(f"  p{number}: {w} words {page.splitlines()[0][:60]!r}{flag} {bad if bad else ''}")
    heads = Counter(
        line.strip() for p in sample.pages for line in p.splitlines() if HEADING.match(line.strip())
    )
    firsts = Counter(p.splitlines()[0] for p in sample.pages)
    print("  repeated headings:", [h for h, c in heads.items() if c > 1] or "none")
    print("  repeated first lines:", [h for h, c in firsts.items() if c > 1] or "none")
    sents = Counter(
        " ".join(s.lower().split()) for p in sample.pages for s in sentences(p) if len(s.split()) >= 6
    )
    print("  repeated sentences:", [s[:80] for s, c in sents.items() if c > 1] or "none")
    index = BM25(list(sample.pages))
    top1 = top5 = 0
    for q in sample.questions:
        first = q.answers[0].lower()
        where = [i + 1 for i, p in enumerate(sample.pages) if first in p.lower()]
        ranks = index.rank(q.question, 10)
        rank = ranks.index(q.page - 1) + 1 if q.page - 1 in ranks else None
        top1 += rank == 1
        top5 += rank is not None and rank <= 5
        print(f"  p{q.page:>3} (answer on {where}) BM25 rank {rank}: {q.question}")
    print(f"  BM25 gold page first: {top1}/{len(sample.questions)}; in top 5: {top5}/{len(sample.questions)}")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["contract", "protocol"]:
        fix(name)
        check(name)
