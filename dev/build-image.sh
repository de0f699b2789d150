#!/usr/bin/env bash
# Builds the TrainGuard image with buildah, without a Docker daemon or a registry.
#
#   dev/build-image.sh [--tag NAME] [--base IMAGE] [--root DIR]
#
# Without --base it first makes a local Debian base (python3 + venv) with debootstrap, once, and
# reuses it: registries cannot be reached on CI machines (../shared/TESTING.md). Storage is vfs and
# isolation chroot, so it runs as root without overlayfs or user namespaces. The host's CA bundle is
# mounted into RUN steps so pip works behind a TLS-intercepting proxy. Prints the image name.
#   --tag   image name (default localhost/trainguard:<package version>, the chart's default image)
#   --base  base image; default localhost/trainguard-base:bookworm (made here if absent)
#   --root  buildah storage root (default: buildah's own, /var/lib/containers/storage as root)
# Needs buildah and debootstrap: dev/setup.sh --full installs both.
set -euo pipefail
cd "$(dirname "$0")/.."

# the chart's default image is localhost/trainguard:<appVersion>, the package's version
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' trainguard/_version.py)
tag=localhost/trainguard:$version
base=""
root=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --root) root="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { echo "build-image.sh: $tool is missing: run dev/setup.sh --full" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "build-image.sh: run as root (vfs storage with chroot isolation needs it)" >&2; exit 2; }

B=(buildah --storage-driver vfs)
[ -n "$root" ] && B+=(--root "$root" --runroot "$root/run")

if [ -z "$base" ]; then
  base=localhost/trainguard-base:bookworm
  if ! "${B[@]}" inspect --type image "$base" >/dev/null 2>&1; then
    # The mirror apt already uses on this machine; deb.debian.org otherwise.
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
    mirror=${mirror:-http://deb.debian.org/debian}
    rootfs=$(mktemp -d)
    trap 'rm -rf "$rootfs"' EXIT
    echo "==> debootstrap bookworm from $mirror (about a minute)" >&2
    debootstrap --variant=minbase --include=python3,python3-venv bookworm "$rootfs" "$mirror" >/dev/null
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    c=$("${B[@]}" from scratch)
    m=$("${B[@]}" mount "$c")
    cp -a "$rootfs/." "$m/"
    "${B[@]}" umount "$c" >/dev/null
    "${B[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
    "${B[@]}" commit --quiet "$c" "$base" >/dev/null
    "${B[@]}" rm "$c" >/dev/null
    rm -rf "$rootfs"; trap - EXIT
  fi
fi

ca=/etc/ssl/certs/ca-certificates.crt
mounts=()
[ -f "$ca" ] && mounts=(--volume "$ca:$ca:ro" --build-arg "PIP_CERT=$ca")
echo "==> buildah bud $tag (base $base)" >&2
"${B[@]}" bud --isolation chroot --layers=false --build-arg "BASE=$base" "${mounts[@]}" \
  -f Dockerfile -t "$tag" . >&2
echo "$tag"
