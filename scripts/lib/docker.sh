# Sourced by scripts/release and scripts/packages: a Docker engine for building and testing the
# image.
#
#   docker_up     uses the engine the docker client already reaches; otherwise, as root with
#                 apt-get, installs Debian's docker.io if dockerd is missing and starts a
#                 dockerd of its own on a socket in a fresh temporary directory (its images
#                 and containers live there too), exporting DOCKER_HOST. Returns 1 with the
#                 reason in $docker_skip_reason when no engine can run here.
#   docker_down   stops the dockerd that docker_up started (nothing otherwise) and removes its
#                 directory; also run at exit (a trap).

docker_dir=
docker_pid=
docker_skip_reason=

docker_reachable() {
  command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1
}

docker_install() {
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    docker_skip_reason="no Docker engine, and installing one needs root and apt-get (Debian: apt-get install -y docker.io)"
    return 1
  fi
  echo "docker: installing Debian's docker.io package"
  # The package would start its service; the engine here is started by docker_up alone, so
  # service starts are refused while it installs (policy-rc.d exit 101, only if none exists).
  local policy=/usr/sbin/policy-rc.d made_policy= status=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q docker.io >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q docker.io >/dev/null; } || status=$?
  [[ -n $made_policy ]] && rm -f "$policy"
  ((status == 0)) || docker_skip_reason="installing Debian's docker.io failed (exit $status)"
  return "$status"
}

docker_up() {
  docker_skip_reason=
  if docker_reachable; then
    echo "docker: using the running engine ($(docker version --format '{{.Server.Version}}' 2>/dev/null))"
    return 0
  fi
  if ! command -v dockerd >/dev/null && ! docker_install; then
    return 1
  fi
  if [[ $(id -u) != 0 ]]; then
    docker_skip_reason="no Docker engine runs, and starting dockerd needs root"
    return 1
  fi
  # A short path: the engine's unix sockets live under it, and a socket path has at most 107 bytes.
  docker_dir=$(mktemp -d /tmp/lethedb-docker.XXXXXX)
  trap docker_down EXIT
  dockerd --data-root "$docker_dir/root" --exec-root "$docker_dir/exec" \
    --host "unix://$docker_dir/docker.sock" --pidfile "$docker_dir/dockerd.pid" \
    >"$docker_dir/dockerd.log" 2>&1 &
  docker_pid=$!
  export DOCKER_HOST=unix://$docker_dir/docker.sock
  local attempt
  for attempt in $(seq 1 150); do
    if docker_reachable; then
      echo "docker: started dockerd $(docker version --format '{{.Server.Version}}' 2>/dev/null) (pid $docker_pid, $docker_dir)"
      return 0
    fi
    kill -0 "$docker_pid" 2>/dev/null || break
    sleep 0.2
  done
  docker_skip_reason="dockerd did not start here: $(tail -n 3 "$docker_dir/dockerd.log" | tr '\n' ' ')"
  docker_down
  return 1
}

docker_down() {
  if [[ -n $docker_pid ]]; then
    kill "$docker_pid" 2>/dev/null || true
    # dockerd stops its containers and containerd, then unmounts its layers.
    local attempt
    for attempt in $(seq 1 100); do
      kill -0 "$docker_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -9 "$docker_pid" 2>/dev/null || true
    docker_pid=
    unset DOCKER_HOST
  fi
  if [[ -n $docker_dir ]]; then
    # A dockerd that was killed can leave mounts (its network namespace) in its folder.
    awk -v dir="$docker_dir/" 'index($2, dir) == 1 { print $2 }' /proc/mounts | sort -r |
      xargs -r -n 1 umount -l 2>/dev/null || true
    rm -rf "$docker_dir" 2>/dev/null || true
    docker_dir=
  fi
}
