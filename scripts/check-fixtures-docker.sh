#!/usr/bin/env bash
# check-fixtures-docker.sh FIXTURES [DOCKER_HOST]
# Validates the fixtures from make-fixtures.sh against a real engine: loads them into the
# Docker started by docker-engine.sh, compares image ids with image-ids.txt, runs
# busybox/extra/other, and checks the merged rootfs of layers:latest against
# layers-expected.txt (types, modes, owners, contents, nlink/inodes, symlinks, devices,
# the user.berth xattr). When `ctr` is present it also imports the two archives Docker 20.10
# cannot load (pure OCI layout, zstd layers) into the daemon's containerd and checks them the
# same way. Exit 0 = the engine agrees with the fixtures.
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 FIXTURES [DOCKER_HOST]" >&2; exit 2; }
FIX=$(cd "$1" && pwd)
HOST=${2:-${BERTH_TEST_DOCKER_HOST:-unix:///run/berth-test-docker.sock}}
if [[ -z ${DOCKER:-} ]]; then
    if [[ -x /usr/bin/docker ]]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
fi
CTR_SOCK=${BERTH_TEST_CTR_SOCK:-/run/berth-test-docker/containerd/containerd.sock}

exec python3 - "$FIX" "$HOST" "$DOCKER" "$CTR_SOCK" <<'PY'
import base64, json, os, shutil, subprocess, sys, time

FIX, HOST, DOCKER, CTR_SOCK = sys.argv[1:5]
D = [DOCKER, "-H", HOST]
failures = []


def run(cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and p.returncode != 0:
        raise SystemExit("FAILED (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stdout))
    return p.stdout


VERBOSE = os.environ.get("VERBOSE") == "1"
passed = 0


def expect(what, got, want):
    global passed
    if got == want:
        passed += 1
        if VERBOSE:
            print("ok   %s" % what)
    else:
        print("FAIL %s: got %r, want %r" % (what, got, want))
        failures.append(what)


def unesc(v):
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\" and i + 1 < len(v):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}[v[i + 1]])
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


rows = []
for line in open(os.path.join(FIX, "layers-expected.txt")):
    if line.startswith("#") or not line.strip():
        continue
    f = line.rstrip("\n").split("\t")
    kv = {}
    for item in f[5:]:
        k, v = item.split("=", 1)
        kv[k] = unesc(v)
    rows.append((f[0], f[1], f[2], f[3], f[4], kv))

ids = {}
for line in open(os.path.join(FIX, "image-ids.txt")):
    archive, ref, iid = line.split()
    ids[(archive, ref)] = iid

# Runs inside the container (busybox sh): one line per path.
DUMP = r'''
for p in "$@"; do
  if [ -e "$p" ] || [ -L "$p" ]; then
    s=$(stat -c '%F|%a|%u|%g|%h|%i|%t|%T' "$p")
    x=
    if [ -L "$p" ]; then x=$(readlink "$p")
    elif [ -f "$p" ] && [ "$(stat -c %s "$p")" -lt 65536 ]; then x=$(base64 "$p" | tr -d '\n')
    elif [ -d "$p" ]; then x=$(ls -A "$p" | tr '\n' ',')
    fi
    echo "$p|$s|$x"
  else
    echo "$p|absent"
  fi
done
'''
TYPES = {"regular file": "file", "regular empty file": "file", "directory": "dir",
         "symbolic link": "symlink", "fifo": "fifo", "character special file": "char"}


def check_tree(engine, out, xattrs):
    got = {}
    for line in out.splitlines():
        f = line.split("|")
        got[f[0]] = f
    inodes = {p: f[6] for p, f in got.items() if len(f) > 2}
    for path, typ, mode, uid, gid, kv in rows:
        f = got.get(path)
        what = "%s %s" % (engine, path)
        if f is None:
            expect(what + " listed", False, True)
            continue
        if typ == "absent":
            expect(what + " absent", f[1], "absent")
            continue
        if f[1] == "absent":
            expect(what + " exists", "absent", typ)
            continue
        expect(what + " type", TYPES.get(f[1], f[1]), typ)
        if mode != "-":
            expect(what + " mode", "%04o" % int(f[2], 8), mode)
        expect(what + " owner", "%s:%s" % (f[3], f[4]), "%s:%s" % (uid, gid))
        extra = f[9]
        if "content" in kv:
            expect(what + " content", base64.b64decode(extra).decode(errors="replace"), kv["content"])
        if "nlink" in kv:
            expect(what + " nlink", f[5], kv["nlink"])
        if "same-inode-as" in kv:
            expect(what + " same inode", f[6], inodes.get(kv["same-inode-as"]))
        if "target" in kv:
            expect(what + " target", extra, kv["target"])
        if "dev" in kv:
            expect(what + " dev", "%d:%d" % (int(f[7], 16), int(f[8], 16)), kv["dev"])
        if "entries" in kv:
            expect(what + " entries", sorted(x for x in extra.split(",") if x),
                   sorted(kv["entries"].split(",")))
        if "xattr" in kv:
            name, value = kv["xattr"].split("=", 1)
            if xattrs is None:
                print("skip %s xattr (merged dir not reachable from the host)" % what)
            else:
                expect(what + " xattr", xattrs.get(path, {}).get(name), value)


def host_xattrs(root):
    res = {}
    for path, typ, _, _, _, kv in rows:
        if "xattr" in kv:
            p = root + path
            try:
                res[path] = {k: os.getxattr(p, k, follow_symlinks=False).decode()
                             for k in os.listxattr(p, follow_symlinks=False)}
            except OSError as e:
                res[path] = {"error": str(e)}
    return res


paths = [r[0] for r in rows]

# ---------------------------------------------------------------- Docker
print("# docker at %s (server %s)" % (HOST, run(D + ["version", "--format", "{{.Server.Version}}"]).strip()))
for archive in ("busybox-docker.tar", "busybox-oci-docker.tar", "layers-docker-gzip.tar",
                "busybox-extra.tar"):
    print("# docker load -i " + archive)
    sys.stdout.write(run(D + ["load", "-i", os.path.join(FIX, archive)]))
for (archive, ref), iid in sorted(ids.items()):
    if archive in ("busybox-oci.tar", "layers-docker.tar"):
        continue  # Docker 20.10 cannot load these; checked with ctr below
    expect("docker image id " + ref, run(D + ["image", "inspect", "-f", "{{.Id}}", ref]).strip(), iid)
expect("docker run busybox echo", run(D + ["run", "--rm", "--network", "none", "busybox:latest", "echo", "hello"]), "hello\n")
expect("docker run extra:1 id", run(D + ["run", "--rm", "--network", "none", "extra:1", "id"]),
       "uid=1000(berthuser) gid=1000(berthgroup) groups=1000(berthgroup),2000(extra)\n")
expect("docker run extra:latest pwd+env", run(D + ["run", "--rm", "--network", "none", "extra:latest", "sh", "-c", "pwd; echo $EXTRA; cat /etc/extra-release"]),
       "/home/berthuser\n1\nextra\n")
expect("docker run other:latest (entrypoint+cmd)", run(D + ["run", "--rm", "--network", "none", "other:latest"]), "other\n")
expect("docker run other:latest x (cmd override)", run(D + ["run", "--rm", "--network", "none", "other:latest", "x"]), "x\n")

cid = run(D + ["run", "-d", "--network", "none", "layers:latest", "sleep", "300"]).strip()
try:
    out = run(D + ["exec", cid, "sh", "-c", DUMP, "sh"] + paths)
    merged = run(D + ["inspect", "-f", "{{.GraphDriver.Data.MergedDir}}", cid]).strip()
    xa = host_xattrs(merged) if merged and os.path.isdir(merged) else None
    check_tree("docker layers:latest", out, xa)
finally:
    run(D + ["rm", "-f", cid], check=False)

# ---------------------------------------------------------------- containerd (ctr)
ctr = shutil.which("ctr")
if not os.path.exists(CTR_SOCK) and os.path.exists("/run/containerd/containerd.sock"):
    CTR_SOCK = "/run/containerd/containerd.sock"  # dockerd 20.10 uses a running system containerd
if ctr and os.path.exists(CTR_SOCK):
    C = [ctr, "-a", CTR_SOCK, "-n", "berth-fixtures"]
    try:
        for archive in ("busybox-oci.tar", "layers-docker.tar"):
            print("# ctr images import " + archive)
            sys.stdout.write(run(C + ["images", "import", os.path.join(FIX, archive)]))
        for archive, ref in (("busybox-oci.tar", "busybox-oci:latest"), ("layers-docker.tar", "layers:latest")):
            full = "docker.io/library/" + ref
            mdigest = [l.split()[2] for l in run(C + ["images", "ls"]).splitlines()[1:] if l.split()[0] == full]
            manifest = json.loads(run(C + ["content", "get", mdigest[0]])) if mdigest else {}
            expect("ctr image id " + ref, manifest.get("config", {}).get("digest"), ids[(archive, ref)])
        expect("ctr run busybox-oci echo", run(C + ["run", "--rm", "docker.io/library/busybox-oci:latest",
                                                    "berth-fixture-oci", "echo", "hello"]), "hello\n")
        run(C + ["run", "-d", "docker.io/library/layers:latest", "berth-fixture-layers", "sleep", "300"])
        out = run(C + ["task", "exec", "--exec-id", "dump", "berth-fixture-layers",
                       "sh", "-c", DUMP, "sh"] + paths)
        rootfs = os.path.join(os.path.dirname(CTR_SOCK), "daemon", "io.containerd.runtime.v2.task",
                              "berth-fixtures", "berth-fixture-layers", "rootfs")
        xa = host_xattrs(rootfs) if os.path.isdir(rootfs) else None
        check_tree("containerd layers:latest (zstd)", out, xa)
    finally:
        run(C + ["task", "kill", "-s", "SIGKILL", "berth-fixture-layers"], check=False)
        for _ in range(50):
            if "RUNNING" not in run(C + ["task", "ls"], check=False):
                break
            time.sleep(0.1)
        run(C + ["task", "rm", "-f", "berth-fixture-layers"], check=False)
        for t in ("berth-fixture-oci", "berth-fixture-layers"):
            run(C + ["containers", "rm", t], check=False)
        refs = run(C + ["images", "ls", "-q"], check=False).split()
        if refs:
            run(C + ["images", "rm", "--sync"] + refs, check=False)
        run([ctr, "-a", CTR_SOCK, "namespaces", "rm", "berth-fixtures"], check=False)
else:
    print("skip containerd checks (no ctr or no %s)" % CTR_SOCK)

if failures:
    print("%d check(s) passed, %d FAILED: %s" % (passed, len(failures), ", ".join(failures)))
    sys.exit(1)
print("all %d fixture checks passed" % passed)
PY
