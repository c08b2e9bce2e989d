"""Prompt caching on the stubs: 20 questions, one at a time, over one ~100k-token document.

For each provider (Anthropic priced as claude-sonnet-5-5, OpenAI as gpt-4.1-mini) and each
layout (the R&R paper's, and the cache-aware one), every method asks each question in its
own plan, all handed to one executor at once: its dispatch chain sends the first call of each
shared prefix alone and the rest once its reply has come back. The stubs simulate the providers' prompt caches
and bill in the same tokens the plans count (tiktoken where it loads). Printed per case: the
estimate without and with expected caching, what the stubs billed, the estimate's error, the
share of cacheable input billed as cache reads, the cost of cached input apart, and the
batch-mode estimate. Asserts nothing.

    python benchmarks/bench_caching.py [--questions 20] [--pages 250]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import stub_server  # noqa: E402
from stub_server import StubServer  # noqa: E402

from rr_core.documents import Document, document_from_texts  # noqa: E402
from rr_core.llm import make_client  # noqa: E402
from rr_core.methods import plan_method  # noqa: E402
from rr_core.plans import Plan, estimate_calls  # noqa: E402
from rr_core.runs import Executor, RunTrace  # noqa: E402
from rr_core.settings import QuestionPlacement, RunSettings  # noqa: E402
from rr_core.tokens import counter_for_model  # noqa: E402

METHODS = ("baseline", "reprompt", "rr")
PROVIDERS = (("anthropic", "claude-sonnet-5-5"), ("openai", "gpt-4.1-mini"))
LAYOUTS = (QuestionPlacement.BEFORE_AND_AFTER, QuestionPlacement.CACHE_AWARE)
WORDS = (
    "the tenant landlord premises clause schedule notice payment period party agreement term "
    "lease shall may any such under this which within days written consent rent deposit repair "
    "insurance liability default remedy assignment renewal option breach cure interest rate"
).split()


def document(pages: int, counter: object) -> Document:
    rng = random.Random(7)
    texts = []
    for n in range(pages):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."
            for _ in range(30)
        ]
        texts.append(f"Section {n + 1}. " + " ".join(sentences))
    return document_from_texts("bench-lease.txt", texts, counter=counter)  # type: ignore[arg-type]


def run(stub: StubServer, provider: str, model: str, doc: Document, plans: list[Plan]) -> list[RunTrace]:
    url = stub.anthropic_url if provider == "anthropic" else stub.url
    client = make_client(provider, model=model, api_key="sk-bench", base_url=url, max_retries=0)
    with Executor(client, concurrency=8) as executor:  # all at once: the dispatch chain orders them
        return executor.run(doc, plans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--pages", type=int, default=250)
    args = parser.parse_args()
    counter = counter_for_model("gpt-4.1-mini")
    stub_server.TOKENIZER = counter.count
    doc = document(args.pages, counter)
    questions = [f"What does clause {i + 1} say about the notice period?" for i in range(args.questions)]
    print(
        f"document: {len(doc.pages)} pages, {doc.total_tokens:,} tokens ({counter.label}); {len(questions)} questions"
    )
    print(
        "methods:",
        ", ".join(METHODS),
        "— one plan per question, all run at once (8 calls in flight; the chain sends each shared prefix first alone)",
    )
    header = (
        f"{'provider':<10} {'layout':<17} {'est. plain':>10} {'est. cached':>11} {'billed':>9} "
        f"{'est/bill':>8} {'cached in':>9} {'reads/cacheable':>15} {'cached $':>9} {'batch est':>9}"
    )
    print(header)
    for provider, model in PROVIDERS:
        for layout in LAYOUTS:
            settings = RunSettings(model=model, provider=provider, question_placement=layout)
            plans = [plan_method(doc, q, settings.but(method=m), counter) for m in METHODS for q in questions]
            ordered = [c for m in METHODS for p in plans if p.method == m for c in p.calls]
            plain = estimate_calls(ordered, settings)
            cached = estimate_calls(ordered, settings, caching=True)
            batch = estimate_calls(ordered, settings, caching=True, mode="batch")
            with StubServer(prompt_cache=True) as stub:
                traces = run(stub, provider, model, doc, plans)
            calls = [c for t in traces for c in t.calls]
            billed = sum(t.cost_usd for t in traces)
            reads = sum(c.usage.cached_tokens for c in calls)
            prompt = sum(c.usage.prompt_tokens for c in calls)
            cacheable = cached.cached_tokens  # what the estimate expects to be read
            cached_usd = sum(c.cached_cost_usd for c in calls)
            share = f"{reads / cacheable:.0%}" if cacheable else "—"
            print(
                f"{provider:<10} {layout.value:<17} {plain.usd:>10.4f} {cached.usd:>11.4f} {billed:>9.4f} "
                f"{cached.usd / billed:>8.3f} {reads / prompt:>9.0%} {share:>15} {cached_usd:>9.4f} {batch.usd:>9.4f}"
            )
    print("est/bill: the estimate with expected caching over what the stubs billed (1.000 = exact).")
    print(
        "cached in: share of all input tokens billed as cache reads; reads/cacheable: against those expected."
    )


if __name__ == "__main__":
    main()
