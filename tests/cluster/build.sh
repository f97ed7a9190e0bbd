#!/usr/bin/env bash
# Build the devcluster binary (embedded etcd + kube-apiserver) to OUT.
#
#   tests/cluster/build.sh [OUT]     default OUT: <repo root>/.cache/bin/devcluster
#
# The first build downloads the Kubernetes modules and compiles kube-apiserver, which takes
# minutes; Go's module and build caches (default GOMODCACHE/GOCACHE) make later builds fast.
# If OUT is already newer than every source file here, nothing is run at all.
#
# Exit status: 0 built or up to date, 2 Go is missing, other: the build failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
out="${1:-$repo_root/.cache/bin/devcluster}"
case "$out" in
    /*) ;;
    *) out="$PWD/$out" ;;
esac

# Up to date? Compare against every input of the build (this script holds the -ldflags).
if [[ -x "$out" ]]; then
    stale=0
    while IFS= read -r -d '' src; do
        if [[ "$src" -nt "$out" ]]; then
            stale=1
            break
        fi
    done < <(find "$here" -maxdepth 1 -type f \
        \( -name '*.go' -o -name go.mod -o -name go.sum -o -name build.sh \) -print0)
    if [[ $stale -eq 0 ]]; then
        echo "devcluster is up to date: $out" >&2
        exit 0
    fi
fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then
    go_bin=/usr/local/go/bin/go
fi
if [[ -z "$go_bin" ]]; then
    cat >&2 <<'EOF'
error: the Go toolchain is required to build the local control plane (tests/cluster).
Install Go 1.25 or newer (https://go.dev/doc/install), put its bin directory on PATH
(for example /usr/local/go/bin), then run this script again.
Alternatively, point KUBECONFIG at an existing cluster and skip the local one.
EOF
    exit 2
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT

# Stamp the Kubernetes version, as the release build does (hack/lib/version.sh); otherwise
# /version reports v0.0.0-master, which kubectl cannot parse and Helm's kubeVersion checks refuse.
kube_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$here/go.mod")"
if [[ ! "$kube_version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]]; then
    echo "error: cannot read the k8s.io/kubernetes version from $here/go.mod" >&2
    exit 1
fi
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$kube_version"
    ldflags+=" -X $pkg.gitMajor=${BASH_REMATCH[1]} -X $pkg.gitMinor=${BASH_REMATCH[2]}"
    ldflags+=" -X $pkg.gitTreeState=clean"
done

echo "building devcluster -> $out (the first build takes several minutes)" >&2
start=$SECONDS
(
    cd "$here"
    # -trimpath: no local paths in the binary; -s -w: no symbol or DWARF tables, which makes
    # the binary smaller and the link faster (debugging the API server is not its purpose);
    # -buildvcs=false: no git stamp, which would fail in a repository owned by another user
    # and would relink the binary on every commit; -mod=readonly: go.mod/go.sum are the truth.
    CGO_ENABLED=0 "$go_bin" build -trimpath -buildvcs=false -mod=readonly \
        -ldflags="$ldflags" -o "$tmp" .
)
mv -f "$tmp" "$out"
echo "built devcluster in $((SECONDS - start))s: $out" >&2
