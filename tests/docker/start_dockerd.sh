#!/usr/bin/env bash
# Run a private Docker engine for the tests, in the foreground (exec: the caller's pid is dockerd's).
#   tests/docker/start_dockerd.sh <root dir>   ->  socket at unix://<root>/docker.sock
# Needs root and Debian `docker.io` (dockerd, containerd, runc). No bridge, no iptables: containers
# use --network host or none; nothing is exposed beyond loopback. Data, exec state and pidfile stay
# under <root>, so it never touches a system dockerd at /var/run/docker.sock.
set -euo pipefail
root=${1:?usage: $0 <root dir>}
mkdir -p "$root"
command -v dockerd >/dev/null || {
  echo "dockerd not found: apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io busybox-static" >&2
  exit 127; }
exec dockerd \
  --host "unix://$root/docker.sock" \
  --data-root "$root/data" \
  --exec-root "$root/exec" \
  --pidfile "$root/docker.pid" \
  --bridge none --iptables=false --ip6tables=false \
  ${SPECOPS_DOCKERD_STORAGE_DRIVER:+--storage-driver "$SPECOPS_DOCKERD_STORAGE_DRIVER"}
