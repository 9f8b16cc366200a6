#!/usr/bin/env bash
# Make sure a Docker engine answers. Leaves a running engine alone; on Debian as root it
# installs Debian's docker.io (and debootstrap, which the offline base image needs) and
# starts dockerd in the background; anywhere else it says what to install and fails.
set -euo pipefail

WAIT_SECONDS=${MEMGRID_ENGINE_WAIT:-90}
LOG=${MEMGRID_DOCKERD_LOG:-/var/log/memgrid-dockerd.log}

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

is_root_debian() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

apt_install() {
  if [ ! -f /tmp/.memgrid-apt-updated ]; then
    apt-get update -qq && touch /tmp/.memgrid-apt-updated
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if is_root_debian && ! command -v debootstrap >/dev/null 2>&1; then
  echo "memgrid: installing debootstrap (builds the base image offline)"
  apt_install debootstrap
fi

if engine_answers; then
  echo "memgrid: docker engine answers; leaving it alone"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  if ! is_root_debian; then
    echo "memgrid: no docker engine answers. Install Docker Engine (Debian: 'sudo apt-get install docker.io'), start it, and make sure 'docker info' works for this user." >&2
    exit 1
  fi
  echo "memgrid: installing Debian's docker.io"
  apt_install docker.io
fi

if [ "$(id -u)" != 0 ]; then
  echo "memgrid: dockerd is installed but not answering; start it (e.g. 'sudo systemctl start docker') and retry." >&2
  exit 1
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "memgrid: starting dockerd in the background (log: $LOG)"
  nohup dockerd >"$LOG" 2>&1 &
fi

for _ in $(seq 1 "$WAIT_SECONDS"); do
  if engine_answers; then
    echo "memgrid: docker engine is up ($(docker version --format '{{.Server.Version}} API {{.Server.APIVersion}}'))"
    exit 0
  fi
  sleep 1
done
echo "memgrid: dockerd did not answer within ${WAIT_SECONDS}s; see $LOG" >&2
tail -n 20 "$LOG" >&2 || true
exit 1
