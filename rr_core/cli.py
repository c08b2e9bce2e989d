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
from typing import Any

from rr_core import samples
from rr_core.costs import price_data_version
from rr_core.documents import Document
from rr_core.errors import ConfigError, LLMError, MissingKeyError, RRError
from rr_core.llm import DEFAULT_MODELS, PROVIDERS, default_provider, make_client
from rr_core.methods import get_method, method_names
from rr_core.plans import Plan
from rr_core.questions import Question, read_questions
from rr_core.runs import CallEvent, RunTrace, run_plans
from rr_core.settings import PARAMS, ReminderPlacement, ReminderStyle, RunSettings
from rr_core.sources import open_document
from rr_core.store import open_store
from rr_core.tokens import counter_for_model

METHOD_NAMES = ", ".join(method_names())


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
        p.add_argument("--question", "-q", action="append", default=[], help="a question (repeat for several)")
        p.add_argument(
            "--questions", metavar="FILE", help="questions, one per line, or a CSV with question,answers,gold_pages"
        )
        for name, flag in (("reminder_every", "--interval"), ("top_k", "--top-k"), ("chunk_size", "--chunk-size")):
            param = PARAMS[name]
            p.add_argument(flag, type=int, default=int(param.default), help=f"{param.label} ({param.symbol}): {param.help}")
        for name in ("rag_chunk_words", "rag_top_k", "brief_top_n", "brief_partition"):
            param = PARAMS[name]
            p.add_argument("--" + name.replace("_", "-"), type=int, default=int(param.default), help=param.help)
        p.add_argument("--gold-pages", default="", help="the page(s) holding the answer, for oracle: 3,4")
        p.add_argument(
            "--reminder-style", default="full", choices=[s.value for s in ReminderStyle], help="ablation (000 Table 6)"
        )
        p.add_argument(
            "--reminder-placement",
            default="interval",
            choices=[s.value for s in ReminderPlacement],
            help="ablation (000 Table 6): every k tokens, all at the beginning, or before --reminder-pages",
        )
        p.add_argument("--reminder-pages", default="", help="pages to put a reminder before (before-pages)")
        p.add_argument("--price-model", default="", help="price the run as this model")

    p_plan = sub.add_parser("plan", help="the calls and prompts of a method, before running")
    document_args(p_plan)
    method_args(p_plan)
    p_plan.add_argument("--method", "-m", required=True, help=f"{METHOD_NAMES}; settings as rr:k=5000")
    p_plan.add_argument("--provider", default="offline", choices=PROVIDERS)

    p_ask = sub.add_parser("ask", help="run methods and print answers, pages and costs")
    document_args(p_ask)
    method_args(p_ask)
    p_ask.add_argument(
        "--methods",
        default="baseline,rr",
        help=f"comma-separated: {METHOD_NAMES}; a method may carry its own settings: rr:k=5000,rr:k=20000",
    )
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


def _pages(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.replace(";", ",").split(",") if p.strip())
    except ValueError:
        raise ConfigError(f"{what} must be page numbers separated by commas, e.g. 3,4 (got {text!r})") from None


# Symbols are case-sensitive where two differ only in case (N: pages kept by R&R; n: BriefContext's
# passages); any other symbol, and every setting's name, is read in any case.
_SYMBOLS = {p.symbol: p.name for p in PARAMS.values()}
_SYMBOLS_ANY_CASE = {
    p.symbol.lower(): p.name
    for p in PARAMS.values()
    if sum(q.symbol.lower() == p.symbol.lower() for q in PARAMS.values()) == 1
} | {p.name: p.name for p in PARAMS.values()}


def _method_spec(spec: str, base: RunSettings) -> RunSettings:
    """``rr`` or ``rr:k=5000:N=3``: a method and the settings it overrides."""
    name, *overrides = spec.strip().split(":")
    settings = base.but(method=get_method(name).name)
    for item in overrides:
        key, _, value = item.partition("=")
        key = key.strip()
        field = _SYMBOLS.get(key) or _SYMBOLS_ANY_CASE.get(key.lower().replace("-", "_"))
        if field is None or not value.strip():
            raise ConfigError(f"{item!r} in {spec!r}: write a setting as k=5000 (one of: k, N, c, w, top, n, g)")
        kind = type(getattr(base, field))
        try:
            settings = settings.but(**{field: kind(value.replace(",", "").replace("_", ""))})
        except ValueError:
            raise ConfigError(f"{item!r} in {spec!r}: {value!r} is not a number") from None
    return settings


def _open(args: argparse.Namespace, model: str) -> Document:
    return open_document(args.file, password=args.password, counter=counter_for_model(model))


def _questions(args: argparse.Namespace) -> list[Question]:
    questions = [Question(q) for q in args.question if q.strip()]
    if args.questions:
        questions += read_questions(Path(args.questions))
    if not questions:
        raise ConfigError("ask a question with -q, or name a file of questions with --questions")
    return questions


def _base_settings(args: argparse.Namespace, provider: str, model: str) -> RunSettings:
    price_model = args.price_model or ("gpt-4.1-mini" if provider == "offline" else "")
    return RunSettings(
        reminder_every=args.interval,
        top_k=args.top_k,
        chunk_size=args.chunk_size,
        rag_chunk_words=args.rag_chunk_words,
        rag_top_k=args.rag_top_k,
        brief_top_n=args.brief_top_n,
        brief_partition=args.brief_partition,
        gold_pages=_pages(args.gold_pages, "--gold-pages"),
        reminder_style=ReminderStyle(args.reminder_style),
        reminder_placement=ReminderPlacement(args.reminder_placement),
        reminder_pages=_pages(args.reminder_pages, "--reminder-pages"),
        model=model,
        provider=provider,
        price_model=price_model,
    )


def plan_questions(
    document: Document, questions: list[Question], settings: RunSettings, counter: object
) -> list[Plan]:
    """Plans for one method over the questions: one plan for all of them where the method
    retrieves for several questions in one pass, else one plan per question."""
    method = get_method(settings.method)
    if len(questions) > 1 and method.several_questions:
        return [method.plan(document, [q.text for q in questions], settings, counter)]  # type: ignore[arg-type]
    plans = []
    for q in questions:
        gold = settings.gold_pages or tuple(q.gold_pages)
        plans.append(method.plan(document, q.text, settings.but(gold_pages=gold), counter))  # type: ignore[arg-type]
    return plans


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


def _plan_json(plan: Plan, document: Document) -> dict[str, Any]:
    est = plan.estimate
    return {
        "method": plan.method,
        "label": plan.label,
        "settings": plan.describe,
        "questions": list(plan.questions),
        "chunks": [[c.start, c.stop - 1] for c in plan.chunks],
        "phases": [
            {
                "stage": phase.stage,
                "estimated": phase.estimated,
                "note": phase.note,
                "steps": [
                    {"id": step.id, "local": step.description}
                    if not hasattr(step, "layout")
                    else {
                        "id": step.id,
                        "stage": step.stage,
                        "chunk": step.chunk,
                        "pages": list(dict.fromkeys(step.pages)),
                        "reminders_after_pages": list(step.reminders_after),
                        "leading_reminders": step.leading_reminders,
                        "prompt_tokens": step.prompt_tokens,
                        "reminder_tokens": step.reminder_tokens,
                        "prompt": None if phase.estimated else step.render(),
                    }
                    for step in phase.steps
                ],
            }
            for phase in plan.phases
        ],
        "notes": list(plan.notes),
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


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The plan of one method (for one question, or several)."""
    provider = args.provider
    model = args.model or DEFAULT_MODELS[provider]
    document = _open(args, model)
    counter = counter_for_model(model)
    settings = _method_spec(args.method, _base_settings(args, provider, model))
    plans = plan_questions(document, _questions(args), settings, counter)
    return {
        "file": document.name,
        "tokenizer": document.tokenizer,
        "total_tokens": document.total_tokens,
        "plans": [_plan_json(p, document) for p in plans],
    }


def cmd_ask(args: argparse.Namespace) -> dict[str, Any]:
    """Run methods on a document."""
    provider = args.provider or default_provider()
    model = args.model or DEFAULT_MODELS[provider]
    document = _open(args, model)
    counter = counter_for_model(model)
    questions = _questions(args)
    base = _base_settings(args, provider, model)
    specs = [m for m in args.methods.split(",") if m.strip()]
    if not specs:
        raise ConfigError(f"name at least one method: {METHOD_NAMES}")
    plans = [p for spec in specs for p in plan_questions(document, questions, _method_spec(spec, base), counter)]
    client = make_client(provider, model=model, base_url=args.base_url, timeout_s=args.timeout)

    def progress(event: CallEvent) -> None:
        if not args.json and event.status != "started":
            chunk = f" chunk {event.chunk}" if event.chunk else ""
            print(f"  {event.label}: {event.stage}{chunk} {event.status}", file=sys.stderr)

    traces = run_plans(document, plans, client, concurrency=args.concurrency, on_event=progress)
    _mark(traces, questions)
    batch = open_store().save_batch(traces) if args.save else None
    return {
        "file": document.name,
        "questions": [q.text for q in questions],
        "question": questions[0].text,
        "batch": batch,
        "provider": provider,
        "model": model,
        "is_llm": client.is_llm,
        "priced_as": base.pricing[0],
        "price_data": price_data_version(),
        "results": [t.to_dict(prompts=False) for t in traces],
    }


def _mark(traces: list[RunTrace], questions: list[Question]) -> None:
    """Where the right answers are known (a questions file), mark each outcome right or wrong."""
    from rr_core.metrics import mark_outcome

    known = {q.text: q for q in questions if q.answers}
    for trace in traces:
        for outcome in trace.outcomes:
            q = known.get(" ".join(outcome.question.split()))
            if q is not None:
                mark_outcome(outcome, q.answers, q.gold_pages)


def cmd_samples(args: argparse.Namespace) -> dict[str, Any]:
    """List the generated samples, or write them to a folder."""
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
        for plan in data["plans"]:
            est = plan["estimate"]
            settings = f" ({plan['settings']})" if plan["settings"] else ""
            print(f"{plan['label']}{settings} on {data['file']} ({data['total_tokens']:,} tokens)")
            for phase in plan["phases"]:
                for c in phase["steps"]:
                    if "local" in c:
                        print(f"  {phase['stage']}: {c['local']} (local, no LLM call)")
                        continue
                    chunk = f" chunk {c['chunk']}" if c["chunk"] else ""
                    pages = f"pages {c['pages'][0]}–{c['pages'][-1]}" if c["pages"] and not phase["estimated"] else "pages: after the phase before"
                    rem = f", reminders after {c['reminders_after_pages']}" if c["reminders_after_pages"] else ""
                    pend = " (estimated)" if phase["estimated"] else ""
                    print(f"  {c['stage']}{chunk}: {pages}, {c['prompt_tokens']:,} tokens{rem}{pend}")
            print(
                f"  total: {est['calls']} calls, {est['input_tokens']:,} input tokens, ~${est['usd']:.4f} as {est['priced_as']}"
            )
    elif command == "ask":
        engine = "" if data["is_llm"] else "  [offline engine: not an LLM]"
        print(f"{data['file']}{engine}")
        for r in data["results"]:
            label = r["label"] + (f" ({r['describe']})" if r["describe"] else "")
            if r["error"]:
                print(f"  {label}: ERROR: {r['error']}")
                continue
            usage = r["usage"]
            print(
                f"  {label}: {usage['input_tokens'] + usage['cached_tokens'] + usage['cache_write_tokens']:,} in "
                f"{usage['output_tokens']:,} out  ${r['cost_usd']:.4f}"
            )
            for o in r["outcomes"]:
                page = o["page"] if o["page"] is not None else "n/a"
                mark = "" if o["correct"] is None else ("  [right]" if o["correct"] else "  [wrong]")
                retrieved = f"  retrieved {o['retrieved_pages']}" if o["retrieved_pages"] else ""
                print(f"    Q: {o['question']}")
                print(f"    A: {o['answer']}  (p. {page}; quote {o['quote_check']}){mark}{retrieved}")
            for w in r["warnings"]:
                print(f"    warning: {w}")
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
