#!/usr/bin/env bash
# devdb.sh brings up a PostgreSQL with pgvector for development and tests and
# prints, as its last line, GLYPHOXA_DSN=<dsn>.
#
# Order of preference:
#   1. GLYPHOXA_TEST_DSN, if set, is used as it is (nothing is started).
#   2. A private cluster from the system's PostgreSQL (the distribution's
#      postgresql package: 15 on Debian 12, 16 on Ubuntu 24.04; the newest
#      installed if there is one), with its data directory
#      under the repository's .cache/ (or /var/tmp when the postgres user cannot
#      reach the repository), listening on 127.0.0.1 on a non-default port, and
#      reused between runs. pgvector is built from Debian trixie's source package
#      when that PostgreSQL lacks it.
#   3. With Docker, `docker compose up -d db` is the alternative (see README).
#
# Environment:
#   GLYPHOXA_TEST_DSN   use this database instead of starting one
#   GLYPHOXA_PG_PORT    first port to try (default 55432)
#   GLYPHOXA_PG_DB      database name to create (default glyphoxa)
#   GLYPHOXA_PG_VERSION PostgreSQL major version to run (default: see 2.)
set -euo pipefail

log() { printf 'devdb: %s\n' "$*" >&2; }
die() { printf 'devdb: error: %s\n' "$*" >&2; exit 1; }

if [[ -n "${GLYPHOXA_TEST_DSN:-}" ]]; then
  log "using GLYPHOXA_TEST_DSN"
  echo "GLYPHOXA_DSN=${GLYPHOXA_TEST_DSN}"
  exit 0
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
cache="$repo/.cache"
mkdir -p "$cache"
dbname=${GLYPHOXA_PG_DB:-glyphoxa}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
  else die "need root to run: $* (install it by hand, or set GLYPHOXA_TEST_DSN)"; fi
}

# apt_install waits up to 10 minutes for the dpkg lock: make test now asks for
# the database before scripts/testdeps.sh runs, so this may be the first apt
# on a fresh machine where another apt process still holds the lock.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing ${missing[*]} from Debian"
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >"$cache/apt.log" 2>&1; then
    as_root apt-get update -q >>"$cache/apt.log" 2>&1 || true
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >>"$cache/apt.log" 2>&1 \
      || die "apt-get install ${missing[*]} failed; see $cache/apt.log"
  fi
}

# 1. PostgreSQL server binaries, of the version GLYPHOXA_PG_VERSION names,
#    else of the cluster already initialised here, else the newest installed,
#    else the distribution's own (postgresql: 15 on Debian 12, 16 on Ubuntu
#    24.04, which has no postgresql-15).
newest_server() {
  ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sed 's#^/usr/lib/postgresql/\([0-9]*\)/.*#\1#' | sort -n | tail -1
}
PGVER=${GLYPHOXA_PG_VERSION:-}
for f in "$cache/pg/data/PG_VERSION" "/var/tmp/glyphoxa-pg-$(printf '%s' "$repo" | sha256sum | cut -c1-12)/data/PG_VERSION"; do
  [[ -z $PGVER && -f $f ]] && PGVER=$(cat "$f")
done
[[ -n $PGVER ]] || PGVER=$(newest_server)
if [[ -z $PGVER ]]; then
  apt_install postgresql
  PGVER=$(newest_server)
  [[ -n $PGVER ]] || die "installing postgresql gave no server in /usr/lib/postgresql; set GLYPHOXA_PG_VERSION, or GLYPHOXA_TEST_DSN"
fi
PGBIN=/usr/lib/postgresql/$PGVER/bin
PGSHARE=/usr/share/postgresql/$PGVER
[[ -x $PGBIN/postgres ]] || apt_install postgresql-$PGVER

# 2. pgvector, built from Debian trixie's source package with PGXS.
if [[ ! -f $PGSHARE/extension/vector.control ]]; then
  apt_install postgresql-server-dev-$PGVER make gcc
  src="$cache/pgvector-src"
  mkdir -p "$src/lists/partial"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$src/sources.list"
  aptopts=(-o "Dir::Etc::SourceList=$src/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$src/lists" -o APT::Sandbox::User=root)
  if ! ls "$src"/pgvector_*.orig.tar.gz >/dev/null 2>&1; then
    log "fetching pgvector source from Debian trixie"
    apt-get update -q "${aptopts[@]}" >"$src/update.log" 2>&1 || die "apt-get update for trixie sources failed; see $src/update.log"
    (cd "$src" && apt-get source --download-only -q "${aptopts[@]}" pgvector >"$src/source.log" 2>&1) || die "apt-get source pgvector failed; see $src/source.log"
  fi
  tarball=$(ls "$src"/pgvector_*.orig.tar.gz | head -1)
  rm -rf "$src/build" && mkdir -p "$src/build"
  tar -xzf "$tarball" -C "$src/build" --strip-components=1
  log "building pgvector $(basename "$tarball" .orig.tar.gz | sed 's/pgvector_//')"
  make -s -C "$src/build" PG_CONFIG=$PGBIN/pg_config -j"$(nproc)" >"$src/build.log" 2>&1 || die "pgvector build failed; see $src/build.log"
  as_root make -s -C "$src/build" PG_CONFIG=$PGBIN/pg_config install >>"$src/build.log" 2>&1 || die "pgvector install failed; see $src/build.log"
fi

# 3. The private cluster.
run_pg() { # run a PostgreSQL binary as the cluster owner
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

datadir="$cache/pg/data"
if [[ $(id -u) -eq 0 ]] && ! runuser -u postgres -- test -x "$cache" 2>/dev/null; then
  # The postgres user cannot traverse the path to the repository (e.g. under /root).
  datadir="/var/tmp/glyphoxa-pg-$(printf '%s' "$repo" | sha256sum | cut -c1-12)/data"
fi
piddir=$(dirname "$datadir")
mkdir -p "$piddir"
[[ $(id -u) -eq 0 ]] && chown postgres:postgres "$piddir"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [[ ! -f $datadir/PG_VERSION ]]; then
  log "initialising a private cluster in $datadir"
  run_pg $PGBIN/initdb -D "$datadir" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$piddir/initdb.log" 2>&1 \
    || die "initdb failed; see $piddir/initdb.log"
  cat >>"$datadir/postgresql.conf" <<CONF
# glyphoxa development cluster: loopback only, fast and disposable.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$piddir'
max_connections = 300
shared_buffers = 1GB
work_mem = 32MB
maintenance_work_mem = 1GB
max_parallel_maintenance_workers = 2
fsync = off
synchronous_commit = off
full_page_writes = off
logging_collector = off
CONF
fi

port=""
[[ -f $piddir/port ]] && port=$(cat "$piddir/port")
if run_pg $PGBIN/pg_ctl -D "$datadir" status >/dev/null 2>&1; then
  log "cluster already running on port $port"
else
  start=${GLYPHOXA_PG_PORT:-55432}
  # A port nothing listens on can still be taken when the server binds it:
  # these ports lie in Linux's ephemeral range, and a client socket on
  # 127.0.0.1 may hold one. The server is then started on the next free
  # port; any other failure ends the script.
  ports=()
  if [[ -n $port ]] && port_free "$port"; then ports+=("$port"); fi
  for ((p = start; p < start + 20; p++)); do
    if [[ $p != "$port" ]] && port_free "$p"; then ports+=("$p"); fi
  done
  [[ ${#ports[@]} -gt 0 ]] || die "no free port in $start..$((start + 19))"
  started=""
  for port in "${ports[@]}"; do
    echo "$port" >"$piddir/port"
    log "starting cluster on 127.0.0.1:$port"
    logged=$(stat -c %s "$piddir/server.log" 2>/dev/null || echo 0) # pg_ctl appends to the log
    if run_pg $PGBIN/pg_ctl -D "$datadir" -o "-p $port" -l "$piddir/server.log" -w -t 60 start >/dev/null; then
      started=1
      break
    fi
    tail -c +"$((logged + 1))" "$piddir/server.log" | grep -q "Address already in use" \
      || die "PostgreSQL did not start; see $piddir/server.log"
    log "port $port was taken as the server bound it; trying the next"
  done
  [[ -n $started ]] || die "PostgreSQL did not start on any free port in $start..$((start + 19)); see $piddir/server.log"
fi

psql_do() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }
if [[ $(psql_do -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$dbname'") != 1 ]]; then
  psql_do -d postgres -c "CREATE DATABASE \"$dbname\""
fi
psql_do -d "$dbname" -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null

echo "GLYPHOXA_DSN=postgres://postgres@127.0.0.1:$port/$dbname?sslmode=disable"
