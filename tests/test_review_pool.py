"""Reading a corpus in worker processes from inside a Streamlit script run: the readers never
run the page script again (Streamlit installs it as ``__main__``, which a spawned process runs
first), so the server's log carries no "missing ScriptRunContext" warnings from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

SCRIPT = """
import multiprocessing
import sys

import streamlit as st

from rr_core.review.corpus import Item, read_corpus
from rr_core.store.sqlite import SQLiteStore

if multiprocessing.parent_process() is not None:
    print("PAGE SCRIPT RAN IN A READER", file=sys.stderr, flush=True)
st.title("Reading")  # in a reader: Streamlit without a session warns "missing ScriptRunContext"
items = [Item(f"doc{{i}}.txt", data=f"Document {{i}} says the fee is {{i}} euros. ".encode() * 100) for i in range(6)]
files = read_corpus(items, SQLiteStore({store!r}), model="gpt-4.1-mini", processes=2)
st.write(f"read {{sum(f.ok for f in files)}} files")
"""


def test_readers_started_from_a_script_run_do_not_run_the_script(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "page.py"
    script.write_text(SCRIPT.format(store=str(tmp_path / "store.sqlite3")))
    at = AppTest.from_file(str(script), default_timeout=240)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.value for m in at.markdown] == ["read 6 files"]
    err = capfd.readouterr().err  # the readers write to the same file descriptors
    assert "PAGE SCRIPT RAN IN A READER" not in err
    assert "ScriptRunContext" not in err
    assert "bootstrapping phase" not in err
