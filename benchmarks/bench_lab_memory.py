"""Lab memory benchmark: peak RSS of planning a sweep, all trials built up front (before)
against trials built one at a time from their recipes (after).

Before: every trial is built first and kept, and every plan with it (what ``plan_sweep``
held when a sweep was a list of (trial, plan) jobs). After: ``trial_recipes`` and
``plan_sweep``, which builds a trial, plans and prices its runs, and drops it before the
next. Each case runs in its own process (``ru_maxrss`` is a process's peak), on a planted
grid over a synthetic document: the 20,000-trial bound (``MAX_TRIALS``, 2,500 tokens each:
``MAX_BUILT_TOKENS``) and a long one (500 trials of 100,000 tokens). Prints the peak over the
process's resident size once its inputs are loaded, the time, and the ratios.

    .venv/bin/python benchmarks/bench_lab_memory.py [--scale 0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

# name: (lengths, depths, repeats)
CASES = {
    "bound": ((2_500,), 200, 100),  # 20,000 trials × 2,500 tokens: the grid's bounds
    "long": ((100_000,), 5, 100),  # 500 trials × 100,000 tokens
}
WORDS = (
    "the committee reviewed the agenda and discussed the building works the garden rota the "
    "newsletter layout and the date of the next meeting nothing else was decided"
).split()


def _rss_kb() -> int:
    """The process's resident size now (Linux: /proc), in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _measure(case: str, mode: str, scale: float) -> dict[str, object]:
    from rr_core.documents import document_from_texts
    from rr_core.lab import TrialSpec, build_trials, trial_recipes
    from rr_core.lab.presets import get_preset
    from rr_core.lab.sweep import plan_sweep
    from rr_core.methods import get_method, parse_spec
    from rr_core.settings import RunSettings
    from rr_core.tokens import counter_for_model

    lengths, depth_count, repeats = CASES[case]
    repeats = max(1, round(repeats * scale))
    counter = counter_for_model("gpt-4.1-mini")
    texts = [
        " ".join(WORDS[(i + n) % len(WORDS)] for i in range(300)) + f" (page {n + 1})" for n in range(120)
    ]
    document = document_from_texts("host.txt", texts, counter=counter)
    depths = [round(100 * i / max(depth_count - 1, 1), 3) for i in range(depth_count)]
    spec = TrialSpec(task="planted", lengths=lengths, repeats=repeats, seed=1)
    preset = get_preset("quick")
    series = [parse_spec("baseline", RunSettings(model="gpt-4.1-mini", provider="openai"))]
    floor = _rss_kb()
    started = time.perf_counter()
    if mode == "before":
        trials = build_trials(spec, preset, document, counter, depths=depths)
        method = get_method("baseline")
        jobs = [
            (t, method.plan(t.document, t.question, s.but(gold_pages=t.gold_pages), counter))
            for t in trials
            for s in series
        ]
        runs, calls = len(jobs), sum(len(plan.calls) for _, plan in jobs)
    else:
        recipes = trial_recipes(spec, preset, document, counter, depths=depths)
        plan = plan_sweep(recipes, series, counter, bounds=False, documents=(document,))
        runs, calls = len(plan.jobs), plan.calls
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux
    return {
        "case": case,
        "mode": mode,
        "trials": repeats * depth_count * len(lengths),
        "tokens_per_trial": lengths[0],
        "runs": runs,
        "calls": calls,
        "peak_over_inputs_mb": round((peak - floor) / 1024, 1),
        "peak_mb": round(peak / 1024, 1),
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="repeats × this (0.1: a quick look)")
    parser.add_argument("--case", choices=list(CASES), default=None, help="one case only")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child[0], args.child[1], args.scale)))
        return
    for case in [args.case] if args.case else list(CASES):
        found = {}
        for mode in ("before", "after"):
            out = subprocess.run(
                [sys.executable, __file__, "--scale", str(args.scale), "--child", case, mode],
                check=True,
                capture_output=True,
                text=True,
            )
            found[mode] = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(found[mode]))
        before, after = found["before"], found["after"]
        ratio = before["peak_over_inputs_mb"] / max(after["peak_over_inputs_mb"], 0.1)  # type: ignore[operator]
        print(
            f"{case}: {before['trials']:,} trials of {before['tokens_per_trial']:,} tokens — peak over inputs "
            f"{before['peak_over_inputs_mb']} MB before, {after['peak_over_inputs_mb']} MB after "
            f"(before/after {ratio:.1f}×); time {before['seconds']} s before, {after['seconds']} s after "
            f"(after/before {after['seconds'] / max(before['seconds'], 0.01):.2f}×)"  # type: ignore[operator]
        )


if __name__ == "__main__":
    main()
