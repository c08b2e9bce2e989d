"""The layering the README promises, checked on the imports themselves (no code runs):

- pages and app.py reach the engine through ``rr_core`` only, never an SDK or pymupdf;
- ``rr_core`` never imports streamlit (nor plotly: pictures are drawn by the screens);
- only the provider adapters import the provider SDKs and their HTTP stack;
- only the document loader imports pymupdf;
- nothing outside a method's own definition names a method: the registry is the only list;
- the store's seams (``rr_core/store/base.py``) import no database; only the store imports sqlite3;
- only the PostgreSQL store imports its driver and pool (psycopg, psycopg_pool);
- only ``rr_core/queue.py`` imports the task queue (procrastinate).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDKS = {"openai", "anthropic", "google", "httpx", "httpx2", "httpcore", "httpcore2"}
ADAPTERS = {
    "rr_core/llm/openai_client.py",
    "rr_core/llm/anthropic_client.py",
    "rr_core/llm/gemini_client.py",
    "rr_core/llm/deadline.py",
}
PYMUPDF = {"pymupdf", "fitz"}
LOADER = {"rr_core/documents.py"}
POSTGRES_DRIVER = {"psycopg", "psycopg_pool", "psycopg2", "psycopg_binary"}
POSTGRES_STORE = {"rr_core/store/postgres.py"}


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


def test_only_the_postgresql_store_imports_the_postgresql_driver() -> None:
    offenders = {
        _rel(p): _imports(p) & POSTGRES_DRIVER
        for p in _files("rr_core", "pages", "app.py")
        if _rel(p) not in POSTGRES_STORE
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    store = ROOT / "rr_core" / "store" / "postgres.py"
    assert {"psycopg", "psycopg_pool"} <= _imports(store)  # the check looks where it is


def test_only_the_queue_imports_the_task_queue() -> None:
    offenders = {
        _rel(p): _imports(p) & {"procrastinate"}
        for p in _files("rr_core", "pages", "app.py")
        if _rel(p) != "rr_core/queue.py"
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert "procrastinate" in _imports(ROOT / "rr_core" / "queue.py")  # the check looks where it is


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
        "textwrap",  # laying out text on screen
        "base64",  # a page picture inlined under a chart
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
        "reprompt-before-answer",
        "rag",
        "self-route",
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


# ---- Name switches, counted on the syntax tree ------------------------------------------------


def _compared_literals(tree: ast.AST, *, tables: bool = True) -> list[tuple[int, str]]:
    """Every string literal a comparison tests against (``x == "a"``, ``x in ("a", "b")``), and
    every literal key of a table looked up by name (``{"a": ..., "b": ...}``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and tables:
            found.extend(
                (node.lineno, key.value)
                for key in node.keys
                if isinstance(key, ast.Constant) and isinstance(key.value, str)
            )
            continue
        if not isinstance(node, ast.Compare):
            continue
        for operand in (node.left, *node.comparators):
            items = operand.elts if isinstance(operand, ast.Tuple | ast.List | ast.Set) else [operand]
            found.extend(
                (node.lineno, item.value)
                for item in items
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return found


def name_switches(names: set[str], *, outside: tuple[str, ...], tables: bool = True) -> list[str]:
    """``file:line: name`` for every comparison with one of ``names`` in rr_core, the screens
    and app.py, except under the folders (or files) of ``outside``; with ``tables``, also every
    table keyed by one (method and stage names are also JSON fields: "answer", "repeat")."""
    offenders = []
    for path in _files("rr_core", "pages", "app.py"):
        rel = _rel(path)
        if rel.startswith(outside):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders.extend(
            f"{rel}:{line}: {value}"
            for line, value in _compared_literals(tree, tables=tables)
            if value in names
        )
    return offenders


def _provider_names() -> set[str]:
    from rr_core.llm.providers import REGISTRY

    return set(REGISTRY)


def _method_names() -> set[str]:
    from rr_core.methods import all_methods

    return {m.name for m in all_methods()}


def _stage_names() -> set[str]:
    from rr_core.stages import all_stages

    return {s.name for s in all_stages()}


def test_the_counter_sees_a_switch() -> None:
    tree = ast.parse('if p == "offline" or q in ("openai", "x") or "anthropic" != r: pass')
    assert sorted(v for _, v in _compared_literals(tree)) == ["anthropic", "offline", "openai", "x"]
    table = ast.parse('LABELS = {"simulated": "a reader", "other": 1}')
    assert sorted(v for _, v in _compared_literals(table)) == ["other", "simulated"]


def test_no_provider_name_is_compared_outside_the_engine_package() -> None:
    assert _provider_names() >= {"offline", "openai", "anthropic", "openai-compatible", "simulated"}
    assert name_switches(_provider_names(), outside=("rr_core/llm/",)) == []


def test_no_method_or_stage_name_is_compared_outside_their_registries() -> None:
    assert name_switches(_method_names(), outside=("rr_core/methods/",), tables=False) == []
    assert (
        name_switches(_stage_names(), outside=("rr_core/methods/", "rr_core/stages.py"), tables=False) == []
    )


# ---- The engine's own layers -----------------------------------------------------------------


def _rr_imports(path: Path) -> set[str]:
    """The ``rr_core`` modules a file imports (``rr_core.store``, ``rr_core.llm.openai_client``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("rr_core"))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.startswith("rr_core")
        ):
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _offenders(folder: str, banned: tuple[str, ...]) -> dict[str, set[str]]:
    out = {}
    for path in _files(folder):
        if not path.exists():
            continue
        bad = {n for n in _rr_imports(path) if n.startswith(banned)}
        if bad:
            out[_rel(path)] = bad
    return out


def test_the_provider_layer_imports_no_method_lab_run_or_store() -> None:
    banned = ("rr_core.methods", "rr_core.lab", "rr_core.runs", "rr_core.store", "rr_core.workbench")
    assert _offenders("rr_core/llm", banned) == {}


def test_plans_make_no_client() -> None:
    banned = ("rr_core.llm.openai_client", "rr_core.llm.anthropic_client", "rr_core.llm.gemini_client")
    banned += ("rr_core.llm.deadline",)
    banned += ("rr_core.llm.make_client", "rr_core.llm.client_for", "rr_core.runs")
    assert {k: v for k, v in _offenders("rr_core/plans.py", banned).items()} == {}


def test_the_store_imports_no_sdk_adapter() -> None:
    banned = ("rr_core.llm.openai_client", "rr_core.llm.anthropic_client", "rr_core.llm.gemini_client")
    banned += ("rr_core.llm.deadline",)
    offenders = {**_offenders("rr_core/store.py", banned), **_offenders("rr_core/store", banned)}
    assert offenders == {}


def test_screens_and_cli_run_work_only_through_the_workbench() -> None:
    """Ask and the Lab reach the runner, the sweep and the client factory through
    ``rr_core.workbench`` (one place for the runner and the store to change)."""
    banned = (
        "rr_core.runs.Executor",
        "rr_core.runs.Budget",
        "rr_core.lab.sweep.run_sweep",
        "rr_core.lab.sweep.plan_sweep",
        "rr_core.lab.build_trials",
        "rr_core.llm.make_client",
        "rr_core.llm.engine_client",
    )
    offenders = {**_offenders("pages", banned), **_offenders("rr_core/cli.py", banned)}
    assert offenders == {}


# The loose session keys the screens may use: the settings and results callers and tests set or
# read from outside (the engine, the method parameters, the question and methods, the results),
# and widget keys Streamlit owns. Everything else is a field of ``pages.common.state.Session``.
OUTSIDE_KEYS = {
    "provider", "model", "api_key", "base_url", "price_model", "compat_price_model", "concurrency",
    "reminder_style", "reminder_placement", "reminder_pages", "methods", "variants", "gold_pages",
    "question", "ask_mode", "questions_text", "source", "results", "lab_result", "view_page",
    "prompt_download", "history_table", "verify", "verify_model",
}  # fmt: skip


def _loose_keys(tree: ast.AST) -> set[str]:
    """Literal keys read or written on ``st.session_state`` (or ``state``, its alias)."""
    owners = {"state", "st.session_state"}
    keys: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and ast.unparse(node.value) in owners
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            keys.add(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "setdefault", "pop")
            and ast.unparse(node.func.value) in owners
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            keys.add(str(node.args[0].value))
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("S.bound", "bound")
            and len(node.args) > 2
            and isinstance(node.args[2], ast.Constant)
        ):
            keys.add(str(node.args[2].value))
    return {k for k in keys if not k.startswith("w.")}


def test_screens_keep_their_own_state_in_the_typed_session() -> None:
    used = {
        _rel(p): _loose_keys(ast.parse(p.read_text(encoding="utf-8"))) - OUTSIDE_KEYS
        for p in _files("pages", "app.py")
    }
    assert {k: v for k, v in used.items() if v} == {}


def test_every_download_button_leaves_the_app_alone_when_clicked() -> None:
    """A download that reruns the app renews every download button's file while the user may
    be clicking the next one: that click found its file gone (``Deferred file … not found``)
    and the button stayed disabled. So no download button reruns (``on_click="ignore"``)."""
    calls = []
    for path in sorted((ROOT / "pages").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "download_button":
                on_click = next((k.value for k in node.keywords if k.arg == "on_click"), None)
                ignored = isinstance(on_click, ast.Constant) and on_click.value == "ignore"
                calls.append((f"{path.relative_to(ROOT)}:{node.lineno}", ignored))
    assert len(calls) >= 10
    assert [where for where, ignored in calls if not ignored] == []


# ---- No import cycles, lazy imports counted --------------------------------------------------


def _modules() -> dict[str, Path]:
    """Every ``rr_core`` module by its dotted name (a package by its ``__init__``)."""
    out = {}
    for path in _files("rr_core"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which ``rr_core`` modules each imports, at any depth of its code: an import inside a
    function (a lazy one) counts as much as one at the top. ``from a import b`` names the module
    ``a.b`` when it is one, else ``a``; relative imports are resolved."""

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets.extend(
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                )
        found = {module_of(t) for t in targets if t.startswith("rr_core")}
        graph[name] = {t for t in found if t is not None and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other in a circle (the strongly connected
    components of more than one module), each sorted, found without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def test_the_cycle_counter_sees_a_lazy_import() -> None:
    # a imports b at the top, b imports c inside a function, c imports a inside a method: one circle.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    modules = _modules()
    work = import_graph(modules)
    assert "rr_core.kinds" in work["rr_core.work"]  # the reader sees real imports
    assert "rr_core.lab.haystacks" in work["rr_core.lab.tasks"]
    # An import inside a function body is read like one at the top.
    lazy = [
        node
        for node in ast.walk(ast.parse(modules["rr_core.workbench"].read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
        for inner in ast.walk(node)
        if isinstance(inner, ast.ImportFrom) and (inner.module or "") == "rr_core.queue"
    ]
    assert lazy and "rr_core.queue" in work["rr_core.workbench"]


def test_no_rr_core_modules_import_each_other_in_a_circle() -> None:
    """Counted with the imports inside functions: a local import that hides a circle (a lower
    layer reaching up into a use case, with its types degraded to ``Any``) counts as a circle."""
    assert import_cycles(import_graph(_modules())) == []
