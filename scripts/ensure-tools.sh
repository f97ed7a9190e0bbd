#!/usr/bin/env bash
# Make sure the system tools the project needs are present. On Debian as root we install what
# is missing from the distribution's packages; elsewhere we say exactly what to install.
#
#   scripts/ensure-tools.sh           kubectl (and Go, unless KUBECONFIG names a cluster)
#   scripts/ensure-tools.sh --node    also what the devcluster's real node runs (docs/world.md):
#                                     containerd, runc, Debian's CNI plugins, iptables, iproute2
set -euo pipefail

missing=()
command -v kubectl >/dev/null 2>&1 || missing+=(kubectl)
if [ "${1:-}" = --node ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "the real node needs root (network namespaces, mounts, cgroups, iptables)" >&2
    exit 2
  fi
  command -v containerd >/dev/null 2>&1 || missing+=(containerd)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  for plugin in bridge host-local loopback; do
    [ -x "/usr/lib/cni/$plugin" ] || { missing+=(containernetworking-plugins); break; }
  done
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]} from Debian packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing: ${missing[*]}. Install kubectl (1.30 or newer) and put it on PATH;" \
      "the real node also needs Debian's containerd, runc, containernetworking-plugins" \
      "(in /usr/lib/cni), iptables and iproute2." >&2
    exit 2
  fi
fi

if [ -z "${KUBECONFIG:-}" ] && ! command -v go >/dev/null 2>&1; then
  echo "Go 1.26 or newer is needed to build the local control plane (tests/cluster; kwok needs 1.26)." >&2
  echo "Install Go, or point KUBECONFIG at a cluster you chose." >&2
  exit 2
fi
