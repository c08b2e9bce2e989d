"""First open on a fresh server: the server's side of the first visitor's screen.

Each round starts a fresh interpreter that imports Streamlit's test harness and runs the
app's first screen (Ask, on the default sample) once, as the first visitor's request does
on a new server: every import, the tokenizer, the sample and everything the screen draws.
Then, in another fresh interpreter, the engine's share of it is taken apart (what loading
the sample costs, step by step). The browser's own drawing comes on top. Prints medians;
asserts nothing about time.

    python benchmarks/bench_first_open.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 3.0

FIRST_SCREEN = """
import json, os, sys, time
start = time.perf_counter()
from streamlit.testing.v1 import AppTest
harness = time.perf_counter()
at = AppTest.from_file(os.path.join(sys.argv[1], "app.py"), default_timeout=300).run()
done = time.perf_counter()
assert not at.exception, [e.message for e in at.exception]
print(json.dumps({"harness_s": harness - start, "first_screen_s": done - harness}))
"""

ENGINE_PARTS = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
parts = {}
def lap(name, started):
    parts[name] = time.perf_counter() - started
    return time.perf_counter()
t = time.perf_counter()
import rr_core.sources, rr_core.tokens, rr_core.methods, rr_core.runs
t = lap("import rr_core (sources, methods, runs)", t)
counter = rr_core.tokens.counter_for_model("gpt-4.1-mini")
t = lap("load the tokenizer", t)
from rr_core.samples import get_sample
sample = get_sample("contract")
t = lap("generate the sample's pages", t)
from rr_core import documents
documents._pymupdf()
t = lap("import pymupdf", t)
document = rr_core.sources.sample_document("contract", counter)
t = lap("sample_document (read and count the pages)", t)
built = document.pdf_bytes is not None
documents.render_page(document, 1, width=640)
t = lap("render page 1", t)
print(json.dumps({"parts": parts, "builds_pdf": built}))
"""


def fresh(program: str, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", program, str(ROOT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ)
    shared = ROOT.parent / "shared" / "tiktoken"
    if shared.is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(shared))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="rr-bench-first-open-") as scratch:
        env["RR_STUDIO_DB"] = str(Path(scratch) / "runs.sqlite3")
        screens = [fresh(FIRST_SCREEN, env) for _ in range(args.rounds)]
        parts = [fresh(ENGINE_PARTS, env) for _ in range(args.rounds)]
    first = statistics.median(float(s["first_screen_s"]) for s in screens)  # type: ignore[arg-type]
    harness = statistics.median(float(s["harness_s"]) for s in screens)  # type: ignore[arg-type]
    print(
        f"first screen (Ask, default sample) in a fresh process: median {first:.2f} s of server time "
        f"(target <= {TARGET_S:.0f} s to a usable screen, the browser's drawing on top), "
        f"after {harness:.2f} s importing the test harness"
    )
    print(f"the engine's share, step by step (medians of {args.rounds} fresh processes):")
    names = list(parts[0]["parts"])  # type: ignore[call-overload]
    for name in names:
        value = statistics.median(p["parts"][name] for p in parts)  # type: ignore[index]
        print(f"  {name:<50} {value * 1000:7.0f} ms")
    print(f"  the sample document carries a built PDF: {parts[0]['builds_pdf']}")


if __name__ == "__main__":
    main()
