#!/usr/bin/env bash
# scripts/vm-kernel-minimal.sh DIR — builds berth's own guest kernel from Debian's `linux-source`
# and lays it out in DIR as scripts/vm-kernel.sh lays out Debian's kernel package, so
# BERTH_VM_KERNEL_DIR=DIR boots it: DIR/boot/vmlinuz-<release> (a bzImage, xz inside),
# DIR/boot/config-<release>, DIR/lib/modules/<release>/kernel/ (empty: the drivers are built in)
# and .../modules.builtin (what the initramfs then needs not load).
#
# The configuration is `make tinyconfig` + scripts/vm-kernel-minimal.config, merged with the
# kernel's own scripts/kconfig/merge_config.sh and `make olddefconfig`; every line of the fragment
# must survive into the final .config (a dependency Kconfig silently dropped is an error here).
# The build is reproducible: its user, host and timestamp are fixed and its build number is a hash
# of the fragment, this script and the source package's version, so the version banner (berth-vm's
# cache key for the decoded vmlinux) changes exactly when the kernel does.
#
# Installs what it needs with apt (linux-source, flex, bison, bc, libelf-dev) when missing; the
# source tree and objects stay in DIR.build for incremental rebuilds. Idempotent (DIR is kept
# when its stamp matches), safe to run concurrently (a lock beside DIR), `nice -n 19 make -j2`.
set -euo pipefail

dir=${1:?usage: scripts/vm-kernel-minimal.sh DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fragment=$here/vm-kernel-minimal.config
jobs=${BERTH_KERNEL_JOBS:-2}
mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
exec 9>"$dir.lock"
flock 9

say() { echo "vm-kernel-minimal.sh: $*" >&2; }

need=()
for package in linux-source flex bison bc libelf-dev make gcc xz-utils; do
    dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q '^install ok installed$' ||
        need+=("$package")
done
if ((${#need[@]})); then
    say "installing ${need[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >&2; then
        apt-get update -q >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >&2
    fi
fi

# linux-source depends on linux-source-<major.minor>, whose tarball is /usr/src/<that name>.tar.xz.
source_package=$(dpkg-query -W -f='${Depends}\n' linux-source | grep -o 'linux-source-[0-9.]*' | head -n 1)
tarball=/usr/src/$source_package.tar.xz
[[ -f $tarball ]] || { say "$tarball is missing (is $source_package installed?)"; exit 1; }
source_version=$(dpkg-query -W -f='${Version}' "$source_package")
stamp=$( (echo "$source_package $source_version"; cat "$fragment" "${BASH_SOURCE[0]}") | sha256sum | cut -c1-12)

if [[ -f $dir/.berth-kernel-stamp && $(<"$dir/.berth-kernel-stamp") == "$stamp" ]] &&
    compgen -G "$dir/boot/vmlinuz-*" >/dev/null; then
    exit 0
fi

build=$dir.build
src=$build/$source_package
obj=$build/obj
if [[ ! -f $src/.berth-extracted || $(<"$src/.berth-extracted") != "$source_version" ]]; then
    say "extracting $tarball ($source_version)"
    rm -rf "$src" "$obj"
    mkdir -p "$build"
    tar -xf "$tarball" -C "$build"
    echo "$source_version" >"$src/.berth-extracted"
fi
mkdir -p "$obj"

# The banner reads `... (berth@berth) ... #<stamp> SMP PREEMPT_DYNAMIC <date of the source>`.
export KBUILD_BUILD_USER=berth KBUILD_BUILD_HOST=berth KBUILD_BUILD_VERSION=$stamp
KBUILD_BUILD_TIMESTAMP=$(date -u -R -r "$tarball")
export KBUILD_BUILD_TIMESTAMP
kmake() { nice -n 19 make -s -C "$src" O="$obj" ARCH=x86_64 "$@"; }

kmake tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$fragment" >/dev/null
kmake olddefconfig >/dev/null
missing=()
while IFS= read -r line; do
    if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= ]]; then
        grep -qxF -- "$line" "$obj/.config" || missing+=("$line")
    elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
        ! grep -q "^${BASH_REMATCH[1]}=" "$obj/.config" || missing+=("$line")
    fi
done <"$fragment"
if ((${#missing[@]})); then
    say "these lines of $fragment did not survive olddefconfig (an unmet dependency?):"
    printf '  %s\n' "${missing[@]}" >&2
    exit 1
fi

say "building in $obj (make -j$jobs, nice 19)"
start=$(date +%s)
kmake -j"$jobs" bzImage
say "built in $(($(date +%s) - start)) s"

release=$(kmake kernelrelease)
rm -rf "$dir.partial"
trap 'rm -rf "$dir.partial"' EXIT
mkdir -p "$dir.partial/boot" "$dir.partial/lib/modules/$release/kernel"
cp "$obj/arch/x86/boot/bzImage" "$dir.partial/boot/vmlinuz-$release"
cp "$obj/.config" "$dir.partial/boot/config-$release"
# The drivers berth-vm would otherwise load (initramfs.rs) are in here, so it packs no modules.
cp "$obj/modules.builtin" "$dir.partial/lib/modules/$release/modules.builtin"
for module in virtio_mmio virtio_console virtiofs virtio_net; do
    grep -q "/$module\.ko$" "$dir.partial/lib/modules/$release/modules.builtin" ||
        { say "$module is not built in ($obj/modules.builtin)"; exit 1; }
done
echo "$stamp" >"$dir.partial/.berth-kernel-stamp"
rm -rf "$dir.old"
[[ ! -e $dir ]] || mv "$dir" "$dir.old"
mv "$dir.partial" "$dir"
rm -rf "$dir.old"
say "$release ($(stat -c %s "$dir/boot/vmlinuz-$release") bytes) in $dir"
