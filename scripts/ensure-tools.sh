#!/usr/bin/env bash
# Make sure the system tools the project needs are present. On Debian as root we install what
# is missing from the distribution's packages; elsewhere we say exactly what to install.
set -euo pipefail

missing=()
command -v kubectl >/dev/null 2>&1 || missing+=(kubectl)

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} from Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing: ${missing[*]}. Install kubectl (1.30 or newer) and put it on PATH." >&2
    exit 2
  fi
fi

if [ -z "${KUBECONFIG:-}" ] && ! command -v go >/dev/null 2>&1; then
  echo "Go 1.26 or newer is needed to build the local control plane (tests/cluster; kwok needs 1.26)." >&2
  echo "Install Go, or point KUBECONFIG at a cluster you chose." >&2
  exit 2
fi
