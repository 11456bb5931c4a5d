#!/usr/bin/env bash
# docker-bridge-engine.sh start|stop|status — a second private Docker engine, this one WITH
# Docker's default networking (bridge, iptables NAT, docker-proxy), for network benchmarks
# (scripts/bench-net.sh). It shares nothing with scripts/docker-engine.sh or a system dockerd:
#   data root  /var/lib/berth-bench-docker     exec root  /run/berth-bench-docker
#   socket     unix:///run/berth-bench-docker.sock    log  /tmp/berth-bench-dockerd.log
#   bridge     bdocker0, 10.231.0.1/24, made here (--bridge=bdocker0; never docker0)
#   user networks (docker network create) from 10.231.128.0/17, /24 each (default-address-pools)
# Docker's defaults otherwise: --iptables=true, --ip-masq, --ip-forward, --userland-proxy=true.
# IPv6 stays off (--ip6tables=false, the 20.10 default), so ip6tables is never touched.
#
# What `start` changes on the host, and `stop` puts back (recorded in $EXEC_ROOT.host-state):
#   - the bridge bdocker0 (deleted by stop);
#   - net.ipv4.ip_forward (Docker sets 1; left at 1 if another engine's bridge is up by then)
#     and net.bridge.bridge-nf-call-ip{,6}tables;
#   - iptables (nft backend) tables ip filter / ip nat: Docker's chains DOCKER,
#     DOCKER-USER, DOCKER-ISOLATION-STAGE-1/2 plus its jump/MASQUERADE/ACCEPT rules in
#     FORWARD, PREROUTING, OUTPUT, POSTROUTING, and the FORWARD policy (Docker sets DROP when
#     it turns ip_forward on). `stop` deletes only the rules that name one of this engine's
#     interfaces or its 10.231.0.0/16 addresses, then the DOCKER* chains and the jumps to them
#     if nothing else is left in those chains (else it leaves them and says so), restores the
#     FORWARD policy, and deletes `table ip filter` / `table ip nat` if they did not exist
#     before `start` and are empty again. No other table or family is touched.
# It never touches the host's docker0 (a real Docker's bridge): the name is never this
# engine's, `stop` never counts docker0 among its interfaces, and `start` refuses to run
# while iptables holds rules naming docker0, because dockerd's start-up flushes the
# DOCKER chains it would share with that Docker (its port mappings would go).
# While it runs, Docker's FORWARD policy DROP applies to every bridge on the host (with
# br_netfilter, bridged packets traverse it too), so another engine's container traffic
# (e.g. berth's network tests) may be dropped: don't run both at once.
# `start` is idempotent and prints the DOCKER_HOST value on stdout; `stop` is idempotent and
# also cleans up after a dockerd that died or was killed. `stop` prints the Docker-related
# iptables lines that remain, if any, on stderr.
# Overrides: BERTH_BENCH_DOCKER_ROOT, BERTH_BENCH_DOCKER_EXEC_ROOT, BERTH_BENCH_DOCKER_SOCK,
# BERTH_BENCH_DOCKER_LOG, BERTH_BENCH_DOCKER_TIMEOUT (seconds, default 60), DOCKERD, DOCKER.
set -euo pipefail

DATA_ROOT=${BERTH_BENCH_DOCKER_ROOT:-/var/lib/berth-bench-docker}
EXEC_ROOT=${BERTH_BENCH_DOCKER_EXEC_ROOT:-/run/berth-bench-docker}
SOCK=${BERTH_BENCH_DOCKER_SOCK:-/run/berth-bench-docker.sock}
PIDFILE=${EXEC_ROOT}.pid
CONFIG=${EXEC_ROOT}.daemon.json
STATE=${EXEC_ROOT}.host-state
LOG=${BERTH_BENCH_DOCKER_LOG:-/tmp/berth-bench-dockerd.log}
TIMEOUT=${BERTH_BENCH_DOCKER_TIMEOUT:-60}
HOST=unix://$SOCK
BRIDGE=bdocker0
BRIDGE_ADDR=10.231.0.1/24
POOL=10.231.128.0/17 # user-defined networks, /24 each
OURS=10.231.0.0/16   # everything this engine may address; must not be routed elsewhere
OURS_RE='10\.231\.'
DOCKERD=${DOCKERD:-$(command -v dockerd || echo /usr/sbin/dockerd)}
if [[ -z ${DOCKER:-} ]]; then
    if [[ -x /usr/bin/docker ]]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
fi
SYSCTLS=(net/ipv4/ip_forward net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables)

log() { echo "docker-bridge-engine: $*" >&2; }

pid_alive() {
    local pid
    [[ -s $PIDFILE ]] || return 1
    pid=$(<"$PIDFILE")
    [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

answers() {
    [[ -S $SOCK ]] && timeout 10 "$DOCKER" -H "$HOST" version >/dev/null 2>&1
}

table_exists() { nft list table ip "$1" >/dev/null 2>&1; }

# Another Docker (the host's, on docker0) keeps its rules in the chains this engine's dockerd
# flushes at start-up and `stop` cleans: refuse instead of touching them.
check_no_host_docker() {
    [[ $BRIDGE != docker0 ]] || { log "refusing to use docker0 as this engine's bridge"; return 1; }
    local theirs
    theirs=$( { iptables -w -S; iptables -w -t nat -S; } 2>/dev/null | grep -E -- '-[io] docker0( |$)' || true)
    if [[ -n $theirs ]]; then
        log "another Docker's iptables rules name docker0; refusing to start (its DOCKER chains would be flushed):"
        echo "$theirs" >&2
        return 1
    fi
}

# Refuse address space that is already routed somewhere else (other than our own bridges).
check_routes() {
    local clash
    clash=$( {
        ip -4 route show root "$OURS"
        ip -4 route show match "$OURS" | grep -v '^default '
    } | grep -v " dev $BRIDGE\b" | grep -Ev ' dev br-[0-9a-f]{12}\b' || true)
    if [[ -n $clash ]]; then
        log "$OURS is already routed on this host, refusing to add $BRIDGE:"
        echo "$clash" >&2
        return 1
    fi
}

record_state() {
    [[ -s $STATE ]] && return 0 # an earlier start's record is the one to restore
    local s
    {
        for s in "${SYSCTLS[@]}"; do
            [[ -e /proc/sys/$s ]] && echo "sysctl $s $(<"/proc/sys/$s")"
        done
        echo "forward_policy $(iptables -S FORWARD 2>/dev/null | awk '$1 == "-P" { print $3 }')"
        for t in filter nat; do
            if table_exists "$t"; then echo "table_existed $t"; fi
        done
        ip link show "$BRIDGE" >/dev/null 2>&1 && echo "bridge_existed $BRIDGE"
        true
    } >"$STATE.tmp"
    mv "$STATE.tmp" "$STATE"
}

make_bridge() {
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link add name "$BRIDGE" type bridge
    fi
    ip -4 addr show dev "$BRIDGE" | grep -q "inet $BRIDGE_ADDR " ||
        ip addr add "$BRIDGE_ADDR" dev "$BRIDGE"
    ip link set "$BRIDGE" up
}

start() {
    if answers; then echo "$HOST"; return 0; fi
    [[ $(id -u) -eq 0 ]] || { log "must run as root"; return 1; }
    [[ -x $DOCKERD ]] || { log "dockerd not found (apt-get install docker.io)"; return 1; }
    command -v iptables >/dev/null || { log "iptables not found (apt-get install iptables)"; return 1; }
    if ! pid_alive; then
        check_no_host_docker
        check_routes
        record_state
        make_bridge
        rm -f "$PIDFILE" "$SOCK"
        mkdir -p "$DATA_ROOT" "$(dirname "$LOG")"
        # Our own daemon.json so /etc/docker/daemon.json can't change the setup; the address
        # pool keeps `docker network create` inside 10.231.0.0/16 too.
        printf '{"default-address-pools": [{"base": "%s", "size": 24}]}\n' "$POOL" >"$CONFIG"
        log "starting $DOCKERD with bridge $BRIDGE ($BRIDGE_ADDR), iptables on (log: $LOG)"
        echo "=== $(date -u +%FT%TZ) docker-bridge-engine.sh start" >>"$LOG"
        setsid "$DOCKERD" \
            --config-file "$CONFIG" \
            --data-root "$DATA_ROOT" \
            --exec-root "$EXEC_ROOT" \
            --pidfile "$PIDFILE" \
            --host "$HOST" \
            --bridge="$BRIDGE" \
            --iptables=true --ip-masq=true --ip-forward=true --ip6tables=false \
            --userland-proxy=true \
            --exec-opt native.cgroupdriver=cgroupfs \
            </dev/null >>"$LOG" 2>&1 9>&- &
        local bgpid=$!
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
            cleanup_host
            return 1
        fi
        sleep 0.5
    done
    log "dockerd did not answer within ${TIMEOUT}s; last log lines:"
    tail -n 20 "$LOG" >&2 || true
    return 1
}

# Interfaces of this engine: bdocker0 and any interface carrying a 10.231.x address (the
# br-* bridges of user networks that a dockerd which died did not remove). Only bdocker0 and
# br-<12 hex> ones are deleted; any of them names the iptables rules to delete. docker0 is
# never one of them, whatever address it has.
our_ifaces() {
    {
        ip link show "$BRIDGE" >/dev/null 2>&1 && echo "$BRIDGE"
        ip -o -4 addr show | awk -v re="^$OURS_RE" '$4 ~ re { print $2 }'
    } | grep -vx docker0 | sort -u
}

# iptables -S prints rules in a form that can be fed back with -A replaced by -D.
delete_rule() {
    local table=$1 rule=$2
    local -a args
    read -ra args <<<"${rule/#-A /-D }"
    iptables -w -t "$table" "${args[@]}" 2>/dev/null || log "could not delete ($table) $rule"
}

cleanup_iptables() {
    local ifaces_re=$1 t rule chain foreign chains
    for t in filter nat; do
        table_exists "$t" || continue
        # 1. every rule, in any chain, that names one of our interfaces or addresses
        while IFS= read -r rule; do
            [[ -n $rule ]] && delete_rule "$t" "$rule"
        done < <(iptables -w -t "$t" -S | grep '^-A ' | grep -E -- "$ifaces_re|$OURS_RE" || true)
        # 2. Docker's chains, if what is left in them is only Docker's default RETURN
        mapfile -t chains < <(iptables -w -t "$t" -S | awk '$1 == "-N" && $2 ~ /^DOCKER/ { print $2 }')
        ((${#chains[@]} > 0)) || continue
        foreign=$(for chain in "${chains[@]}"; do
            iptables -w -t "$t" -S "$chain" | grep '^-A ' | grep -vx -- "-A $chain -j RETURN" || true
        done)
        if [[ -n $foreign ]]; then
            log "leaving Docker chains in table $t: they hold rules of another engine:"
            echo "$foreign" >&2
            continue
        fi
        while IFS= read -r rule; do
            [[ -n $rule ]] && delete_rule "$t" "$rule"
        done < <(iptables -w -t "$t" -S | grep '^-A ' | grep -E -- '-j DOCKER(-[A-Z0-9-]+)?$' |
            grep -Ev '^-A DOCKER' || true)
        for chain in "${chains[@]}"; do iptables -w -t "$t" -F "$chain"; done
        for chain in "${chains[@]}"; do iptables -w -t "$t" -X "$chain"; done
    done
}

state_get() { [[ -s $STATE ]] && awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$STATE"; }

cleanup_host() {
    [[ $(id -u) -eq 0 ]] || return 0
    local ifaces ifaces_re s name value policy t
    mapfile -t ifaces < <(our_ifaces)
    ifaces_re=$(IFS='|'; echo "${ifaces[*]:-$BRIDGE}")
    ifaces_re=" -[io] ($ifaces_re)( |$)"
    command -v iptables >/dev/null && cleanup_iptables "$ifaces_re"
    # FORWARD policy: back to what it was (ACCEPT if unknown).
    if table_exists filter; then
        policy=$(state_get forward_policy || true)
        iptables -w -P FORWARD "${policy:-ACCEPT}"
    fi
    # Tables that Docker's iptables calls created and that are empty again.
    for t in filter nat; do
        table_exists "$t" || continue
        state_get table_existed | grep -qx "$t" && continue
        [[ -s $STATE ]] || continue # without a record, don't guess
        if ! iptables -w -t "$t" -S | grep -v '^-P .* ACCEPT$' | grep -q .; then
            nft delete table ip "$t"
        fi
    done
    for i in "${ifaces[@]}"; do
        if [[ $i == "$BRIDGE" || $i =~ ^br-[0-9a-f]{12}$ ]]; then ip link delete "$i" 2>/dev/null || true; fi
    done
    # Bridges of other engines (e.g. berth's) that came up meanwhile may need forwarding.
    local others
    others=$(for b in /sys/class/net/*/bridge; do
        [[ -d $b ]] || continue
        b=${b%/bridge}; b=${b##*/}
        printf '%s\n' "${ifaces[@]}" | grep -qx "$b" || echo "$b"
    done | tr '\n' ' ')
    while read -r s value; do
        [[ -n $s && -e /proc/sys/$s ]] || continue
        name=${s//\//.}
        [[ $(<"/proc/sys/$s") == "$value" ]] && continue
        if [[ $s == net/ipv4/ip_forward && -n $others ]]; then
            log "leaving $name=$(<"/proc/sys/$s") (was $value): other bridges are up: $others"
            continue
        fi
        echo "$value" >"/proc/sys/$s"
        log "restored $name=$value"
    done < <(state_get sysctl || true)
    rm -f "$STATE"
    local left
    left=$( { iptables -w -S; iptables -w -t nat -S; } 2>/dev/null | grep -Ei -- "docker|$BRIDGE|$OURS_RE" || true)
    if [[ -n $left ]]; then
        log "iptables lines that remain:"
        echo "$left" >&2
    fi
}

stop() {
    local pid
    if pid_alive; then
        pid=$(<"$PIDFILE")
        if answers; then
            # Remove containers and user networks through Docker so it deletes their rules.
            local ids=()
            mapfile -t ids < <(timeout 20 "$DOCKER" -H "$HOST" ps -aq 2>/dev/null || true)
            ((${#ids[@]} == 0)) || timeout 60 "$DOCKER" -H "$HOST" rm -f "${ids[@]}" >/dev/null 2>&1 || true
            timeout 30 "$DOCKER" -H "$HOST" network prune -f >/dev/null 2>&1 || true
        fi
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
            log "dockerd (pid $pid) ignored SIGTERM for 30s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            local cpidfile=$EXEC_ROOT/containerd/containerd.pid cpid
            if [[ -s $cpidfile ]]; then
                cpid=$(<"$cpidfile")
                if [[ $cpid =~ ^[0-9]+$ ]]; then kill -TERM "$cpid" 2>/dev/null || true; fi
            fi
        fi
        log "stopped dockerd"
    else
        log "dockerd not running"
    fi
    rm -f "$PIDFILE" "$SOCK"
    cleanup_host
    log "host networking restored"
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

lock() {
    exec 9>"${EXEC_ROOT}.lock"
    flock -w $((TIMEOUT + 100)) 9 || { log "timed out waiting for ${EXEC_ROOT}.lock"; exit 1; }
}

case ${1:-} in
    start) lock; start ;;
    stop) lock; stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
