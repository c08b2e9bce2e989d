"""Our plans against the paper's Table 3 (METHOD.md §7): calls and input tokens per chunk size
on an ~80k-token document with k = 10,000 and N = 5, and the reprompt overhead.

    python benchmarks/table3.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rr_core.documents import document_from_texts, split_blocks  # noqa: E402
from rr_core.methods import plan_method  # noqa: E402
from rr_core.samples import get_sample  # noqa: E402
from rr_core.settings import RunSettings  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402

# Paper, Table 3: chunk size -> (calls, ICR input tokens, R&R input tokens, output tokens).
PAPER = {
    10_000: (9, 82_939, None, 322),
    20_000: (5, 81_503, 81_923, 187),
    40_000: (3, 80_763, 81_334, 119),
    80_000: (2, 80_369, 81_041, 84),
}
TARGET = 80_000


def build_document(counter):  # type: ignore[no-untyped-def]
    """Passages of about 100 words (the paper's pages were Wikipedia-sized passages), cut from
    the generated samples, up to but not over 80k tokens."""
    texts = list(get_sample("contract").pages) + list(get_sample("protocol").pages)
    passages = [block for text in texts for block in split_blocks(text, words_per_block=100)]
    pages: list[str] = []
    total = 0
    for passage in passages * 4:
        tokens = counter.count(passage)
        if total + tokens > TARGET:
            break
        pages.append(passage)
        total += tokens
    return document_from_texts("table3", pages, counter=counter)


def main() -> None:
    counter = counter_for_model("gpt-4-turbo")  # the paper counted GPT-4 tokens
    document = build_document(counter)
    question = "What monthly interest rate applies to late payments?"
    base = RunSettings(
        method="baseline", reminder_every=10_000, top_k=5, model="gpt-4-turbo", provider="openai"
    )
    baseline = plan_method(document, question, base, counter).estimate
    reprompt = plan_method(document, question, base.but(method="reprompt"), counter)
    overhead = reprompt.estimate.input_tokens - baseline.input_tokens
    print(f"document: {len(document.pages)} pages, {document.total_tokens:,} tokens ({document.tokenizer})")
    print(
        f"reprompt, k=10,000: {reprompt.reminders} reminders, +{overhead:,} input tokens "
        f"= +{overhead / baseline.input_tokens:.2%} over the baseline's {baseline.input_tokens:,} "
        "(paper: about +1.15% at 80k)"
    )
    print()
    print(
        f"{'chunk c':>8} | {'calls ours':>10} {'paper':>6} | {'ICR in ours':>11} {'paper':>7} | "
        f"{'R&R in ours':>11} {'paper':>7} | {'out (est.)':>10} {'paper':>6}"
    )
    for size, (calls, icr_paper, rr_paper, out_paper) in PAPER.items():
        icr = plan_method(document, question, base.but(method="chunked-icr", chunk_size=size), counter)
        rr = plan_method(document, question, base.but(method="chunked-rr", chunk_size=size), counter)
        rr_text = f"{rr_paper:>7,}" if rr_paper else f"{'—':>7}"
        print(
            f"{size:>8,} | {icr.estimate.calls:>10} {calls:>6} | {icr.estimate.input_tokens:>11,} {icr_paper:>7,} | "
            f"{rr.estimate.input_tokens:>11,} {rr_text} | {icr.estimate.output_tokens:>10} {out_paper:>6}"
        )


if __name__ == "__main__":
    main()
