#!/usr/bin/env bash
# Install promtool and prometheus from Debian's `prometheus` package into OUTDIR
# (default <repo root>/.cache/bin).
#
#   scripts/build-prometheus.sh [OUTDIR]
#
# The alert rules are tested with the real promtool and a real Prometheus server. Debian's
# package gives both as binaries linked only against libc; `apt-get download` and
# `dpkg-deb -x` need no root and take seconds. The .deb is kept in .cache/debs, so a second
# run needs no network; if both binaries already report the pinned version, nothing runs.
#
# Exit status: 0 installed or up to date, 2 apt-get/dpkg-deb missing, 3 the package could not
# be fetched, other: extraction failed.
set -euo pipefail

PROMETHEUS_VERSION=2.42.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/.." && pwd)"
outdir="${1:-$repo_root/.cache/bin}"
case "$outdir" in
    /*) ;;
    *) outdir="$PWD/$outdir" ;;
esac
debs="$repo_root/.cache/debs"

reports_version() {
    [[ -x "$1" ]] && "$1" --version 2>&1 | head -n1 | grep -q "version $PROMETHEUS_VERSION"
}

if reports_version "$outdir/promtool" && reports_version "$outdir/prometheus"; then
    echo "promtool and prometheus $PROMETHEUS_VERSION are up to date: $outdir" >&2
    exit 0
fi

for tool in apt-get dpkg-deb; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: $tool is required to fetch Debian's prometheus package; on a system without" \
            "it, install promtool and prometheus $PROMETHEUS_VERSION yourself and set" \
            "MINDS_PROMTOOL and MINDS_PROMETHEUS to their paths." >&2
        exit 2
    fi
done

mkdir -p "$debs" "$outdir"
deb="$(find "$debs" -maxdepth 1 -name "prometheus_${PROMETHEUS_VERSION}*_*.deb" -print -quit)"
if [[ -z "$deb" ]]; then
    echo "fetching Debian's prometheus package ($PROMETHEUS_VERSION) into $debs" >&2
    # apt-get download writes into the current directory.
    if ! (cd "$debs" && apt-get download -q "prometheus=${PROMETHEUS_VERSION}*" >&2); then
        echo "error: apt-get could not download the prometheus package $PROMETHEUS_VERSION." \
            "Check that a Debian bookworm source is configured and reachable (run" \
            "'apt-get update' as root, then 'apt-cache policy prometheus'), or set" \
            "MINDS_PROMTOOL and MINDS_PROMETHEUS to binaries you installed." >&2
        exit 3
    fi
    deb="$(find "$debs" -maxdepth 1 -name "prometheus_${PROMETHEUS_VERSION}*_*.deb" -print -quit)"
fi

unpacked="$(mktemp -d "$outdir/.prometheus-deb.XXXXXX")"
trap 'rm -rf "$unpacked"' EXIT
dpkg-deb -x "$deb" "$unpacked"
for tool in promtool prometheus; do
    mv -f "$unpacked/usr/bin/$tool" "$outdir/$tool"
    reports_version "$outdir/$tool" || {
        echo "error: $outdir/$tool does not report version $PROMETHEUS_VERSION" >&2
        exit 4
    }
done
echo "installed promtool and prometheus $PROMETHEUS_VERSION from $(basename "$deb"): $outdir" >&2
