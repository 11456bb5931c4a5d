#!/usr/bin/env bash
# scripts/bench-pull.sh — cold pull of a big multi-layer image from a local registry, berth
# and Docker side by side, and berth at several download concurrencies.
#
# Usage: scripts/bench-pull.sh [ENGINE...]     ENGINE: docker | berth   (default: berth docker)
#   berth   target/x86_64-unknown-linux-gnu/release/berth (built here; BERTH=path uses that binary instead). Every
#           timed pull gets a fresh, empty throw-away BERTH_ROOT/BERTH_RUN_ROOT, with
#           BERTH_PULL_CONCURRENCY=C for each C in CONCURRENCY.
#   docker  the private conformance engine of scripts/docker-engine.sh (its own data root and
#           socket, dockerd's default max-concurrent-downloads, 3); started here and stopped
#           again unless it was already running. Before each timed pull the image is removed
#           (`rmi -f` by tag and by id) and checked gone; no other image shares its layers, so
#           nothing of it is left and every pull downloads and extracts every layer.
# What is measured: the wall time of `pull -q 127.0.0.1:PORT/bench/big:1` (download, verify,
# decompress, extract, register), `sync` before each pull; the median of REPEAT pulls per
# engine and concurrency. The rounds are interleaved (each round pulls once with every berth
# concurrency, then with Docker) so a change in the machine's load hits all rows alike.
# MB/s = compressed image size (manifest's layer sizes + config, 10^6 bytes) / median time.
#
# The image (10 layers, >= 100 MB gzip-compressed) is made here with python3, no Docker:
# layer 1 is the busybox rootfs of make-fixtures.sh plus a marker file (so it shares no layer
# with the fixtures' busybox:latest), layers 2..N hold seeded pseudo-random data (half raw
# random bytes, half hex text: it compresses to about 0.8, like a mix of binaries and text)
# in a few big files and 64 small ones each. Deterministic (fixed seed, mtimes, gzip header);
# cached in target/bench/pull-image-*.tar, so re-runs skip this step (rm it to rebuild).
# The registry is Debian's docker-registry (apt-get install docker-registry) on 127.0.0.1 at a
# free port (never 5000, never the system service) with a temporary config.yml and storage;
# the image is pushed into it once with berth (load, tag, push) from a throw-away root.
#
# Safety: all traffic goes to 127.0.0.1 only. Everything started or made here is removed on
# exit (trap): the registry process and its storage, every throw-away berth root, the image
# in the Docker engine, and the engine itself if this script started it. A pull runs no
# container, so no berth bridge or nftables table should appear; should one appear anyway,
# only the ones named after this script's own roots are deleted, and the report says
# whether any berth* link is left (`ip -br link`).
#
# Environment: REPEAT (pulls per engine and concurrency, default 3), CONCURRENCY (berth's
# values, default "1 2 4 8 16"), LAYERS (default 10), IMAGE_MB (compressed size aimed at,
# default 120; the default gives >= 100 MB), BERTH (a berth binary; skips the build).
# Needs: root, python3, docker-registry (installed with apt-get when missing), docker.io for
# the docker engine.
# Results: a markdown summary on stdout, raw numbers in target/bench/pull.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
export LC_ALL=C # EPOCHREALTIME with a '.' decimal point

REPEAT=${REPEAT:-3}
CONCURRENCY=${CONCURRENCY:-1 2 4 8 16}
LAYERS=${LAYERS:-10}
IMAGE_MB=${IMAGE_MB:-120}
ENGINES=("$@")
((${#ENGINES[@]} > 0)) || ENGINES=(berth docker)
for e in "${ENGINES[@]}"; do
    [[ $e == docker || $e == berth ]] || { echo "usage: $0 [docker|berth]..." >&2; exit 2; }
done
check_int() { # check_int NAME VALUE MIN MAX
    if ! [[ $2 =~ ^[0-9]+$ ]] || ((10#$2 < $3 || 10#$2 > $4)); then
        echo "bench-pull: $1 must be an integer from $3 to $4, not '$2'" >&2
        exit 2
    fi
}
read -r -a CONCURRENCIES <<<"$CONCURRENCY"
((${#CONCURRENCIES[@]} > 0)) || { echo "bench-pull: CONCURRENCY is empty" >&2; exit 2; }
for c in "${CONCURRENCIES[@]}"; do check_int CONCURRENCY "$c" 1 32; done
check_int REPEAT "$REPEAT" 1 1000
check_int LAYERS "$LAYERS" 2 100
check_int IMAGE_MB "$IMAGE_MB" 1 100000

log() { echo "bench-pull: $*" >&2; }
[[ $(id -u) -eq 0 ]] || { log "must run as root"; exit 1; }
need() { command -v "$1" >/dev/null || apt-get install -y -q "${2:-$1}" >/dev/null; }
need python3
need docker-registry

DATE_AT_START=$(date -u +%FT%TZ)
berth_links() { ip -br link | awk '$1 ~ /^berth/ { sub(/@.*/, "", $1); print $1 }' | sort; }
LINKS_AT_START=$(berth_links)
WORK=$(mktemp -d /tmp/berth-bench-pull.XXXXXX)
RESULTS=$WORK/results.tsv # engine \t concurrency \t round \t seconds or n/a \t note
: >"$RESULTS"
REGISTRY_PID=""
STOP_DOCKER=false
DOCKER_CLI=()
BERTH_TMP=() # throw-away berth roots (BERTH_ROOT and BERTH_RUN_ROOT directories)
REF=""
IMAGE_ID=""

# The default bridge and nftables table a berth root would own (berth-net's Instance::for_root:
# FNV-1a of the root's path).
root_objects() {
    python3 -c '
import sys
h = 0x811C9DC5
for b in sys.argv[1].encode():
    h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
print("berth%08x berth_%08x" % (h, h))' "$1"
}
remove_berth_root() {
    local dir bridge table
    for dir in "$@"; do
        [[ -d $dir ]] || continue
        read -r bridge table < <(root_objects "$dir")
        if [[ -e /sys/class/net/$bridge ]]; then
            log "removing bridge $bridge of $dir"
            ip link delete "$bridge" 2>/dev/null || true
        fi
        nft delete table ip "$table" 2>/dev/null || true
        rm -rf "$dir"
    done
}
cleanup() {
    if [[ -n $REGISTRY_PID ]]; then
        kill "$REGISTRY_PID" 2>/dev/null || true
        wait "$REGISTRY_PID" 2>/dev/null || true
        REGISTRY_PID=""
    fi
    if ((${#DOCKER_CLI[@]} > 0)); then docker_gone || true; fi
    if $STOP_DOCKER; then scripts/docker-engine.sh stop || true; fi
    STOP_DOCKER=false
    if ((${#BERTH_TMP[@]} > 0)); then remove_berth_root "${BERTH_TMP[@]}"; fi
    BERTH_TMP=()
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
last_lines() { grep -v '^\s*$' "$1" | tail -n "${2:-3}" | tr '\n' ' '; }

# -------------------------------------------------------------------- 1. the image
IMAGE=target/bench/pull-image-v1-${LAYERS}x${IMAGE_MB}mb.tar
IMAGE_INFO=${IMAGE%.tar}.json
mkdir -p target/bench
if [[ ! -s $IMAGE || ! -s $IMAGE_INFO ]]; then
    log "building $IMAGE ($LAYERS layers, ~$IMAGE_MB MB compressed)"
    [[ -s target/fixtures/rootfs.tar ]] || scripts/make-fixtures.sh target/fixtures >/dev/null
    python3 - "$IMAGE" "$IMAGE_INFO" target/fixtures/rootfs.tar "$LAYERS" "$IMAGE_MB" <<'PY'
import gzip, hashlib, io, json, multiprocessing, os, random, sys, tarfile

OUT, INFO, ROOTFS, LAYERS, IMAGE_MB = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
EPOCH = 1704067200  # 2024-01-01, as make-fixtures.sh
CREATED = "2024-01-01T00:00:00Z"
TAG = "berth-bench/big:1"
BLOCK = 64 << 10
RATIO = 0.81  # gzip -6 of half random bytes, half hex text, in tar (measured)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def gz(b):
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as g:
        g.write(b)
    return out.getvalue()


def info(name, size, mode=0o644, kind=tarfile.REGTYPE):
    ti = tarfile.TarInfo(name)
    ti.type, ti.size, ti.mode, ti.mtime = kind, size, mode, EPOCH
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def data(rng, size):
    """size bytes: 64 KiB of random bytes, then 64 KiB of hex text, and so on."""
    parts, left, raw = [], size, True
    while left > 0:
        n = min(BLOCK, left)
        parts.append(rng.randbytes(n) if raw else rng.randbytes((n + 1) // 2).hex().encode()[:n])
        left -= n
        raw = not raw
    return b"".join(parts)


def base_layer():
    buf = io.BytesIO()
    with tarfile.open(ROOTFS) as src, tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for m in src.getmembers():
            tf.addfile(m, src.extractfile(m) if m.isfile() else None)
        marker = b"berth bench-pull image: %d layers, ~%d MB\n" % (LAYERS, IMAGE_MB)
        tf.addfile(info("etc/berth-bench-pull", len(marker)), io.BytesIO(marker))
    return buf.getvalue()


def data_layer(args):
    index, size = args
    rng = random.Random("berth-bench-pull/%d" % index)
    top = "data/layer%02d" % index
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for d in ("data", top, top + "/small"):
            tf.addfile(info(d, 0, 0o755, tarfile.DIRTYPE))
        small = [rng.randrange(1 << 10, 16 << 10) for _ in range(64)]
        big, left, i = [], size - sum(small), 0
        while left > 0:  # files of at most 8 MiB
            n = min(left, 8 << 20)
            big.append(n)
            left -= n
        for i, n in enumerate(big):
            tf.addfile(info("%s/blob%02d.bin" % (top, i), n), io.BytesIO(data(rng, n)))
        for i, n in enumerate(small):
            tf.addfile(info("%s/small/f%03d.txt" % (top, i), n), io.BytesIO(data(rng, n)))
    plain = buf.getvalue()
    return sha(plain), len(plain), gz(plain)


base = base_layer()
layers = [(sha(base), len(base), gz(base))]
target = IMAGE_MB * 10**6 - len(layers[0][2])
weights = [LAYERS - i for i in range(LAYERS - 1)]  # 10, 9, ..., 2: big layers first, as usual
sizes = [max(64 << 10, int(target * w / sum(weights) / RATIO)) for w in weights]
with multiprocessing.Pool(min(len(sizes), os.cpu_count() or 1)) as pool:
    layers += pool.map(data_layer, list(zip(range(2, LAYERS + 1), sizes)))

history = [{"created": CREATED, "created_by": "/bin/sh -c #(nop) ADD file:busybox-static in / ",
            "comment": "berth bench-pull.sh: busybox rootfs + marker"}]
history += [{"created": CREATED, "created_by": "/bin/sh -c #(nop) ADD dir:random in /data/layer%02d " % i,
             "comment": "berth bench-pull.sh: seeded pseudo-random data"} for i in range(2, LAYERS + 1)]
history.append({"created": CREATED, "created_by": '/bin/sh -c #(nop)  CMD ["sh"]', "empty_layer": True})
arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
cfg = json.dumps({
    "architecture": arch, "os": "linux", "created": CREATED,
    "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": ["sh"]},
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d, _, _ in layers]},
    "history": history,
}, sort_keys=True, separators=(",", ":")).encode()
cid = sha(cfg)
names = [sha(c) + ".tar.gz" for _, _, c in layers]
manifest = json.dumps([{"Config": cid + ".json", "RepoTags": [TAG], "Layers": names}],
                      sort_keys=True, separators=(",", ":")).encode() + b"\n"

tmp = OUT + ".tmp%d" % os.getpid()
with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tf:
    files = sorted([(cid + ".json", cfg), ("manifest.json", manifest)] + list(zip(names, (c for _, _, c in layers))))
    for name, b in files:
        tf.addfile(info(name, len(b)), io.BytesIO(b))
os.replace(tmp, OUT)
meta = {
    "archive": OUT, "tag": TAG, "image_id": "sha256:" + cid, "layers": len(layers),
    "config_bytes": len(cfg),
    "compressed_bytes": sum(len(c) for _, _, c in layers) + len(cfg),
    "uncompressed_bytes": sum(n for _, n, _ in layers),
    "layer_compressed_bytes": [len(c) for _, _, c in layers],
    "layer_uncompressed_bytes": [n for _, n, _ in layers],
}
with open(INFO + ".tmp", "w") as f:
    json.dump(meta, f, indent=1)
os.replace(INFO + ".tmp", INFO)
print("bench-pull: %s: %d layers, %.1f MB compressed, %.1f MB uncompressed, %s" % (
    OUT, meta["layers"], meta["compressed_bytes"] / 1e6, meta["uncompressed_bytes"] / 1e6, meta["image_id"]),
    file=sys.stderr)
PY
fi
IMAGE_ID=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["image_id"])' "$IMAGE_INFO")
IMAGE_TAG=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tag"])' "$IMAGE_INFO")

if [[ -z ${BERTH:-} ]]; then
    cargo build --release -p berth >&2
    BERTH=$ROOT/target/x86_64-unknown-linux-gnu/release/berth
fi
[[ -x $BERTH ]] || { log "no berth binary at $BERTH"; exit 1; }
BERTH_VERSION=$( ("$BERTH" version 2>/dev/null || true) | awk '$1 == "Version:" { print $2; exit }')
BERTH_VERSION+=" ($(git describe --always --dirty 2>/dev/null || echo '?'))"

# -------------------------------------------------------------------- 2. the registry
REGISTRY_DIR=$WORK/registry
mkdir -p "$REGISTRY_DIR/data"
registry_up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=""
for _ in 1 2 3 4 5; do # a port can be taken between choosing and binding it
    p=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    [[ $p != 5000 ]] || continue
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
[[ -n $PORT ]] || { log "docker-registry did not start: $(last_lines "$REGISTRY_DIR/registry.log" 5)"; exit 1; }
REF=127.0.0.1:$PORT/bench/big:1
log "registry: docker-registry $(docker-registry --version 2>/dev/null | awk '{ print $NF }') on 127.0.0.1:$PORT (pid $REGISTRY_PID)"

# -------------------------------------------------------------------- 3. push once with berth
# Isolated from the host's berth/docker configuration (credentials, mirrors, concurrency).
export BERTH_CONFIG=$WORK/berth-config.json DOCKER_CONFIG=$WORK/docker-config
mkdir -p "$DOCKER_CONFIG"

new_berth_root() { # sets BERTH_ROOT and BERTH_RUN_ROOT to fresh directories
    BERTH_ROOT=$(mktemp -d /tmp/berth-bench-root.XXXXXX)
    BERTH_RUN_ROOT=$(mktemp -d /tmp/berth-bench-run.XXXXXX)
    BERTH_TMP+=("$BERTH_ROOT" "$BERTH_RUN_ROOT")
    export BERTH_ROOT BERTH_RUN_ROOT
}
drop_berth_root() {
    remove_berth_root "$BERTH_ROOT" "$BERTH_RUN_ROOT"
    local keep=() d
    for d in "${BERTH_TMP[@]}"; do [[ $d == "$BERTH_ROOT" || $d == "$BERTH_RUN_ROOT" ]] || keep+=("$d"); done
    BERTH_TMP=("${keep[@]}")
}

new_berth_root
log "pushing $IMAGE_TAG to $REF with berth"
if ! { "$BERTH" load -q -i "$IMAGE" && "$BERTH" tag "$IMAGE_TAG" "$REF" && "$BERTH" push "$REF"; } >"$WORK/push.log" 2>&1; then
    log "berth load/tag/push failed: $(last_lines "$WORK/push.log" 5)"
    exit 1
fi
PUSHED_ID=$("$BERTH" image inspect -f '{{.Id}}' "$REF" 2>/dev/null || true)
[[ $PUSHED_ID == "$IMAGE_ID" ]] || log "warning: berth loaded $PUSHED_ID, the archive's config is $IMAGE_ID"
drop_berth_root

# -------------------------------------------------------------------- 4./5. cold pulls
DOCKER_VERSION=""
for e in "${ENGINES[@]}"; do
    [[ $e == docker ]] || continue
    docker=docker; [[ -x /usr/bin/docker ]] && docker=/usr/bin/docker
    scripts/docker-engine.sh status >/dev/null 2>&1 || STOP_DOCKER=true
    if host=$(scripts/docker-engine.sh start); then
        DOCKER_CLI=("$docker" -H "$host")
        DOCKER_VERSION=$("${DOCKER_CLI[@]}" info --format '{{.ServerVersion}} ({{.Driver}}, max-concurrent-downloads 3)' 2>/dev/null || echo '?')
    else
        log "docker: the private engine did not start (see /tmp/berth-test-dockerd.log)"
        record docker 3 0 n/a "engine did not start"
    fi
done

berth_pull() { # berth_pull C ROUND
    local c=$1 round=$2 t0 s id
    new_berth_root
    sync
    t0=$EPOCHREALTIME
    if BERTH_PULL_CONCURRENCY=$c "$BERTH" pull -q "$REF" >"$WORK/pull.log" 2>&1; then
        s=$(seconds_since "$t0")
        id=$("$BERTH" image inspect -f '{{.Id}}' "$REF" 2>/dev/null || true)
        if [[ $id == "$IMAGE_ID" ]]; then
            record berth "$c" "$round" "$s" ""
            log "berth  C=$c  round $round: $s s"
        else
            record berth "$c" "$round" n/a "pulled image id '$id' is not $IMAGE_ID"
            log "berth  C=$c  round $round: wrong image id '$id'"
        fi
    else
        record berth "$c" "$round" n/a "$(last_lines "$WORK/pull.log")"
        log "berth  C=$c  round $round: pull failed: $(last_lines "$WORK/pull.log")"
    fi
    drop_berth_root
}

docker_gone() { # removes the image (every tag of its id): no layer of it is left to reuse
    "${DOCKER_CLI[@]}" rmi -f "$REF" >/dev/null 2>&1 || true
    "${DOCKER_CLI[@]}" rmi -f "$IMAGE_ID" >/dev/null 2>&1 || true
    ! "${DOCKER_CLI[@]}" image inspect "$IMAGE_ID" >/dev/null 2>&1
}
docker_pull() { # docker_pull ROUND
    local round=$1 t0 s id
    if ! docker_gone; then
        record docker 3 "$round" n/a "could not remove the image before the pull"
        return 0
    fi
    sync
    t0=$EPOCHREALTIME
    if "${DOCKER_CLI[@]}" pull -q "$REF" >"$WORK/pull.log" 2>&1; then
        s=$(seconds_since "$t0")
        id=$("${DOCKER_CLI[@]}" image inspect -f '{{.Id}}' "$REF" 2>/dev/null || true)
        if [[ $id == "$IMAGE_ID" ]]; then
            record docker 3 "$round" "$s" ""
            log "docker (3)  round $round: $s s"
        else
            record docker 3 "$round" n/a "pulled image id '$id' is not $IMAGE_ID"
            log "docker  round $round: wrong image id '$id'"
        fi
    else
        record docker 3 "$round" n/a "$(last_lines "$WORK/pull.log")"
        log "docker  round $round: pull failed: $(last_lines "$WORK/pull.log")"
    fi
    docker_gone || true
}

# After the build and the push: the load of the machine the pulls see.
LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$REPEAT"); do
    for e in "${ENGINES[@]}"; do
        case $e in
            berth) for c in "${CONCURRENCIES[@]}"; do berth_pull "$c" "$round"; done ;;
            docker) ((${#DOCKER_CLI[@]} == 0)) || docker_pull "$round" ;;
        esac
    done
done

if ((${#DOCKER_CLI[@]} > 0)) && $STOP_DOCKER; then
    docker_gone || true
    scripts/docker-engine.sh stop || true
    STOP_DOCKER=false
    DOCKER_CLI=()
fi
LEFT_LINKS=$(comm -13 <(echo "$LINKS_AT_START") <(berth_links) | tr '\n' ' ')
[[ -z $LEFT_LINKS ]] || log "warning: berth links left behind: $LEFT_LINKS"

# -------------------------------------------------------------------- 6. report
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
FS=$(df -PT /tmp | awk 'NR == 2 { print $2 }')
python3 - "$RESULTS" "$IMAGE_INFO" "$REF" "$REPEAT" "$(nproc)" "$(uname -r)" "$LOAD_AT_START" "$DATE_AT_START" \
    "$CPU" "$MEM" "$FS" "berth ${BERTH_VERSION:-?}" "docker ${DOCKER_VERSION:-not run}" \
    "docker-registry $(docker-registry --version 2>/dev/null | awk '{ print $NF }')" "${LEFT_LINKS:-none}" <<'PY'
import json, statistics, sys
(path, info_path, ref, repeat, ncpu, kernel, load, date, cpu, mem, fs,
 berth, docker, registry, left) = sys.argv[1:16]
info = json.load(open(info_path))
size = info["compressed_bytes"]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
print("# bench-pull: cold pull of %s (%d layers, %.1f MB compressed, %.1f MB uncompressed)"
      % (ref, info["layers"], size / 1e6, info["uncompressed_bytes"] / 1e6))
print("# %s, %s CPU (%s), %s RAM, kernel %s, %s, load average before the first pull %s"
      % (date, ncpu, cpu, mem, kernel, fs, load))
print("#   %s; %s; %s; median of %s pulls; berth bridges left: %s" % (berth, docker, registry, repeat, left))
print()
print("| engine | concurrency | median s | MB/s | min s | max s |")
print("|---|---:|---:|---:|---:|---:|")
groups, notes = {}, {}
for eng, c, rnd, v, note in rows:
    key = (eng, int(c))
    groups.setdefault(key, [])
    if v == "n/a":
        notes.setdefault(key, note)
    else:
        groups[key].append(float(v))
summary = []
for (eng, c), vals in sorted(groups.items(), key=lambda kv: (kv[0][0] != "berth", kv[0][1])):
    label = "3 (dockerd default)" if eng == "docker" else str(c)
    if vals:
        med = statistics.median(vals)
        print("| %s | %s | %.2f | %.1f | %.2f | %.2f |" % (eng, label, med, size / 1e6 / med, min(vals), max(vals)))
    else:
        med = None
        print("| %s | %s | n/a | n/a | | |" % (eng, label))
    summary.append({"engine": eng, "concurrency": c, "median_s": med,
                    "mb_per_s": size / 1e6 / med if med else None, "runs_s": vals,
                    "failures": len([r for r in rows if (r[0], int(r[1])) == (eng, c) and r[3] == "n/a"]),
                    "note": notes.get((eng, c), "")})
if notes:
    print()
for s in summary:
    if s["failures"]:
        print("%s, concurrency %d: %d of %d pulls failed: %s" % (s["engine"], s["concurrency"], s["failures"],
                                                             s["failures"] + len(s["runs_s"]), s["note"]))
json.dump({"date": date, "cpus": int(ncpu), "cpu": cpu, "memory": mem, "kernel": kernel, "filesystem": fs,
           "loadavg_at_start": load, "reference": ref, "repeat": int(repeat),
           "versions": [berth, docker, registry], "image": info, "berth_links_left": left,
           "results": summary,
           "runs": [{"engine": e, "concurrency": int(c), "round": int(r), "seconds": None if v == "n/a" else float(v),
                     "note": n} for e, c, r, v, n in rows]},
          open("target/bench/pull.json", "w"), indent=1, ensure_ascii=False)
PY
