#!/usr/bin/env bash
# Build helm from its Go module into OUT (default <repo root>/.cache/bin/helm).
#
#   scripts/build-helm.sh [OUT]
#
# Helm ships no wheel or distribution package this project can rely on, so we build the pinned
# version from source with the same Go toolchain as the local control plane. The default
# GOMODCACHE/GOCACHE are shared with that build: the first build takes minutes, later ones
# seconds. If OUT already reports the pinned version, nothing is run at all.
#
# Exit status: 0 built or up to date, 2 Go is missing, other: the build failed.
set -euo pipefail

HELM_VERSION=v4.3.2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/.." && pwd)"
out="${1:-$repo_root/.cache/bin/helm}"
case "$out" in
    /*) ;;
    *) out="$PWD/$out" ;;
esac

# One build at a time (see tests/cluster/build.sh): a second caller waits, then finds it built.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9

if [[ -x "$out" ]] && [[ "$("$out" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
    echo "helm $HELM_VERSION is up to date: $out" >&2
    exit 0
fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then
    go_bin=/usr/local/go/bin/go
fi
if [[ -z "$go_bin" ]]; then
    echo "error: the Go toolchain (1.25 or newer) is required to build helm; install Go and" \
        "put its bin directory on PATH, then run this script again." >&2
    exit 2
fi

mkdir -p "$(dirname "$out")"
gobin="$(mktemp -d "$(dirname "$out")/.helm-build.XXXXXX")"
trap 'rm -rf "$gobin"' EXIT

echo "building helm $HELM_VERSION -> $out (the first build takes several minutes)" >&2
start=$SECONDS
# Without the -X stamp helm reports v4.0+unreleased, and `helm version` is how we detect an
# up-to-date binary. -trimpath: no local paths in the binary; -s -w: smaller, faster link.
CGO_ENABLED=0 GOBIN="$gobin" "$go_bin" install -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
mv -f "$gobin/helm" "$out"
echo "built helm $HELM_VERSION in $((SECONDS - start))s: $out" >&2
