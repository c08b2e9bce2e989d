"""The layering the README promises, checked on the imports themselves (no code runs):

- pages and app.py reach the engine through ``rr_core`` only, never an SDK or pymupdf;
- ``rr_core`` never imports streamlit (nor plotly: pictures are drawn by the screens);
- only the provider adapters import the provider SDKs and their HTTP stack;
- only the document loader imports pymupdf;
- nothing outside a method's own definition names a method: the registry is the only list;
- the store's seams (``rr_core/store/base.py``) import no database; only the store imports sqlite3.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDKS = {"openai", "anthropic", "httpx", "httpx2", "httpcore", "httpcore2"}
ADAPTERS = {"rr_core/llm/openai_client.py", "rr_core/llm/anthropic_client.py", "rr_core/llm/deadline.py"}
PYMUPDF = {"pymupdf", "fitz"}
LOADER = {"rr_core/documents.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _files(*folders: str) -> list[Path]:
    out: list[Path] = []
    for folder in folders:
        base = ROOT / folder
        out.extend(sorted(base.rglob("*.py")) if base.is_dir() else [base])
    return out


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_rr_core_never_imports_streamlit_or_plotly() -> None:
    offenders = {_rel(p): _imports(p) & {"streamlit", "plotly"} for p in _files("rr_core")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_adapters_import_the_provider_sdks() -> None:
    offenders = {
        _rel(p): _imports(p) & SDKS for p in _files("rr_core", "pages", "app.py") if _rel(p) not in ADAPTERS
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_loader_imports_pymupdf() -> None:
    offenders = {
        _rel(p): _imports(p) & PYMUPDF for p in _files("rr_core", "pages", "app.py") if _rel(p) not in LOADER
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_screens_reach_the_engine_through_rr_core_only() -> None:
    # Display libraries (numpy: the arrays plotly takes whole) and the engine; nothing that
    # reaches a provider or a file format.
    allowed = {"streamlit", "pandas", "plotly", "numpy", "pages", "rr_core", "__future__"}
    stdlib = {
        "json",
        "collections",
        "dataclasses",
        "hashlib",
        "pathlib",
        "sys",
        "tempfile",
        "typing",
        "os",
        "re",
        "html",
    }
    offenders = {_rel(p): _imports(p) - allowed - stdlib for p in _files("pages", "app.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_code_outside_the_method_definitions_switches_on_a_method_name() -> None:
    """Method and stage names appear as string literals only in the registry's own package (and in
    defaults: the methods a screen or preset starts with, which are data, not switches)."""
    names = {
        "baseline",
        "reprompt",
        "icr",
        "rr",
        "chunked-icr",
        "chunked-rr",
        "rag",
        "briefcontext",
        "question-last",
        "repeat",
        "closed-book",
        "oracle",
    }
    names |= {"retrieve", "answer", "map", "reduce", "rank"}  # stage names: no switching on them either
    alternatives = "|".join(map(re.escape, names))
    comparison = re.compile(r"""(==|!=|\bin\b)\s*[\(\[{]?\s*["'](""" + alternatives + r""")["']""")
    offenders = []
    for path in _files("rr_core", "pages", "app.py"):
        rel = _rel(path)
        if rel.startswith("rr_core/methods/"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if comparison.search(line):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert offenders == []


def test_the_store_seams_import_no_database_and_only_the_store_imports_sqlite() -> None:
    """``rr_core/store/base.py`` is what callers are typed against: no driver, no backend, no SDK.
    The SQLite driver belongs to the store package's backend alone."""
    seams = ROOT / "rr_core" / "store" / "base.py"
    assert _imports(seams) & ({"sqlite3", "psycopg", "psycopg2", "sqlalchemy"} | SDKS) == set()
    backends = {
        node.module
        for node in ast.walk(ast.parse(seams.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rr_core.store.")
    }
    assert backends == set()
    offenders = [
        _rel(p)
        for p in _files("rr_core", "pages", "app.py")
        if "sqlite3" in _imports(p) and not _rel(p).startswith("rr_core/store/")
    ]
    assert offenders == []
    assert "sqlite3" in _imports(ROOT / "rr_core" / "store" / "sqlite.py")  # the check looks where it is
