"""The R&R paper's Table 1 grid (000 §5.1): datasets × document lengths × methods (Baseline,
Reprompting, R&R), each cell with its 95% interval (the question as the unit), beside the paper's
figure where one is known.

Every cell is one ``rr-studio lab`` sweep (the lost-in-the-middle preset's passages task: the
gold passage moved through the document, the question's own distracters), with the answer at
every 10k tokens of the length (000 §4.1), run through the run store (a call asked before is not
paid again) and under a budget cap. Any provider the CLI knows, or an OpenAI-compatible server::

    python benchmarks/table1.py --dataset nq=nq-open-20_total_documents.jsonl.gz \\
        --provider openai-compatible --base-url http://gpu-box:8000/v1 --model Qwen/Qwen2.5-7B-Instruct-1M \\
        --questions 50 --max-usd 0 --out table1.md

Options the Lab CLI has on this version are passed on (``--protocol paper`` where it exists,
and anything after ``--``). The paper's own Table 1 figures were lost from the copy of the paper
in ``shared/papers`` (its tables lost their numbers in extraction): give them with
``--paper-figures FILE`` (JSON: ``{"nq": {"10000": {"baseline": 0.71, ...}}}``); without it
the paper column says what the paper states in words (R&R +16 points on average).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rr_core.cli import _parser  # noqa: E402
from rr_core.cli import main as cli_main  # noqa: E402

LENGTHS = (10_000, 20_000, 40_000, 80_000)
METHODS = ("baseline", "reprompt", "rr")  # Table 1's columns: Base, Rep, R&R
STEP = 10_000  # the answer every 10k tokens (000 §4.1)
PAPER_SAYS = "paper: +16 points for R&R on average (abstract); per-cell figures not in the shared copy"


def lab_options() -> set[str]:
    """The options ``rr-studio lab`` has on this version (so that an option another branch
    adds, ``--protocol``, is passed on only where the CLI knows it)."""
    parser = _parser()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        lab = action.choices.get("lab")  # type: ignore[union-attr]
        if lab is not None:
            return {flag for a in lab._actions for flag in a.option_strings}
    return set()


def depths_for(length: int, step: int = STEP) -> list[float]:
    """The answer every ``step`` tokens of a ``length``-token document, in percent (0 … 100)."""
    return (
        [round(100 * p / length, 1) for p in range(0, length + 1, step)] if length >= step else [0.0, 100.0]
    )


def run_cell(
    dataset: str, path: str, length: int, args: argparse.Namespace, extra: list[str]
) -> dict[str, Any]:
    """One sweep: one dataset at one length, every method, the answer at every 10k tokens."""
    argv = [
        "--json", "lab", "--preset", "lost-in-the-middle", "--qa-file", path,
        "--lengths", str(length), "--depths", ",".join(f"{d:g}" for d in depths_for(length, args.step)),
        "--methods", args.methods, "--repeats", str(args.questions), "--no-bounds",
        # The paper's prompt: instructions before and after the document for every method
        # (the lost-in-the-middle preset's own layout puts the question after the passages).
        "--layout", "before-and-after",
        "--seed", str(args.seed), "--concurrency", str(args.concurrency),
    ]  # fmt: skip
    for option in (
        "provider",
        "model",
        "base_url",
        "api_key_env",
        "price_model",
        "max_usd",
        "timeout",
        "user",
    ):
        value = getattr(args, option)
        if value is not None:
            argv += [f"--{option.replace('_', '-')}", str(value)]
    known = lab_options()
    if args.protocol:
        if "--protocol" in known:
            argv += ["--protocol", args.protocol]
        else:
            print(
                f"note: this version's lab has no --protocol; {args.protocol!r} not passed", file=sys.stderr
            )
    if args.dry_run:
        argv.append("--dry-run")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv + extra)
    text = out.getvalue()
    data = json.loads(text) if text.strip() else {}
    return {"dataset": dataset, "length": length, "exit": code, "error": err.getvalue().strip(), "data": data}


def cell_text(series: dict[str, Any]) -> str:
    """``62% [48–74%] (50 q)``, or ``n/a``."""
    if series.get("accuracy") is None:
        return "n/a"
    return (
        f"{series['accuracy']:.0%} [{series['ci_low']:.0%}–{series['ci_high']:.0%}] ({series['questions']} q)"
    )


def paper_text(figures: dict[str, Any], dataset: str, length: int, method: str) -> str:
    value = figures.get(dataset, {}).get(str(length), {}).get(method)
    return "—" if value is None else f"{value:.0%}"


def table(runs: list[dict[str, Any]], methods: list[str], figures: dict[str, Any]) -> str:
    """The Markdown table: a row per dataset and length, per method ours (interval, questions)
    beside the paper's figure."""
    head = (
        ["Dataset", "Length", "Built tokens"]
        + [f"{m} (ours)" for m in methods]
        + [f"{m} (paper)" for m in methods]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for run in runs:
        data = run["data"]
        if run["exit"] not in (0, 3) or not data.get("series"):
            reason = (run["error"].splitlines() or ["no result"])[-1]
            lines.append(
                f"| {run['dataset']} | {run['length']:,} | — | "
                + f"{reason} |"
                + " |" * (2 * len(methods) - 1)
            )
            continue
        by_method = {s["method_name"]: s for s in data["series"]}
        built = [c["built_tokens"] for c in data["cells"]]
        mean = f"{sum(built) / len(built):,.0f}" if built else "—"
        ours = [
            cell_text(by_method[m.split(":")[0]]) if m.split(":")[0] in by_method else "—" for m in methods
        ]
        paper = [paper_text(figures, run["dataset"], run["length"], m) for m in methods]
        lines.append(f"| {run['dataset']} | {run['length']:,} | {mean} | " + " | ".join(ours + paper) + " |")
    return "\n".join(lines) + "\n"


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset", action="append", required=True, metavar="NAME=FILE",
        help="a dataset's QA file, as the Lab reads it (repeat: nq=FILE, squad=FILE, hotpotqa=FILE, pubmed=FILE)",
    )  # fmt: skip
    parser.add_argument(
        "--lengths", default=",".join(str(n) for n in LENGTHS), help="document lengths in tokens"
    )
    parser.add_argument(
        "--methods", default=",".join(METHODS), help="method specs (Table 1: baseline,reprompt,rr)"
    )
    parser.add_argument("--questions", type=int, default=50, help="questions per dataset (the Lab's repeats)")
    parser.add_argument("--step", type=int, default=STEP, help="the answer every STEP tokens (paper: 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--protocol", default=None, help="passed on where the Lab has --protocol (e.g. paper)"
    )
    parser.add_argument("--provider", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server (vLLM, llama.cpp, …)")
    parser.add_argument("--api-key-env", default=None, metavar="VAR")
    parser.add_argument("--price-model", default=None)
    parser.add_argument("--max-usd", type=float, default=None, help="budget cap per sweep")
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--user", default=None)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--dry-run", action="store_true", help="plan and price every sweep; send nothing")
    parser.add_argument("--paper-figures", default=None, metavar="FILE", help="the paper's Table 1 as JSON")
    parser.add_argument("--out", default=None, help="write the Markdown table here (default: print it)")
    parser.add_argument("--json-out", default=None, help="write every sweep's JSON here")
    if argv is None:
        argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    return parser.parse_args(argv), extra


def main(argv: list[str] | None = None) -> int:
    args, extra = parse(argv)
    datasets = []
    for item in args.dataset:
        name, _, path = item.partition("=")
        if not path:
            print(f"--dataset {item!r}: give NAME=FILE", file=sys.stderr)
            return 2
        if not Path(path).is_file():
            print(f"--dataset {name}: no file at {path}", file=sys.stderr)
            return 2
        datasets.append((name, path))
    figures = json.loads(Path(args.paper_figures).read_text(encoding="utf-8")) if args.paper_figures else {}
    lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    methods = [m for m in args.methods.split(",") if m.strip()]
    runs = []
    for name, path in datasets:
        for length in lengths:
            run = run_cell(name, path, length, args, extra)
            print(f"{name} at {length:,} tokens: exit {run['exit']}", file=sys.stderr)
            runs.append(run)
    text = table(runs, methods, figures)
    made = next((r["data"] for r in runs if r["data"]), None)
    if made:
        text = (
            f"Answered by {made.get('engine') or made.get('provider')}; prompts: {made.get('prompt_protocol', 'json')} "
            f"protocol; scored by the strict metric (the reference metric beside it in --json-out).\n\n"
            + text
        )
    if not figures:
        text += f"\n{PAPER_SAYS}.\n"
    text += (
        "\nOurs: accuracy over questions × answer positions, [95% interval with the question as the unit], "
        "(distinct questions). Built tokens: the mean length of the documents built for the row.\n"
    )
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        print(text)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(runs, indent=2, ensure_ascii=False), encoding="utf-8")
    worst = max((r["exit"] for r in runs), default=0)
    return 0 if worst == 0 else worst


if __name__ == "__main__":
    sys.exit(main())
