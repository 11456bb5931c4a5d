#!/usr/bin/env bash
# scripts/bench-run.sh — start latency of `run --rm busybox echo`, berth and Docker
# side by side in one run (hyperfine, warm-up runs, median of RUNS runs).
#
# Usage: scripts/bench-run.sh [RUNS]   (default 30)
# Needs: root, hyperfine (apt-get install hyperfine), a release build (made here).
# Docker is measured when scripts/docker-engine.sh can start its private engine.
# Results: target/bench/run-echo.json (hyperfine's export) and a summary on stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${1:-30}
command -v hyperfine >/dev/null || apt-get install -y -q hyperfine >/dev/null
cargo build --release -p berth >&2
scripts/make-fixtures.sh target/fixtures >/dev/null
BERTH=$PWD/target/release/berth
BERTH_ROOT=$(mktemp -d /tmp/berth-bench-root.XXXXXX)
BERTH_RUN_ROOT=$(mktemp -d /tmp/berth-bench-run.XXXXXX)
export BERTH_ROOT BERTH_RUN_ROOT
trap 'rm -rf "$BERTH_ROOT" "$BERTH_RUN_ROOT"' EXIT
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
hyperfine -N --warmup 5 --runs "$RUNS" --export-json target/bench/run-echo.json "${commands[@]}" >&2
python3 - <<'PY'
import json
results = json.load(open("target/bench/run-echo.json"))["results"]
for r in results:
    print(f'{r["median"]*1000:8.1f} ms median  {r["mean"]*1000:8.1f} ± {r["stddev"]*1000:5.1f} ms  min {r["min"]*1000:6.1f}  max {r["max"]*1000:6.1f}  {r["command"]}')
PY
