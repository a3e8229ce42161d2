# Sourced by scripts/test after postgres.sh: a throwaway high-availability PostgreSQL for the
# postgres-ha stage, from Debian's packages. One etcd member and two Patroni nodes over
# PostgreSQL, in synchronous mode: node1 bootstraps the cluster as primary, node2 joins as its
# synchronous standby.
#
#   patroni_start   installs Debian's patroni and etcd-server packages when missing (as root,
#                   with apt-get), starts etcd and both nodes in a fresh temporary directory on
#                   free loopback ports, waits until node1 is primary and node2 its synchronous
#                   standby, creates a database and exports:
#       LETHEDB_TEST_HA_POSTGRES   postgresql://lethe@127.0.0.1:P1,127.0.0.1:P2/lethedb_test
#                                  ?target_session_attrs=read-write (both nodes: a client
#                                  connects to whichever is writable)
#       LETHEDB_TEST_HA_CLUSTER    a JSON file naming each node: name, PostgreSQL port, REST
#                                  API address, data directory (its postmaster.pid names the
#                                  postmaster to kill)
#                   Returns $patroni_skipped, having printed why, where Patroni cannot be
#                   installed (not root, no apt-get).
#   patroni_stop    stops both nodes (Patroni stops its PostgreSQL) and etcd, then deletes the
#                   directory; also run at exit (a trap), so an interrupted run leaves nothing.
#
# Under root every process runs as Debian's `postgres` system user, as in postgres.sh; under
# any other user, as that user. Trust authentication, loopback only, fsync on.
#
# The settings that make a failover lose nothing acknowledged and take seconds, not minutes:
# - synchronous_mode: true. A commit is acknowledged once the standby has it, and Patroni
#   promotes only the standby it recorded as synchronous. Not strict: after the failover the new
#   primary has no standby left, and strict mode would refuse every write until one came back.
# - primary_start_timeout: 0. When the primary's postmaster dies, its Patroni releases the
#   leader key at once (instead of restarting PostgreSQL in place for up to 300 s), so the
#   standby promotes itself within about one loop.
# - loop_wait: 1, retry_timeout: 5, ttl: 20. The standby also watches the leader key in etcd, so
#   it notices the release without waiting for its loop; the ttl bounds a failover when the
#   primary's whole machine (Patroni with it) is gone.

patroni_skipped=2
patroni_dir=
patroni_pids=()
patroni_scope=lethedb-ha

patroni_install() {
  command -v patroni >/dev/null && command -v etcd >/dev/null && return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    echo "postgres-ha: skipped: Patroni or etcd is missing and cannot be installed here (needs" \
      "root and apt-get: apt-get install -y patroni etcd-server)"
    return "$patroni_skipped"
  fi
  echo "postgres-ha: installing Debian's patroni and etcd-server packages"
  postgres_apt_install patroni etcd-server || return
  command -v patroni >/dev/null && command -v etcd >/dev/null
}

# Starts a program in the background as the server user; its pid (the program's own: setpriv
# executes it in place) goes into patroni_pids, its output into the given log file.
patroni_spawn() {
  local log=$1
  shift
  if [[ $(id -u) == 0 ]]; then
    setpriv --reuid=postgres --regid=postgres --init-groups env HOME="$patroni_dir" "$@" \
      </dev/null >>"$log" 2>&1 &
  else
    env HOME="$patroni_dir" "$@" </dev/null >>"$log" 2>&1 &
  fi
  patroni_pids+=("$!")
}

# N distinct loopback ports that were free a moment ago (all bound at once, so none repeats).
patroni_free_ports() {
  python3 -c 'import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in sockets])' "$1"
}

# Waits until an HTTP GET of the URL answers 200 (Patroni's /primary and /sync, etcd's /health).
patroni_wait_ok() {
  local url=$1 what=$2 log=$3 deadline=$((SECONDS + 90))
  until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "$url" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      echo "postgres-ha: $what not reached in 90 s; the end of $log:" >&2
      tail -n 40 "$log" >&2
      return 1
    fi
    sleep 0.2
  done
}

# node NAME, its PostgreSQL port, its REST API port, the etcd client port.
patroni_write_config() {
  local name=$1 pg_port=$2 rest_port=$3 etcd_port=$4
  cat >"$patroni_dir/$name.yml" <<EOF
# written by scripts/lib/patroni.sh
scope: $patroni_scope
name: $name
restapi:
  listen: 127.0.0.1:$rest_port
  connect_address: 127.0.0.1:$rest_port
etcd3:
  hosts: 127.0.0.1:$etcd_port
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    primary_start_timeout: 0
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        fsync: 'on'
        synchronous_commit: 'on'
        max_connections: 200
  initdb:
    - encoding: UTF8
    - locale: C
postgresql:
  listen: 127.0.0.1:$pg_port
  connect_address: 127.0.0.1:$pg_port
  data_dir: $patroni_dir/$name
  bin_dir: $postgres_bin
  pgpass: $patroni_dir/$name.pgpass
  authentication:
    superuser:
      username: $postgres_user
    replication:
      username: replicator
    rewind:
      username: $postgres_user
  parameters:
    unix_socket_directories: '$patroni_dir'
  # The standby's copy starts at once instead of waiting for the primary's next checkpoint.
  basebackup:
    - checkpoint: fast
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication replicator 127.0.0.1/32 trust
EOF
}

patroni_start() {
  local ports
  patroni_install || return
  postgres_bin=$(postgres_find_bin) || { postgres_install && postgres_bin=$(postgres_find_bin); } || {
    echo "postgres-ha: no PostgreSQL binaries found after installing" >&2
    return 1
  }
  trap 'patroni_stop; postgres_stop' EXIT
  trap 'patroni_stop; postgres_stop; exit 130' INT
  trap 'patroni_stop; postgres_stop; exit 143' TERM
  patroni_dir=$(mktemp -d /tmp/lethedb-patroni.XXXXXX) || return
  chmod 755 "$patroni_dir"
  [[ $(id -u) == 0 ]] && chown postgres: "$patroni_dir"
  # etcd's client and peer ports, then each node's PostgreSQL port, then its REST API port.
  read -r -a ports < <(patroni_free_ports 6) && ((${#ports[@]} == 6)) || return
  patroni_spawn "$patroni_dir/etcd.log" etcd --name "$patroni_scope" --data-dir "$patroni_dir/etcd" \
    --listen-client-urls "http://127.0.0.1:${ports[0]}" \
    --advertise-client-urls "http://127.0.0.1:${ports[0]}" \
    --listen-peer-urls "http://127.0.0.1:${ports[1]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${ports[1]}" \
    --initial-cluster "$patroni_scope=http://127.0.0.1:${ports[1]}"
  patroni_wait_ok "http://127.0.0.1:${ports[0]}/health" "etcd" "$patroni_dir/etcd.log" || return
  patroni_write_config node1 "${ports[2]}" "${ports[4]}" "${ports[0]}"
  patroni_write_config node2 "${ports[3]}" "${ports[5]}" "${ports[0]}"
  # node1 alone first, so that it bootstraps the cluster and node2 copies it.
  patroni_spawn "$patroni_dir/node1.log" patroni "$patroni_dir/node1.yml"
  patroni_wait_ok "http://127.0.0.1:${ports[4]}/primary" "node1 as primary" \
    "$patroni_dir/node1.log" || return
  "$postgres_bin/createdb" -h 127.0.0.1 -p "${ports[2]}" -U "$postgres_user" \
    "$postgres_database" || return
  patroni_spawn "$patroni_dir/node2.log" patroni "$patroni_dir/node2.yml"
  patroni_wait_ok "http://127.0.0.1:${ports[5]}/sync" "node2 as synchronous standby" \
    "$patroni_dir/node2.log" || return
  patroni_write_cluster "${ports[@]:2}"
  local hosts="127.0.0.1:${ports[2]},127.0.0.1:${ports[3]}" writable="target_session_attrs=read-write"
  export LETHEDB_TEST_HA_POSTGRES="postgresql://$postgres_user@$hosts/$postgres_database?$writable"
  export LETHEDB_TEST_HA_CLUSTER=$patroni_dir/cluster.json
  echo "postgres-ha: $(patroni --version), $(etcd --version | head -n 1)," \
    "$("$postgres_bin/postgres" --version): node1 primary, node2 synchronous standby;" \
    "$LETHEDB_TEST_HA_POSTGRES (in $patroni_dir)"
}

# cluster.json: the two nodes, from their PostgreSQL ports then their REST API ports.
patroni_write_cluster() {
  cat >"$patroni_dir/cluster.json" <<EOF
{"nodes": [
  {"name": "node1", "pg_port": $1, "rest": "http://127.0.0.1:$3", "data_dir": "$patroni_dir/node1"},
  {"name": "node2", "pg_port": $2, "rest": "http://127.0.0.1:$4", "data_dir": "$patroni_dir/node2"}
]}
EOF
}

# Stops the started processes in reverse order (Patroni before etcd: a Patroni without its etcd
# would demote in a hurry), each with SIGTERM then, after 15 s, SIGKILL; then any PostgreSQL a
# killed Patroni left behind, and the directory.
patroni_stop() {
  local index pid waited name
  [[ -n $patroni_dir && -d $patroni_dir ]] || return 0
  for ((index = ${#patroni_pids[@]} - 1; index >= 0; index--)); do
    pid=${patroni_pids[index]}
    kill -TERM "$pid" 2>/dev/null || continue
    for ((waited = 0; waited < 150; waited++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  for name in node1 node2; do
    if [[ -f $patroni_dir/$name/postmaster.pid ]]; then
      postgres_as_owner "$postgres_bin/pg_ctl" -D "$patroni_dir/$name" -m immediate -w stop \
        >/dev/null 2>&1 || true
    fi
  done
  rm -rf "$patroni_dir"
  patroni_dir=
  patroni_pids=()
  unset LETHEDB_TEST_HA_POSTGRES LETHEDB_TEST_HA_CLUSTER
}
