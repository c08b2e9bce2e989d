#!/usr/bin/env bash
# R&R Studio, team mode: a local trial of the deployment, on this machine's loopback only.
#
#   make team            (or deploy/team.sh)       start everything; Ctrl-C stops everything
#   deploy/team.sh --mock-oidc                      the same with sign-in through a mock OpenID
#                                                   provider (users ann and bob): try team mode's
#                                                   sign-in without a real provider
#   make team-stop       (or deploy/team.sh stop)  stop what a team.sh in another terminal started
#
# What runs (state and logs under ./.team/, git-ignored):
#   PostgreSQL   a cluster in .team/pg (made once, kept between trials), port $TEAM_PG_PORT; the
#                app's role rr_app (no SUPERUSER, no BYPASSRLS: row-level security applies to it)
#                owning the database rr_studio; its password made once in .team/secrets/db-password
#   a worker     python -m rr_core worker: runs submitted work (review grids, Lab sweeps)
#   2 replicas   streamlit run app.py on $TEAM_REPLICA_PORTS
#   nginx        on $TEAM_PORT, in front of the replicas, with cookie affinity (.team/nginx.conf,
#                made from deploy/nginx.conf.in)
# Logs: .team/logs/{postgres,worker,replica-<port>,nginx-error,nginx-access}.log
#
# Settings (environment): TEAM_PORT (8080), TEAM_REPLICA_PORTS ("8601 8602"), TEAM_PG_PORT (55432),
# RR_PYTHON (.venv/bin/python, else python3), RR_POSTGRES_BIN (a folder with initdb and pg_ctl).
# Worker's provider keys: the usual variables (OPENAI_API_KEY, …) in the environment of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
TEAM="$ROOT/.team"
LOGS="$TEAM/logs"
RUN="$TEAM/run"
PORT="${TEAM_PORT:-8080}"
REPLICA_PORTS="${TEAM_REPLICA_PORTS:-8601 8602}"
PG_PORT="${TEAM_PG_PORT:-55432}"
PG_DATA="$TEAM/pg"
PG_SOCKET="$TEAM/pg-socket"
APP_ROLE="rr_app"
DATABASE="rr_studio"
if [ -n "${RR_PYTHON:-}" ]; then PY="$RR_PYTHON"
elif [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"
else PY="python3"; fi

say() { printf '== %s\n' "$*"; }
die() { printf 'team.sh: %s\n' "$*" >&2; exit 1; }

as_postgres() {  # PostgreSQL refuses to run as root: as root, run its tools as the postgres user
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {  # the folder with initdb and pg_ctl, found as tests/pg_kit.py finds it
  if [ -n "${RR_POSTGRES_BIN:-}" ]; then echo "$RR_POSTGRES_BIN"; return; fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"; return
  fi
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  [ -n "$found" ] && [ -x "$found/initdb" ] && [ -x "$found/pg_ctl" ] && { echo "$found"; return; }
  return 1
}

stop_all() {
  trap - INT TERM EXIT
  say "stopping"
  local f pid
  for f in nginx worker replica-* mock-oidc; do
    for pidfile in "$RUN"/$f.pid; do
      pid="$(cat "$pidfile" 2>/dev/null)" || continue
      kill -TERM "$pid" 2>/dev/null || true
    done
  done
  for pidfile in "$RUN"/*.pid; do
    pid="$(cat "$pidfile" 2>/dev/null)" || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  if BIN="$(pg_bin)" && [ -f "$PG_DATA/postmaster.pid" ]; then
    as_postgres "$BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
  fi
  say "stopped (data kept in .team/pg; logs in .team/logs)"
}

if [ "${1:-}" = "stop" ]; then
  stop_all
  exit 0
fi

MOCK_OIDC=0
for arg in "$@"; do
  case "$arg" in
    --mock-oidc) MOCK_OIDC=1 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) die "unknown argument $arg (try --help)" ;;
  esac
done

# ---- what it needs ---------------------------------------------------------------------------
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || die "nginx is not installed (Debian: apt-get install nginx)"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
BIN="$(pg_bin)" || die "PostgreSQL is not installed (Debian: apt-get install postgresql)"
"$PY" -c "import streamlit, procrastinate, psycopg" 2>/dev/null \
  || die "$PY lacks the app's packages: run make run once (it makes .venv), or set RR_PYTHON"
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || die "running as root, PostgreSQL needs the postgres user (Debian's postgresql package makes it)"
fi
for f in "$RUN"/*.pid; do
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && die "already running (pid $(cat "$f") from $f): make team-stop first"
done
mkdir -p "$LOGS" "$RUN" "$TEAM/secrets" "$PG_SOCKET"
chmod 700 "$TEAM/secrets"

trap stop_all EXIT
trap 'exit 130' INT TERM

# ---- PostgreSQL ------------------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then chown postgres:postgres "$PG_SOCKET"; touch "$LOGS/postgres.log"; chown postgres "$LOGS/postgres.log"; fi
if [ ! -f "$PG_DATA/PG_VERSION" ]; then
  say "PostgreSQL: a new cluster in .team/pg"
  mkdir -p "$PG_DATA"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$PG_DATA"
  as_postgres "$BIN/initdb" -D "$PG_DATA" -U postgres -E UTF8 --no-locale \
    --auth-local=trust --auth-host=scram-sha-256 >"$LOGS/initdb.log" 2>&1 \
    || die "initdb failed: see .team/logs/initdb.log"
fi
as_postgres "$BIN/pg_ctl" -D "$PG_DATA" -l "$LOGS/postgres.log" -w \
  -o "-p $PG_PORT -k $PG_SOCKET -c listen_addresses=127.0.0.1" start >/dev/null \
  || die "PostgreSQL did not start: see .team/logs/postgres.log"
psql_admin() { as_postgres "$BIN/psql" -h "$PG_SOCKET" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtAc "$1"; }
PW_FILE="$TEAM/secrets/db-password"
if [ ! -s "$PW_FILE" ]; then
  (umask 077; "$PY" -c 'import secrets; print(secrets.token_urlsafe(24))' >"$PW_FILE")
fi
DB_PASSWORD="$(cat "$PW_FILE")"
if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname = '$APP_ROLE'")" != "1" ]; then
  psql_admin "CREATE ROLE $APP_ROLE LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"
fi
psql_admin "ALTER ROLE $APP_ROLE PASSWORD '$DB_PASSWORD'"
if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")" != "1" ]; then
  psql_admin "CREATE DATABASE $DATABASE OWNER $APP_ROLE TEMPLATE template0"
fi
# Given to the replicas and the worker in their environment, never on a command line.
export RR_STUDIO_DB="postgresql://$APP_ROLE:$DB_PASSWORD@127.0.0.1:$PG_PORT/$DATABASE"
say "PostgreSQL on 127.0.0.1:$PG_PORT, database $DATABASE as $APP_ROLE (log: .team/logs/postgres.log)"

# ---- sign-in -----------------------------------------------------------------------------------
SECRETS_ARGS=()
if [ "$MOCK_OIDC" = 1 ]; then
  # A mock OpenID provider (oidc-provider-mock, requirements-dev.txt) with two users, and a
  # secrets file for the replicas pointing at it: sign-in for real, without a real provider.
  # Its cookie_secret is made once and kept (the same for both replicas: a sign-in holds on both).
  "$PY" -c "import oidc_provider_mock" 2>/dev/null \
    || die "--mock-oidc needs oidc-provider-mock (pip install -r requirements-dev.txt)"
  OIDC_PORT="${TEAM_OIDC_PORT:-9400}"
  "$PY" -m oidc_provider_mock --host 127.0.0.1 --port "$OIDC_PORT" \
    --user-claims '{"sub": "ann", "email": "ann@example.org", "name": "Ann Analyst"}' \
    --user-claims '{"sub": "bob", "email": "bob@example.org", "name": "Bob Reviewer"}' \
    >"$LOGS/mock-oidc.log" 2>&1 &
  echo $! >"$RUN/mock-oidc.pid"
  [ -s "$TEAM/secrets/cookie-secret" ] || (umask 077; "$PY" -c 'import secrets; print(secrets.token_hex(32))' >"$TEAM/secrets/cookie-secret")
  (umask 077; cat >"$TEAM/secrets/secrets.toml" <<EOF
[auth]
redirect_uri = "http://localhost:$PORT/oauth2callback"
cookie_secret = "$(cat "$TEAM/secrets/cookie-secret")"
client_id = "rr-studio-trial"
client_secret = "not-checked-by-the-mock"
server_metadata_url = "http://127.0.0.1:$OIDC_PORT/.well-known/openid-configuration"
EOF
  )
  SECRETS_ARGS=(--secrets.files "$TEAM/secrets/secrets.toml")
  export AUTHLIB_INSECURE_TRANSPORT=1  # the mock speaks plain HTTP on loopback; never in production
  say "sign-in: a MOCK provider on 127.0.0.1:$OIDC_PORT (users ann and bob, no password): a trial only"
  say "         open http://localhost:$PORT (localhost, as the redirect URI says)"
elif [ -f .streamlit/secrets.toml ] && grep -q '^\[auth\]' .streamlit/secrets.toml; then
  say "sign-in: on ([auth] in .streamlit/secrets.toml; its redirect_uri must be http://localhost:$PORT/oauth2callback)"
else
  cat <<EOF

  !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
  !!  NO SIGN-IN: .streamlit/secrets.toml has no [auth] section, so the app is in single-user mode.
  !!  Every browser that opens this trial acts as ONE user: everyone sees and shares the same
  !!  history, documents and work. Fine for a trial on your own machine, never for a team.
  !!  Configure [auth] (README, "Team mode: deploy") before anyone else uses it.
  !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!

EOF
fi

# ---- the worker and the replicas -----------------------------------------------------------------
"$PY" -m rr_core worker >"$LOGS/worker.log" 2>&1 &
echo $! >"$RUN/worker.pid"
say "worker: pid $! (log: .team/logs/worker.log)"
SERVERS=""
for p in $REPLICA_PORTS; do
  "$PY" -m streamlit run app.py --server.port "$p" --server.address 127.0.0.1 --server.headless true \
    --server.fileWatcherType none --browser.gatherUsageStats false "${SECRETS_ARGS[@]}" \
    >"$LOGS/replica-$p.log" 2>&1 &
  echo $! >"$RUN/replica-$p.pid"
  SERVERS="$SERVERS        server 127.0.0.1:$p max_fails=1 fail_timeout=10s;\n"
  say "replica: 127.0.0.1:$p, pid $! (log: .team/logs/replica-$p.log)"
done

# ---- nginx ---------------------------------------------------------------------------------------
# Its logs are for whoever runs the trial only (nginx makes them world-readable otherwise).
for f in nginx-access nginx-error; do touch "$LOGS/$f.log"; chmod 600 "$LOGS/$f.log"; done
sed -e "s|@RUN@|$RUN|g" -e "s|@LOGS@|$LOGS|g" -e "s|@PORT@|$PORT|g" -e "s|@SERVERS@|${SERVERS%\\n}|" \
  deploy/nginx.conf.in >"$TEAM/nginx.conf"
"$NGINX" -t -q -p "$TEAM" -c "$TEAM/nginx.conf" -e "$LOGS/nginx-error.log" \
  || die "nginx refused .team/nginx.conf (see the message above)"
"$NGINX" -p "$TEAM" -c "$TEAM/nginx.conf" -e "$LOGS/nginx-error.log" &
echo $! >"$RUN/nginx.pid"

healthy() { "$PY" -c "import sys, urllib.request as u; sys.exit(u.urlopen(sys.argv[1], timeout=2).read() != b'ok')" "$1" 2>/dev/null; }
for p in $REPLICA_PORTS; do
  for i in $(seq 1 600); do
    healthy "http://127.0.0.1:$p/_stcore/health" && break
    kill -0 "$(cat "$RUN/replica-$p.pid")" 2>/dev/null || die "replica $p exited: see .team/logs/replica-$p.log"
    [ "$i" = 600 ] && die "replica $p not healthy after 120 s: see .team/logs/replica-$p.log"
    sleep 0.2
  done
done
healthy "http://127.0.0.1:$PORT/_stcore/health" || die "nginx does not answer on $PORT: see .team/logs/nginx-error.log"

cat <<EOF

  R&R Studio, team mode (local trial): open http://localhost:$PORT
  Ctrl-C here (or make team-stop elsewhere) stops everything. Logs: .team/logs/

EOF
wait
