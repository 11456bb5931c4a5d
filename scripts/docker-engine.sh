#!/usr/bin/env bash
# docker-engine.sh start|stop|status — a private, throw-away Docker engine for conformance
# tests (compare berth with the real thing). It never touches host networking (no bridge,
# no iptables, no ip_forward) and never shares state with a system dockerd:
#   data root  /var/lib/berth-test-docker      exec root  /run/berth-test-docker
#   socket     unix:///run/berth-test-docker.sock   log   /tmp/berth-test-dockerd.log
# `start` is idempotent and prints the DOCKER_HOST value on stdout; `status` exits 0 only
# when the engine answers; `stop` is idempotent too.
# Overrides: BERTH_TEST_DOCKER_ROOT, BERTH_TEST_DOCKER_EXEC_ROOT, BERTH_TEST_DOCKER_SOCK,
# BERTH_TEST_DOCKER_LOG, BERTH_TEST_DOCKER_TIMEOUT (seconds, default 60), DOCKERD, DOCKER.
set -euo pipefail

DATA_ROOT=${BERTH_TEST_DOCKER_ROOT:-/var/lib/berth-test-docker}
EXEC_ROOT=${BERTH_TEST_DOCKER_EXEC_ROOT:-/run/berth-test-docker}
SOCK=${BERTH_TEST_DOCKER_SOCK:-/run/berth-test-docker.sock}
PIDFILE=${EXEC_ROOT}.pid
CONFIG=${EXEC_ROOT}.daemon.json
LOG=${BERTH_TEST_DOCKER_LOG:-/tmp/berth-test-dockerd.log}
TIMEOUT=${BERTH_TEST_DOCKER_TIMEOUT:-60}
HOST=unix://$SOCK
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

start() {
    if answers; then echo "$HOST"; return 0; fi
    [[ $(id -u) -eq 0 ]] || { log "must run as root"; return 1; }
    [[ -x $DOCKERD ]] || { log "dockerd not found (apt-get install docker.io)"; return 1; }
    if ! pid_alive; then
        rm -f "$PIDFILE" "$SOCK"
        mkdir -p "$DATA_ROOT" "$(dirname "$LOG")"
        # Our own daemon.json so /etc/docker/daemon.json (if any) can't change the setup.
        # No default-ulimits: runc would have to raise RLIMIT_NOFILE, which needs
        # CAP_SYS_RESOURCE (missing from this kind of machine's bounding set).
        echo '{}' >"$CONFIG"
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
            --bridge=none \
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
