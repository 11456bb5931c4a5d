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
# Variants: plain (uncompressed initramfs, ACPI power-off), gzip (gzip initramfs), reboot
# (reboot(RB_AUTOBOOT) + -no-reboot instead of power-off). The host's load average is printed
# before and after: on a shared two-core machine it moves these figures more than anything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
target=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p berth-vm --bins --examples
bin=$target/x86_64-unknown-linux-gnu/release
export BERTH_VM_KERNEL_DIR=${BERTH_VM_KERNEL_DIR:-$target/vm-kernel/package}
[[ -d $BERTH_VM_KERNEL_DIR ]] || scripts/vm-kernel.sh "$BERTH_VM_KERNEL_DIR"
export BERTH_VM_CACHE=${BERTH_VM_CACHE:-$target/vm-cache}
export BERTH_VM_AGENT=$bin/berth-vm-agent
out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/examples/vm-run" -- true >/dev/null 2>&1 # the kernel cache, page cache
for ((i = 0; i < runs; i++)); do
    for variant in plain: gzip:--gzip reboot:--reboot; do
        name=${variant%%:*}
        # shellcheck disable=SC2086 # the flags are words
        "$bin/examples/vm-run" ${variant#*:} -- echo hi 2>/dev/null | tail -n 1 | sed "s/^/$name\t/" >>"$out"
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
