#!/bin/bash
# bases.sh — stand-ins for the two bases deploy/Dockerfile names, made from Debian packages when no
# registry is reachable, and tagged under the names the Dockerfile expects:
#   golang:<GO_VERSION>-bookworm            mmdebstrap's minbase bookworm with make, git and
#                                          ca-certificates, plus this machine's Go toolchain
#   gcr.io/distroless/static-debian12:nonroot
#                                          FROM scratch: CA certificates and time zones from the same
#                                          Debian packages, a passwd and group naming nonroot (65532)
# A tag that exists already is kept (FORCE=1 makes both again). Needs root, mmdebstrap and podman.
#
#   usage: deploy/image/bases.sh [GO_VERSION]     (default: the Dockerfile's ARG GO_VERSION)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
podman=${PODMAN:-podman --runtime runc --cgroup-manager cgroupfs}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}
go_version=${1:-$(sed -n 's/^ARG GO_VERSION=//p' "$here/../Dockerfile")}
golang=golang:$go_version-bookworm
static=gcr.io/distroless/static-debian12:nonroot

have() { [ "${FORCE:-}" != 1 ] && $podman image exists "$1"; }
if have "$golang" && have "$static"; then
  echo "bases: $golang and $static exist"; exit 0
fi

goroot=$(go env GOROOT)
case "$(go env GOVERSION)" in
  "go$go_version" | "go$go_version".*) ;;
  *) echo "bases: the Dockerfile wants Go $go_version, this machine has $(go env GOVERSION)" >&2; exit 1 ;;
esac
# The Debian mirror apt already uses here (deb822 or one-line sources), deb.debian.org otherwise.
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:/) { print $i; exit } }' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d /var/tmp/h3rum-bases.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
echo "bases: mmdebstrap bookworm from $mirror"
mmdebstrap --quiet --variant=minbase --mode=root --include=make,ca-certificates,git,tzdata \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  bookworm "$rootfs" "$mirror"

echo "bases: $golang (Go from $goroot)"
mkdir -p "$rootfs/usr/local" "$rootfs/go"
cp -a "$goroot" "$rootfs/usr/local/go"
# As the official image sets them: GOPATH /go, the toolchain never replaced by a download.
tar --numeric-owner -C "$rootfs" -cf - . | $podman import --quiet \
  --change 'ENV GOPATH=/go' \
  --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV GOTOOLCHAIN=local' \
  --change 'WORKDIR /go' \
  --change 'CMD ["bash"]' - "$golang" >/dev/null

echo "bases: $static"
s=$work/static
mkdir -p "$s/etc/ssl/certs" "$s/usr/share" "$s/tmp" "$s/home/nonroot" "$s/root"
cp -a "$rootfs/etc/ssl/certs/ca-certificates.crt" "$s/etc/ssl/certs/"
cp -a "$rootfs/usr/share/zoneinfo" "$s/usr/share/"
cp -a "$rootfs/etc/os-release" "$s/etc/"
cat > "$s/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat > "$s/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
GROUP
echo 'hosts: files dns' > "$s/etc/nsswitch.conf"
chmod 1777 "$s/tmp"
chmod 0700 "$s/root"
chown 65532:65532 "$s/home/nonroot"
tar --numeric-owner -C "$s" -cf - . | $podman import --quiet \
  --change 'USER 65532:65532' \
  --change 'WORKDIR /home/nonroot' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' - "$static" >/dev/null
$podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -F -e "$golang" -e "${static%:*}"
