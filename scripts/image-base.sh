#!/usr/bin/env bash
# Make the base image the image test builds on, and print its name.
#
#   scripts/image-base.sh            # prints localhost/minds-base:bookworm-slim-<hash>
#
# No image registry is reachable where this project is built and tested, so the Dockerfile's
# pinned base cannot be pulled here. This makes an equivalent one from Debian's own packages:
# debootstrap a minimal bookworm with python3 and venv, drop what debian:bookworm-slim drops
# (documentation but the copyright files, man pages, translations) and apt's lists, and the
# parts of Python's standard library a server never imports: its own test suite (test/), the
# Python 2 converter (lib2to3/) and pydoc's help topics (pydoc_data/), with their byte code.
# The packages stay whole in the dpkg database (as for the documentation), so the base is a
# Debian that scanners read; the files removed are listed in docs/install.md. Then import it
# into buildah's storage: about 126 MB, like the pinned python slim base.
# Done once per machine and version of this script (about two minutes: the name carries the
# script's hash, so a changed script makes a new base); later calls only print the name. On
# Debian as root, a missing buildah or debootstrap is installed first.
set -euo pipefail

version="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
name="${MINDS_IMAGE_BASE_NAME:-localhost/minds-base:bookworm-slim-$version}"

if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
    if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap >&2
    else
        echo "error: buildah and debootstrap are needed (Debian: apt-get install buildah" \
            "debootstrap, as root)" >&2
        exit 2
    fi
fi

if buildah inspect --type image "$name" >/dev/null 2>&1; then
    echo "$name"
    exit 0
fi

root="$(mktemp -d)"
container=""
cleanup() {
    # Never copy or delete through a mounted /proc or /sys of the new root.
    for fs in proc sys dev/pts; do
        mountpoint -q "$root/$fs" 2>/dev/null && umount -l "$root/$fs" || true
    done
    [[ -n "$container" ]] && buildah rm "$container" >/dev/null 2>&1 || true
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT

debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/var/cache/debconf/*-old "$root"/var/log/*
find "$root"/usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete
find "$root"/usr/share/doc -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/lib/python3.*/test "$root"/usr/lib/python3.*/lib2to3 \
    "$root"/usr/lib/python3.*/pydoc_data

container="$(buildah from scratch)"
mount="$(buildah mount "$container")"
tar -C "$root" --one-file-system -cf - . | tar -C "$mount" -xf -
buildah umount "$container" >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "$container"
buildah commit --quiet --rm "$container" "$name" >/dev/null
container=""
echo "$name"
