"""Start-up and memory (issue 9): `pages` loads only what reading a document needs, pymupdf
comes without its unused add-ons, and counting a document's tokens keeps no token lists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pymupdf
from conftest import ROOT

from rr_core import cli
from rr_core.methods import method_names
from rr_core.tokens import TokenCounter

# Heavy modules `pages` has no use for: price data, provider SDKs, validation, the run
# history, and pymupdf's layout analyser (onnxruntime, numpy) and markdown add-on.
UNUSED_BY_PAGES = (
    "genai_prices",
    "pydantic",
    "openai",
    "anthropic",
    "sqlite3",
    "onnxruntime",
    "numpy",
    "pymupdf.layout",
    "pymupdf4llm",
    "rr_core.runs",
    "rr_core.llm.offline",
)


def _python(program: str, **extra_env: str) -> str:
    """Run ``program`` in a fresh interpreter in the project folder; its standard output."""
    env = dict(os.environ)
    env.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "tiktoken"))
    env.update(extra_env)
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_pages_imports_only_what_reading_a_document_needs(tmp_path: Path) -> None:
    pdf = tmp_path / "two.pdf"
    doc = pymupdf.open()
    for text in ("First page about fees.", "Second page about rates."):
        doc.new_page().insert_text((72, 72), text)
    doc.save(pdf)
    program = (
        "import contextlib, io, json, sys\n"
        "from rr_core.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main(['--json', 'pages', {str(pdf)!r}])\n"
        "print(json.dumps({'code': code, 'pages': len(json.loads(out.getvalue())['pages']),\n"
        "    'modules': sorted(m for m, v in sys.modules.items() if v is not None),\n"
        "    'blocked': sorted(m for m, v in sys.modules.items() if v is None)}))\n"
    )
    report = json.loads(_python(program))
    assert report["code"] == 0 and report["pages"] == 2
    assert "pymupdf" in report["modules"]
    loaded = set(report["modules"])
    assert [m for m in UNUSED_BY_PAGES if m in loaded] == []
    assert report["blocked"] == []  # pymupdf's add-ons stay importable by name afterwards


def test_an_offline_run_loads_no_adapter_and_no_sdk() -> None:
    # The first screen runs the offline engine: the adapters, with the SDKs and the deadline's
    # HTTP transport (httpcore2, anyio: 0.2 s), load only when a provider's client is made.
    program = (
        "import json, sys\n"
        "from rr_core.methods import plan_method\n"
        "from rr_core.runs import run_plans\n"
        "from rr_core.sources import sample_document\n"
        "from rr_core.llm import make_client\n"
        "from rr_core.tokens import counter_for_model\n"
        "from rr_core.settings import RunSettings\n"
        "counter = counter_for_model('gpt-4.1-mini')\n"
        "document = sample_document('contract', counter)\n"
        "plans = [plan_method(document, 'What is the notice period?', RunSettings(method=m, model='offline'),\n"
        "    counter) for m in ('baseline', 'rr')]\n"
        "traces = run_plans(document, plans, make_client('offline', model='offline'))\n"
        "assert all(t.answer for t in traces), traces\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'anyio')\n"
        "    or m in ('rr_core.llm.structured', 'rr_core.llm.deadline'))))\n"
    )
    assert json.loads(_python(program)) == []


def test_the_first_screen_draws_without_pandas_or_pyarrow(tmp_path: Path) -> None:
    # st.dataframe loads pandas and pyarrow (0.9 s of a fresh server's first open): the Ask
    # screen's tables are Markdown until a run with several questions needs a grid.
    program = (
        "import json, sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=300).run()\n"
        "assert not at.exception, [e.message for e in at.exception]\n"
        "assert any(m.value.startswith('| Method |') for m in at.markdown)\n"
        "print(json.dumps(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules)))\n"
    )
    out = _python(program, RR_STUDIO_DB=str(tmp_path / "runs.sqlite3"))
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_the_cli_spells_the_method_names_of_the_methods() -> None:
    assert ", ".join(method_names()) == cli.METHOD_NAMES
    from rr_core.lab.presets import PRESETS

    assert ", ".join(PRESETS) == cli.PRESET_NAMES


class _Tokens(list[int]):
    """A token list that can be watched (plain lists take no weak references)."""


class _WatchedEncoding:
    """Encodes a word a token, and tracks how many token lists are alive at once."""

    def __init__(self) -> None:
        self.alive = self.peak = self.calls = 0
        self._lock = threading.Lock()

    def _gone(self) -> None:
        with self._lock:
            self.alive -= 1

    def encode_ordinary(self, text: str) -> list[int]:
        tokens = _Tokens(range(len(text.split())))
        with self._lock:
            self.calls += 1
            self.alive += 1
            self.peak = max(self.peak, self.alive)
        weakref.finalize(tokens, self._gone)
        return tokens

    def encode_ordinary_batch(self, texts: list[str], num_threads: int = 8) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]


def test_counting_a_document_keeps_no_token_lists() -> None:
    encoding = _WatchedEncoding()
    counter = TokenCounter("watched", _encoding=encoding)
    texts = [" ".join(["word"] * (i + 1)) + f" page{i}" for i in range(200)]
    assert counter.count_many(texts) == [i + 2 for i in range(200)]
    assert encoding.peak <= 4, f"{encoding.peak} token lists alive at once"


def test_pages_counted_at_loading_are_not_counted_again() -> None:
    encoding = _WatchedEncoding()
    counter = TokenCounter("watched-2", _encoding=encoding)
    texts = [f"page {i} text about fees" for i in range(30)]
    counter.count_many(texts)
    calls = encoding.calls
    assert [counter.count_known(t) for t in texts] == [5] * 30
    assert encoding.calls == calls
    assert counter.count_known("a text never seen") == 4 and encoding.calls == calls + 1
    # Another tokenizer's counts are not taken for this one's.
    other = TokenCounter("watched-3", _encoding=_WatchedEncoding())
    assert other.count_known(texts[0]) == 5 and other._encoding.calls == 1
