#!/usr/bin/env bash
# scripts/vm-bench-fs.sh [RUNS] — 100 MB sequential write (dd conv=fsync) and read through a
# virtiofs share in a berth-vm microVM (crates/berth-vm/examples/vm-run.rs, release build),
# against the host's own dd on the same directory, RUNS times (default 3), each virtiofsd
# --cache policy interleaved with the host. The read is of a file the host has in its page cache
# and the guest has not (the guest drops its caches first), on both sides. A third guest figure,
# dd /dev/zero → /dev/null, is the emulated CPU's own copying speed: under TCG the ceiling of
# anything in the guest. Then the same policies for the root share itself (the fixtures' busybox
# rootfs): 50 execs of /bin/true, 100 cats of /etc/passwd, 10 `ls -l /bin` (270 entries), in ms.
# Prints medians; results in docs/VM.md.
# Needs what scripts/vm-bench.sh needs (virtiofsd, the fixtures, the kernel package).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-3}
target=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p berth-vm --bins --examples
bin=$target/x86_64-unknown-linux-gnu/release
export BERTH_VM_KERNEL_DIR=${BERTH_VM_KERNEL_DIR:-$target/vm-kernel/minimal}
[[ -d $BERTH_VM_KERNEL_DIR ]] || scripts/vm-kernel-minimal.sh "$BERTH_VM_KERNEL_DIR"
export BERTH_VM_CACHE=${BERTH_VM_CACHE:-$target/vm-cache}
export BERTH_VM_AGENT=$bin/berth-vm-agent
work=$(mktemp -d /var/tmp/berth-vm-fs.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/rootfs" "$work/data"
tar -xf "${BERTH_FIXTURES:-target/fixtures}/rootfs.tar" -C "$work/rootfs"
out=$work/results

# In the guest each step prints "<what> <start> <end>" from /proc/uptime (10 ms steps; busybox dd
# prints no rate) → MB/s of 100 MiB, one column per line.
# On the host, coreutils dd's own "<bytes> bytes (...) copied, <seconds> s, ..." (the page cache
# reads 100 MiB in ~20 ms: finer than /proc/uptime).
dd_rate() { sed -nE 's/^([0-9]+) bytes .* copied, ([0-9.e-]+) s.*/\1 \2/p' | awk '{ printf "%.0f\n", $1 / $2 / 1e6 }'; }
rate() { awk '$1 ~ /^(write|read|copy)$/ { printf "%.0f\n", 104857600 / ($3 - $2) / 1e6 }'; }
timed='t() { cut -d" " -f1 /proc/uptime; }
a=$(t); dd if=/dev/zero of=$dir/file bs=1M count=100 conv=fsync 2>/dev/null; echo write $a $(t)
sync; echo 3 > /proc/sys/vm/drop_caches
a=$(t); dd if=$dir/file of=/dev/null bs=1M 2>/dev/null; echo read $a $(t)
a=$(t); dd if=/dev/zero of=/dev/null bs=1M count=100 2>/dev/null; echo copy $a $(t)
rm $dir/file'
small='t() { cut -d" " -f1 /proc/uptime; }
a=$(t); for i in $(seq 50); do /bin/true; done; echo exec50 $a $(t)
a=$(t); for i in $(seq 100); do cat /etc/passwd >/dev/null; done; echo cat100 $a $(t)
a=$(t); for i in $(seq 10); do ls -l /bin >/dev/null; done; echo ls10 $a $(t)'
small_out=$work/small
ms() { awk '$1 ~ /^(exec50|cat100|ls10)$/ { printf "%.0f\n", ($3 - $2) * 1000 }'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < runs; i++)); do
    # The host reads from its page cache (no drop there: other work shares this machine), as
    # virtiofsd does for the guest, whose own cache is dropped.
    write=$(dd if=/dev/zero of="$work/data/file" bs=1M count=100 conv=fsync 2>&1 | tail -n 1 | dd_rate)
    read=$(dd if="$work/data/file" of=/dev/null bs=1M 2>&1 | tail -n 1 | dd_rate)
    copy=$(dd if=/dev/zero of=/dev/null bs=1M count=100 2>&1 | tail -n 1 | dd_rate)
    rm "$work/data/file"
    printf 'host\t%s\t%s\t%s\n' "$write" "$read" "$copy" >>"$out"
    for cache in auto always never; do
        rates=$("$bin/examples/vm-run" --root "$work/rootfs" --share "$work/data:/data" --cache "$cache" \
            -- sh -c "dir=/data; $timed" 2>&1 | rate | paste -sd '\t')
        printf 'guest-%s\t%s\n' "$cache" "$rates" >>"$out"
        times=$("$bin/examples/vm-run" --root "$work/rootfs" --root-cache "$cache" \
            -- sh -c "$small" 2>&1 | ms | paste -sd '\t')
        printf 'root-%s\t%s\n' "$cache" "$times" >>"$small_out"
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$small_out" <<'PY'
import statistics, sys
def table(path, header):
    rows = {}
    for line in open(path):
        name, *values = line.rstrip("\n").split("\t")
        rows.setdefault(name, []).append(values)
    print(header)
    for name, values in rows.items():
        medians = []
        for column in zip(*values):
            numbers = [float(x) for x in column if x not in ("", "-")]
            medians.append(f"{statistics.median(numbers):.0f}" if numbers else "-")
        print(f"{name}\t{len(values)}\t" + "\t".join(medians))
table(sys.argv[1], "where\truns\twrite MB/s\tread MB/s\tzero→null MB/s (the CPU's copying)")
table(sys.argv[2], "root cache\truns\texec50 ms\tcat100 ms\tls10 ms")
PY
