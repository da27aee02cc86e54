# Sourced by the site benchmarks (bin/benchmark-cycle, bin/benchmark-pages): run one management
# command on both databases, one after the other, with the same arguments — a throw-away
# PostgreSQL cluster on loopback, then a fresh SQLite file — with the site as in production
# (DJANGO_DEBUG=0, throw-away keys, plain HTTP on loopback as behind a TLS proxy).
#   bench_on_databases COMMAND [ARGS...]     BENCH_DATABASES=sqlite limits it to one database
source "$(dirname "${BASH_SOURCE[0]}")/_setup.sh"

bench_on_databases() {
  local command="$1"
  shift
  ensure_debian_packages postgresql
  ensure_venv requirements.txt
  RUNTIME="$(mktemp -d "/tmp/genderbias-${command}.XXXXXX")"
  chmod 755 "$RUNTIME"
  local pg_bin
  pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  PG_PORT="${PG_PORT:-55434}"
  as_postgres() { if [ "$(id -u)" -eq 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
  mkdir -p "$RUNTIME/pg"
  [ "$(id -u)" -eq 0 ] && chown postgres "$RUNTIME/pg"
  PG_BIN="$pg_bin"
  cleanup() {
    as_postgres "$PG_BIN/pg_ctl -D $RUNTIME/pg/data -m immediate stop" >/dev/null 2>&1 || true
    rm -rf "$RUNTIME"
  }
  trap cleanup EXIT
  as_postgres "$PG_BIN/initdb -D $RUNTIME/pg/data -U postgres -A trust" >/dev/null
  as_postgres "$PG_BIN/pg_ctl -D $RUNTIME/pg/data -l $RUNTIME/pg/log -w -o '-p $PG_PORT -k $RUNTIME/pg -c listen_addresses=127.0.0.1 -c max_connections=200' start" >/dev/null
  as_postgres "$PG_BIN/createdb -h 127.0.0.1 -p $PG_PORT -U postgres sitebench"

  new_key() { .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(48))'; }
  export DJANGO_DEBUG=0 DJANGO_SECURE_SSL_REDIRECT=0 DJANGO_SECURE_COOKIES=0
  export DJANGO_SECRET_KEY="${DJANGO_SECRET_KEY:-$(new_key)}"
  export WORKER_PSEUDONYM_KEY="${WORKER_PSEUDONYM_KEY:-$(new_key)}"
  local status=0 target url
  for target in ${BENCH_DATABASES:-postgresql sqlite}; do
    if [ "$target" = postgresql ]; then
      url="postgres://postgres@127.0.0.1:$PG_PORT/sitebench"
    else
      url="sqlite:///$RUNTIME/site.sqlite3"
    fi
    echo "==> $target"
    export DATABASE_URL="$url" VAR_DIR="$RUNTIME/var-$target"
    mkdir -p "$VAR_DIR"
    .venv/bin/python manage.py migrate -v0
    .venv/bin/python manage.py "$command" "$@" || status=$?
  done
  return $status
}
