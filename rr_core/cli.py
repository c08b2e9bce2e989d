"""``python -m rr_core``: pages, plan, ask and samples from the command line.

JSON on stdout with ``--json``, a readable table without. A user mistake ends with a
one-line message on stderr and exit code 2; a provider failure with exit code 3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_core.errors import ConfigError, LLMError, MissingKeyError, RRError
from rr_core.llm import DEFAULT_MODELS, PROVIDERS, default_provider, make_client
from rr_core.sources import open_document
from rr_core.tokens import counter_for_model

if TYPE_CHECKING:
    from rr_core.documents import Document
    from rr_core.methods import Method, RunSettings
    from rr_core.runs import CallEvent

# Plans, prices, the runner and the run history are imported by the commands that use them:
# `pages` starts with only what reading a document needs. The method names are spelt out
# here for the same reason (a test holds them to ``Method``).
METHOD_NAMES = "baseline, reprompt, icr, rr, chunked-icr, chunked-rr"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rr_core", description="R&R Studio engine")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub = parser.add_subparsers(dest="command", required=True)

    def document_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", help="a PDF, DOCX, TXT, HTML or Markdown file, or a sample name")
        p.add_argument("--password", help="password of an encrypted PDF")
        p.add_argument("--model", default=None, help="model id (also picks the tokenizer)")
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS)

    p_pages = sub.add_parser("pages", help="the document's pages and token counts")
    document_args(p_pages)

    def method_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--question", "-q", required=True)
        p.add_argument("--interval", type=int, default=10_000, help="reprompt interval k (tokens)")
        p.add_argument("--top-k", type=int, default=5, help="pages to retrieve, N")
        p.add_argument("--chunk-size", type=int, default=20_000, help="chunk size c (tokens)")
        p.add_argument("--price-model", default="", help="price the run as this model")

    p_plan = sub.add_parser("plan", help="the calls and prompts of a method, before running")
    document_args(p_plan)
    method_args(p_plan)
    p_plan.add_argument("--method", "-m", required=True, help=METHOD_NAMES)
    p_plan.add_argument("--provider", default="offline", choices=PROVIDERS)

    p_ask = sub.add_parser("ask", help="run methods and print answers, pages and costs")
    document_args(p_ask)
    method_args(p_ask)
    p_ask.add_argument("--methods", default="baseline,rr", help=f"comma-separated: {METHOD_NAMES}")
    p_ask.add_argument("--provider", default=None, choices=PROVIDERS)
    p_ask.add_argument("--base-url", default=None, help="server URL (openai-compatible)")
    p_ask.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    p_ask.add_argument("--concurrency", type=int, default=8, help="calls in flight at most")
    p_ask.add_argument(
        "--save", action="store_true", help="store the runs in the history the app shows (RR_STUDIO_DB)"
    )

    p_samples = sub.add_parser("samples", help="list the generated samples, or write them out")
    p_samples.add_argument("--write", metavar="DIR", help="write each sample as PDF and its QA as JSON")
    p_samples.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    return parser


def _method(name: str) -> Method:
    from rr_core.methods import Method

    try:
        return Method(name.strip())
    except ValueError:
        raise ConfigError(f"unknown method {name!r}; choose from: {METHOD_NAMES}") from None


def _open(args: argparse.Namespace, model: str) -> Document:
    return open_document(args.file, password=args.password, counter=counter_for_model(model))


def _settings(args: argparse.Namespace, method: Method, provider: str, model: str) -> RunSettings:
    from rr_core.methods import RunSettings

    price_model = args.price_model or ("gpt-4.1-mini" if provider == "offline" else "")
    return RunSettings(
        method=method,
        reminder_every=args.interval,
        top_k=args.top_k,
        chunk_size=args.chunk_size,
        model=model,
        provider=provider,
        price_model=price_model,
    )


def cmd_pages(args: argparse.Namespace) -> dict[str, Any]:
    """The pages of a document."""
    document = _open(args, args.model or "")
    return {
        "file": document.name,
        "kind": document.kind,
        "tokenizer": document.tokenizer,
        "approximate_tokens": document.approximate_tokens,
        "total_tokens": document.total_tokens,
        "warnings": list(document.warnings),
        "pages": [
            {"number": p.number, "tokens": p.tokens, "chars": p.chars, "has_text": p.has_text}
            for p in document.pages
        ],
    }


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The plan of one method."""
    from rr_core.costs import price_data_version
    from rr_core.methods import plan_method, render_prompt

    provider = args.provider
    model = args.model or DEFAULT_MODELS[provider]
    document = _open(args, model)
    counter = counter_for_model(model)
    plan = plan_method(
        document, args.question, _settings(args, _method(args.method), provider, model), counter
    )
    calls = []
    for call in plan.calls:
        calls.append(
            {
                "stage": call.stage,
                "chunk": call.chunk,
                "pages": list(call.pages),
                "reminders_after_pages": list(call.reminders_after),
                "leading_reminders": call.leading_reminders,
                "prompt_tokens": call.prompt_tokens,
                "reminder_tokens": call.reminder_tokens,
                "prompt": None if call.pending else render_prompt(document, call),
                "pending": call.pending,
            }
        )
    est = plan.estimate
    return {
        "method": plan.method.value,
        "file": document.name,
        "tokenizer": document.tokenizer,
        "total_tokens": document.total_tokens,
        "chunks": [[c.start, c.stop - 1] for c in plan.chunks],
        "calls": calls,
        "estimate": {
            "calls": est.calls,
            "input_tokens": est.input_tokens,
            "output_tokens": est.output_tokens,
            "reminder_tokens": est.reminder_tokens,
            "usd": round(est.usd, 6),
            "priced_as": plan.settings.pricing[0],
            "price_known": est.cost.known,
            "price_data": price_data_version(),
        },
    }


def cmd_ask(args: argparse.Namespace) -> dict[str, Any]:
    """Run methods on a document."""
    from rr_core.costs import price_data_version
    from rr_core.ledger import Ledger
    from rr_core.runs import run_methods

    provider = args.provider or default_provider()
    model = args.model or DEFAULT_MODELS[provider]
    document = _open(args, model)
    counter = counter_for_model(model)
    methods = [_method(m) for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise ConfigError(f"name at least one method: {METHOD_NAMES}")
    client = make_client(provider, model=model, base_url=args.base_url, timeout_s=args.timeout)

    def progress(event: CallEvent) -> None:
        if not args.json and event.status != "started":
            chunk = f" chunk {event.chunk}" if event.chunk else ""
            print(f"  {event.method}: {event.stage}{chunk} {event.status}", file=sys.stderr)

    traces = run_methods(
        document,
        args.question,
        [_settings(args, m, provider, model) for m in methods],
        client,
        counter,
        max_concurrency=args.concurrency,
        on_event=progress,
    )
    results = []
    for t in traces:
        results.append(
            {
                "method": t.method,
                "answer": t.answer,
                "page": t.page,
                "retrieved_pages": t.retrieved_pages,
                "dropped_pages": t.dropped_pages,
                "calls": [
                    {
                        "stage": c.stage,
                        "chunk": c.chunk,
                        "pages": c.pages,
                        "reminders_after_pages": c.reminders_after,
                        "usage": asdict(c.usage),
                        "cost_usd": c.cost_usd,
                        "latency_s": c.latency_s,
                        "error": c.error,
                    }
                    for c in t.calls
                ],
                "usage": asdict(t.usage),
                "cost_usd": t.cost_usd,
                "estimate_usd": t.estimate_usd,
                "latency_s": t.latency_s,
                "warnings": t.warnings,
                "error": t.error,
                "error_kind": t.error_kind,
            }
        )
    batch = Ledger().save_batch(traces) if args.save else None
    return {
        "file": document.name,
        "question": args.question,
        "batch": batch,
        "provider": provider,
        "model": model,
        "is_llm": client.is_llm,
        "priced_as": _settings(args, methods[0], provider, model).pricing[0],
        "price_data": price_data_version(),
        "results": results,
    }


def cmd_samples(args: argparse.Namespace) -> dict[str, Any]:
    """List the generated samples, or write them to a folder."""
    from rr_core import samples
    from rr_core.documents import pdf_from_texts

    out = []
    for name in samples.list_samples():
        sample = samples.get_sample(name)
        entry: dict[str, Any] = {
            "name": name,
            "title": sample.title,
            "pages": len(sample.pages),
            "questions": [
                {"question": q.question, "answers": list(q.answers), "page": q.page} for q in sample.questions
            ],
        }
        if args.write:
            folder = Path(args.write)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}.pdf").write_bytes(pdf_from_texts(sample.pages, title=sample.title))
            (folder / f"{name}.qa.json").write_text(json.dumps(entry["questions"], indent=2))
            entry["written"] = [str(folder / f"{name}.pdf"), str(folder / f"{name}.qa.json")]
        out.append(entry)
    return {"samples": out}


def _print_table(command: str, data: dict[str, Any]) -> None:
    if command == "pages":
        print(
            f"{data['file']}: {len(data['pages'])} pages, {data['total_tokens']:,} tokens ({data['tokenizer']})"
        )
        for w in data["warnings"]:
            print(f"warning: {w}")
        for p in data["pages"]:
            flag = "" if p["has_text"] else "  (no text)"
            print(f"  page {p['number']:>4}  {p['tokens']:>7,} tokens  {p['chars']:>8,} chars{flag}")
    elif command == "plan":
        est = data["estimate"]
        print(f"{data['method']} on {data['file']} ({data['total_tokens']:,} tokens)")
        for c in data["calls"]:
            chunk = f" chunk {c['chunk']}" if c["chunk"] else ""
            pages = f"pages {c['pages'][0]}–{c['pages'][-1]}" if c["pages"] else "pages: after retrieval"
            rem = f", reminders after {c['reminders_after_pages']}" if c["reminders_after_pages"] else ""
            pend = " (pending, estimated)" if c["pending"] else ""
            print(f"  {c['stage']}{chunk}: {pages}, {c['prompt_tokens']:,} tokens{rem}{pend}")
        print(
            f"  total: {est['calls']} calls, {est['input_tokens']:,} input tokens, ~${est['usd']:.4f} as {est['priced_as']}"
        )
    elif command == "ask":
        engine = "" if data["is_llm"] else "  [offline engine: not an LLM]"
        print(f"{data['file']} — {data['question']}{engine}")
        for r in data["results"]:
            if r["error"]:
                print(f"  {r['method']:<12} ERROR: {r['error']}")
                continue
            page = r["page"] if r["page"] is not None else "n/a"
            retrieved = f" retrieved {r['retrieved_pages']}" if r["retrieved_pages"] else ""
            print(
                f"  {r['method']:<12} p.{page:<5} {r['usage']['input_tokens'] + r['usage']['cached_tokens']:>8,} in "
                f"{r['usage']['output_tokens']:>5,} out  ${r['cost_usd']:.4f}{retrieved}"
            )
            print(f"               {r['answer']}")
            for w in r["warnings"]:
                print(f"               warning: {w}")
        if data["batch"]:
            print(f"saved to the history as batch {data['batch']}")
    elif command == "samples":
        for s in data["samples"]:
            print(f"{s['name']:<10} {s['pages']:>4} pages, {len(s['questions'])} questions — {s['title']}")
            for path in s.get("written", []):
                print(f"  wrote {path}")


COMMANDS = {"pages": cmd_pages, "plan": cmd_plan, "ask": cmd_ask, "samples": cmd_samples}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        data = COMMANDS[args.command](args)
    except (MissingKeyError, ConfigError) as exc:  # the user's to fix: a key, a setting
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except RRError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    try:
        if args.json:
            json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
            print()
        else:
            _print_table(args.command, data)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head`: the reader has all it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter shutdown quiet
        return 0
    if args.command == "ask" and any(r["error"] for r in data["results"]):
        return 3 if all(r["error"] for r in data["results"]) else 0
    return 0
