#!/usr/bin/env bash
# scripts/peer-suites.sh [--check] [--write-reference] [berth|docker]...
#
# The peer suites, unmodified, against `berth serve` and/or a private Docker engine:
#   docker-py 7.0.0   tests/integration, one pytest session per file; the swarm, service,
#                     secret, config, plugin and node files are skipped (swarm mode)
#   docker-compose 1.29.2  tests/integration and tests/acceptance, one session per file
# Their sources are PyPI's sdists (pinned by sha256 below), their test dependencies come from
# PyPI, each suite in a venv cached under $CARGO_TARGET_DIR/peer (default target/peer).
# The images they pull come from a docker-registry on 127.0.0.1 that both engines use as
# their docker.io mirror; it holds stand-ins built from the busybox rootfs of
# make-fixtures.sh (scripts/peer-suites/peer.py lists them: alpine:3.10 and friends).
#
#   berth   `berth serve` on a throw-away root, run root and socket, with the mirror in its
#           BERTH_CONFIG; everything it made is removed afterwards
#   docker  a Docker engine of its own through scripts/docker-engine.sh (root
#           /var/lib/berth-peer-docker, socket /run/berth-peer-docker.sock, bridge bpeerd0,
#           10.233.0.1/24) started with the mirror — not the shared conformance engine, whose
#           images and containers the suites' prune tests would delete. Started only when it
#           is not running, stopped (and its data root removed) only when this script started it.
#
# Writes $PEER_OUT (default target/peer/results)/ENGINE.json (suite, file, test id, outcome,
# time, message per test), ENGINE-summary.txt (the counts), and per file the pytest log
# and JUnit XML in ENGINE/.
#   --write-reference  after the docker run, writes tests/peer/docker-reference.json
#   --check            after the berth run, fails if berth fails a test that the reference
#                      passes and neither tests/peer/expected-failures.txt (build tests) nor
#                      tests/peer/open-gaps.txt (issue 17's unfixed defects) lists: a
#                      regression; prints both counts and the gaps that now pass
#                      (scripts/test.sh runs `--check berth`)
# Environment: BERTH (binary; default: cargo build -p berth), BERTH_FIXTURES,
#   PEER_SUITES (default "docker-py compose-integration compose-acceptance"),
#   PEER_FILES (only test files whose name matches this extended regex, for quick runs),
#   PEER_SELECT (a pytest -k expression: only the tests it selects, for quick runs),
#   PEER_TEST_TIMEOUT (s per test, default 180), PEER_FILE_TIMEOUT (s per file, default 3000).
# Needs root, python3-venv, docker-registry, and docker.io for the docker engine.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET in /*) ;; *) TARGET=$ROOT/$TARGET ;; esac
WORK=$TARGET/peer
OUT=${PEER_OUT:-$WORK/results}
PEER_PY=$ROOT/scripts/peer-suites/peer.py
REFERENCE=$ROOT/tests/peer/docker-reference.json
EXPECTED=$ROOT/tests/peer/expected-failures.txt
GAPS=$ROOT/tests/peer/open-gaps.txt
SUITES=${PEER_SUITES:-docker-py compose-integration compose-acceptance}
TEST_TIMEOUT=${PEER_TEST_TIMEOUT:-180}
FILE_TIMEOUT=${PEER_FILE_TIMEOUT:-3000}
PYTHON=${BERTH_TEST_PYTHON:-/usr/bin/python3}

DOCKER_PY_SDIST=docker-7.0.0.tar.gz
DOCKER_PY_SHA=323736fb92cd9418fc5e7133bc953e11a9da04f4483f828b527db553f1e7e5a3
COMPOSE_SDIST=docker-compose-1.29.2.tar.gz
COMPOSE_SHA=4c8cd9d21d237412793d18bd33110049ee9af8dab3fe2c213bbd0733959b09b7
# docker-py: its test-requirements.txt's pytest and pytest-timeout; requests, urllib3 and
# websocket-client, paramiko (tests/helpers.py imports it) and cryptography as of its release
# (Dec 2023): its session fixture turns warnings into errors.
DOCKER_PY_REQUIREMENTS="pytest==7.4.2 pytest-timeout==2.1.0 requests==2.31.0 urllib3==2.1.0 websocket-client==1.7.0 paramiko==3.4.0 cryptography==41.0.7"
# compose: its requirements.txt pins (docker==5.0.0, PyYAML==5.4.1, ...), less the Windows and
# Python < 3.8 lines; cryptography, bcrypt and PyNaCl from its requirements-indirect.txt (newer
# cryptography warns about paramiko 2.7's TripleDES on stderr, which the acceptance tests read);
# pytest 6.2.5, the first 6.x that runs on Python 3.10+ (its pin, 6.0.1, does not), with its
# mock and ddt pins. Building PyYAML 5.4.1 needs Cython < 3, docker-compose's setup.py
# needs pkg_resources (setuptools < 70).
COMPOSE_REQUIREMENTS="pytest==6.2.5 pytest-timeout==2.1.0 mock==3.0.5 ddt==1.4.1 cryptography==3.3.2 bcrypt==3.2.0 PyNaCl==1.4.0"
BUILD_CONSTRAINTS=$'setuptools<70\nCython<3'
# docker-py's integration files skipped: swarm services, secrets, configs, nodes and plugins (berth's swarm has one node and runs no services; Docker here is no manager).
DOCKER_PY_SKIP='^(api_swarm|api_service|api_secret|api_config|api_plugin|models_swarm|models_services|models_nodes)_test\.py$'

# Our Docker engine (not the shared one at /run/berth-test-docker.sock).
export BERTH_TEST_DOCKER_ROOT=/var/lib/berth-peer-docker
export BERTH_TEST_DOCKER_EXEC_ROOT=/run/berth-peer-docker
export BERTH_TEST_DOCKER_SOCK=/run/berth-peer-docker.sock
export BERTH_TEST_DOCKER_LOG=/tmp/berth-peer-dockerd.log
export BERTH_TEST_DOCKER_BRIDGE=bpeerd0
export BERTH_TEST_DOCKER_BRIDGE_ADDR=10.233.0.1/24

log() { echo "peer-suites: $*" >&2; }
die() { log "$*"; exit 1; }

check=false
write_reference=false
engines=()
for arg in "$@"; do
    case $arg in
        --check) check=true ;;
        --write-reference) write_reference=true ;;
        berth | docker) engines+=("$arg") ;;
        *) echo "usage: $0 [--check] [--write-reference] [berth|docker]..." >&2; exit 2 ;;
    esac
done
((${#engines[@]})) || engines=(berth docker)
[[ $(id -u) -eq 0 ]] || die "must run as root"
command -v docker-registry >/dev/null || die "docker-registry missing (apt-get install docker-registry)"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || die "$PYTHON has no venv/ensurepip (apt-get install python3-venv)"

REGISTRY_PID=""
REGISTRY_DIR=""
SERVE_PID=""
BERTH_TMP=""
PEER_ENGINE_VERSION=""
STOP_DOCKER=false
cleanup() {
    stop_berth
    stop_docker
    if [[ -n $REGISTRY_PID ]]; then
        kill "$REGISTRY_PID" 2>/dev/null || true
        wait "$REGISTRY_PID" 2>/dev/null || true
        REGISTRY_PID=""
    fi
    [[ -z $REGISTRY_DIR ]] || rm -rf "$REGISTRY_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK" "$OUT"

# ------------------------------------------------------------------ 1. sources and venvs
# A venv is remade when what it should hold (the marker) changed.
make_venv() { # DIR MARKER-TEXT PIP-ARGS...
    local dir=$1 marker=$2
    shift 2
    if [[ -x $dir/bin/python && $(cat "$dir/peer-requirements.txt" 2>/dev/null) == "$marker" ]]; then
        return 0
    fi
    log "making $dir"
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    printf '%s\n' "$BUILD_CONSTRAINTS" >"$WORK/build-constraints.txt"
    PIP_CONSTRAINT=$WORK/build-constraints.txt "$dir/bin/pip" install --quiet --disable-pip-version-check "$@" ||
        { rm -rf "$dir"; die "pip install into $dir failed"; }
    printf '%s' "$marker" >"$dir/peer-requirements.txt"
}

# pip download needs a pip: the docker-py venv's (made without packages first).
[[ -x $WORK/venv-bootstrap/bin/pip ]] || "$PYTHON" -m venv "$WORK/venv-bootstrap"
fetch_sdist() { # NAME==VERSION FILE SHA256
    local file=$WORK/sdist/$2
    if [[ -s $file ]] && echo "$3  $file" | sha256sum -c --quiet - 2>/dev/null; then return 0; fi
    mkdir -p "$WORK/sdist"
    rm -f "$file"
    printf '%s\n' "$BUILD_CONSTRAINTS" >"$WORK/build-constraints.txt"
    PIP_CONSTRAINT=$WORK/build-constraints.txt "$WORK/venv-bootstrap/bin/pip" download --quiet \
        --disable-pip-version-check --no-binary :all: --no-deps -d "$WORK/sdist" "$1" ||
        die "pip download $1 failed"
    echo "$3  $file" | sha256sum -c --quiet - || die "$file: sha256 is not $3"
}
fetch_sdist docker==7.0.0 "$DOCKER_PY_SDIST" "$DOCKER_PY_SHA"
fetch_sdist docker-compose==1.29.2 "$COMPOSE_SDIST" "$COMPOSE_SHA"

# shellcheck disable=SC2086 # the requirement lists are word lists
make_venv "$WORK/venv-docker-py" "$DOCKER_PY_SHA $DOCKER_PY_REQUIREMENTS" \
    "$WORK/sdist/$DOCKER_PY_SDIST" $DOCKER_PY_REQUIREMENTS
if [[ ! -s $WORK/compose-requirements.txt ]]; then
    tar -xzf "$WORK/sdist/$COMPOSE_SDIST" -O docker-compose-1.29.2/requirements.txt |
        grep -v -E "win32|python_version < '3|^cached-property|^backports" >"$WORK/compose-requirements.txt"
fi
# shellcheck disable=SC2086
make_venv "$WORK/venv-compose" "$COMPOSE_SHA $COMPOSE_REQUIREMENTS $(tr '\n' ' ' <"$WORK/compose-requirements.txt")" \
    -r "$WORK/compose-requirements.txt" $COMPOSE_REQUIREMENTS "$WORK/sdist/$COMPOSE_SDIST"

# ------------------------------------------------------------------ 2. the mirror
export BERTH_FIXTURES=${BERTH_FIXTURES:-$ROOT/target/fixtures}
[[ -s $BERTH_FIXTURES/rootfs.tar ]] || scripts/make-fixtures.sh "$BERTH_FIXTURES" >/dev/null
registry_up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
REGISTRY_DIR=$(mktemp -d "$WORK/registry.XXXXXX") # one per run: runs for two engines may overlap
mkdir -p "$REGISTRY_DIR/data"
PORT=""
for _ in 1 2 3 4 5; do # a port can be taken between choosing and binding it
    p=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat >"$REGISTRY_DIR/config.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$p
EOF
    docker-registry serve "$REGISTRY_DIR/config.yml" </dev/null >"$REGISTRY_DIR/registry.log" 2>&1 &
    REGISTRY_PID=$!
    for _ in $(seq 1 200); do
        registry_up "$p" && break
        kill -0 "$REGISTRY_PID" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$REGISTRY_PID" 2>/dev/null && registry_up "$p"; then PORT=$p; break; fi
    kill "$REGISTRY_PID" 2>/dev/null || true
    wait "$REGISTRY_PID" 2>/dev/null || true
    REGISTRY_PID=""
done
[[ -n $PORT ]] || die "docker-registry did not start: $(tail -n 5 "$REGISTRY_DIR/registry.log")"
MIRROR=http://127.0.0.1:$PORT
log "mirror: docker-registry on $MIRROR (pid $REGISTRY_PID), stand-ins:"
"$PYTHON" "$PEER_PY" images "127.0.0.1:$PORT" "$BERTH_FIXTURES/rootfs.tar" | sed 's/^/  /' >&2

# ------------------------------------------------------------------ 3. engines
start_berth() { # sets HOST
    if [[ -z ${BERTH:-} ]]; then
        nice -n 19 cargo build -q -p berth >&2
        BERTH=$TARGET/x86_64-unknown-linux-gnu/debug/berth
    fi
    [[ -x $BERTH ]] || die "no berth binary at $BERTH"
    BERTH_TMP=$(mktemp -d /tmp/berth-peer.XXXXXX)
    mkdir -p "$BERTH_TMP/root" "$BERTH_TMP/run"
    echo "{\"registry-mirrors\": [\"$MIRROR\"]}" >"$BERTH_TMP/config.json"
    export BERTH_ROOT=$BERTH_TMP/root BERTH_RUN_ROOT=$BERTH_TMP/run BERTH_CONFIG=$BERTH_TMP/config.json
    HOST=unix://$BERTH_TMP/docker.sock
    setsid "$BERTH" serve -H "$HOST" </dev/null >"$OUT/berth-serve.log" 2>&1 &
    SERVE_PID=$!
    for _ in $(seq 1 200); do
        [[ -S $BERTH_TMP/docker.sock ]] && break
        kill -0 "$SERVE_PID" 2>/dev/null || die "berth serve exited: $(tail -n 5 "$OUT/berth-serve.log")"
        sleep 0.05
    done
    [[ -S $BERTH_TMP/docker.sock ]] || die "berth serve did not listen on $HOST"
    PEER_ENGINE_VERSION="$("$BERTH" version 2>/dev/null | awk '$1 == "Version:" { print $2; exit }') ($(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?'))"
    log "berth: $PEER_ENGINE_VERSION serving $HOST (pid $SERVE_PID)"
}

# The bridge and nftables table berth-net gives a root (Instance::for_root: FNV-1a of the path).
root_objects() {
    "$PYTHON" -c '
import sys
h = 0x811C9DC5
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
print("berth%08x berth_%08x" % (h, h))' "$1"
}

stop_berth() {
    [[ -n $BERTH_TMP ]] || return 0
    if [[ -n $SERVE_PID ]]; then
        kill -TERM "$SERVE_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVE_PID" 2>/dev/null || true
        wait "$SERVE_PID" 2>/dev/null || true
        SERVE_PID=""
    fi
    # What the suites left: containers (their monitors), networks, volumes.
    local ids bridge table
    ids=$("$BERTH" ps -aq 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z $ids ]] || "$BERTH" rm -f -v $ids >/dev/null 2>&1 || true
    "$BERTH" network prune -f >/dev/null 2>&1 || true
    "$BERTH" volume prune -f >/dev/null 2>&1 || true
    read -r bridge table < <(root_objects "$BERTH_ROOT")
    ip link delete "$bridge" 2>/dev/null || true
    nft delete table ip "$table" 2>/dev/null || true
    rm -rf "$BERTH_TMP"
    BERTH_TMP=""
    unset BERTH_ROOT BERTH_RUN_ROOT BERTH_CONFIG
}

start_docker() { # sets HOST
    if scripts/docker-engine.sh status >/dev/null 2>&1; then
        log "docker: $BERTH_TEST_DOCKER_SOCK already runs; using it as it is (mirror and images as they are)"
    else
        rm -rf "$BERTH_TEST_DOCKER_ROOT" # a fresh engine: no images or containers of an earlier run
        STOP_DOCKER=true
    fi
    HOST=$(BERTH_TEST_DOCKER_MIRROR=$MIRROR scripts/docker-engine.sh start) || die "docker engine did not start"
    PEER_ENGINE_VERSION=$(/usr/bin/docker -H "$HOST" version --format '{{.Server.Version}}')
    log "docker: $PEER_ENGINE_VERSION serving $HOST"
}

stop_docker() {
    $STOP_DOCKER || return 0
    # What the suites left, removed while dockerd still runs: it deletes the veths and the
    # bridges of its networks only then (stopped with them, it leaves them on the host).
    local docker=(/usr/bin/docker -H "unix://$BERTH_TEST_DOCKER_SOCK") ids
    ids=$("${docker[@]}" ps -aq 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z $ids ]] || timeout 120 "${docker[@]}" rm -f -v $ids >/dev/null 2>&1 || true
    timeout 60 "${docker[@]}" network prune -f >/dev/null 2>&1 || true
    scripts/docker-engine.sh stop || true
    # dockerd leaves its default sandbox's namespace mounted under the exec root.
    if mountpoint -q "$BERTH_TEST_DOCKER_EXEC_ROOT/netns/default" 2>/dev/null; then
        umount "$BERTH_TEST_DOCKER_EXEC_ROOT/netns/default" || true
    fi
    rm -rf "$BERTH_TEST_DOCKER_ROOT" "$BERTH_TEST_DOCKER_EXEC_ROOT" "$BERTH_TEST_DOCKER_EXEC_ROOT.daemon.json" \
        "$BERTH_TEST_DOCKER_EXEC_ROOT.lock"
    STOP_DOCKER=false
}

# ------------------------------------------------------------------ 4. the suites
# Prints "SUITE FILE" lines: the test files each suite runs, one pytest session each.
test_files() {
    local suite
    for suite in $SUITES; do
        case $suite in
            docker-py)
                (cd "$SRC/docker-py" && find tests/integration -name '*_test.py' | sort) |
                    while read -r f; do [[ $(basename "$f") =~ $DOCKER_PY_SKIP ]] || echo "$suite $f"; done ;;
            compose-integration)
                (cd "$SRC/compose" && find tests/integration -name '*_test.py' | sort | sed "s/^/$suite /") ;;
            compose-acceptance)
                (cd "$SRC/compose" && find tests/acceptance -name '*_test.py' | sort | sed "s/^/$suite /") ;;
            *) die "unknown suite $suite" ;;
        esac
    done | { if [[ -n ${PEER_FILES:-} ]]; then grep -E "$PEER_FILES" || true; else cat; fi; }
}

# One pytest session of SUITE's TARGET (a file or a test id) against HOST; its log and JUnit
# XML at STEM.log and STEM.xml; the exit status is pytest's.
run_pytest() { # ENGINE HOST SUITE TARGET STEM
    local engine=$1 host=$2 suite=$3 target=$4 stem=$5 run=$WORK/run-$1 dir venv
    case $suite in
        docker-py) dir=$SRC/docker-py venv=$WORK/venv-docker-py ;;
        *) dir=$SRC/compose venv=$WORK/venv-compose ;;
    esac
    # SIGINT on a file's timeout: pytest stops and still writes its JUnit file.
    (cd "$dir" && env -u DOCKER_TLS_VERIFY -u DOCKER_CERT_PATH -u DOCKER_API_VERSION \
        -u DOCKER_CONTEXT -u COMPOSE_FILE -u COMPOSE_PROJECT_NAME -u BERTH_ROOT -u BERTH_RUN_ROOT \
        DOCKER_HOST="$host" HOME="$run/home" DOCKER_CONFIG="$run/home/.docker" \
        PATH="$venv/bin:$PATH" PYTHONDONTWRITEBYTECODE=1 \
        timeout -s INT -k 60 "$FILE_TIMEOUT" "$venv/bin/python" -m pytest -p no:cacheprovider \
        -o junit_family=xunit2 --timeout="$TEST_TIMEOUT" --junitxml="$stem.xml" \
        ${PEER_SELECT:+-k "$PEER_SELECT"} "$target" </dev/null >"$stem.log" 2>&1)
}

# The tests the check would call regressions, each run once more, alone, while berth still
# serves: the suites have timing-dependent tests (compose's test_events_human_readable failed
# once in three full runs of the same code). One that passes then is reported as flaky and
# does not fail the check; one that fails twice is a regression. Writes "ID passed|failed"
# lines to OUT/berth-rerun.txt.
rerun_regressions() { # HOST
    local host=$1 suite id stem n=0
    : >"$OUT/berth-rerun.txt"
    mkdir -p "$OUT/berth-rerun"
    while read -r suite id; do
        n=$((n + 1))
        stem=$OUT/berth-rerun/$n
        if run_pytest berth "$host" "$suite" "$id" "$stem"; then
            echo "$id passed" >>"$OUT/berth-rerun.txt"
        else
            echo "$id failed" >>"$OUT/berth-rerun.txt"
        fi
        log "berth rerun $id: $(tail -n 1 "$stem.log" | tr -d '=')"
    done < <("$PYTHON" "$PEER_PY" regressions "$OUT/berth.json" "$REFERENCE" "$EXPECTED" "$GAPS")
}

run_suites() { # ENGINE HOST
    local engine=$1 host=$2 run=$WORK/run-$1
    rm -rf "$run" "$OUT/$engine"
    mkdir -p "$run/home/.docker" "$OUT/$engine"
    SRC=$run/src
    mkdir -p "$SRC"
    tar -xzf "$WORK/sdist/$DOCKER_PY_SDIST" -C "$SRC" && mv "$SRC/docker-7.0.0" "$SRC/docker-py"
    tar -xzf "$WORK/sdist/$COMPOSE_SDIST" -C "$SRC" && mv "$SRC/docker-compose-1.29.2" "$SRC/compose"
    local started=$SECONDS suite file stem status
    while read -r suite file; do
        stem=$suite--${file//\//+}
        stem=${stem%.py}
        local t0=$SECONDS
        status=0
        run_pytest "$engine" "$host" "$suite" "$file" "$OUT/$engine/$stem" || status=$?
        echo "$status" >"$OUT/$engine/$stem.status"
        log "$engine $suite $file: $(tail -n 1 "$OUT/$engine/$stem.log" | tr -d '=') (exit $status, $((SECONDS - t0))s)"
    done < <(test_files)
    log "$engine: suites took $((SECONDS - started))s"
    PEER_ENGINE_VERSION=$PEER_ENGINE_VERSION "$PYTHON" "$PEER_PY" collect "$engine" "$OUT/$engine" "$OUT/$engine"
}

status=0
for engine in "${engines[@]}"; do
    case $engine in
        berth) start_berth ;;
        docker) start_docker ;;
    esac
    run_suites "$engine" "$HOST"
    if [[ $engine == berth ]] && $check; then
        rerun_regressions "$HOST"
    fi
    case $engine in
        berth) stop_berth ;;
        docker) stop_docker ;;
    esac
    if [[ $engine == docker ]] && $write_reference; then
        "$PYTHON" "$PEER_PY" reference "$OUT/docker.json" "$REFERENCE"
        log "wrote $REFERENCE"
    fi
    if [[ $engine == berth ]] && $check; then
        "$PYTHON" "$PEER_PY" check "$OUT/berth.json" "$REFERENCE" "$EXPECTED" "$GAPS" \
            "$OUT/berth-rerun.txt" || status=1
    fi
done
exit $status
