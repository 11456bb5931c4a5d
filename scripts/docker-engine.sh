#!/usr/bin/env bash
# docker-engine.sh start|stop|status — a private, throw-away Docker engine for conformance
# tests (compare berth with the real thing). It never shares state with a system dockerd and
# leaves the host's networking alone (no iptables, no masquerading, no ip_forward):
#   data root  /var/lib/berth-test-docker      exec root  /run/berth-test-docker
#   socket     unix:///run/berth-test-docker.sock   log   /tmp/berth-test-dockerd.log
#   bridge     bertd0, 10.232.0.1/24, made by `start` and deleted by `stop` (only if `start`
#              made it; recorded in $EXEC_ROOT.bridge)
# Why a bridge of its own: with `--bridge=none` dockerd DELETES the host's `docker0` at
# start-up (moby daemon_unix.go removeDefaultBridgeInterface), which breaks the machine's
# real Docker ("could not find bridge docker0"). With `--bridge=NAME` it uses NAME and never
# looks at docker0. The name may never be docker0 or none (refused).
# `start` is idempotent and prints the DOCKER_HOST value on stdout; `status` exits 0 only
# when the engine answers; `stop` is idempotent too.
# Overrides: BERTH_TEST_DOCKER_ROOT, BERTH_TEST_DOCKER_EXEC_ROOT, BERTH_TEST_DOCKER_SOCK,
# BERTH_TEST_DOCKER_LOG, BERTH_TEST_DOCKER_BRIDGE, BERTH_TEST_DOCKER_BRIDGE_ADDR (CIDR of the
# bridge's address), BERTH_TEST_DOCKER_TIMEOUT (seconds, default 60), DOCKERD, DOCKER, and
# BERTH_TEST_DOCKER_MIRROR (a docker.io mirror, http://127.0.0.1:PORT, written into the
# engine's daemon.json as `registry-mirrors`; scripts/peer-suites.sh starts an engine of its
# own with one — an engine that already runs keeps the settings it was started with).
# A second engine beside the first needs all of the root, exec root, socket and bridge
# overrides (two engines on one bridge would hand out the same addresses).
set -euo pipefail

DATA_ROOT=${BERTH_TEST_DOCKER_ROOT:-/var/lib/berth-test-docker}
EXEC_ROOT=${BERTH_TEST_DOCKER_EXEC_ROOT:-/run/berth-test-docker}
SOCK=${BERTH_TEST_DOCKER_SOCK:-/run/berth-test-docker.sock}
PIDFILE=${EXEC_ROOT}.pid
CONFIG=${EXEC_ROOT}.daemon.json
LOG=${BERTH_TEST_DOCKER_LOG:-/tmp/berth-test-dockerd.log}
TIMEOUT=${BERTH_TEST_DOCKER_TIMEOUT:-60}
HOST=unix://$SOCK
BRIDGE=${BERTH_TEST_DOCKER_BRIDGE:-bertd0}
BRIDGE_ADDR=${BERTH_TEST_DOCKER_BRIDGE_ADDR:-10.232.0.1/24}
BRIDGE_MADE=${EXEC_ROOT}.bridge # holds "$BRIDGE" when `start` created it
DOCKERD=${DOCKERD:-$(command -v dockerd || echo /usr/sbin/dockerd)}
# Prefer the CLI that came with the daemon (Debian's docker.io); any CLI >= 20.10 works.
if [[ -z ${DOCKER:-} ]]; then
    if [[ -x /usr/bin/docker ]]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
fi

log() { echo "docker-engine: $*" >&2; }

pid_alive() {
    local pid
    [[ -s $PIDFILE ]] || return 1
    pid=$(<"$PIDFILE")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

answers() {
    [[ -S $SOCK ]] && timeout 10 "$DOCKER" -H "$HOST" version >/dev/null 2>&1
}

check_bridge_name() {
    case $BRIDGE in
        docker0 | none | "") log "refusing bridge name '$BRIDGE': the engine needs a bridge of its own"; return 1 ;;
    esac
    if ((${#BRIDGE} > 15)); then log "bridge name '$BRIDGE' is longer than 15 characters"; return 1; fi
}

# The bridge's subnet must not be routed anywhere else on this host.
check_subnet() {
    local clash
    clash=$( {
        ip -4 route show root "$BRIDGE_ADDR"
        ip -4 route show match "$BRIDGE_ADDR" | grep -v '^default '
    } | grep -v " dev $BRIDGE\b" || true)
    if [[ -n $clash ]]; then
        log "$BRIDGE_ADDR is already routed on this host, refusing to add $BRIDGE:"
        echo "$clash" >&2
        return 1
    fi
}

make_bridge() {
    check_bridge_name || return 1
    if ip link show "$BRIDGE" >/dev/null 2>&1; then
        [[ -d /sys/class/net/$BRIDGE/bridge ]] || { log "$BRIDGE exists and is not a bridge"; return 1; }
    else
        check_subnet || return 1
        ip link add name "$BRIDGE" type bridge || return 1
        echo "$BRIDGE" >"$BRIDGE_MADE"
        log "created bridge $BRIDGE ($BRIDGE_ADDR)"
    fi
    ip -4 addr show dev "$BRIDGE" | grep -q "inet $BRIDGE_ADDR " ||
        ip addr add "$BRIDGE_ADDR" dev "$BRIDGE" || return 1
    ip link set "$BRIDGE" up || return 1
}

# Deletes the bridge only when `start` made it (never docker0, whatever the record says).
remove_bridge() {
    [[ -s $BRIDGE_MADE ]] || return 0
    local made
    made=$(<"$BRIDGE_MADE")
    if [[ $made == "$BRIDGE" && $made != docker0 ]] && ip link show "$made" >/dev/null 2>&1; then
        ip link delete "$made" type bridge && log "deleted bridge $made"
    fi
    rm -f "$BRIDGE_MADE"
}

start() {
    if answers; then echo "$HOST"; return 0; fi
    [[ $(id -u) -eq 0 ]] || { log "must run as root"; return 1; }
    [[ -x $DOCKERD ]] || { log "dockerd not found (apt-get install docker.io)"; return 1; }
    if ! pid_alive; then
        make_bridge || { remove_bridge; return 1; }
        rm -f "$PIDFILE" "$SOCK"
        mkdir -p "$DATA_ROOT" "$(dirname "$LOG")"
        # Our own daemon.json so /etc/docker/daemon.json (if any) can't change the setup.
        # No default-ulimits: runc would have to raise RLIMIT_NOFILE, which needs
        # CAP_SYS_RESOURCE (missing from this kind of machine's bounding set).
        if [[ -n ${BERTH_TEST_DOCKER_MIRROR:-} ]]; then
            local mirror_pattern='^https?://[^/"[:space:]]+/?$'
            [[ $BERTH_TEST_DOCKER_MIRROR =~ $mirror_pattern ]] ||
                { log "invalid BERTH_TEST_DOCKER_MIRROR '$BERTH_TEST_DOCKER_MIRROR'"; return 1; }
            echo "{\"registry-mirrors\": [\"$BERTH_TEST_DOCKER_MIRROR\"]}" >"$CONFIG"
        else
            echo '{}' >"$CONFIG"
        fi
        log "starting $DOCKERD (log: $LOG)"
        {
            echo "=== $(date -u +%FT%TZ) docker-engine.sh start"
        } >>"$LOG"
        # setsid: detach from our process group so the daemon outlives this script and
        # a Ctrl-C in the caller's terminal.
        setsid "$DOCKERD" \
            --config-file "$CONFIG" \
            --data-root "$DATA_ROOT" \
            --exec-root "$EXEC_ROOT" \
            --pidfile "$PIDFILE" \
            --host "$HOST" \
            --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
            --bridge="$BRIDGE" \
            --exec-opt native.cgroupdriver=cgroupfs \
            --userland-proxy=false \
            </dev/null >>"$LOG" 2>&1 9>&- &
        local bgpid=$!
        # dockerd writes the pidfile itself a moment later; until then remember the child.
        for _ in $(seq 1 50); do [[ -s $PIDFILE ]] && break; kill -0 "$bgpid" 2>/dev/null || break; sleep 0.1; done
        [[ -s $PIDFILE ]] || echo "$bgpid" >"$PIDFILE"
    else
        log "dockerd already running (pid $(<"$PIDFILE")), waiting for it to answer"
    fi
    local deadline=$((SECONDS + TIMEOUT))
    while ((SECONDS < deadline)); do
        if answers; then echo "$HOST"; return 0; fi
        if ! pid_alive; then
            log "dockerd exited during startup; last log lines:"
            tail -n 20 "$LOG" >&2 || true
            rm -f "$PIDFILE"
            remove_bridge
            return 1
        fi
        sleep 0.5
    done
    log "dockerd did not answer within ${TIMEOUT}s; last log lines:"
    tail -n 20 "$LOG" >&2 || true
    return 1
}

stop() {
    local pid
    if ! pid_alive; then
        rm -f "$PIDFILE"
        remove_bridge # left by a dockerd that died
        log "not running"
        return 0
    fi
    pid=$(<"$PIDFILE")
    # Containers left running by tests would keep shims around; stop them first (best effort).
    if answers; then
        local ids=()
        mapfile -t ids < <(timeout 20 "$DOCKER" -H "$HOST" ps -q 2>/dev/null || true)
        ((${#ids[@]} == 0)) || timeout 30 "$DOCKER" -H "$HOST" kill "${ids[@]}" >/dev/null 2>&1 || true
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        log "dockerd (pid $pid) ignored SIGTERM for 30s, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        # The daemon-managed containerd would survive a SIGKILLed dockerd; end it by its pid.
        local cpidfile=$EXEC_ROOT/containerd/containerd.pid cpid
        if [[ -s $cpidfile ]]; then
            cpid=$(<"$cpidfile")
            if [[ $cpid =~ ^[0-9]+$ ]]; then kill -TERM "$cpid" 2>/dev/null || true; fi
        fi
    fi
    rm -f "$PIDFILE" "$SOCK"
    # dockerd has removed its containers' veths by now; the bridge itself is ours.
    remove_bridge
    log "stopped"
}

status() {
    if answers; then
        echo "$HOST"
        "$DOCKER" -H "$HOST" version --format 'server {{.Server.Version}} (pid '"$(cat "$PIDFILE" 2>/dev/null || echo ?)"')' 2>/dev/null || true
        return 0
    fi
    if pid_alive; then log "dockerd pid $(<"$PIDFILE") is alive but does not answer on $HOST"; else log "not running"; fi
    return 1
}

# Serialise start/stop between concurrent callers (parallel test runs on one machine).
lock() {
    exec 9>"${EXEC_ROOT}.lock"
    flock -w $((TIMEOUT + 40)) 9 || { log "timed out waiting for ${EXEC_ROOT}.lock"; exit 1; }
}

case ${1:-} in
    start) lock; start ;;
    stop) lock; stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
