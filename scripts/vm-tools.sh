#!/usr/bin/env bash
# scripts/vm-tools.sh [ROOT] — installs the host tools berth-vm uses beyond QEMU into a place
# of berth's own, ROOT (default /var/lib/berth-tools): ROOT/bin/virtiofsd, the vhost-user
# virtio-fs daemon (crates.io `virtiofsd`, the Rust one QEMU's own docs point to), which
# berth-vm starts once per shared directory (crates/berth-vm/src/virtiofs.rs, docs/VM.md).
#
# It builds against libseccomp and libcap-ng, so their -dev packages come first (apt-get).
# Idempotent: a ROOT/bin/virtiofsd of VERSION that runs is left alone; safe to run
# concurrently (a lock in ROOT). berth-vm finds it as BERTH_VM_VIRTIOFSD, else
# /var/lib/berth-tools/bin/virtiofsd, else virtiofsd in PATH. Debian 12's qemu-system-common has
# QEMU 7.2's C daemon at /usr/lib/qemu/virtiofsd (deprecated, gone from QEMU 8.0, other options):
# berth does not use it.
set -euo pipefail

root=${1:-/var/lib/berth-tools}
# Pinned so CI builds the same daemon every time; raise it on purpose.
version=${VIRTIOFSD_VERSION:-1.14.0}
export DEBIAN_FRONTEND=noninteractive

mkdir -p "$root"
chmod 0755 "$root"
exec 9>"$root/.vm-tools.lock"
flock 9

have() {
    [[ -x $root/bin/virtiofsd ]] && "$root/bin/virtiofsd" --version 2>/dev/null | grep -qF "$version"
}
if have; then
    exit 0
fi

missing=()
for package in libseccomp-dev libcap-ng-dev pkg-config; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
    apt-get install -y -q "${missing[@]}" || { apt-get update -q && apt-get install -y -q "${missing[@]}"; }
fi

# Its own target directory, so the workspace's .cargo/config.toml (crt-static) does not apply
# and nothing is left in the caller's tree.
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cargo install --locked --root "$root" --target-dir "$build" --version "=$version" virtiofsd
"$root/bin/virtiofsd" --version
