"""``python -m rr_core``: pages, plan, ask and samples from the command line.

JSON on stdout with ``--json``, a readable table without. Exit codes:

- 0: done (for ``ask`` and ``lab``: every run answered, and what was to be stored was stored);
- 2: a user mistake (a file, a setting, a missing key, a budget with no known price, an output
  path that cannot be written): one line on stderr, nothing run;
- 3: a provider failure: every method of ``ask`` (every run of ``lab``) failed (or the call
  could not be made); ``lab`` says on stderr each reason once, with how many runs it stopped;
- 4: partly failed: some runs answered, others failed or were not sent because the budget cap
  (``--max-usd``) was reached (the errors are printed);
- 5: not saved: ``ask --save`` printed the results but could not store them in the history,
  ``lab`` could not keep a reply in the run store (it stopped sending; what it paid is printed),
  or ``review`` printed the grid but could not write ``--csv``/``--xlsx`` (checked before the run);
- 130: interrupted (Ctrl-C), 143: terminated (SIGTERM): no further call is sent; the calls in
  flight are waited for. ``lab`` keeps their replies in the run store; ``ask`` prints the
  results with them (and with ``--save`` stores them in the history and the run store). A
  second signal, or a hard kill, loses them.

An OpenAI-compatible server gets a key only when one is given for it: ``--api-key-env VAR``
names the environment variable that holds it (``RR_COMPAT_API_KEY`` by default, but not for a
``--base-url`` other than the server ``OPENAI_BASE_URL`` names). A key is never taken on the
command line, where shells and process lists keep it. ``--base-url`` with ``--provider openai``
or ``anthropic`` needs ``--api-key-env`` too: the configured key is never sent to another
server (``rr_core.llm.config``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rr_core.errors import ConfigError, LLMError, MissingKeyError, RRError
from rr_core.llm import ALL_PROVIDERS, PROVIDERS, get_provider
from rr_core.llm.config import COMPAT_KEY_VAR, command_line_compat_key
from rr_core.quotes import check_words
from rr_core.settings import (
    LAYOUTS,
    PARAMS,
    PromptProtocol,
    QuestionPlacement,
    ReminderPlacement,
    ReminderStyle,
    RunSettings,
)
from rr_core.sources import open_document
from rr_core.tokens import counter_for_model
from rr_core.untrusted import plain_name

if TYPE_CHECKING:
    from rr_core.documents import Document
    from rr_core.llm import LLMClient
    from rr_core.plans import Plan
    from rr_core.questions import Question
    from rr_core.review.corpus import Passwords
    from rr_core.runs import CallEvent, Runner
    from rr_core.tokens import TokenCounter
    from rr_core.workbench import Engine

# Plans, prices, the runner and the run store are imported by the commands that use them:
# `pages` starts with only what reading a document needs. The method names are spelt out
# here for the same reason (a test holds them to the registry).
METHOD_NAMES = (
    "baseline, reprompt, icr, rr, chunked-icr, chunked-rr, reprompt-before-answer, rag, self-route, briefcontext, "
    "question-last, repeat, closed-book, oracle"
)
PRESET_NAMES = (
    "quick, paper-grid, lost-in-the-middle, key-value, reprompt-interval, chunk-size, ablations, cache-aware"
)

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_PROVIDER = 3
EXIT_PARTIAL = 4
EXIT_NOT_SAVED = 5


def _check(args: argparse.Namespace) -> None:
    """Settings argparse lets through that cannot work: one-line errors (exit 2)."""
    timeout = getattr(args, "timeout", None)
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise ConfigError(f"--timeout {timeout:g}: give the seconds each call may take, a number above 0")
    concurrency = getattr(args, "concurrency", None)
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"--concurrency {concurrency}: give how many calls may be in flight, at least 1")
    budget = getattr(args, "max_usd", None)
    if budget is not None and not (math.isfinite(budget) and budget >= 0):
        raise ConfigError(f"--max-usd {budget:g}: give the most to spend in US dollars, 0 or more")
    reach = getattr(args, "reach", None)
    if reach is not None and reach < 1:
        raise ConfigError(
            f"--reach {reach}: give the tokens the simulated reader sees around instructions, 1 or more"
        )
    variable = getattr(args, "api_key_env", None)
    if variable is not None and not (variable.isidentifier() and variable.isascii()):
        # Not echoed: it may be a key pasted by mistake.
        raise ConfigError(
            "--api-key-env takes the NAME of an environment variable that holds the key, not the key"
        )
    for option in ("--csv", "--xlsx", "--trials-csv", "--jobs-out"):
        path = getattr(args, option[2:].replace("-", "_"), None)
        if path:
            _check_writable(option, path)


def _check_writable(option: str, path: str) -> None:
    """Refuse an output file that cannot be written, before anything is read or paid for (the
    file is opened for appending, and removed again when this made it)."""
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{option} {path}: that is a folder; give a file name. Nothing was read or sent.")
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
        if not existed:
            target.unlink()
    except OSError as exc:
        raise ConfigError(
            f"{option} {path}: cannot write there ({exc.strerror or exc}). Nothing was read or sent."
        ) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rr_core", description="R&R Studio engine")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--user",
        metavar="NAME",
        default=None,
        help="whose runs, replies and batches to use (default: $RR_STUDIO_USER; with a SQLite store, "
        "the local user; required with a PostgreSQL store, which a team shares)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def user_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--user", metavar="NAME", default=argparse.SUPPRESS, help="as the global --user")

    def document_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", help="a PDF, DOCX, TXT, HTML or Markdown file, or a sample name")
        p.add_argument("--password", help="password of an encrypted PDF")
        p.add_argument(
            "--ocr", action="store_true", help="read PDF pages without a text layer by OCR (needs Tesseract)"
        )
        p.add_argument("--model", default=None, help="model id (also picks the tokenizer)")
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS)

    p_pages = sub.add_parser("pages", help="the document's pages and token counts")
    document_args(p_pages)

    def method_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--question", "-q", action="append", default=[], help="a question (repeat for several)"
        )
        p.add_argument(
            "--questions",
            metavar="FILE",
            help="questions, one per line, or a CSV with question,answers,gold_pages",
        )
        for name, flag in (
            ("reminder_every", "--interval"),
            ("top_k", "--top-k"),
            ("chunk_size", "--chunk-size"),
        ):
            param = PARAMS[name]
            p.add_argument(
                flag,
                type=int,
                default=int(param.default),
                help=f"{param.label} ({param.symbol}): {param.help}",
            )
        for name in ("rag_chunk_words", "rag_top_k", "brief_top_n", "brief_partition"):
            param = PARAMS[name]
            p.add_argument(
                "--" + name.replace("_", "-"), type=int, default=int(param.default), help=param.help
            )
        p.add_argument("--gold-pages", default="", help="the page(s) holding the answer, for oracle: 3,4")
        p.add_argument(
            "--reminder-style",
            default="full",
            choices=[s.value for s in ReminderStyle],
            help="ablation (000 Table 6)",
        )
        p.add_argument(
            "--reminder-placement",
            default="interval",
            choices=[s.value for s in ReminderPlacement],
            help="ablation (000 Table 6): every k tokens, all at the beginning, or before --reminder-pages",
        )
        p.add_argument("--reminder-pages", default="", help="pages to put a reminder before (before-pages)")
        p.add_argument("--price-model", default="", help="price the run as this model")
        verify_args(p)

    def verify_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--verify",
            action="store_true",
            help="check each answer found against its quotes: one more small call per answer (the question, "
            "the answer and the quotes only); nothing more on the offline engine, whose reader judges it",
        )
        p.add_argument(
            "--verify-model",
            default="",
            metavar="MODEL",
            help="the model that checks (a cheaper one of the same provider; default: --model)",
        )

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
    p_ask.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=None,
        help=f"environment variable holding the key for --base-url (default for openai-compatible: {COMPAT_KEY_VAR})",
    )
    p_ask.add_argument(
        "--timeout", type=float, default=120.0, help="deadline per call in seconds, retries included"
    )
    p_ask.add_argument("--concurrency", type=int, default=8, help="calls in flight at most")
    p_ask.add_argument(
        "--max-usd",
        type=float,
        default=None,
        help="budget cap: refuse to start above it, and send no call that would pass it",
    )
    p_ask.add_argument(
        "--save",
        action="store_true",
        help="store the runs in the history the app shows (RR_STUDIO_DB), and each reply in its run store "
        "as it returns (a call asked before is not paid again)",
    )
    user_arg(p_ask)

    p_lab = sub.add_parser("lab", help="measure the methods on test documents with known answers (the Lab)")
    p_lab.add_argument(
        "file", nargs="?", default="", help="the document to plant facts in (planted and questions tasks)"
    )
    p_lab.add_argument("--password", help="password of an encrypted PDF")
    p_lab.add_argument("--model", default=None, help="model id (also picks the tokenizer)")
    p_lab.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    user_arg(p_lab)
    p_lab.add_argument("--preset", default="quick", help=f"one of: {PRESET_NAMES}")
    p_lab.add_argument("--methods", default=None, help="comma-separated method specs (default: the preset's)")
    p_lab.add_argument(
        "--lengths", default=None, help="document lengths in tokens (pairs for key-value): 10000,20000"
    )
    p_lab.add_argument("--depths", default=None, help="depths in percent: 0,25,50,75,100")
    p_lab.add_argument(
        "--repeats", type=int, default=None, help="trials per cell (distracters differ per repeat)"
    )
    p_lab.add_argument("--seed", type=int, default=0)
    p_lab.add_argument(
        "--paraphrase", action="store_true", help="ask paraphrased questions (little word overlap)"
    )
    p_lab.add_argument("--distracters", type=int, default=0, help="near-copies of the fact with other values")
    p_lab.add_argument(
        "--qa-file",
        default=None,
        help="a QA file, its format read from it: the Lost-in-the-Middle release (JSONL or .jsonl.gz: "
        "k-document or oracle rows, or the NQ retrieval results the R&R paper used), SQuAD v2, HotpotQA "
        "(distractor setting), PubMed questions or PubMedQA; with paper-grid or quick its questions are built "
        "at the preset's lengths; key-value rows for the key-value preset",
    )
    p_lab.add_argument(
        "--unanswerable",
        action="store_true",
        help="SQuAD v2: keep the unanswerable questions, scored as abstention (the right answer is n/a)",
    )
    p_lab.add_argument(
        "--layout",
        default=None,
        choices=[p.value for p in LAYOUTS],
        help="where the question goes in every prompt (default: the preset's, with its reason); a method "
        "that cannot take it keeps its own, and the output says so",
    )
    p_lab.add_argument(
        "--protocol",
        default="json",
        choices=("json", "paper"),
        help="json (default): answers as JSON with a quote per cited page; paper: the R&R paper's prompts "
        "(instructions, <PAGE n> blocks, reminders) with a plain-text answer and page, scored by the reference "
        "metric beside the strict one, failed runs counted as wrong",
    )
    p_lab.add_argument("--questions", default=None, help="CSV question,answers,gold_pages (questions task)")
    p_lab.add_argument("--no-bounds", action="store_true", help="skip the closed-book and oracle bounds")
    p_lab.add_argument(
        "--max-usd",
        type=float,
        default=None,
        help="budget cap: refuse to start above it, and send no call that would pass it",
    )
    p_lab.add_argument(
        "--mode",
        default="now",
        choices=("now", "batch"),
        help="now: every call at once, at the list price; batch: each phase's calls as one provider "
        "batch (OpenAI Batch, Anthropic Message Batches: half price, answered within 24 h). A batch "
        "sweep stopped and started again polls its batches instead of paying again",
    )
    p_lab.add_argument("--dry-run", action="store_true", help="print the plan and its cost; send nothing")
    p_lab.add_argument(
        "--submit",
        action="store_true",
        help="team mode: queue the sweep for the workers and print its work id (watch it with `work`)",
    )
    p_lab.add_argument(
        "--jobs-out",
        default=None,
        metavar="FILE",
        help="write the sweep's jobs (one JSON object a line) to FILE, for a worker to run elsewhere",
    )
    p_lab.add_argument(
        "--jobs-in",
        default=None,
        metavar="FILE",
        help="run the jobs of FILE (written by --jobs-out) instead of planning a sweep; the document "
        "(planted facts, own questions) is given as FILE as when they were written",
    )
    p_lab.add_argument(
        "--eee-out",
        default=None,
        metavar="FILE",
        help="also write the sweep in the Every Eval Ever schema: FILE (the aggregate, JSON) and its "
        "per-trial records (JSONL) at the path the aggregate names, under FILE's folder",
    )
    p_lab.add_argument("--provider", default=None, choices=list(ALL_PROVIDERS))
    p_lab.add_argument(
        "--reach", type=int, default=4_000, help="the simulated reader sees pages this near instructions"
    )
    p_lab.add_argument("--base-url", default=None, help="server URL (openai-compatible)")
    p_lab.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=None,
        help="environment variable holding the key for --base-url",
    )
    p_lab.add_argument(
        "--ocr", action="store_true", help="read PDF pages without a text layer by OCR (needs Tesseract)"
    )
    p_lab.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    p_lab.add_argument("--concurrency", type=int, default=8, help="calls in flight at most")
    p_lab.add_argument("--price-model", default="", help="price the run as this model")
    p_lab.add_argument(
        "--trials-csv",
        metavar="PATH",
        default=None,
        help="also write one row per trial and method (question, depth, answer, right/wrong, tokens, cost)",
    )

    p_review = sub.add_parser(
        "review",
        help="a review grid: many documents × a list of questions, one table of cited answers",
    )
    p_review.add_argument("files", nargs="+", help="files (PDF, DOCX, TXT, HTML, ZIP) or folders")
    p_review.add_argument(
        "--questions",
        required=True,
        metavar="COLUMNS.csv",
        help="the columns: CSV question,type[,instruction,choices]",
    )
    p_review.add_argument(
        "--method", default="rr", help=f"the grid's method ({METHOD_NAMES}); settings as rr:k=5000"
    )
    p_review.add_argument(
        "--compare", default=None, metavar="METHOD", help="a second method, run on a sample of rows"
    )
    p_review.add_argument(
        "--compare-rows", type=int, default=5, help="rows the comparison runs on (default 5)"
    )
    p_review.add_argument(
        "--answers", default=None, metavar="KEY.csv", help="answer key: CSV document,question,answers"
    )
    p_review.add_argument(
        "--mode", default="now", choices=("now", "batch"), help="now, or provider batches at half price"
    )
    p_review.add_argument(
        "--password", default=None, metavar="PW", help="password tried on every encrypted PDF (never stored)"
    )
    p_review.add_argument(
        "--password-file",
        default=None,
        metavar="PASSWORDS.csv",
        help="per-file passwords: CSV file,password (the file as listed, or its name); before --password",
    )
    p_review.add_argument(
        "--ocr", action="store_true", help="read PDF pages without a text layer by OCR (needs Tesseract)"
    )
    p_review.add_argument(
        "--max-usd", type=float, default=None, help="refuse to run above this estimate; never pass it"
    )
    p_review.add_argument(
        "--dry-run", action="store_true", help="print the plan and its estimate; send nothing"
    )
    p_review.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    user_arg(p_review)
    p_review.add_argument(
        "--traces", action="store_true", help="with --json: every run's trace (prompts left out)"
    )
    p_review.add_argument(
        "--csv",
        default=None,
        metavar="OUT.csv",
        help="also write one row per cell (and, with --answers, OUT.scores.csv)",
    )
    p_review.add_argument("--xlsx", default=None, metavar="OUT.xlsx", help="also write an Excel workbook")
    p_review.add_argument("--provider", default=None, choices=list(ALL_PROVIDERS))
    p_review.add_argument("--model", default=None, help="model id (also picks the tokenizer)")
    p_review.add_argument("--price-model", default="", help="price the run as this model")
    verify_args(p_review)
    p_review.add_argument("--base-url", default=None, help="server URL (openai-compatible)")
    p_review.add_argument(
        "--api-key-env", metavar="VAR", default=None, help="environment variable holding the key"
    )
    p_review.add_argument(
        "--reach", type=int, default=4_000, help="the simulated reader sees pages this near instructions"
    )
    p_review.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    p_review.add_argument("--concurrency", type=int, default=8, help="calls in flight at most")
    p_review.add_argument(
        "--processes", type=int, default=None, help="processes reading the files (default: the cores)"
    )
    p_review.add_argument(
        "--submit",
        action="store_true",
        help="team mode: queue the grid for the workers and print its work id (watch it with `work`)",
    )
    p_review.add_argument(
        "--again",
        action="store_true",
        help="with --submit: send the grid even when the same grid (documents, questions, method, model) "
        "already finished; without it, the finished work's id is printed and nothing is sent",
    )

    p_work = sub.add_parser("work", help="long work (review grids) in the store: progress, stop, cells")
    p_work.add_argument("--show", metavar="ID", default=None, help="one work's progress and cells")
    p_work.add_argument("--cancel", metavar="ID", default=None, help="ask a work to stop (from any machine)")
    p_work.add_argument("--resume", metavar="ID", default=None, help="queue a stopped or failed work again")
    p_work.add_argument("--limit", type=int, default=20, help="how many, newest first (default 20)")
    p_work.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    user_arg(p_work)

    p_worker = sub.add_parser("worker", help="team mode: run queued work (review grids) until stopped")
    p_worker.add_argument("--concurrency", type=int, default=2, help="works run at once (default 2)")
    p_worker.add_argument("--heartbeat", type=float, default=5.0, help="seconds between heartbeats")
    p_worker.add_argument(
        "--stalled-after",
        type=float,
        default=20.0,
        help="a worker silent this long is dead: its work runs again",
    )

    p_batches = sub.add_parser(
        "batches",
        help="the provider batches in the run store: submitted, in progress, ended (a progress view)",
    )
    p_batches.add_argument("--limit", type=int, default=20, help="how many, newest first (default 20)")
    p_batches.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    user_arg(p_batches)

    p_history = sub.add_parser("history", help="your stored runs, newest first (every store)")
    p_history.add_argument("--limit", type=int, default=50, help="how many, newest first (default 50)")
    p_history.add_argument(
        "--skip", type=int, default=0, help="leave out the newest N first (a page further back; default 0)"
    )
    p_history.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    user_arg(p_history)

    p_samples = sub.add_parser("samples", help="list the generated samples, or write them out")
    p_samples.add_argument("--write", metavar="DIR", help="write each sample as PDF and its QA as JSON")
    p_samples.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    return parser


def _pages(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.replace(";", ",").split(",") if p.strip())
    except ValueError:
        raise ConfigError(
            f"{what} must be page numbers separated by commas, e.g. 3,4 (got {text!r})"
        ) from None


def _open(args: argparse.Namespace, model: str) -> Document:
    return open_document(args.file, password=args.password, counter=counter_for_model(model), ocr=args.ocr)


def _given_key(args: argparse.Namespace, provider: str) -> str | None:
    """The key named by ``--api-key-env``; for a compatible server without it,
    ``RR_COMPAT_API_KEY`` unless ``OPENAI_BASE_URL`` names a server other than ``--base-url``."""
    if not args.api_key_env:
        return command_line_compat_key(args.base_url) if get_provider(provider).optional_key else None
    variable = args.api_key_env
    key = os.environ.get(variable, "").strip()
    if not key and args.api_key_env:
        raise ConfigError(f"--api-key-env {variable}: that environment variable is not set")
    return key or None


def _waiting(args: argparse.Namespace) -> Any:
    """Progress for waits before a retry (stderr, as call progress is)."""

    def on_wait(seconds: float, reason: str) -> None:
        if not args.json:
            print(f"  waiting {seconds:.1f} s before a retry: {reason}", file=sys.stderr)

    return on_wait


def _questions(args: argparse.Namespace) -> list[Question]:
    from rr_core.questions import Question, read_questions

    questions = [Question(q) for q in args.question if q.strip()]
    if args.questions:
        questions += read_questions(Path(args.questions))
    if not questions:
        raise ConfigError("ask a question with -q, or name a file of questions with --questions")
    return questions


def _base_settings(args: argparse.Namespace, engine: Engine) -> RunSettings:
    return engine.settings(
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
        **_verify(args),
    )


def _verify(args: argparse.Namespace) -> dict[str, Any]:
    """The settings of ``--verify`` and ``--verify-model`` (a model without the check is a mistake)."""
    if args.verify_model.strip() and not args.verify:
        raise ConfigError("--verify-model names the model that checks the answers: add --verify")
    return {"verify": args.verify, "verify_model": args.verify_model.strip()}


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
    from rr_core.costs import price_data_version
    from rr_core.plans import LocalStep

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
                    if isinstance(step, LocalStep)
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


def _engine(args: argparse.Namespace, provider: str | None) -> Engine:
    """The engine named on the command line, the registry's defaults for the rest."""
    from rr_core.workbench import Engine

    return Engine.choose(provider, args.model, args.price_model)


def _batches_offered(provider: str) -> bool:
    """Whether the engine takes ``--mode batch``: a provider that sells batches, or a free
    engine (answered in this process)."""
    info = get_provider(provider)
    return info.can_batch or info.free


def _check_mode(mode: str, provider: str) -> None:
    """Refuse ``--mode batch`` for a provider whose batches this version does not offer."""
    if mode == "batch" and not _batches_offered(provider):
        label = get_provider(provider).label
        raise ConfigError(
            f"--mode batch: batches are not offered for {label} in this version; use --mode now"
        )


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The plan of one method (for one question, or several)."""
    engine = _engine(args, args.provider)
    document = _open(args, engine.model)
    counter = counter_for_model(engine.counting_model())
    from rr_core.methods import parse_spec, plan_questions

    settings = parse_spec(args.method, _base_settings(args, engine))
    plans = plan_questions(document, _questions(args), settings, counter)
    return {
        "file": document.name,
        "tokenizer": document.tokenizer,
        "total_tokens": document.total_tokens,
        "plans": [_plan_json(p, document) for p in plans],
    }


def cmd_ask(args: argparse.Namespace) -> dict[str, Any]:
    """Run methods on a document."""
    from rr_core.costs import price_data_version
    from rr_core.methods import parse_spec
    from rr_core.store import LOCAL_OWNER
    from rr_core.workbench import acting_user, ask, check_ask_budget, plan_ask

    # With --save, whose history: settled before anything is sent.
    owner = acting_user(args.user) if args.save else LOCAL_OWNER
    engine = _engine(args, args.provider)
    provider, model = engine.provider, engine.model
    document = _open(args, model)
    counter = counter_for_model(engine.counting_model())
    questions = _questions(args)
    base = _base_settings(args, engine)
    specs = [m for m in args.methods.split(",") if m.strip()]
    if not specs:
        raise ConfigError(f"name at least one method: {METHOD_NAMES}")
    planned = plan_ask(
        document, questions, [parse_spec(spec, base) for spec in specs], counter, window=engine.window()
    )
    if args.max_usd is not None and engine.is_llm:
        check_ask_budget(planned.plans, base, args.max_usd)
    client = _client(args, engine, counter)

    def progress(event: CallEvent) -> None:
        if not args.json and event.status != "started":
            chunk = f" chunk {event.chunk}" if event.chunk else ""
            print(f"  {event.label}: {event.stage}{chunk} {event.status}", file=sys.stderr)

    stopped: dict[str, str] = {}
    # With --save, the run store is also the call cache: each reply is kept as it returns, and
    # a call asked before (same reader, same prompt) is not paid again.
    result = ask(
        planned,
        client,
        concurrency=args.concurrency,
        max_usd=args.max_usd,
        cache=args.save,
        save=args.save,
        on_event=progress,
        guard=lambda runner: _stopping(runner, stopped),
        owner=owner,
    )
    return {
        "stopped_by": stopped.get("by"),
        "file": document.name,
        "questions": [q.text for q in questions],
        "question": questions[0].text,
        "batch": result.batch,
        "save_error": result.save_error,
        "provider": provider,
        "model": model,
        "is_llm": result.is_llm,
        "priced_as": base.pricing[0],
        "price_data": price_data_version(),
        "possibly_billed": result.possibly_billed,
        "possibly_usd": round(result.possibly_usd, 6),
        "results": [t.to_dict(prompts=False) for t in result.traces],
    }


def _client(args: argparse.Namespace, engine: Engine, counter: TokenCounter) -> LLMClient:
    """The engine's client with the key named by ``--api-key-env`` and ``--base-url``."""
    from dataclasses import replace

    given = replace(engine, api_key=_given_key(args, engine.provider), base_url=args.base_url)
    return given.client(
        counter, reach=getattr(args, "reach", 4_000), timeout_s=args.timeout, on_wait=_waiting(args)
    )


@contextmanager
def _stopping(executor: Runner, stopped: dict[str, str]) -> Iterator[dict[str, str]]:
    """While ``ask`` runs: Ctrl-C or SIGTERM sends no further call, waits for the calls in
    flight and lets the run end with what returned (``stopped["by"]`` says which signal); a
    second signal stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield stopped
        return

    def on_signal(signum: int, frame: object) -> None:
        if stopped:
            raise _Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        stopped["by"] = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
        executor.cancel()
        print(
            f"{'terminated' if signum == signal.SIGTERM else 'interrupted'}: no further call is sent; "
            "waiting for the calls in flight (a second signal stops at once and loses them)",
            file=sys.stderr,
        )

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _numbers(text: str | None, kind: type, what: str) -> tuple[Any, ...] | None:
    if text is None:
        return None
    try:
        return tuple(kind(x.strip().replace("_", "")) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{what} must be numbers separated by commas (got {text!r})") from None


def cmd_lab(args: argparse.Namespace) -> dict[str, Any]:
    """Plan (and unless --dry-run, run) a sweep; print the plan, then the grid with metrics."""
    from rr_core.batching import BatchProgress, batch_line
    from rr_core.lab import TASKS, trial_notes, trial_spec
    from rr_core.lab.presets import get_preset
    from rr_core.lab.report import plan_power, sweep_json, trials_csv
    from rr_core.lab.report import protocol as sweep_protocol
    from rr_core.llm.base import temperature_sent
    from rr_core.methods import parse_spec
    from rr_core.questions import read_questions
    from rr_core.workbench import acting_user, check_sweep_budget, plan_measurement, sweep

    preset = get_preset(args.preset)
    engine = _engine(args, args.provider)
    provider, model = engine.provider, engine.model
    counter = counter_for_model(engine.counting_model())
    document = _open(args, model) if args.file else None
    questions = tuple(read_questions(Path(args.questions))) if args.questions else ()
    if args.qa_file and not Path(args.qa_file).is_file():
        raise ConfigError(f"--qa-file {args.qa_file}: no such file.")
    task = "questions" if questions else preset.task
    spec = trial_spec(
        preset,
        document,
        task=task,
        lengths=_numbers(args.lengths, int, "--lengths"),
        repeats=args.repeats,
        seed=args.seed,
        paraphrase=args.paraphrase,
        distracters=args.distracters,
        qa_file=Path(args.qa_file) if args.qa_file else None,
        questions=questions,
        unanswerable=args.unanswerable or None,
    )
    depths = _numbers(args.depths, float, "--depths")
    layout = QuestionPlacement(args.layout) if args.layout else preset.layout
    protocol = PromptProtocol(args.protocol)
    base = engine.settings(question_placement=layout, protocol=protocol)
    specs = [m for m in (args.methods.split(",") if args.methods else preset.series) if m.strip()]
    if protocol is not PromptProtocol.JSON:  # in each spec, so that a queued sweep keeps it too
        specs = [m if "protocol=" in m else f"{m.strip()}:protocol={protocol.value}" for m in specs]
    series = [parse_spec(m, base) for m in specs]
    if args.jobs_in:
        plan = _plan_from_jobs_file(Path(args.jobs_in), document)
        trials: Sequence[Any] = plan.trials
    else:
        trials, plan = plan_measurement(
            spec,
            preset,
            document,
            series,
            counter,
            depths=depths,
            bounds=preset.bounds and not args.no_bounds,
            layout=layout,
            tokenizer=engine.counting_model(),
        )
    _check_mode(args.mode, engine.provider)
    check_sweep_budget(plan, args.max_usd, args.mode)
    if args.jobs_out:
        try:
            Path(args.jobs_out).write_text(plan.jobs_jsonl(), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot write the sweep's jobs to {args.jobs_out}: {exc.strerror or exc}."
            ) from None
    context = {
        "preset": preset.name,
        "task": TASKS[spec.task].label,
        "file": document.name if document else (Path(args.qa_file).name if args.qa_file else None),
        "provider": provider,
        "model": model,
        "layout": layout.value,
        "layout_why": preset.why if layout is preset.layout else "set with --layout",
        "prompt_protocol": protocol.value,
        "mode": args.mode,
        "notes": trial_notes(spec, plan.trials),
    }
    context["power"] = plan_power(plan)  # what the sweep can show, before spending
    if args.jobs_out:
        context["jobs_out"] = args.jobs_out
    if args.jobs_in:
        context["jobs_in"] = args.jobs_in
    if args.dry_run:
        return {
            **context,
            "protocol": sweep_protocol(plan),
            "plan": plan.summary(),
            "jobs": len(plan.jobs),
            "dry_run": True,
        }
    owner = acting_user(args.user)  # whose run store: before anything is sent
    if args.submit:
        return _submit_sweep(args, owner, preset.name, specs, engine, questions, layout, depths)
    client = _client(args, engine, counter)
    done = {"n": 0}

    def progress(finished: int, total: int, _: object) -> None:
        if not args.json and (finished == total or finished - done["n"] >= max(1, total // 20)):
            done["n"] = finished
            print(f"  {finished}/{total} runs", file=sys.stderr)

    def batch_progress(batch: BatchProgress) -> None:
        # a batch an earlier process submitted is said even with --json (on stderr): it is why
        # the sweep waits without submitting anything
        if not args.json or batch.resumed:
            print(f"  {batch_line(batch)}", file=sys.stderr)

    result = sweep(
        plan,
        client,
        concurrency=args.concurrency,
        window=engine.window(),
        max_usd=args.max_usd,
        on_progress=progress,
        mode=args.mode,
        label=f"Lab sweep · {preset.name}",
        on_batch=batch_progress,
        owner=owner,
    )
    data = {
        **sweep_json(plan, result, context=context),
        "is_llm": client.is_llm,
        "possibly_billed": result.possibly_billed,
        "possibly_usd": round(result.possibly_usd, 6),
    }
    if args.trials_csv:
        shared = {
            "engine": provider if client.is_llm else f"{provider} (not an LLM)",
            "is_llm": int(client.is_llm),
            "seed": args.seed,
            "temperature": temperature_sent(client),
        }
        path = Path(args.trials_csv)
        try:
            path.write_text(trials_csv(plan, result, context=shared), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot write the per-trial records to {path}: {exc.strerror or exc}. "
                "The sweep's calls are kept in the run store: run again with a path you can write to."
            ) from None
        data["trials_csv"] = str(path)
    if args.eee_out:
        data["eee_out"] = _write_eee(Path(args.eee_out), plan, result, model=model, provider=provider)
    return data


def _plan_from_jobs_file(path: Path, document: Any) -> Any:
    """The plan of a jobs file written by ``--jobs-out``, its trials built again with the
    tokenizer the jobs name (``ConfigError`` names what cannot be read)."""
    from rr_core.lab.sweep import plan_from_jobs, read_jobs

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the jobs file {path}: {getattr(exc, 'strerror', None) or exc}."
        ) from None
    jobs = read_jobs(text)
    if not jobs:
        raise ConfigError(f"{path} holds no job (write one with `lab --jobs-out`).")
    counter = counter_for_model(jobs[0].token_model)
    return plan_from_jobs(jobs, counter, documents=(document,) if document is not None else ())


def _write_eee(path: Path, plan: Any, result: Any, *, model: str, provider: str) -> str:
    """The sweep in the Every Eval Ever schema: the aggregate at ``path``, its per-trial records
    at the path it names, under ``path``'s folder."""
    import time

    from rr_core.lab.report import dumps, eee_records, eee_samples_text

    aggregate, instances = eee_records(plan, result, model=model, provider=provider, timestamp=time.time())
    samples = path.parent / aggregate["detailed_evaluation_results"]["file_path"]
    try:
        samples.parent.mkdir(parents=True, exist_ok=True)
        samples.write_text(eee_samples_text(instances), encoding="utf-8")
        path.write_text(dumps(aggregate), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot write the Every Eval Ever export to {path}: {exc.strerror or exc}. "
            "The sweep's calls are kept in the run store: run again with a path you can write to."
        ) from None
    return str(path)


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
            try:
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{name}.pdf").write_bytes(pdf_from_texts(sample.pages, title=sample.title))
                (folder / f"{name}.qa.json").write_text(json.dumps(entry["questions"], indent=2))
            except OSError as exc:
                raise ConfigError(
                    f"cannot write the samples to {folder}: {exc.strerror or exc}. Give a folder you can write to."
                ) from None
            entry["written"] = [str(folder / f"{name}.pdf"), str(folder / f"{name}.qa.json")]
        out.append(entry)
    return {"samples": out}


def _share(value: float | None) -> str:
    """An accuracy from the JSON (null when no trial was counted) as ``75%`` or ``n/a``."""
    return "n/a" if value is None else f"{value:.0%}"


def _share_range(row: dict[str, Any]) -> str:
    """``[34%–100%]``, or ``[n/a]`` when no trial was counted."""
    if row["accuracy"] is None:
        return "[n/a]"
    return f"[{row['ci_low']:.0%}–{row['ci_high']:.0%}]"


def _per_cell(cell: Mapping[str, Any]) -> str:
    """``2×2``: a cell's questions × repeats per question (``5t/3q`` when uneven)."""
    trials, questions = int(cell["trials"]), int(cell["questions"])
    if questions and trials % questions == 0:
        return f"{questions}×{trials // questions}"
    return f"{trials}t/{questions}q"


def _queued_line(data: Mapping[str, Any]) -> str:
    """What a submit says: the work queued, or the same work already open (not sent twice)."""
    how = "already queued or running, not sent again" if data.get("already_open") else "queued"
    return (
        f"{how}: {data['title']} — work {data['work_id']} (python -m rr_core work --show {data['work_id']})"
    )


def _print_table(command: str, data: dict[str, Any]) -> None:
    if command in ("review", "lab") and data.get("queued"):
        print(_queued_line(data))
    elif command == "pages":
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
                    pages = (
                        f"pages {c['pages'][0]}–{c['pages'][-1]}"
                        if c["pages"] and not phase["estimated"]
                        else "pages: after the phase before"
                    )
                    rem = (
                        f", reminders after {c['reminders_after_pages']}"
                        if c["reminders_after_pages"]
                        else ""
                    )
                    pend = " (estimated)" if phase["estimated"] else ""
                    print(f"  {c['stage']}{chunk}: {pages}, {c['prompt_tokens']:,} tokens{rem}{pend}")
            print(
                f"  total: {est['calls']} calls, {est['input_tokens']:,} input tokens, ~${est['usd']:.4f} as {est['priced_as']}"
            )
            for note in plan["notes"]:
                print(f"  note: {note}")
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
                f"{usage['output_tokens']:,} out  "
                + (
                    f"${r['cost_usd']:.4f}"
                    if data["is_llm"]
                    else f"would cost ${r['cost_usd']:.4f} (nothing paid)"
                )
            )
            for o in r["outcomes"]:
                mark = "" if o["correct"] is None else ("  [right]" if o["correct"] else "  [wrong]")
                retrieved = f"  retrieved {o['retrieved_pages']}" if o["retrieved_pages"] else ""
                print(f"    Q: {o['question']}")
                if o["answer"] is not None and o.get("found") is False:
                    from rr_core.plans import absence_words  # here: `pages` loads no pydantic

                    said = absence_words(o.get("absent_by") or "", o.get("pages_to_read") or [])
                    print(f"    A: {said}{mark}{retrieved}")
                    continue
                print(f"    A: {o['answer']}{mark}{retrieved}")
                if o.get("confidence"):
                    print(f"       {_sureness(o)}")
                for c in o.get("citations", []):
                    where = f"p. {c['page']}" if c["page"] is not None else "no page"
                    print(f"       {check_words(c['quote_check'], where, c['quote_score'])}")
                if str(o.get("support_by", "")).startswith("verifier"):
                    reason = f": {o['support_reason']}" if o.get("support_reason") else ""
                    print(f"       checked against its quotes by {o['support_by']}: {o['support']}{reason}")
            for w in r["warnings"]:
                print(f"    warning: {w}")
            for note in r.get("notes", []):
                print(f"    note: {note}")
        if data.get("possibly_billed"):
            print(f"paid ${sum(r['paid_usd'] for r in data['results']):.4f}, and {data['possibly_billed']}")
        if data["batch"]:
            print(f"saved to the history as batch {data['batch']}")
    elif command == "lab":
        p = data["plan"]
        print(
            f"{data['task']} ({data['preset']}) on {data['file'] or 'generated documents'} — "
            f"{p['trials']} trials, {p['runs']} runs, {p['calls']:,} calls, {p['input_tokens']:,} input tokens, "
            f"~${p['usd']:.4f} as {p['priced_as']}"
        )
        made = data["protocol"]
        for name in made["construction"]:
            print(f"  distracters ({name}): {made['construction_means'][name]}")
        if made.get("answer_passages_dropped"):
            dropped = made["answer_passages_dropped"]
            print(
                f"  answer-bearing passages left out: {dropped['passages']:,} over {dropped['questions']:,} question(s)"
            )
        for note in data.get("notes", []):
            print(f"  note: {note}")
        print(f"  question placement: {data['layout']} — {data['layout_why']}")
        for name, means in made.get("prompt_protocol_means", {}).items():
            print(f"  prompt protocol: {name} — {means}; failed runs {made['failed_runs']}")
        for series, value in made["question_placement"].items():
            if value != data["layout"]:
                print(f"    {series}: {value} — {made['question_placement_why'][series]}")
        print(f"  scored by {made['scored_by']}")
        if data.get("power"):
            print(f"  can detect: {data['power']['text']}")
        if p.get("planted_facts"):
            print(
                f"  planted facts {p['planted_facts']:,}, {p['facts_regenerated']:,} drawn again "
                "(the document itself stated an answer or named the subject)"
            )
        if data.get("jobs_out"):
            print(f"  {p['jobs']:,} jobs written to {data['jobs_out']} (one JSON object a line)")
        if data.get("dry_run"):
            print("  (dry run: nothing sent)")
            return
        several = len({c["length"] for c in data["cells"]}) > 1
        if data.get("is_llm") and not p["price_known"]:
            money = (
                f"paid: price unknown ({p['priced_as']}; --price-model names the model whose prices apply)"
            )
            if data.get("possibly_billed"):  # calls sent with no answer back, whatever their price
                money += f", and {data['possibly_billed']}"
        elif data.get("is_llm"):
            money = f"paid ${data['paid_usd']:.4f}"
            if data.get("possibly_billed"):
                money += f", and {data['possibly_billed']}"
        else:
            money = (
                f"paid $0, would cost ${data['would_cost_usd']:.4f} as {p['priced_as']}"
                "  [not an LLM: shows the machinery, not a model's reading]"
            )
        shared = data.get("calls_shared", 0)
        print(
            f"  calls made {data['calls_made']:,}, found in the store {data['calls_cached']:,}"
            + (f", shared with a call in flight {shared:,}" if shared else "")
            + f", {money}"
        )
        if data.get("stopped"):
            print(f"  STOPPED: {data['stopped']}")
        if data.get("plain"):
            print("In plain words:")
            for line in data["plain"]:
                print(f"  {line}")
            print("The statistics:")
        for s in [*data["series"], *data["bounds"]]:
            eff = (
                f"; effective length {s['effective_length_text']} ({s['effective_length_checked']})"
                if several and s in data["series"] and s.get("effective_length_checked")
                else ""
            )
            misses = (
                f"; misses: retrieval {s['retrieval_misses']}, reading {s['reading_misses']}"
                if s["retrieves"]
                else ""
            )
            print(
                f"  {s['method']:<40} {_share(s['accuracy']):>5} {_share_range(s)} "
                f"{s['trials']} trials, {s['questions']} questions{eff}{misses}"
                f"; reference metric {_share(s.get('accuracy_paper_metric'))}"
            )
        print(f"  ({data['rules']['interval']})")
        if several:
            print(f"  ({data['rules']['effective_length']})")
        for c in data["comparisons"]:
            print(f"  {c['verdict']}")
        depths = sorted({c["depth"] for c in data["cells"]})
        print("  accuracy by depth (%), each cell: % right (questions × repeats per question):")
        print("    " + " " * 42 + " ".join(f"{d:>10g}" for d in depths))
        for name in dict.fromkeys(c["method"] for c in data["cells"]):
            for length in sorted({c["length"] for c in data["cells"] if c["method"] == name}):
                row = {c["depth"]: c for c in data["cells"] if c["method"] == name and c["length"] == length}
                cells = " ".join(
                    f"{_share(row[d]['accuracy']):>4} {_per_cell(row[d]):<5}" if d in row else f"{'·':>10}"
                    for d in depths
                )
                print(f"    {name[:32]:<32} {length:>9,} {cells}")
        first = (
            [c for c in data["cells"] if c["method"] == data["cells"][0]["method"]] if data["cells"] else []
        )
        if first:
            built = "; ".join(
                f"{c['length']:,} at {c['depth']:g}% → {c['built_tokens']:,} tokens, answer at {c['gold_depth']:g}%"
                for c in first
            )
            print(f"  built (asked → mean of the documents built): {built}")
        for where, note in data.get("reminders", {}).items():
            if " here:" in note:
                print(f"  {where}: {note}")
        if data["missing_cells"]:
            print("  incomplete cells: " + "; ".join(data["missing_cells"][:10]))
        if data.get("trials_csv"):
            print(f"  per-trial records written to {data['trials_csv']}")
    elif command == "batches":
        if not data["batches"]:
            print("No batches in the run store.")
        for b in data["batches"]:
            failed = f", {b['failed']:,} failed" if b["failed"] else ""
            print(
                f"{b['batch_id']}  {b['state']:<11} {b['done']:,} of {b['total']:,} done{failed}  "
                f"{b['label']}  (submitted {b['created_at']}, waited {b['waited']})"
            )
    elif command in ("review", "lab") and data.get("queued"):
        print(_queued_line(data))
    elif command == "review":
        _print_review(data)
    elif command == "work":
        _print_work(data)
    elif command == "history":
        _print_history(data)
    elif command == "samples":
        for s in data["samples"]:
            print(f"{s['name']:<10} {s['pages']:>4} pages, {len(s['questions'])} questions — {s['title']}")
            for path in s.get("written", []):
                print(f"  wrote {path}")


def cmd_review(args: argparse.Namespace) -> dict[str, Any]:
    """Read the corpus, plan the grid (printed on stderr), and unless --dry-run run it."""
    from rr_core.methods import parse_spec
    from rr_core.review import items_from_paths, parse_answer_key, parse_columns
    from rr_core.review.export import estimate_json, review_csv, review_json, review_xlsx, scores_csv
    from rr_core.workbench import (
        acting_user,
        check_review_budget,
        open_history,
        plan_grid,
        read_review_corpus,
        review,
    )

    columns = parse_columns(_read_text(args.questions, "--questions"), name=Path(args.questions).name)
    key = (
        parse_answer_key(_read_text(args.answers, "--answers"), name=Path(args.answers).name)
        if args.answers
        else None
    )
    if args.compare_rows < 1:
        raise ConfigError(f"--compare-rows {args.compare_rows}: give how many rows, 1 or more")
    engine = _engine(args, args.provider)
    counter = counter_for_model(engine.counting_model())
    base = engine.settings(**_verify(args))
    settings = parse_spec(args.method, base)
    compare = parse_spec(args.compare, base) if args.compare else None
    items, problems = items_from_paths(args.files)
    store = open_history(acting_user(args.user))  # the user's documents, readings and replies

    def read(done: int, total: int, f: Any) -> None:
        if not args.json and (done == total or done % max(1, total // 10) == 0):
            print(f"  read {done}/{total} files", file=sys.stderr)

    files = read_review_corpus(
        items, model=engine.counting_model(), store=store, processes=args.processes, on_file=read,
        ocr=args.ocr, passwords=_review_passwords(args), where="cli",
    )  # fmt: skip
    skipped = [*problems, *(f for f in files if not f.ok)]
    for f in skipped:
        print(
            f"  not reviewed: {f.message or f.name + ': same content as ' + f.duplicate_of}", file=sys.stderr
        )
    plan = plan_grid(
        files, columns, settings, counter, compare=compare, compare_rows=args.compare_rows,
        window=engine.window(), store=store, tokenizer=engine.counting_model(),
    )  # fmt: skip
    _check_mode(args.mode, engine.provider)
    check_review_budget(plan, args.max_usd, args.mode)
    _print_review_plan(estimate_json(plan), plan, args.mode, batches=_batches_offered(engine.provider))
    context = {
        "provider": engine.provider,
        "model": engine.model,
        "is_llm": engine.is_llm,
        "mode": args.mode,
        "answer_key": Path(args.answers).name if args.answers else None,
    }
    if args.dry_run:
        return {**review_json(plan, [], context=context, skipped=skipped), "dry_run": True}
    if args.submit:
        return _submit_review(args, store, plan, files, engine, key)
    client = _client(args, engine, counter)
    done = {"n": 0}

    def on_cell(cell: Any) -> None:
        done["n"] += 1
        total = len(plan.documents) * len(plan.columns)
        if not args.json and done["n"] % max(1, total // 10) == 0:
            print(f"  {done['n']}/{total} cells", file=sys.stderr)

    with _stopping_any() as stop:
        result = review(
            plan, client, concurrency=args.concurrency, key=key, max_usd=args.max_usd, mode=args.mode,
            store=store, on_cell=on_cell, guard=stop,
        )  # fmt: skip
    data = review_json(
        plan, result.cells, traces=result.traces if args.traces else (), context=context, skipped=skipped
    )
    data.update(
        paid_usd=round(result.paid_usd, 6),
        possibly_billed=result.possibly_billed,
        possibly_usd=round(result.possibly_usd, 6),
        history_batch=result.batch,
        save_error=result.save_error,
        cancelled=result.cancelled,
        failed_cells=sum(1 for c in result.cells if c.error),
    )
    writes: list[tuple[str | None, Callable[[], bytes]]] = [
        (args.csv, lambda: review_csv(plan, result.cells).encode()),
        (args.xlsx, lambda: review_xlsx(plan, result.cells, context=context)),
    ]
    if args.csv and key is not None:  # the scores beside the cells: OUT.scores.csv
        writes.append(
            (str(Path(args.csv).with_suffix(".scores.csv")), lambda: scores_csv(plan, result.cells).encode())
        )
    for option, write in writes:
        if option:
            try:
                Path(option).write_bytes(write())
            except OSError as exc:  # checked writable before the run: it changed since
                data["write_error"] = f"cannot write {option}: {exc.strerror or exc}"
    return data


def _submit_review(
    args: argparse.Namespace, store: Any, plan: Any, files: Any, engine: Any, key: Any
) -> dict[str, Any]:
    """Queue the grid for the workers (team mode): the work's id, to watch with ``work``."""
    from rr_core.store import is_postgres
    from rr_core.work import ReviewWork
    from rr_core.workbench import acting_user, submit_grid

    if not is_postgres(None):
        raise ConfigError(
            "--submit queues the grid for workers, which team mode has (RR_STUDIO_DB=postgresql://…); "
            "here, run the grid without --submit"
        )
    if args.api_key_env:
        raise ConfigError("--submit: workers use the keys configured where they run; leave out --api-key-env")
    work = ReviewWork(
        tuple(files), plan.columns, plan.settings, engine.provider, engine.model, engine.price_model,
        base_url=args.base_url, compare=plan.compare, compare_rows=args.compare_rows, key=key, mode=args.mode,
        max_usd=args.max_usd, concurrency=args.concurrency,
    )  # fmt: skip
    sent = submit_grid(work, plan, store=store, owner=acting_user(args.user), again=args.again)
    if sent.finished is not None:
        when = sent.finished.updated_at[:16].replace("T", " ")
        raise ConfigError(
            f"this grid already ran to the end: work {sent.finished.work_id}, finished {when} UTC"
            f" ({sent.finished.done} of {sent.finished.total} cells). Nothing was sent. Open it with"
            f" `work --show {sent.finished.work_id}`, or send it again with --again (its replies in the"
            " store are not paid twice)."
        )
    return {"work_id": sent.work_id, "queued": True, "already_open": not sent.new, "title": work.title}


def _submit_sweep(
    args: argparse.Namespace,
    owner: str,
    preset: str,
    specs: list[str],
    engine: Any,
    questions: tuple[Any, ...],
    layout: Any,
    depths: tuple[Any, ...] | None,
) -> dict[str, Any]:
    """Queue the sweep for the workers (team mode): the work's id, to watch with ``work``."""
    from rr_core.samples import list_samples
    from rr_core.store import is_postgres
    from rr_core.workbench import SweepWork, open_history, submit_measurement

    if not is_postgres(None):
        raise ConfigError(
            "--submit queues the sweep for workers, which team mode has (RR_STUDIO_DB=postgresql://…)"
        )
    if args.qa_file or args.password or args.api_key_env:
        raise ConfigError(
            "--submit: workers read documents from the store and use their own keys; --qa-file, --password and "
            "--api-key-env are for sweeps run here"
        )
    store = open_history(owner)
    sha, sample = "", ""
    if args.file and Path(args.file).is_file():
        sha = store.put_document(Path(args.file).read_bytes(), plain_name(Path(args.file).name))
    elif args.file:
        name = args.file.removeprefix("sample:")
        if name not in list_samples():
            raise ConfigError(f"{args.file}: no such file or sample")
        sample = name
    work = SweepWork(
        preset=preset, series=tuple(specs), provider=engine.provider, model=engine.model,
        price_model=engine.price_model, base_url=args.base_url, task="questions" if questions else "",
        lengths=_numbers(args.lengths, int, "--lengths"), repeats=args.repeats, seed=args.seed,
        paraphrase=args.paraphrase, distracters=args.distracters,
        questions=tuple((q.text, q.answers, q.gold_pages) for q in questions), depths=depths,
        bounds=not args.no_bounds, layout=layout.value, document_sha256=sha, sample=sample, mode=args.mode,
        max_usd=args.max_usd, concurrency=args.concurrency,
    )  # fmt: skip
    sent = submit_measurement(work, store=store, owner=owner)
    return {"work_id": sent.work_id, "queued": True, "already_open": not sent.new, "title": work.title}


def cmd_work(args: argparse.Namespace) -> dict[str, Any]:
    """Long work in the store: the list, one work's cells, a stop or a resume request."""
    from dataclasses import asdict

    from rr_core.work import LEASE_S, resume_work, review_cells
    from rr_core.workbench import acting_user, open_history, open_queue

    owner = acting_user(args.user)
    store = open_history(owner)
    try:
        if args.cancel:
            if not store.request_cancel(args.cancel):
                raise ConfigError(f"work {args.cancel}: no such open work of {owner}")
            return {"work_id": args.cancel, "cancel_requested": True}
        if args.resume:
            queue = open_queue(owner)
            hook = queue.enqueue()  # team mode: the job is written with the reopened work
            if not resume_work(store, args.resume, enqueue=hook):
                raise ConfigError(
                    f"work {args.resume}: no such ended work of {owner} (work still running is resumed only once"
                    " its runner is gone: its process ended, or it has not been heard from for"
                    f" {LEASE_S:.0f} s)"
                )
            if hook is None:  # the in-process queue: this command is the process
                from rr_core.work import InProcessQueue

                queue.submit(args.resume)
                if isinstance(queue, InProcessQueue):
                    queue.wait(args.resume, 24 * 3600)
                    return {
                        "work_id": args.resume,
                        "queued": True,
                        **_work_money(store.get_work(args.resume), store),
                    }
            return {"work_id": args.resume, "queued": True}
        if args.show:
            record = store.get_work(args.show)
            if record is None:
                raise ConfigError(f"work {args.show}: no such work of {owner}")
            shown = {k: v for k, v in asdict(record).items() if k != "spec"}
            # What the work recorded as it went: a grid's cells, a sweep's runs (as stored).
            recorded = (
                {"cells": [c.to_dict() for c in review_cells(store, args.show)]}
                if record.kind == "review"
                else {"results": store.work_results(args.show)}
            )
            return {**shown, **_work_money(record, store), **recorded}
        listed = [
            {k: v for k, v in asdict(w).items() if k not in ("spec", "result")}
            for w in store.list_work(args.limit)
        ]
        return {"user": owner, "work": listed}
    finally:
        store.close()


def cmd_worker(args: argparse.Namespace) -> dict[str, Any]:
    """Run queued work until stopped (team mode only)."""
    from rr_core.store import is_postgres
    from rr_core.store.config import DB_ENV

    if not is_postgres(None):
        raise ConfigError(f"a worker runs team mode's queue: set {DB_ENV}=postgresql://… (the team's store)")
    if args.concurrency < 1 or args.heartbeat <= 0 or args.stalled_after <= args.heartbeat:
        raise ConfigError("--concurrency 1 or more; --stalled-after must be longer than --heartbeat")
    from rr_core.queue import run_worker

    if not logging.getLogger().handlers:  # a line per work started, progressing and ended (stderr)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run_worker(
        os.environ[DB_ENV],
        concurrency=args.concurrency,
        heartbeat_s=args.heartbeat,
        stalled_after_s=args.stalled_after,
    )
    return {"stopped": True}


def _review_passwords(args: argparse.Namespace) -> Passwords:
    """The passwords ``review`` opens encrypted PDFs with: ``--password-file``'s for their
    files, ``--password`` for every other."""
    from rr_core.review.corpus import Passwords, parse_password_file

    by_file = (
        parse_password_file(
            _read_text(args.password_file, "--password-file"), name=Path(args.password_file).name
        )
        if args.password_file
        else Passwords()
    )
    return Passwords(by_file=by_file.by_file, every=args.password or None)


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{what} {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})"
        ) from None


@contextmanager
def _stopping_any() -> Iterator[Any]:
    """A guard for the runner: Ctrl-C or SIGTERM sends no further call (what returned is kept)."""
    stopped: dict[str, str] = {}

    @contextmanager
    def guard(runner: Runner) -> Iterator[None]:
        with _stopping(runner, stopped):
            yield

    yield guard


def _print_review_plan(e: dict[str, Any], plan: Any, mode: str, *, batches: bool = True) -> None:
    """The plan and its estimate, on stderr (stdout is the result); ``batches`` False: the
    engine's batches are not offered in this version."""
    in_batches = f"${e['usd_batch']:.4f} in batches" if batches else "batches not offered for this provider"
    lines = [
        f"review: {e['documents']} documents × {e['questions']} questions — {plan.method_label('main')}"
        + (
            f"; compared with {plan.method_label('compare')} on {e['compare_rows']} rows"
            if plan.compare
            else ""
        ),
        f"  {e['calls']:,} calls, {e['input_tokens']:,} input tokens, priced as {e['priced_as']}"
        + ("" if e["price_known"] else " (no price known)"),
        f"  estimate: ${e['usd_now']:.4f} now (no cache), ${e['usd_now_with_cache']:.4f} now with the prompt cache, "
        f"{in_batches} — sending: {mode}",
    ]
    if e.get("each_question_alone_input_tokens"):
        share = e["sample_input_tokens"] / e["each_question_alone_input_tokens"]
        lines.append(
            f"  one pass for all questions: {share:.0%} of the input tokens of asking each alone "
            f"(measured on {e['sample_documents']} documents)"
        )
    if e["too_long"]:
        lines.append(f"  over the context window: {', '.join(e['too_long'])}")
    from rr_core.verification import verify_note

    if verify_note(plan.settings):
        lines.append(f"  {verify_note(plan.settings)}")
    print("\n".join(lines), file=sys.stderr)


def _work_money(record: Any, store: Any) -> dict[str, Any]:
    """What a work's last run paid, and what it may have been billed besides (from its result);
    with its ledger, what all its runs were billed (what its cap counts)."""
    result = getattr(record, "result", None) or {}
    if not isinstance(result, dict) or "paid_usd" not in result:
        return {}
    money = {"paid_usd": result["paid_usd"], "possibly_billed": result.get("possibly_billed") or ""}
    if result.get("ledger"):
        money["all_runs_usd"] = round(store.ledger_spent(str(result["ledger"])), 8)
    return money


def _money_line(data: dict[str, Any]) -> str:
    possibly = f", and {data['possibly_billed']}" if data.get("possibly_billed") else ""
    line = f"paid ${data['paid_usd']:.4f} by its last run{possibly}"
    if "all_runs_usd" in data:
        line += (
            f"; ${data['all_runs_usd']:.4f} billed over all its runs"
            " (what its cap counts: calls possibly billed at what they held)"
        )
    return line


def _print_work(data: dict[str, Any]) -> None:
    """Work as text."""
    if "work" in data:
        for w in data["work"]:
            stop = " (stop asked)" if w["cancel_requested"] and w["state"] == "running" else ""
            when = str(w.get("created_at") or "")[:16].replace("T", " ")
            print(
                f"{w['work_id']}  {when:<16}  {w['state']:<9}{stop} {w['done']:>5}/{w['total']:<5} {w['title']}"
                f"  [by {w.get('owner') or data['user']}; run by {w['worker'] or 'no one yet'}]"
            )
        if not data["work"]:
            print(f"no work of {data['user']}")
        return
    if "cells" in data:
        print(
            f"{data['work_id']}: {data['state']}, {data['done']}/{data['total']} cells, {data['attempts']} attempt(s)"
        )
        if "paid_usd" in data:
            print(f"  {_money_line(data)}")
        for c in data["cells"]:
            print(f"  {c['document']} — {c['question']}: {c['error'] or c['answer']}")
        return
    if "results" in data:  # a sweep: its runs are recorded; `lab` shows them as a table
        print(
            f"{data['work_id']}: {data['state']}, {data['done']}/{data['total']} runs, {data['attempts']} attempt(s)"
        )
        if "paid_usd" in data:
            print(f"  {_money_line(data)}")
        return
    if data.get("queued") and "paid_usd" in data:
        print(f"{data['work_id']}: resumed; {_money_line(data)}")
        return
    print(json.dumps(data))


def _print_review(data: dict[str, Any]) -> None:
    """The grid as text: a block per document, a line per question; then the scores."""
    if data.get("dry_run"):
        print("dry run: nothing was sent")
        return
    for d in data["documents"]:
        if not d["read"]:
            print(
                f"{d['document']}: not reviewed — {d['message'] or 'same content as ' + str(d['duplicate_of'])}"
            )
    current = None
    for c in data["cells"]:
        if (c["document"], c["method"]) != current:
            current = (c["document"], c["method"])
            print(f"\n{c['document']} — {c['method']}")
        cite = c["citations"][0] if c["citations"] else None
        page = f"p. {cite['page']}" if cite else ""
        where = f"  [{check_words(cite['quote_check'], page) or page}]" if cite else ""
        mark = {True: "  RIGHT", False: "  WRONG"}.get(c["correct"], "")
        answer = f"failed: {c['error']}" if c["error"] else c["answer"]
        sure = f"  ({_sureness(c)})" if c.get("confidence") and c["found"] else ""
        print(f"  {c['question']}: {answer}{where}{sure}{mark}")
    groups = [g for g in data["scores"].values() if g["all"] and g["all"]["marked"]]
    if groups:
        print(
            "\nscores against the answer key (precision = right / answered; base rate: always the commonest key answer):"
        )
        for g in groups:
            for s in [*g["columns"], g["all"]]:
                if s["marked"]:
                    print(f"  {g['method']} — {s['question']}: {_score_line(s)}")
    engine = "" if data.get("is_llm") else " (not an LLM: nothing paid)"
    possibly = f", and {data['possibly_billed']}" if data.get("possibly_billed") else ""
    print(f"\npaid ${data['paid_usd']:.4f}{possibly}{engine}")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _sureness(answer: dict[str, Any]) -> str:
    """An answer's confidence, support and reason in words: "high", "check: the quote does not
    contain the answer"."""
    band = answer.get("confidence") or ""
    said = "check this" if band == "check" else band
    support = answer.get("support") or ""
    reason = answer.get("confidence_reason") or ""
    return ", ".join(
        x for x in (said, f"support {support}" if support else "", reason if band == "check" else "") if x
    )


def _score_line(s: dict[str, Any]) -> str:
    """One score in words: right/marked, answered, precision, coverage, base rate, the high band
    and precision at coverage."""
    at = ", ".join(f"{k} {_pct(v)}" for k, v in (s.get("precision_at_coverage") or {}).items())
    return (
        f"{s['right']}/{s['marked']} right; answered {s.get('answered', 0)}, precision {_pct(s.get('precision'))}, "
        f"coverage {_pct(s.get('coverage'))}, base rate {_pct(s.get('base_rate'))}; "
        f"high {s.get('high', 0)} cells, precision {_pct(s.get('high_precision'))}; precision at coverage: {at}"
    )


def _print_history(data: dict[str, Any]) -> None:
    """The runs as a table: when, document, method, model, answer, money (a free engine's is
    what it would cost: nothing was paid)."""
    runs, total = data["runs"], int(data.get("total", len(data["runs"])))
    skip = int(data.get("skip", 0))
    if skip and runs:
        shown = f"showing {skip + 1:,}–{skip + len(runs):,} of {_plural(total, 'run')}"
    elif skip:
        shown = f"none past the newest {skip:,} of {_plural(total, 'run')}"
    else:
        shown = (
            _plural(total, "run")
            if len(runs) >= total
            else f"showing {len(runs):,} of {_plural(total, 'run')}"
        )
    print(f"History of {data['user']} in {data['store']}: {shown}, newest first")
    if not runs:
        print("  (none yet: `ask --save` and the app's Ask screen store runs here)")
        return
    print(f"  {'when':<16}  {'document':<24}  {'method':<16}  {'model':<18}  {'answer':<36}  money")
    for r in runs:
        when = r["created_at"][:16].replace("T", " ")
        answer = "ERROR: " + r["error"] if r["error"] else ("—" if r["answer"] is None else r["answer"])
        if r["questions"] > 1:
            answer = f"({r['questions']} questions) {answer}"
        money = f"${r['paid_usd']:.4f}" if r["is_llm"] else f"$0 (would cost ${r['cost_usd']:.4f})"
        print(
            f"  {when:<16}  {_cut(r['document'], 24):<24}  {_cut(r['label'], 16):<16}  "
            f"{_cut(r['model'], 18):<18}  {_cut(' '.join(answer.split()), 36):<36}  {money}"
        )


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def cmd_batches(args: argparse.Namespace) -> dict[str, Any]:
    """The provider batches the run store holds, newest first, with how long each has waited."""
    from rr_core.workbench import acting_user, batch_records

    return {"batches": batch_records(max(1, args.limit), owner=acting_user(args.user))}


def cmd_history(args: argparse.Namespace) -> dict[str, Any]:
    """One user's stored runs, newest first (``--user`` or ``RR_STUDIO_USER``; with SQLite the
    local user by default)."""
    from rr_core.workbench import acting_user, history_records, open_history

    if args.limit < 1:
        raise ConfigError(f"--limit {args.limit}: give how many runs to list, at least 1")
    if args.skip < 0:
        raise ConfigError(f"--skip {args.skip}: give how many of the newest runs to leave out, 0 or more")
    owner = acting_user(args.user)
    store = open_history(owner)
    try:
        runs = history_records(args.limit, store=store, offset=args.skip)
        total = store.count()
        location = store.location
    finally:
        store.close()
    return {"user": owner, "store": location, "runs": runs, "total": total, "skip": args.skip}


COMMANDS = {
    "pages": cmd_pages,
    "plan": cmd_plan,
    "ask": cmd_ask,
    "lab": cmd_lab,
    "batches": cmd_batches,
    "history": cmd_history,
    "samples": cmd_samples,
    "review": cmd_review,
    "work": cmd_work,
    "worker": cmd_worker,
}
# What --json prints, where it is not the whole result: ``history`` prints the list of runs.
JSON_VIEWS = {"history": "runs"}
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: the same stop."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (see the module docstring)."""
    args = _parser().parse_args(argv)
    # SIGTERM stops as Ctrl-C does: no further call is sent, and the calls in flight are
    # waited for (their replies are kept in the run store) before the process ends.
    previous = (
        signal.signal(signal.SIGTERM, _on_sigterm)
        if hasattr(signal, "SIGTERM") and threading.current_thread() is threading.main_thread()
        else None
    )
    try:
        return _main(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(args: argparse.Namespace) -> int:
    try:
        _check(args)
        data = COMMANDS[args.command](args)
    except (MissingKeyError, ConfigError) as exc:  # the user's to fix: a key, a setting
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LLMError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_PROVIDER
    except RRError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        # ``lab`` keeps each reply in the run store as it returns (the process waits for the
        # calls in flight before it ends); ``ask`` got here only on a second signal.
        kept = "replies in flight are kept" if args.command == "lab" else "replies in flight are lost"
        word = "terminated" if isinstance(exc, _Terminated) else "interrupted"
        print(f"{word}: no further call was sent; {kept}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(exc, _Terminated) else EXIT_INTERRUPTED
    try:
        if args.json:
            shown = data[JSON_VIEWS[args.command]] if args.command in JSON_VIEWS else data
            json.dump(shown, sys.stdout, indent=2, ensure_ascii=False)
            print()
        else:
            _print_table(args.command, data)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head`: the reader has all it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter shutdown quiet
        return EXIT_OK
    if data.get("queued"):
        return EXIT_OK
    if args.command == "lab":
        return _lab_exit_code(data)
    if args.command == "review":
        return _review_exit_code(data)
    if args.command != "ask":
        return EXIT_OK
    return _ask_exit_code(data)


def _ask_exit_code(data: dict[str, Any]) -> int:
    """143 or 130 when stopped by SIGTERM or Ctrl-C (what returned was printed, and saved with
    --save), 3 when every method failed, 5 when the results could not be saved, 4 when some
    methods failed, else 0; a save failure is also said on stderr."""
    failed = [r for r in data["results"] if r["error"]]
    if data.get("save_error"):
        print(
            f"warning: the results above were NOT saved to the history: {data['save_error']}",
            file=sys.stderr,
        )
    if data.get("stopped_by"):
        kept = (
            f"; they were saved to the history (batch {data['batch']}) and their replies kept in the run store"
            if data.get("batch")
            else ""
        )
        word = "terminated" if data["stopped_by"] == "SIGTERM" else "interrupted"
        print(
            f"{word}: no further call was sent; the results above hold the replies of the calls that "
            f"were in flight{kept}",
            file=sys.stderr,
        )
        return EXIT_TERMINATED if data["stopped_by"] == "SIGTERM" else EXIT_INTERRUPTED
    if failed and len(failed) == len(data["results"]):
        return EXIT_PROVIDER
    if data.get("save_error"):
        return EXIT_NOT_SAVED
    return EXIT_PARTIAL if failed else EXIT_OK


def _review_exit_code(data: dict[str, Any]) -> int:
    """0 when every cell was answered and kept; 4 when some cells failed (or the run was
    stopped); 3 when every cell failed; 5 when the history could not keep the grid, or an
    output file could not be written after the run."""
    if data.get("dry_run"):
        return EXIT_OK
    cells, failed = len(data["cells"]), int(data["failed_cells"])
    if failed:
        reasons: dict[str, int] = {}
        for c in data["cells"]:
            if c["error"]:
                reasons[c["error"]] = reasons.get(c["error"], 0) + 1
        print(f"error: {failed:,} of {cells:,} cells failed:", file=sys.stderr)
        for reason, n in reasons.items():
            print(f"  {n:,} × {reason}", file=sys.stderr)
    if data.get("save_error"):
        print(f"warning: the grid was not saved to the history: {data['save_error']}", file=sys.stderr)
    if data.get("write_error"):
        print(f"warning: {data['write_error']} (the grid is printed above)", file=sys.stderr)
    if cells and failed >= cells:
        return EXIT_PROVIDER
    if data.get("save_error") or data.get("write_error"):
        return EXIT_NOT_SAVED
    return EXIT_PARTIAL if failed or data.get("cancelled") else EXIT_OK


# How a call's error ends when it was never sent (the budget cap, a stop, a reply not kept).
NOT_SENT = "was not sent"


def _lab_exit_code(data: dict[str, Any]) -> int:
    """As ``ask``'s: 5 when a reply could not be kept in the run store (the sweep stopped:
    what it paid is said), 3 when every run failed, 4 when some failed or were not sent
    (the budget cap), else 0; the reason is also said on stderr."""
    if data.get("dry_run"):
        return EXIT_OK
    if data.get("save_error"):
        print(
            f"error: a reply could not be kept in the run store ({data['save_error']}); no further call "
            f"was sent. Paid ${data['paid_usd']:.4f}.",
            file=sys.stderr,
        )
        return EXIT_NOT_SAVED
    runs = data["plan"]["runs"]
    failed = int(data["failed_runs"])
    if data.get("stopped"):
        print(f"warning: {data['stopped']}", file=sys.stderr)
    if failed:
        print(f"error: {failed:,} of {runs:,} runs failed:", file=sys.stderr)
        for group in data.get("failure_reasons", []):
            print(f"  {group['runs']:,} × {group['reason']}", file=sys.stderr)
    # Stopped by the budget cap, runs were not sent (whether any finished before the cap was
    # reached depends on which calls came back first): not a provider's failure, unless a run
    # failed at the provider too (a provider down: its failed calls count as possibly billed).
    at_provider = any(NOT_SENT not in g["reason"] for g in data.get("failure_reasons", []))
    if runs and failed >= runs and (at_provider or not data.get("stopped")):
        return EXIT_PROVIDER
    return EXIT_PARTIAL if failed or data.get("stopped") or data.get("cancelled") else EXIT_OK
