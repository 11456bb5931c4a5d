#!/usr/bin/env bash
# scripts/vm-kernel.sh DIR — puts Debian's current kernel package, extracted (not installed),
# into DIR: DIR/boot/vmlinuz-<release>, DIR/lib/modules/<release>/… . This is what berth-vm
# boots (BERTH_VM_KERNEL_DIR=DIR); its tests call this script when DIR is missing.
#
# The package is the one linux-image-amd64 depends on (linux-image-6.1.0-57-amd64 on
# Debian 12 as of 2026-12), fetched with `apt-get download` and unpacked with `dpkg-deb -x`.
# Idempotent, and safe to run concurrently (a lock beside DIR).
set -euo pipefail

dir=${1:?usage: scripts/vm-kernel.sh DIR}
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9

if compgen -G "$dir/boot/vmlinuz-*" >/dev/null; then
    exit 0
fi

package() {
    apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}
pkg=$(package)
if [[ -z $pkg ]]; then
    apt-get update -q >&2
    pkg=$(package)
fi
[[ -n $pkg ]] || { echo "vm-kernel.sh: cannot tell which kernel linux-image-amd64 depends on" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work" "$dir.partial"' EXIT
# apt's sandbox user cannot write into a private mktemp directory; that is only a warning.
(cd "$work" && apt-get download -qq "$pkg" >&2 2> >(grep -v 'unsandboxed' >&2))
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
dpkg-deb -x "$work"/*.deb "$dir.partial"
mv "$dir.partial" "$dir"
echo "vm-kernel.sh: $pkg extracted into $dir" >&2
