# Sourced by scripts/test: a throwaway PostgreSQL server for the tests of the PostgreSQL backend.
#
#   postgres_start   installs Debian's postgresql package if initdb is missing (as root, with
#                    apt-get), then initdb + pg_ctl in a fresh temporary directory on a free
#                    loopback port, creates a database and exports:
#       LETHEDB_TEST_POSTGRES   postgresql://lethe@127.0.0.1:PORT/lethedb_test
#       LETHEDB_TEST_PG_CTL     an executable that runs pg_ctl on this server as the right user:
#                               `$LETHEDB_TEST_PG_CTL restart -m fast`, `... stop -m fast`,
#                               `... start`, `... status` (the data directory, log file and -w
#                               are supplied; its settings live in postgresql.conf, so a stop
#                               and a start need no other argument)
#       LETHEDB_TEST_PG_BIN     the directory of the client programs (createdb, psql, ...)
#   postgres_stop    stops the server and deletes the directory; also run at exit (a trap), so
#                    a failed stage or an interrupted run leaves nothing behind.
#
# initdb refuses to run as root, so under root the server runs as Debian's `postgres` system
# user (the package creates it); under any other user it runs as that user. Trust
# authentication, loopback only: the server accepts TCP connections on 127.0.0.1 and a unix
# socket inside the temporary directory, nothing else. fsync stays on, as in production.

postgres_user=lethe
postgres_database=lethedb_test
postgres_dir=
postgres_bin=

# The directory holding initdb and its sibling programs: where the initdb on PATH really lives
# (it may be a symlink), else Debian's /usr/lib/postgresql/<version>/bin, the newest there.
postgres_find_bin() {
  local found dir
  if found=$(command -v initdb 2>/dev/null) && dir=$(dirname "$(readlink -f "$found")") &&
    [[ -x $dir/pg_ctl && -x $dir/createdb ]]; then
    echo "$dir"
    return 0
  fi
  for dir in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
    if [[ -x $dir/initdb && -x $dir/pg_ctl ]]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

postgres_install() {
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "postgres: initdb not found; install PostgreSQL (Debian: apt-get install -y postgresql)" \
      "or put its bin directory on PATH" >&2
    return 1
  fi
  echo "postgres: installing Debian's postgresql package"
  postgres_apt_install postgresql
}

# Installs Debian packages as root with apt-get (updating the lists only when the first try
# fails). A package may start a service of its own (PostgreSQL a cluster on port 5432, etcd a
# member on 2379); the tests run their own servers, so service starts are refused while it
# installs (policy-rc.d exit 101, only if none exists).
postgres_apt_install() {
  local policy=/usr/sbin/policy-rc.d made_policy= status=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "$@" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q "$@" >/dev/null; } || status=$?
  [[ -n $made_policy ]] && rm -f "$policy"
  return "$status"
}

# Runs a command as the user the server runs as.
postgres_as_owner() {
  if [[ $(id -u) == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

postgres_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

postgres_start() {
  local port attempt
  postgres_bin=$(postgres_find_bin) || { postgres_install && postgres_bin=$(postgres_find_bin); } || {
    echo "postgres: no PostgreSQL binaries found after installing" >&2
    return 1
  }
  if [[ $(id -u) == 0 ]] && ! id postgres >/dev/null 2>&1; then
    echo "postgres: running as root needs the 'postgres' system user that Debian's package" \
      "creates (initdb refuses root)" >&2
    return 1
  fi
  trap postgres_stop EXIT
  trap 'postgres_stop; exit 130' INT
  trap 'postgres_stop; exit 143' TERM
  # /tmp, not $TMPDIR: the server user must reach it, and a unix socket path is short.
  postgres_dir=$(mktemp -d /tmp/lethedb-postgres.XXXXXX) || return
  chmod 755 "$postgres_dir"
  [[ $(id -u) == 0 ]] && chown postgres: "$postgres_dir"
  postgres_as_owner "$postgres_bin/initdb" -D "$postgres_dir/data" -A trust -U "$postgres_user" \
    -E UTF8 --locale=C --no-instructions >"$postgres_dir/initdb.log" 2>&1 || {
    echo "postgres: initdb failed:" >&2
    cat "$postgres_dir/initdb.log" >&2
    return 1
  }
  postgres_write_wrapper
  # Another process can take the port between the probe and the bind: try a few.
  for attempt in 1 2 3; do
    port=$(postgres_free_port) || return
    postgres_configure "$port"
    if "$LETHEDB_TEST_PG_CTL" start >/dev/null; then
      break
    fi
    if ((attempt == 3)); then
      echo "postgres: the server did not start; its log:" >&2
      tail -n 30 "$postgres_dir/server.log" >&2
      return 1
    fi
  done
  "$postgres_bin/createdb" -h 127.0.0.1 -p "$port" -U "$postgres_user" "$postgres_database" || return
  export LETHEDB_TEST_POSTGRES="postgresql://$postgres_user@127.0.0.1:$port/$postgres_database"
  export LETHEDB_TEST_PG_BIN=$postgres_bin
  echo "postgres: $("$postgres_bin/postgres" --version) serving $LETHEDB_TEST_POSTGRES" \
    "(data in $postgres_dir)"
}

# The settings go into postgresql.conf (the last line of a setting wins), so that every start,
# including one a test makes after a stop, listens on the same port and socket.
postgres_configure() {
  postgres_as_owner tee -a "$postgres_dir/data/postgresql.conf" >/dev/null <<EOF
# scripts/lib/postgres.sh
listen_addresses = '127.0.0.1'
port = $1
unix_socket_directories = '$postgres_dir'
fsync = on
synchronous_commit = on
max_connections = 200
EOF
}

# LETHEDB_TEST_PG_CTL: pg_ctl for this server, run as its owner, waiting for each action.
postgres_write_wrapper() {
  local run_as=
  [[ $(id -u) == 0 ]] && run_as="runuser -u postgres --"
  cat >"$postgres_dir/pg_ctl" <<EOF
#!/usr/bin/env bash
# pg_ctl for the test server in $postgres_dir (written by scripts/lib/postgres.sh).
exec $run_as "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/server.log" -w -t 60 "\$@"
EOF
  chmod 755 "$postgres_dir/pg_ctl"
  export LETHEDB_TEST_PG_CTL=$postgres_dir/pg_ctl
}

postgres_stop() {
  [[ -n $postgres_dir && -d $postgres_dir ]] || return 0
  if [[ -f $postgres_dir/data/postmaster.pid ]]; then
    "$postgres_dir/pg_ctl" stop -m immediate >/dev/null 2>&1 || true
  fi
  rm -rf "$postgres_dir"
  postgres_dir=
  unset LETHEDB_TEST_POSTGRES LETHEDB_TEST_PG_CTL LETHEDB_TEST_PG_BIN
}
