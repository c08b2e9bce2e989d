"""The PostgreSQL store's own guarantees, on a real server (``tests/pg_kit.py``): owners kept apart
by the database itself (row-level security), even for SQL that forgets its owner filter; the
role it refuses; migrations applied once by replicas starting together; connection errors.

The contract it shares with SQLite (runs, replies, batches, documents) is in ``test_store.py``.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from conftest import offline_traces

from rr_core.documents import Document
from rr_core.errors import ConfigError, LedgerError
from rr_core.llm.base import Usage
from rr_core.store import BatchRecord, CachedCall, ReviewDecision, SentCall, open_store
from rr_core.store.postgres import MIGRATIONS, SCHEMA_VERSION, PostgresStore, close_pools, submit_lock
from tests.pg_kit import APP_PASSWORD

OWNED = (
    "runs",
    "calls",
    "documents",
    "batches",
    "batch_items",
    "readings",
    "work",
    "work_results",
    "sign_outs",
    "review_decisions",
    "sent_calls",
    "ledger_spend",
    "work_parts",
)


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def _fill(store: PostgresStore, document: Document, tag: str) -> list[str]:
    """One of everything: two runs, a reply, a document, a batch with two items; the run ids."""
    traces = offline_traces(document, "baseline", "rr")
    store.save_batch(traces)
    store.put(f"{tag}-reply", CachedCall(f"{tag}'s reply", Usage(input_tokens=3), "m"))
    digest = store.put_document(f"{tag}'s contract".encode(), f"{tag}.pdf")
    store.put_reading(digest, "o200k_base", f"{tag}'s pages".encode())
    store.add_batch(
        BatchRecord(batch_id=f"{tag}-batch", provider="openai", label=tag, state="submitted", total=2),
        [f"{tag}-k1", f"{tag}-k2"],
    )
    store.end_sign_in(f"{tag}-sign-in")
    work = store.submit_work("review", f"{tag}'s grid", {"who": tag}, 2, parts=[f"{tag}-doc"])
    store.add_results(work, [(f"{tag}-cell", {"answer": f"{tag}'s answer"})])
    store.put_decision(
        ReviewDecision(document_sha256="same-doc", question="Q?", decision="corrected", answer=tag)
    )
    store.mark_sent(SentCall(key="same-key", provider="openai", model="m", reserved_usd=0.5, sender=tag))
    store.add_spend("same-ledger", "same-key", 0.25 if tag == "alice" else 0.5)
    return [t.run_id for t in traces]


@pytest.fixture
def two_owners(pg_url: str, planted_document: Document) -> tuple[PostgresStore, PostgresStore]:
    alice, bob = PostgresStore(pg_url, owner="alice"), PostgresStore(pg_url, owner="bob")
    _fill(alice, planted_document, "alice")
    _fill(bob, planted_document, "bob")
    return alice, bob


def test_every_owned_table_has_row_level_security_forced_and_one_owner_policy(
    pg_url: str, postgres_server: Any
) -> None:
    PostgresStore(pg_url)  # migrates
    with postgres_server.admin(_database(pg_url)) as db:
        tables = {
            row[0]: (row[1], row[2])
            for row in db.execute(
                "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class"
                " WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'"
            )
        }
        policies = {
            row[0]: row[1]
            for row in db.execute("SELECT tablename, qual FROM pg_policies WHERE schemaname = 'public'")
        }
        owned = {row[0] for row in db.execute("SELECT table_name FROM information_schema.columns WHERE column_name = 'owner' AND table_schema = 'public'")}  # fmt: skip
        shared = {
            row[0]: (row[1], row[2])
            for row in db.execute(
                "SELECT cmd, qual, with_check FROM pg_policies WHERE tablename = 'owner_emails'"
            )
        }
    # Every table but the schema's own version record holds owned rows, under forced security;
    # the owners' sign-in emails alone are readable by every owner (``--user EMAIL`` finds its
    # owner), and each owner writes only its own.
    assert set(tables) == {*OWNED, "schema_version", "owner_emails"} and owned == {*OWNED, "owner_emails"}
    assert {name: flags for name, flags in tables.items() if name != "schema_version"} == {
        name: (True, True) for name in (*OWNED, "owner_emails")
    }
    assert set(policies) == {*OWNED, "owner_emails"}
    assert all(
        "current_setting('rr.owner'" in str(q) and "owner =" in str(q)
        for name, q in policies.items()
        if name != "owner_emails"
    )
    assert shared["SELECT"] == ("true", None)
    mine = [str(v) for cmd in ("INSERT", "UPDATE", "DELETE") for v in shared[cmd] if v is not None]
    assert len(mine) == 4 and all("current_setting('rr.owner'" in v and "owner =" in v for v in mine)


def test_another_owners_rows_are_zero_rows_at_the_sql_layer(
    two_owners: tuple[PostgresStore, PostgresStore], pg_url: str, postgres_server: Any
) -> None:
    alice, bob = two_owners
    with postgres_server.admin(_database(pg_url)) as db:  # the superuser sees both: the rows exist
        every = {
            t: db.execute(f"SELECT owner, COUNT(*) FROM {t} GROUP BY owner ORDER BY owner").fetchall()
            for t in OWNED
        }
    assert every == {
        "runs": [("alice", 2), ("bob", 2)], "calls": [("alice", 1), ("bob", 1)],
        "documents": [("alice", 1), ("bob", 1)], "batches": [("alice", 1), ("bob", 1)],
        "batch_items": [("alice", 2), ("bob", 2)], "readings": [("alice", 1), ("bob", 1)],
        "work": [("alice", 1), ("bob", 1)], "work_results": [("alice", 1), ("bob", 1)],
        "sign_outs": [("alice", 1), ("bob", 1)],
        "review_decisions": [("alice", 1), ("bob", 1)],
        "sent_calls": [("alice", 1), ("bob", 1)],
        "ledger_spend": [("alice", 1), ("bob", 1)], "work_parts": [("alice", 1), ("bob", 1)],
    }  # fmt: skip
    assert [c.sender for c in alice.unanswered()] == ["alice"]  # the same key, each owner's own
    assert alice.sign_in_ended("alice-sign-in") and not alice.sign_in_ended("bob-sign-in")
    with alice.transaction() as db:
        for table in OWNED:
            assert db.execute(f"SELECT COUNT(*) FROM {table} WHERE owner = 'bob'").fetchone() == (0,), table
            assert db.execute(f"SELECT DISTINCT owner FROM {table}").fetchall() == [("alice",)], table


def test_sql_that_forgets_its_owner_filter_still_sees_and_changes_only_the_owners_rows(
    two_owners: tuple[PostgresStore, PostgresStore], pg_url: str, postgres_server: Any
) -> None:
    """Tries to bypass the owner filter through the store's own connection, as alice."""
    alice, bob = two_owners
    bob_runs = {r.run_id for r in bob.list()}
    with alice.transaction() as db:
        rows = db.execute("SELECT * FROM runs").fetchall()  # no WHERE at all
        names = [c.name for c in db.execute("SELECT * FROM runs LIMIT 0").description or []]
        assert len(rows) == 2 and {row[names.index("owner")] for row in rows} == {"alice"}
        assert db.execute("SELECT cache_key FROM batch_items ORDER BY cache_key").fetchall() == [
            ("alice-k1",), ("alice-k2",),
        ]  # fmt: skip
        assert db.execute("SELECT name FROM documents").fetchall() == [("alice.pdf",)]
        assert db.execute("SELECT data FROM readings").fetchall() == [(b"alice's pages",)]
        assert db.execute("SELECT response FROM calls").fetchall() == [("alice's reply",)]
        assert db.execute("SELECT answer FROM review_decisions").fetchall() == [("alice",)]
        assert db.execute("UPDATE review_decisions SET answer = 'x' WHERE owner = 'bob'").rowcount == 0
        # Writes aimed at bob's rows reach none of them.
        assert db.execute("UPDATE runs SET answer = 'hijacked' WHERE owner = 'bob'").rowcount == 0
        assert db.execute("DELETE FROM documents WHERE owner = 'bob'").rowcount == 0
        assert db.execute("DELETE FROM batch_items WHERE cache_key LIKE 'bob-%'").rowcount == 0
        assert db.execute("UPDATE calls SET response = 'x' WHERE cache_key = 'bob-reply'").rowcount == 0
        # Unfiltered writes change alice's rows only.
        assert db.execute("UPDATE batches SET label = 'relabelled'").rowcount == 1
    with pytest.raises(LedgerError, match="row-level security"), alice.transaction() as db:
        db.execute(  # a row written for bob by alice's transaction is refused
            "INSERT INTO calls (owner, cache_key, created_at, model, response, usage)"
            " VALUES ('bob', 'planted', '', 'm', 'x', '{}')"
        )
    # bob's rows are as they were; alice's label change was hers.
    assert {r.run_id for r in bob.list()} == bob_runs and all(r.answer != "hijacked" for r in bob.list())
    assert bob.document_name(bob.put_document(b"bob's contract", "again.pdf")) == "bob.pdf"
    assert bob.find("bob-reply").text == "bob's reply"  # type: ignore[union-attr]
    assert bob.find("planted") is None and bob.batches()[0].label == "bob"
    assert alice.batches()[0].label == "relabelled"
    assert bob.pending_batch("bob-k1") is not None
    assert [d.answer for d in bob.decisions_for(["same-doc"])] == ["bob"]


def test_a_connection_outside_the_stores_transactions_sees_no_owners_rows(
    two_owners: tuple[PostgresStore, PostgresStore], pg_url: str
) -> None:
    """The owner is set for a transaction only: a pooled connection used without it, or a new
    connection of the application's role, reads nothing and writes nothing."""
    alice, _ = two_owners
    with alice.transaction():
        pass
    with alice._pool.connection() as db:  # the very connections the store uses, after it
        assert db.execute("SELECT current_setting('rr.owner', true)").fetchone() in [(None,), ("",)]
        assert [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone() for t in OWNED] == [(0,)] * len(OWNED)
    with psycopg.connect(pg_url, autocommit=True) as db:
        assert [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone() for t in OWNED] == [(0,)] * len(OWNED)
        assert db.execute("DELETE FROM runs").rowcount == 0
    assert alice.count() == 2


def test_two_owners_uploading_the_same_bytes_each_own_a_row(pg_url: str, postgres_server: Any) -> None:
    data = bytes(range(256)) * 4096  # every byte value, 1 MiB
    alice, bob = PostgresStore(pg_url, owner="alice"), PostgresStore(pg_url, owner="bob")
    digest = alice.put_document(data, "a.pdf")
    assert alice.get_document(digest) == data and bob.get_document(digest) is None
    assert bob.put_document(data, "b.pdf") == digest and bob.get_document(digest) == data
    with postgres_server.admin(_database(pg_url)) as db:
        assert db.execute("SELECT owner, name, size FROM documents ORDER BY owner").fetchall() == [
            ("alice", "a.pdf", len(data)), ("bob", "b.pdf", len(data)),
        ]  # fmt: skip


@pytest.mark.parametrize("power", ["SUPERUSER", "BYPASSRLS"])
def test_a_role_row_level_security_does_not_apply_to_is_refused(
    pg_url: str, postgres_server: Any, power: str
) -> None:
    role = f"rr_{power.lower()}"
    with postgres_server.admin() as db:
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{APP_PASSWORD}' {power}")
    try:
        url = postgres_server.url(_database(pg_url), user=role)
        with pytest.raises(ConfigError, match=f"connects as {role}.*row-level security would not apply"):
            PostgresStore(url)
        with pytest.raises(ConfigError, match="NOSUPERUSER NOBYPASSRLS"):
            open_store(url, owner="alice")
    finally:
        with postgres_server.admin() as db:
            db.execute(f"DROP ROLE {role}")


def test_a_wrong_password_is_a_clear_error_that_does_not_show_it(pg_url: str) -> None:
    wrong = pg_url.replace(APP_PASSWORD, "Wr0ng-s3cret")
    with pytest.raises(LedgerError, match="password authentication failed") as caught:
        open_store(wrong)
    assert "Wr0ng-s3cret" not in str(caught.value) and APP_PASSWORD not in str(caught.value)
    with pytest.raises(LedgerError, match="does not exist"):
        open_store(pg_url.rsplit("/", 1)[0] + "/no_such_database")


def test_a_database_newer_than_the_code_is_refused(pg_url: str, postgres_server: Any) -> None:
    assert PostgresStore(pg_url).schema_version() == SCHEMA_VERSION
    close_pools()
    with postgres_server.admin(_database(pg_url)) as db:
        db.execute(
            "INSERT INTO schema_version VALUES (%s, 'later', 'from the future')", (SCHEMA_VERSION + 1,)
        )
    with pytest.raises(LedgerError, match=f"schema version {SCHEMA_VERSION + 1}.*newer R&R Studio"):
        PostgresStore(pg_url)


def _open_and_write(url: str, owner: str, start: Any) -> None:
    """A replica starting: it opens the store (migrating if need be) the moment all are ready."""
    start.wait(timeout=120)
    store = PostgresStore(url, owner=owner)
    store.put("k", CachedCall(owner, Usage(), "m"))
    store.close()


def test_replicas_starting_together_apply_each_migration_once(pg_url: str, postgres_server: Any) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    replicas = [context.Process(target=_open_and_write, args=(pg_url, f"r{n}", start)) for n in range(3)]
    for replica in replicas:
        replica.start()
    start.set()
    for replica in replicas:
        replica.join(timeout=300)
        assert replica.exitcode == 0
    with postgres_server.admin(_database(pg_url)) as db:
        applied = db.execute("SELECT version, description FROM schema_version ORDER BY version").fetchall()
        assert db.execute("SELECT owner FROM calls ORDER BY owner").fetchall() == [("r0",), ("r1",), ("r2",)]
    assert applied == [(m.version, m.description) for m in MIGRATIONS]


def test_the_stores_of_several_owners_share_one_pool_and_closing_one_keeps_the_other(
    pg_url: str, tmp_path: Path
) -> None:
    alice, bob = PostgresStore(pg_url, owner="alice"), PostgresStore(pg_url, owner="bob")
    assert alice._pool is bob._pool
    alice.close()
    alice.close()  # twice is once
    bob.put("k", CachedCall("still open", Usage(), "m"))
    assert bob.find("k") is not None and bob.location == pg_url.replace(f"rr_app:{APP_PASSWORD}", "***")
    with pytest.raises(LedgerError, match="was closed"):
        alice.count()


@pytest.mark.parametrize("required", [False, True])
def test_without_postgresql_its_tests_skip_saying_why_unless_required(tmp_path: Path, required: bool) -> None:
    """A fresh clone on a machine without PostgreSQL: skipped, with the command that installs it;
    under ``.ci/run`` (``RR_REQUIRE_POSTGRES=1``) the same is a failure."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    env = dict(os.environ) | {"RR_POSTGRES_BIN": str(tmp_path / "no-postgres-here")}
    env.pop("RR_REQUIRE_POSTGRES", None)
    if required:
        env["RR_REQUIRE_POSTGRES"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/test_store_postgres.py::test_a_database_newer_than_the_code_is_refused"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if required:
        assert done.returncode == 1 and "1 error" in done.stdout, done.stdout
        assert "PostgreSQL not installed: apt-get install postgresql (RR_REQUIRE_POSTGRES=1" in done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
        assert "PostgreSQL not installed: apt-get install postgresql" in done.stdout


def test_a_store_carries_on_after_the_database_restarts(
    pg_url: str, postgres_server: Any, planted_document: Document
) -> None:
    """The server crashes and comes back (every pooled connection is dead): the next call gets a
    fresh connection instead of an error, and nothing committed is lost."""
    store = PostgresStore(pg_url, owner="alice")
    run_ids = _fill(store, planted_document, "alice")
    postgres_server.restart()
    assert {r.run_id for r in store.list()} == set(run_ids)
    store.put("after", CachedCall("after the restart", Usage(), "m"))
    assert store.find("after") is not None and store.pending_batch("alice-k1") is not None


def test_the_postgresql_store_is_a_store(pg_url: str) -> None:
    from rr_core.store import CallCache, DocumentStore, ReviewDecisionStore, RunStore, Store

    store = open_store(pg_url, owner="alice")  # open_store is typed -> Store: mypy checks the class
    assert isinstance(store, PostgresStore) and store.owner == "alice"
    for protocol in (RunStore, CallCache, DocumentStore, ReviewDecisionStore, Store):
        members = [n for n in vars(protocol) if not n.startswith("_")]
        assert members and all(hasattr(PostgresStore, n) for n in members), protocol


def test_a_migration_that_fails_changes_nothing(
    pg_url: str, postgres_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rr_core.store.postgres as backend

    PostgresStore(pg_url).put("k", CachedCall("kept", Usage(), "m"))
    close_pools()
    broken = backend.Migration(
        SCHEMA_VERSION + 1,
        "a change that fails half way",
        ("CREATE TABLE half (x INTEGER)", "INSERT INTO half VALUES (1)", "SELECT no_such_function()"),
    )
    monkeypatch.setattr(backend, "MIGRATIONS", (*backend.MIGRATIONS, broken))
    monkeypatch.setattr(backend, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(LedgerError, match="could not be prepared.*no_such_function"):
        PostgresStore(pg_url)
    monkeypatch.undo()
    store = PostgresStore(pg_url)
    assert store.schema_version() == SCHEMA_VERSION and store.find("k") is not None
    with postgres_server.admin(_database(pg_url)) as db:
        assert db.execute("SELECT to_regclass('public.half')").fetchone() == (None,)


def test_a_submit_waits_for_the_owners_submit_in_progress_and_reuses_what_it_recorded(pg_url: str) -> None:
    """Two replicas submit the same grid at once: the second waits for the first's transaction
    (an advisory lock per owner), then finds the work it recorded and returns its id; no second
    work is recorded (it would run, and be paid, twice). Another owner does not wait."""
    first, second = PostgresStore(pg_url, owner="ana"), PostgresStore(pg_url, owner="ana")
    spec = {"grid": "the same"}
    found: list[str] = []
    with first.transaction() as db:
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (submit_lock("ana"),))
        submitting = threading.Thread(
            target=lambda: found.append(
                second.submit_work("review", "grid", spec, 2, calls_key="the same calls")
            )
        )
        submitting.start()
        end = time.monotonic() + 60
        while True:  # the other submit is waiting on the lock
            waiting = db.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
            if waiting is not None and waiting[0] >= 1:
                break
            assert time.monotonic() < end, "the second submit never waited for the first"
            time.sleep(0.02)
        assert found == []
        assert PostgresStore(pg_url, owner="bo").submit_work(
            "review", "grid", spec, 2, calls_key="the same calls"
        )
        db.execute(
            "INSERT INTO work (work_id, kind, title, state, spec, total, created_at, updated_at, calls_key)"
            " VALUES ('recorded-first', 'review', 'grid', 'queued', %s, 2,"
            " '2026-11-26T00:00:00+00:00', '2026-11-26T00:00:00+00:00', 'the same calls')",
            (json.dumps(spec),),
        )
    submitting.join(60)
    assert found == ["recorded-first"]
    assert [w.work_id for w in first.list_work()] == ["recorded-first"]


def test_the_test_kit_starts_a_server_again_that_something_else_stopped_or_removed(
    postgres_server: Any,
) -> None:
    """A test server stopped, or its folder removed, by something outside the tests (a clean-up of
    the temporary folder): the kit starts it again and says why, instead of failing every later
    PostgreSQL test of the session (as happened once in a clean-clone CI run beside other work)."""
    import shutil

    from tests.pg_kit import PostgresServer

    server = PostgresServer(postgres_server.binaries)  # a private one: the session's is left alone
    try:
        server.start()
        assert server.ensure_running() == ""
        server._run(str(server.binaries / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "-w", "stop")
        said = server.ensure_running()
        assert "stopped taking connections" in said and "started again on its data" in said
        with psycopg.connect(server.url(server.new_database())) as db:
            assert db.execute("SELECT current_user").fetchone() == ("rr_app",)

        server._run(str(server.binaries / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "-w", "stop")
        old_root = server.root
        shutil.rmtree(old_root)
        said = server.ensure_running()
        assert "a new cluster was started" in said and server.root != old_root
        with psycopg.connect(server.url(server.new_database())) as db:
            assert db.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
