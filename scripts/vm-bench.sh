#!/usr/bin/env bash
# scripts/vm-bench.sh [RUNS] — boots berth-vm microVMs (release build, crates/berth-vm/examples/
# vm-run.rs) RUNS times (default 5) per variant, interleaved so host load drifts alike for all,
# and prints each variant's median, in milliseconds:
#   ready        host: QEMU started → the agent's Ready
#   guest_init   guest clock (CLOCK_BOOTTIME) when /init started = the kernel's boot
#   guest_ready  guest clock at Ready (after mounts, modules, the port)
#   first_output host: QEMU started → the command's first output byte
#   run          host: Run sent → Exited received
#   shutdown     host: Shutdown sent → QEMU reaped
#   total        host: QEMU started → QEMU reaped (one `run` of `echo hi` in a fresh VM)
# Variants (VARIANTS="slice1 virtiofs berth berth-slice1" by default):
#   slice1        the first slice: the small agent, busybox in the initramfs, no virtiofs modules
#   virtiofs      the small agent, fuse+virtiofs loaded, the fixtures' rootfs over virtiofs as
#                 the command's root (one virtiofsd), no busybox in the initramfs
#   berth         as virtiofs, with berth's release binary as /init instead of the small agent
#   berth-slice1  as slice1, with berth as /init (the cost of packing berth alone)
#   gzip, reboot  slice1 with a gzip initramfs / reboot(RB_AUTOBOOT) instead of power-off
#   noacpi        virtiofs with `-M microvm,acpi=off` (QEMU through a wrapper that rewrites
#                 acpi=on): the devices on the kernel command line instead (needs a kernel with
#                 VIRTIO_MMIO_CMDLINE_DEVICES, e.g. scripts/vm-kernel-minimal.sh's), and
#                 reboot(RB_AUTOBOOT) + `reboot=t` to end, there being no ACPI power-off
# KERNELS="NAME=DIR ..." runs every variant with each kernel package (rows VARIANT@NAME), e.g.
#   KERNELS="debian=DIR1 minimal=DIR2" (scripts/vm-kernel.sh DIR1, scripts/vm-kernel-minimal.sh
#   DIR2); by default the one of BERTH_VM_KERNEL_DIR, else berth's own, built into
#   target/vm-kernel/minimal when missing.
# The host's load average is printed before and after: on a shared two-core machine it moves
# these figures more than anything. Needs virtiofsd (scripts/vm-tools.sh) and the fixtures
# (BERTH_FIXTURES, default target/fixtures; scripts/make-fixtures.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
target=${CARGO_TARGET_DIR:-target}
variants=${VARIANTS:-slice1 virtiofs berth berth-slice1}
cargo build -q --release -p berth-vm --bins --examples
if [[ $variants == *berth* ]]; then
    cargo build -q --release -p berth
fi
bin=$target/x86_64-unknown-linux-gnu/release
if [[ -n ${KERNELS:-} ]]; then
    kernels=$KERNELS
    for kernel in $kernels; do
        [[ -d ${kernel#*=} ]] || { echo "vm-bench.sh: no kernel package at ${kernel#*=}" >&2; exit 2; }
    done
else
    kernels=default=${BERTH_VM_KERNEL_DIR:-$target/vm-kernel/minimal}
    [[ -d ${kernels#*=} ]] || scripts/vm-kernel-minimal.sh "${kernels#*=}"
fi
export BERTH_VM_CACHE=${BERTH_VM_CACHE:-$target/vm-cache}
out=$(mktemp)
rootfs=$(mktemp -d)
wrapper=$(mktemp -d)
trap 'rm -rf "$out" "$rootfs" "$wrapper"' EXIT
if [[ $variants == *virtiofs* || $variants == *noacpi* || $variants =~ (^| )berth( |$) ]]; then
    tar -xf "${BERTH_FIXTURES:-target/fixtures}/rootfs.tar" -C "$rootfs"
fi
qemu=$(command -v qemu-system-x86_64)
printf '#!/bin/bash\nexec %q "${@//acpi=on/acpi=off}"\n' "$qemu" >"$wrapper/qemu-noacpi"
chmod +x "$wrapper/qemu-noacpi"

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for kernel in $kernels; do # the kernel cache, page cache
    BERTH_VM_KERNEL_DIR=${kernel#*=} "$bin/examples/vm-run" -- true >/dev/null 2>&1
done
run_variant() {
    local name=$1 kernel=$2 agent=$bin/berth-vm-agent flags=() environment=()
    case $name in
    slice1) flags=(--slice1) ;;
    virtiofs) flags=(--root "$rootfs") ;;
    berth) agent=$bin/berth flags=(--root "$rootfs") ;;
    berth-slice1) agent=$bin/berth flags=(--slice1) ;;
    gzip) flags=(--slice1 --gzip) ;;
    reboot) flags=(--slice1 --reboot) ;;
    noacpi)
        # Only a kernel that reads virtio-mmio devices from its command line boots without ACPI.
        grep -qs '^CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES=y' "${kernel#*=}"/boot/config-* || return 0
        flags=(--root "$rootfs" --reboot)
        environment=(BERTH_VM_QEMU="$wrapper/qemu-noacpi" BERTH_VM_CMDLINE=reboot=t)
        ;;
    *) echo "vm-bench.sh: unknown variant $name" >&2; exit 2 ;;
    esac
    local row=$name
    [[ -z ${KERNELS:-} ]] || row=$name@${kernel%%=*}
    env "${environment[@]}" BERTH_VM_KERNEL_DIR="${kernel#*=}" BERTH_VM_AGENT="$agent" \
        "$bin/examples/vm-run" "${flags[@]}" -- echo hi 2>/dev/null | tail -n 1 | sed "s/^/$row\t/" >>"$out"
}
for ((i = 0; i < runs; i++)); do
    for variant in $variants; do
        for kernel in $kernels; do
            run_variant "$variant" "$kernel"
        done
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import statistics, sys
columns = ["ready", "guest_init", "guest_ready", "first_output", "run", "shutdown", "total"]
rows = {}
for line in open(sys.argv[1]):
    fields = line.split("\t")
    rows.setdefault(fields[0], []).append([float(x) for x in fields[2:9]])
print("variant\truns\t" + "\t".join(columns))
for name, values in rows.items():
    medians = [statistics.median(column) for column in zip(*values)]
    print(f"{name}\t{len(values)}\t" + "\t".join(f"{m:.0f}" for m in medians))
PY
