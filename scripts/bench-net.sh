#!/usr/bin/env bash
# scripts/bench-net.sh — network throughput and network setup cost, berth and Docker side by
# side, with iperf3 (TCP, DURATION seconds, -J) in the berth-test/iperf3 fixture image.
#
# Usage: scripts/bench-net.sh [ENGINE...]     ENGINE: docker | berth   (default: docker berth)
#   docker  the private bridge engine of scripts/docker-bridge-engine.sh (Docker's defaults:
#           bridge bdocker0, iptables DNAT, docker-proxy); started here and stopped again
#           unless it was already running
#   berth   target/x86_64-unknown-linux-gnu/release/berth (built here; BERTH=path uses that binary instead), with
#           throw-away BERTH_ROOT/BERTH_RUN_ROOT
# Paths measured per engine (one iperf3 server container, published on 127.0.0.1:PORT):
#   container→container      client container → server container's IP (default network)
#   container→container (user network)   the same on a network made by `network create`
#   container→host           client container → iperf3 on the host, bound to the gateway
#   host→published port      host client → 127.0.0.1:PORT (-p 127.0.0.1:PORT:5201)
#   host→container IP        host client → server container's IP
# plus the setup cost: median of RUNS `run --rm busybox:latest true` with --network none and
# with the default network (hyperfine, 3 warm-up runs).
# A path an engine cannot do yet is reported as n/a (with the reason on stderr); the other
# paths still run.
#
# Traffic goes only to 127.0.0.1 and to the addresses of containers and bridges the engines
# create for this run; any other target address (one reached through a gateway, or not on a
# local bridge) is refused. Everything started here is removed on exit (trap).
#
# Environment: DURATION (iperf3 -t, default 10), RUNS (setup-cost runs, default 20),
# PORT (published host port, default 5201), HOST_PORT (host iperf3 server, default 5202).
# Needs: root, iperf3, python3, hyperfine (installed with apt-get when missing).
# Results: a markdown summary on stdout, raw numbers in target/bench/net.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

DURATION=${DURATION:-10}
RUNS=${RUNS:-20}
PORT=${PORT:-5201}
HOST_PORT=${HOST_PORT:-5202}
IPERF_IMAGE=berth-test/iperf3:latest
TRUE_IMAGE=busybox:latest
ENGINES=("$@")
((${#ENGINES[@]} > 0)) || ENGINES=(docker berth)
for e in "${ENGINES[@]}"; do
    [[ $e == docker || $e == berth ]] || { echo "usage: $0 [docker|berth]..." >&2; exit 2; }
done

log() { echo "bench-net: $*" >&2; }
[[ $(id -u) -eq 0 ]] || { log "must run as root"; exit 1; }
need() { command -v "$1" >/dev/null || apt-get install -y -q "${2:-$1}" >/dev/null; }
need iperf3
need python3
need hyperfine
for p in "$PORT" "$HOST_PORT"; do
    if ss -Htln "sport = :$p" | grep -q .; then log "port $p is in use on this host (set PORT/HOST_PORT)"; exit 1; fi
done

LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
scripts/make-fixtures.sh target/fixtures >/dev/null
WORK=$(mktemp -d /tmp/berth-bench-net.XXXXXX)
RESULTS=$WORK/results.tsv # engine \t path \t bits/s or n/a \t note
: >"$RESULTS"
TAG=bench-net-$$
E=()           # the current engine's CLI, e.g. (docker -H unix://...) or (target/x86_64-unknown-linux-gnu/release/berth)
ENGINE=""
HOST_IPERF_PID=""
STOP_DOCKER=false
BERTH_TMP=()

engine_cleanup() {
    if [[ -n $HOST_IPERF_PID ]]; then
        kill "$HOST_IPERF_PID" 2>/dev/null || true
        wait "$HOST_IPERF_PID" 2>/dev/null || true
        HOST_IPERF_PID=""
    fi
    if ((${#E[@]} > 0)); then
        local names
        names=$("${E[@]}" ps -aq --filter "name=$TAG" 2>/dev/null || true)
        # shellcheck disable=SC2086 # one id per word
        [[ -z $names ]] || "${E[@]}" rm -f $names >/dev/null 2>&1 || true
        for c in "$TAG-srv" "$TAG-usrv" "$TAG-cli"; do "${E[@]}" rm -f "$c" >/dev/null 2>&1 || true; done
        "${E[@]}" network rm "$TAG-net" >/dev/null 2>&1 || true
        if [[ ${ENGINE:-} == berth ]]; then
            # A throw-away berth root: its default bridge and nftables table
            # are host-wide and would outlive it (named berth<hash>, berth_<hash>).
            local bridge
            bridge=$("${E[@]}" network inspect -f '{{index .Options "com.docker.network.bridge.name"}}' bridge 2>/dev/null || true)
            if [[ $bridge == berth?* ]]; then
                ip link delete "$bridge" 2>/dev/null || true
                nft delete table ip "berth_${bridge#berth}" 2>/dev/null || true
            fi
        fi
    fi
    E=()
}
cleanup() {
    engine_cleanup
    if $STOP_DOCKER; then scripts/docker-bridge-engine.sh stop || true; fi
    STOP_DOCKER=false
    if ((${#BERTH_TMP[@]} > 0)); then rm -rf "${BERTH_TMP[@]}"; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

record() { printf '%s\t%s\t%s\t%s\n' "$ENGINE" "$1" "$2" "${3:-}" >>"$RESULTS"; }

# Only 127.0.0.1, an address reached directly over a local bridge (a container the engine
# made), or an address of a local bridge (its gateway).
check_target() {
    local ip=$1 route dev
    [[ $ip == 127.0.0.1 ]] && return 0
    [[ $ip =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || { log "not an IPv4 address: '$ip'"; return 1; }
    route=$(ip -o route get "$ip" 2>/dev/null) || { log "no route to $ip"; return 1; }
    if [[ $route == local* ]]; then # one of the host's addresses: must sit on a bridge
        dev=$(ip -o -4 addr show to "$ip/32" | awk '{ print $2; exit }')
    elif [[ $route != *" via "* ]]; then
        dev=$(awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }' <<<"$route")
    fi
    if [[ -z ${dev:-} || ! -d /sys/class/net/$dev/bridge ]]; then
        log "refusing to send traffic to $ip: not a container or bridge address ($route)"
        return 1
    fi
}

# bits/s received, from iperf3 -J output on stdin; prints nothing and fails on an error.
parse_iperf() {
    python3 -c '
import json, sys
raw = sys.stdin.read()
try:
    j = json.loads(raw[raw.index("{"):])
except ValueError:
    sys.exit("no iperf3 JSON in: " + raw[-300:])
if j.get("error"):
    sys.exit("iperf3: " + j["error"])
print(j["end"]["sum_received"]["bits_per_second"])
'
}

# iperf_path NAME CMD... — run an iperf3 client (with retries while the server starts).
iperf_path() {
    local name=$1 out bps
    shift
    for _ in 1 2 3 4 5; do
        if out=$(timeout $((DURATION + 60)) "$@" 2>&1) && bps=$(parse_iperf <<<"$out" 2>"$WORK/err"); then
            record "$name" "$bps"
            log "$ENGINE  $name: $(python3 -c "print('%.2f' % ($bps / 1e9))") Gbit/s"
            return 0
        fi
        [[ $out == *"Connection refused"* || $out == *"unable to connect"* ]] || break
        sleep 0.5
    done
    local why
    why=$( (cat "$WORK/err" 2>/dev/null; echo "$out") | grep -v '^\s*$' | tail -n 3 | tr '\n' ' ')
    log "$ENGINE  $name: n/a: $why"
    record "$name" n/a "$why"
}

inspect() { "${E[@]}" inspect -f "$2" "$1" 2>/dev/null | tr -d '\r' | head -n 1; }

# -------------------------------------------------------------------- one engine
bench_engine() {
    local ip gw uip
    local -a client=(-t "$DURATION" -J --connect-timeout 5000)
    local f
    for f in iperf3-docker.tar busybox-docker.tar; do
        if ! "${E[@]}" load -q -i "target/fixtures/$f" >/dev/null 2>"$WORK/err"; then
            log "$ENGINE: load $f failed: $(tail -n 3 "$WORK/err" | tr '\n' ' ')"
            record "engine" n/a "load $f failed"
            return 0
        fi
    done

    # Server container on the default network, published on 127.0.0.1:PORT.
    if "${E[@]}" run -d --name "$TAG-srv" -p "127.0.0.1:$PORT:5201" "$IPERF_IMAGE" -s >/dev/null 2>"$WORK/err"; then
        ip=$(inspect "$TAG-srv" '{{.NetworkSettings.IPAddress}}')
        gw=$(inspect "$TAG-srv" '{{.NetworkSettings.Gateway}}')
        log "$ENGINE: server container ${ip:-(no IP)}, gateway ${gw:-(none)}"
    else
        log "$ENGINE: server container did not start: $(tail -n 3 "$WORK/err" | tr '\n' ' ')"
        ip="" gw=""
    fi

    if [[ -n $ip ]] && check_target "$ip"; then
        iperf_path "container→container" "${E[@]}" run --rm --name "$TAG-cli" "$IPERF_IMAGE" -c "$ip" "${client[@]}"
    else
        record "container→container" n/a "no server container IP"
    fi

    if "${E[@]}" network create "$TAG-net" >/dev/null 2>"$WORK/err" &&
        "${E[@]}" run -d --name "$TAG-usrv" --network "$TAG-net" "$IPERF_IMAGE" -s >/dev/null 2>>"$WORK/err" &&
        uip=$(inspect "$TAG-usrv" '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}') &&
        [[ -n $uip ]] && check_target "$uip"; then
        iperf_path "container→container (user network)" \
            "${E[@]}" run --rm --name "$TAG-cli" --network "$TAG-net" "$IPERF_IMAGE" -c "$uip" "${client[@]}"
    else
        record "container→container (user network)" n/a "$(tail -n 2 "$WORK/err" | tr '\n' ' ')"
    fi
    "${E[@]}" rm -f "$TAG-usrv" >/dev/null 2>&1 || true
    "${E[@]}" network rm "$TAG-net" >/dev/null 2>&1 || true

    if [[ -n $gw ]] && check_target "$gw"; then
        iperf3 -s -1 -B "$gw" -p "$HOST_PORT" >"$WORK/host-iperf.log" 2>&1 &
        HOST_IPERF_PID=$!
        sleep 0.3
        iperf_path "container→host" "${E[@]}" run --rm --name "$TAG-cli" "$IPERF_IMAGE" -c "$gw" -p "$HOST_PORT" "${client[@]}"
        kill "$HOST_IPERF_PID" 2>/dev/null || true
        wait "$HOST_IPERF_PID" 2>/dev/null || true
        HOST_IPERF_PID=""
    else
        record "container→host" n/a "no gateway address"
    fi

    if [[ -n $ip ]]; then
        iperf_path "host→published port" iperf3 -c 127.0.0.1 -p "$PORT" "${client[@]}"
    else
        record "host→published port" n/a "no server container"
    fi
    if [[ -n $ip ]] && check_target "$ip"; then
        iperf_path "host→container IP" iperf3 -c "$ip" "${client[@]}"
    else
        record "host→container IP" n/a "no server container IP"
    fi
    "${E[@]}" rm -f "$TAG-srv" >/dev/null 2>&1 || true

    # Setup cost: --network none vs the default network.
    local json=$WORK/setup-$ENGINE.json cli="${E[*]}"
    if hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$json" \
        "$cli run --rm --network none $TRUE_IMAGE true" \
        "$cli run --rm $TRUE_IMAGE true" >&2; then
        python3 - "$json" >>"$RESULTS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
eng = sys.argv[1].rsplit("setup-", 1)[1][:-5]
print("%s\tsetup: run --rm --network none\t%.6f\t" % (eng, r[0]["median"]))
print("%s\tsetup: run --rm (default network)\t%.6f\t" % (eng, r[1]["median"]))
PY
    else
        record "setup: run --rm --network none" n/a "hyperfine failed"
        record "setup: run --rm (default network)" n/a "hyperfine failed"
    fi
}

# -------------------------------------------------------------------- engines
VERSIONS=()
for ENGINE in "${ENGINES[@]}"; do
    case $ENGINE in
        docker)
            docker=docker; [[ -x /usr/bin/docker ]] && docker=/usr/bin/docker
            scripts/docker-bridge-engine.sh status >/dev/null 2>&1 || STOP_DOCKER=true
            if ! host=$(scripts/docker-bridge-engine.sh start); then
                log "docker: the bridge engine did not start (see /tmp/berth-bench-dockerd.log)"
                record "engine" n/a "did not start"
                continue
            fi
            E=("$docker" -H "$host")
            VERSIONS+=("docker $("${E[@]}" version --format '{{.Server.Version}}' || echo '?') (bridge bdocker0, iptables, userland-proxy)")
            ;;
        berth)
            if [[ -z ${BERTH:-} ]] && ! cargo build --release -p berth >&2; then
                record "engine" n/a "cargo build failed"
                continue
            fi
            BERTH_ROOT=$(mktemp -d /tmp/berth-bench-root.XXXXXX)
            BERTH_RUN_ROOT=$(mktemp -d /tmp/berth-bench-run.XXXXXX)
            BERTH_TMP+=("$BERTH_ROOT" "$BERTH_RUN_ROOT")
            export BERTH_ROOT BERTH_RUN_ROOT
            E=("${BERTH:-$ROOT/target/x86_64-unknown-linux-gnu/release/berth}")
            VERSIONS+=("berth $( ("${E[@]}" version 2>/dev/null || true) | awk '$1 == "Version:" { print $2; exit }')")
            ;;
    esac
    log "=== $ENGINE"
    bench_engine
    engine_cleanup
    if [[ $ENGINE == docker ]] && $STOP_DOCKER; then
        scripts/docker-bridge-engine.sh stop || true
        STOP_DOCKER=false
    fi
done

# -------------------------------------------------------------------- report
mkdir -p target/bench
python3 - "$RESULTS" "$DURATION" "$RUNS" "$(nproc)" "$(uname -r)" "$(iperf3 --version | head -n 1)" \
    "$LOAD_AT_START" "${VERSIONS[@]}" <<'PY'
import json, sys
path, duration, runs, ncpu, kernel, iperf, load = sys.argv[1:8]
versions = sys.argv[8:]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
print("# bench-net: %s CPU, kernel %s, %s, TCP %s s, load average at start %s"
      % (ncpu, kernel, iperf, duration, load))
for v in versions:
    print("#   " + v)
print()
print("| path | engine | Gbit/s |")
print("|---|---|---:|")
res = {}
for eng, p, v, note in rows:
    res.setdefault(eng, {})[p] = None if v == "n/a" else float(v)
    if p.startswith("setup") or p == "engine":
        continue
    print("| %s | %s | %s |" % (p, eng, "n/a" if v == "n/a" else "%.2f" % (float(v) / 1e9)))
print()
for eng, r in res.items():
    pub, direct = r.get("host→published port"), r.get("host→container IP")
    if pub and direct:
        print("%s: published/direct = %.2f" % (eng, pub / direct))
    else:
        print("%s: published/direct = n/a" % eng)
print()
print("| setup (median of %s) | engine | --network none ms | default network ms | network cost ms |" % runs)
print("|---|---|---:|---:|---:|")
for eng, r in res.items():
    a, b = r.get("setup: run --rm --network none"), r.get("setup: run --rm (default network)")
    f = lambda x: "n/a" if x is None else "%.1f" % (x * 1000)
    print("| run --rm busybox true | %s | %s | %s | %s |" % (eng, f(a), f(b), f(b - a) if a and b else "n/a"))
json.dump({"cpus": int(ncpu), "kernel": kernel, "loadavg_at_start": load, "iperf3": iperf, "duration_s": int(duration),
           "setup_runs": int(runs), "versions": versions,
           "results": [{"engine": e, "path": p, "value": None if v == "n/a" else float(v),
                        "unit": "s" if p.startswith("setup") else "bit/s", "note": n}
                       for e, p, v, n in rows]},
          open("target/bench/net.json", "w"), indent=1, ensure_ascii=False)
PY
