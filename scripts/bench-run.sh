#!/usr/bin/env bash
# scripts/bench-run.sh — start latency of `run --rm busybox echo`, berth and Docker
# side by side in one run (hyperfine, warm-up runs, median of RUNS runs).
#
# Usage: scripts/bench-run.sh [RUNS]   (default 30)
# Needs: root, hyperfine (apt-get install hyperfine), a release build (made here).
# Docker is measured when scripts/docker-engine.sh can start its private engine.
# Results: target/bench/run-echo.json and run-echo-warm.json (hyperfine's
# exports; warm = from a warm pool) and a summary on stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${1:-30}
command -v hyperfine >/dev/null || apt-get install -y -q hyperfine >/dev/null
cargo build --release -p berth >&2
scripts/make-fixtures.sh target/fixtures >/dev/null
BERTH=$PWD/target/x86_64-unknown-linux-gnu/release/berth
BERTH_ROOT=$(mktemp -d /tmp/berth-bench-root.XXXXXX)
BERTH_RUN_ROOT=$(mktemp -d /tmp/berth-bench-run.XXXXXX)
export BERTH_ROOT BERTH_RUN_ROOT
# The throw-away root's pool members (a refill started by the last warm run
# may still be building one), its default bridge and nftables table go with it.
cleanup() {
    "$BERTH" warm rm >/dev/null 2>&1 || true
    sleep 1
    "$BERTH" warm rm >/dev/null 2>&1 || true
    local tag # berth-net's instance name: 32-bit FNV-1a of the root path
    tag=$(python3 -c 'import sys
h = 0x811c9dc5
for byte in sys.argv[1].encode():
    h = ((h ^ byte) * 0x01000193) & 0xffffffff
print(f"{h:08x}")' "$BERTH_ROOT")
    ip link delete "berth$tag" 2>/dev/null || true
    nft delete table ip "berth_$tag" 2>/dev/null || true
    rm -rf "$BERTH_ROOT" "$BERTH_RUN_ROOT"
}
trap cleanup EXIT
"$BERTH" load -q -i target/fixtures/busybox-docker.tar >/dev/null
"$BERTH" run --rm busybox true # fills the seccomp cache, as any earlier run would

commands=("$BERTH run --rm busybox echo hi" "$BERTH run --rm --network none busybox echo hi")
if host=$(scripts/docker-engine.sh start 2>/dev/null); then
    docker=docker; [[ -x /usr/bin/docker ]] && docker=/usr/bin/docker
    "$docker" -H "$host" load -q -i target/fixtures/busybox-docker.tar >/dev/null
    commands+=("$docker -H $host run --rm --network none busybox echo hi")
else
    echo "docker: not measured (the private engine did not start)" >&2
fi
mkdir -p target/bench
# Cold: no pool (BERTH_WARM=off), as any run of an image without one.
BERTH_WARM=off hyperfine -N --warmup 5 --runs "$RUNS" --export-json target/bench/run-echo.json "${commands[@]}" >&2
# Warm: a pool of 4; each run takes a member, and the pause between runs
# (not timed) lets the background refill replace it.
"$BERTH" warm busybox --depth 4 >/dev/null
hyperfine -N --warmup 2 --runs "$RUNS" --prepare "sleep 0.4" \
    --export-json target/bench/run-echo-warm.json "$BERTH run --rm busybox echo hi" >&2
"$BERTH" warm rm >/dev/null
python3 - <<'PY'
import json
for name, label in [("run-echo", "cold"), ("run-echo-warm", "warm")]:
    results = json.load(open(f"target/bench/{name}.json"))["results"]
    for r in results:
        print(f'{label}  {r["median"]*1000:8.1f} ms median  {r["mean"]*1000:8.1f} ± {r["stddev"]*1000:5.1f} ms  min {r["min"]*1000:6.1f}  max {r["max"]*1000:6.1f}  {r["command"]}')
PY
