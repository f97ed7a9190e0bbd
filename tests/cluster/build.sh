#!/usr/bin/env bash
# Build the devcluster binary (embedded etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler) to OUT, and kwok (its own module in kwok/, whose Kubernetes modules are of
# another release) beside it, to $(dirname OUT)/kwok, where devcluster --world looks for it.
#
#   tests/cluster/build.sh [OUT]     default OUT: <repo root>/.cache/bin/devcluster
#
# The first build downloads the modules and compiles the Kubernetes components, which takes
# minutes; Go's module and build caches (default GOMODCACHE/GOCACHE) make later builds fast.
# A binary newer than every input of its build is not built again.
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

kwok_out="$(dirname "$out")/kwok"

# One build at a time: .ci/run starts this build in the background while the fast tier runs,
# and `make test` asks for it again; the second caller waits here, then finds it up to date.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9

# stale BINARY DIR: whether BINARY is missing or older than an input of its build in DIR (its
# Go files, embedded YAML, go.mod and go.sum) or than this script, which holds the flags.
stale() {
    local binary="$1" dir="$2" src
    [[ -x "$binary" && ! "$here/build.sh" -nt "$binary" ]] || return 0
    while IFS= read -r -d '' src; do
        [[ "$src" -nt "$binary" ]] && return 0
    done < <(find "$dir" -maxdepth 1 -type f \
        \( -name '*.go' -o -name '*.yaml' -o -name go.mod -o -name go.sum \) -print0)
    return 1
}
build_devcluster=0
build_kwok=0
stale "$out" "$here" && build_devcluster=1
stale "$out" "$here/pause" && build_devcluster=1
[[ -x "$(dirname "$out")/devcluster-pause" ]] || build_devcluster=1
stale "$kwok_out" "$here/kwok" && build_kwok=1
if [[ $build_devcluster -eq 0 && $build_kwok -eq 0 ]]; then
    echo "devcluster and kwok are up to date: $out $kwok_out" >&2
    exit 0
fi

go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then
    go_bin=/usr/local/go/bin/go
fi
if [[ -z "$go_bin" ]]; then
    cat >&2 <<'EOF'
error: the Go toolchain is required to build the local control plane (tests/cluster).
Install Go 1.26 or newer (https://go.dev/doc/install), put its bin directory on PATH
(for example /usr/local/go/bin), then run this script again.
Alternatively, point KUBECONFIG at an existing cluster and skip the local one.
EOF
    exit 2
fi

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
kwok_tmp="$kwok_out.tmp.$$"
trap 'rm -f "$tmp" "$kwok_tmp"' EXIT

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

# -trimpath: no local paths in the binary; -s -w: no symbol or DWARF tables, which makes
# the binary smaller and the link faster (debugging the API server is not its purpose);
# -buildvcs=false: no git stamp, which would fail in a repository owned by another user
# and would relink the binary on every commit; -mod=readonly: go.mod/go.sum are the truth.
if [[ $build_devcluster -eq 1 ]]; then
    echo "building devcluster -> $out (the first build takes several minutes)" >&2
    start=$SECONDS
    (
        cd "$here"
        CGO_ENABLED=0 "$go_bin" build -trimpath -buildvcs=false -mod=readonly \
            -ldflags="$ldflags" -o "$tmp" .
    )
    # The real node's sandbox program (pause/), which devcluster --real-node looks for beside itself.
    (
        cd "$here"
        CGO_ENABLED=0 "$go_bin" build -trimpath -buildvcs=false -mod=readonly \
            -ldflags="-s -w" -o "$(dirname "$out")/devcluster-pause" ./pause
    )
    mv -f "$tmp" "$out"
    echo "built devcluster in $((SECONDS - start))s: $out" >&2
fi
if [[ $build_kwok -eq 1 ]]; then
    echo "building kwok -> $kwok_out (the first build takes several minutes)" >&2
    start=$SECONDS
    (
        cd "$here/kwok"
        # kwok is the module's one tool (go.mod: tool sigs.k8s.io/kwok/cmd/kwok), built as
        # released: no version stamp is needed, nothing parses kwok's version.
        CGO_ENABLED=0 "$go_bin" build -trimpath -buildvcs=false -mod=readonly \
            -ldflags="-s -w" -o "$kwok_tmp" sigs.k8s.io/kwok/cmd/kwok
    )
    mv -f "$kwok_tmp" "$kwok_out"
    echo "built kwok in $((SECONDS - start))s: $kwok_out" >&2
fi
