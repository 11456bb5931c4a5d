#!/usr/bin/env bash
# scripts/vm-bench-warm.sh [RUNS] — cold against warm `berth run --rm --isolation=vm --network
# none busybox echo hi`, RUNS times each (default 5), interleaved, in a private root; prints
# each run and the medians in milliseconds, with the host's load before and after.
# NETWORK=bridge (or a network this script creates by that name) runs both on a network
# instead of none: a VM with a network also boots with its spare cards
# (BERTH_VM_SPARE_CARDS, default 2; 0 for none).
#   cold   BERTH_WARM=off: the shim builds the root, boots the VM, runs echo, powers it off
#   warm   a member of `berth warm --isolation vm --network none busybox --depth 1` claimed
# Each timed run starts once the pool is full again (its refill boots a VM in the background,
# which would otherwise share the two cores with the run). BERTH (default: the debug build in
# CARGO_TARGET_DIR or target) picks the binary; BERTH_VM_KERNEL_DIR and BERTH_VM_CACHE as for
# the tests (scripts/vm-kernel.sh). Run as root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
target=${CARGO_TARGET_DIR:-target}
berth=${BERTH:-$target/x86_64-unknown-linux-gnu/debug/berth}
export BERTH_VM_KERNEL_DIR=${BERTH_VM_KERNEL_DIR:-$target/vm-kernel/package}
[[ -d $BERTH_VM_KERNEL_DIR ]] || scripts/vm-kernel.sh "$BERTH_VM_KERNEL_DIR"
export BERTH_VM_CACHE=${BERTH_VM_CACHE:-$target/vm-cache}
BERTH_ROOT=$(mktemp -d /tmp/berth-bench-root.XXXXXX)
BERTH_RUN_ROOT=$(mktemp -d /tmp/berth-bench-run.XXXXXX)
export BERTH_ROOT BERTH_RUN_ROOT
cleanup() {
    "$berth" warm rm >/dev/null 2>&1 || true
    if [[ ${network:-none} != none && ${network:-none} != bridge ]]; then
        "$berth" network rm "$network" >/dev/null 2>&1 || true
    fi
    "$berth" network prune -f >/dev/null 2>&1 || true
    rm -rf "$BERTH_ROOT" "$BERTH_RUN_ROOT"
}
trap cleanup EXIT
"$berth" load -i "${BERTH_FIXTURES:-target/fixtures}/busybox-docker.tar" >/dev/null
network=${NETWORK:-none}
if [[ $network != none && $network != bridge ]]; then
    "$berth" network create "$network" >/dev/null
fi
"$berth" warm --isolation vm --network "$network" busybox --depth 1 >/dev/null

wait_full() {
    for _ in $(seq 600); do
        [[ $("$berth" warm ls -q | wc -l) -ge 1 ]] && return
        sleep 0.2
    done
    echo "the pool was not refilled" >&2
    exit 1
}

# One timed run: milliseconds on stdout; the run's output must be "hi".
timed() {
    local start end output
    start=$(date +%s%N)
    output=$("$@" run --rm --isolation=vm --network "$network" busybox echo hi)
    end=$(date +%s%N)
    [[ $output == hi ]] || { echo "unexpected output: $output" >&2; exit 1; }
    echo $(((end - start) / 1000000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cold=() warm=()
for i in $(seq "$runs"); do
    wait_full
    cold+=("$(timed env BERTH_WARM=off "$berth")")
    wait_full
    warm+=("$(timed "$berth")")
    echo "run $i: cold ${cold[-1]} ms, warm ${warm[-1]} ms"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median cold: $(printf '%s\n' "${cold[@]}" | median) ms"
echo "median warm: $(printf '%s\n' "${warm[@]}" | median) ms"
