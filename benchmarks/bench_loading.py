"""Loading hostile-sized inputs: time and peak memory grow linearly, or the file is refused early.

Each case runs in a fresh child process (so its peak RSS is its own) with a time limit:

- text files of 1, 4, 8 and 150 MB with no blank line (one endless paragraph, single line
  breaks) — the shape that made ``split_blocks`` quadratic;
- a DOCX "zip bomb": a small file on disk whose ``word/document.xml`` inflates to 1 GB.

Prints, per case: the outcome (pages, or the refusal), seconds, peak RSS, and seconds per MB
as a ratio to the 1 MB case (about 1 when loading is linear). Asserts nothing.

    python benchmarks/bench_loading.py                  # 1,4,8,150 MB and the 1 GB bomb
    python benchmarks/bench_loading.py --sizes 1,2,4 --no-bomb --limit 60
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from rr_core.documents import load_document
from rr_core.errors import DocumentError
from rr_core.tokens import counter_for_model
counter = counter_for_model("gpt-4.1-mini")
start = time.perf_counter()
try:
    document = load_document(sys.argv[2], counter=counter)
    outcome = f"{len(document.pages)} pages"
except DocumentError as exc:
    outcome = f"refused: {exc}"
elapsed = time.perf_counter() - start
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"outcome": outcome, "seconds": elapsed, "rss_mb": rss_mb}))
"""

_VOCAB = (
    "the parties agree that payment shall be made within thirty days of invoice and any late "
    "amount bears interest at the statutory rate while the supplier keeps title to goods until "
    "paid in full and either party may end this agreement on written notice"
).split()


def write_text(path: Path, megabytes: int) -> None:
    """``megabytes`` MB of words with a line break every 12 words and no blank line."""
    lines = []
    for i in range(4_000):
        words = [_VOCAB[(i * 7 + j * 3) % len(_VOCAB)] for j in range(12)]
        lines.append(" ".join(words) + f" {i}.")
    chunk = ("\n".join(lines) + "\n").encode()
    target = megabytes * 1_000_000
    with path.open("wb") as out:
        written = 0
        while written < target:
            piece = chunk[: target - written]
            out.write(piece)
            written += len(piece)


def write_bomb(path: Path, xml_megabytes: int) -> None:
    """A .docx whose document.xml inflates to ``xml_megabytes`` MB (one repeated paragraph)."""
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
    )
    para = b"<w:p><w:r><w:t>" + b"bomb " * 200 + b"</w:t></w:r></w:p>"
    tail = b"</w:body></w:document>"
    content_types = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
        'package/2006/content-types"><Default Extension="rels" ContentType="application/'
        'vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType='
        '"application/xml"/><Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.'
        'org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.'
        'openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
        'Target="word/document.xml"/></Relationships>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("[Content_Types].xml", content_types)
        zf.writestr("_rels/.rels", rels)
        with zf.open("word/document.xml", "w", force_zip64=True) as xml:
            xml.write(head)
            block = para * 1_000
            for _ in range(xml_megabytes * 1_000_000 // len(block)):
                xml.write(block)
            xml.write(tail)


def run_case(path: Path, limit: float, root: Path = ROOT) -> dict[str, object]:
    """Load ``path`` in a child process; its outcome, seconds and peak RSS, or a timeout."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(root), str(path)],
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"not finished after {limit:g} s", "seconds": None, "rss_mb": None}
    if done.returncode != 0:
        return {
            "outcome": f"crashed: {done.stderr.strip().splitlines()[-1:]}",
            "seconds": None,
            "rss_mb": None,
        }
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,4,8,150", help="text sizes in MB, comma-separated")
    parser.add_argument("--bomb-mb", type=int, default=1_000, help="uncompressed XML of the DOCX bomb")
    parser.add_argument("--no-bomb", action="store_true")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds per case at most")
    parser.add_argument("--root", type=Path, default=ROOT, help="project folder whose rr_core to load with")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    with tempfile.TemporaryDirectory(prefix="bench_loading_") as tmp:
        folder = Path(tmp)
        base: float | None = None
        print(f"{'case':<28} {'seconds':>8} {'peak RSS':>9} {'s/MB ratio':>10}  outcome")
        for mb in sizes:
            path = folder / f"endless_{mb}mb.txt"
            write_text(path, mb)
            result = run_case(path, args.limit, args.root)
            seconds = result["seconds"]
            ratio = ""
            if isinstance(seconds, float):
                per_mb = seconds / mb
                base = base if base is not None else per_mb
                ratio = f"{per_mb / base:.2f}"
            _row(f"text, no blank line, {mb} MB", result, ratio)
        if not args.no_bomb:
            path = folder / "bomb.docx"
            write_bomb(path, args.bomb_mb)
            on_disk = path.stat().st_size / 1e6
            _row(f"docx {on_disk:.1f} MB → {args.bomb_mb} MB XML", run_case(path, args.limit, args.root), "")


def _row(case: str, result: dict[str, object], ratio: str) -> None:
    seconds = result["seconds"]
    rss = result["rss_mb"]
    sec = f"{seconds:.2f}" if isinstance(seconds, float) else "—"
    mem = f"{rss:.0f} MB" if isinstance(rss, float) else "—"
    outcome = str(result["outcome"])
    print(f"{case:<28} {sec:>8} {mem:>9} {ratio:>10}  {outcome[:110]}", flush=True)


if __name__ == "__main__":
    main()
