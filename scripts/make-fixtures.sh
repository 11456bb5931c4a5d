#!/usr/bin/env bash
# make-fixtures.sh OUTDIR — build berth's test images from Debian's busybox-static.
#
# No docker needed: every archive is written by the embedded python3 script below
# (tarfile/json/hashlib/gzip) plus the zstd CLI. All outputs are deterministic: fixed
# mtimes, uid/gid 0 unless a test needs otherwise, entries sorted, gzip without name/mtime,
# so running the script twice gives identical bytes (on the same busybox/zstd versions).
#
# Outputs (see scripts/README.md):
#   rootfs.tar            busybox rootfs (also the single layer of busybox:latest)
#   busybox-docker.tar    docker-save archive, busybox:latest (legacy layout, plain layer)
#   busybox-oci.tar       OCI image-layout archive, gzip layer, no manifest.json
#   busybox-oci-docker.tar  OCI layout + manifest.json (what `docker save` writes since 25.0)
#   layers-docker.tar     layers:latest, 4 layers (plain/gzip/zstd/zstd), whiteouts, specials
#   layers-docker-gzip.tar  the same layers:latest with gzip instead of zstd (Docker < 23)
#   layers-expected.txt   what the merged rootfs of layers:latest must contain
#   busybox-extra.tar     docker-save archive with extra:1 + extra:latest and other:latest
#   iperf3-docker.tar     docker-save archive, berth-test/iperf3:latest: the busybox layer plus
#                         Debian's iperf3 with every library ldd lists (network benchmarks)
#   busybox-arm64-docker.tar  docker-save archive, busybox-arm64:latest (linux/arm64/v8): the
#                         same rootfs with Debian's arm64 busybox-static, downloaded from the
#                         Debian mirror and checked against the signed Release file (for the
#                         builds for another platform; left out, with the reason printed,
#                         where the mirror cannot be reached)
#   image-ids.txt         "<archive>\t<ref>\tsha256:<config digest>" for every image above
#                         except berth-test/iperf3 and busybox-arm64 (check-fixtures-docker.sh
#                         checks every line)
#
# Environment: BUSYBOX=path overrides /bin/busybox; IPERF3=path overrides /usr/bin/iperf3;
# DEBIAN_MIRROR (default http://deb.debian.org/debian) is where the arm64 busybox comes from;
# SOURCE_DATE_EPOCH overrides the mtime. iperf3-docker.tar is as deterministic as the host's
# iperf3/libc/OpenSSL packages: the same bytes until one of them is upgraded.
set -euo pipefail

usage() { echo "usage: $0 OUTDIR" >&2; exit 2; }
[[ $# -eq 1 ]] || usage
OUTDIR=$1

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
apt_install() {
    echo "make-fixtures: installing $*" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2 ||
        { as_root apt-get update -q >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2; }
}

is_static() {
    # `file` is the reliable check; ldd prints "not a dynamic executable" for static ELF.
    local f=$1
    [[ -x $f ]] || return 1
    if command -v file >/dev/null 2>&1; then
        file -L "$f" | grep -Eq 'statically linked|static-pie linked'
    else
        if ldd "$f" >/dev/null 2>&1; then return 1; fi
    fi
}

BUSYBOX=${BUSYBOX:-/bin/busybox}
command -v file >/dev/null 2>&1 || apt_install file
if ! is_static "$BUSYBOX"; then
    [[ $BUSYBOX == /bin/busybox ]] || { echo "make-fixtures: $BUSYBOX is not a static busybox" >&2; exit 1; }
    apt_install busybox-static
    is_static /bin/busybox || { echo "make-fixtures: /bin/busybox still not static" >&2; exit 1; }
fi
command -v zstd >/dev/null 2>&1 || apt_install zstd
command -v python3 >/dev/null 2>&1 || apt_install python3
IPERF3=${IPERF3:-/usr/bin/iperf3}
if [[ ! -x $IPERF3 ]]; then
    [[ $IPERF3 == /usr/bin/iperf3 ]] || { echo "make-fixtures: $IPERF3 is not executable" >&2; exit 1; }
    apt_install iperf3
    [[ -x $IPERF3 ]] || { echo "make-fixtures: $IPERF3 still missing" >&2; exit 1; }
fi

# Debian's arm64 busybox-static of the host's busybox-static version, its .deb checked
# against the signed InRelease of the host's suite (gpgv and Debian's keyring), into
# OUTDIR/.arm64/busybox; prints why and returns 1 when it cannot.
arm64_busybox() {
    local cache=$OUTDIR/.arm64 mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
    [[ -s $cache/busybox ]] && return 0
    local version suite keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    version=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null) || { echo "make-fixtures: no busybox-static package: skipping busybox-arm64" >&2; return 1; }
    suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    for tool in curl gpgv xz dpkg-deb; do
        command -v $tool >/dev/null 2>&1 || { echo "make-fixtures: $tool missing: skipping busybox-arm64" >&2; return 1; }
    done
    [[ -n $suite && -r $keyring ]] || { echo "make-fixtures: no suite or keyring: skipping busybox-arm64" >&2; return 1; }
    local work
    work=$(mktemp -d)
    # shellcheck disable=SC2064
    trap "rm -rf '$work'" RETURN
    curl -fsS --max-time 120 -o "$work/InRelease" "$mirror/dists/$suite/InRelease" &&
        gpgv --keyring "$keyring" "$work/InRelease" 2>/dev/null ||
        { echo "make-fixtures: $mirror/dists/$suite/InRelease not reachable or not signed: skipping busybox-arm64" >&2; return 1; }
    local packages_sha deb deb_sha
    packages_sha=$(awk '/^SHA256:/{s=1;next} /^[A-Za-z]/{s=0} s && $3=="main/binary-arm64/Packages.xz"{print $1}' "$work/InRelease")
    curl -fsS --max-time 300 -o "$work/Packages.xz" "$mirror/dists/$suite/main/binary-arm64/Packages.xz" &&
        echo "$packages_sha  $work/Packages.xz" | sha256sum -c --quiet - ||
        { echo "make-fixtures: the arm64 package index did not download or check: skipping busybox-arm64" >&2; return 1; }
    read -r deb deb_sha < <(xz -dc "$work/Packages.xz" | awk -v want="$version" '
        /^Package: /{p=($2=="busybox-static"); v=""; f=""; h=""}
        p && /^Version: /{v=$2} p && /^Filename: /{f=$2} p && /^SHA256: /{h=$2}
        p && /^$/ && v==want {print f, h; exit}')
    [[ -n ${deb:-} ]] || { echo "make-fixtures: busybox-static $version for arm64 is not in $suite: skipping busybox-arm64" >&2; return 1; }
    curl -fsS --max-time 300 -o "$work/busybox.deb" "$mirror/$deb" &&
        echo "$deb_sha  $work/busybox.deb" | sha256sum -c --quiet - ||
        { echo "make-fixtures: $deb did not download or check: skipping busybox-arm64" >&2; return 1; }
    mkdir -p "$cache"
    dpkg-deb --fsys-tarfile "$work/busybox.deb" | tar -xO ./bin/busybox >"$cache/busybox.tmp"
    mv "$cache/busybox.tmp" "$cache/busybox"
}

mkdir -p "$OUTDIR"
ARM64_BUSYBOX=""
if arm64_busybox; then ARM64_BUSYBOX=$OUTDIR/.arm64/busybox; fi
exec python3 - "$OUTDIR" "$BUSYBOX" "${SOURCE_DATE_EPOCH:-1704067200}" "$IPERF3" "$ARM64_BUSYBOX" <<'PY'
import gzip, hashlib, io, json, os, re, subprocess, sys, tarfile, time

OUT, BUSYBOX, EPOCH, IPERF3 = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ARM64_BUSYBOX = sys.argv[5]
CREATED = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(EPOCH))
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def sha(b):
    return hashlib.sha256(b).hexdigest()


def jbytes(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


# ---------------------------------------------------------------- tar building
class Entry:
    def __init__(self, path, kind, mode, uid=0, gid=0, data=b"", target="",
                 dev=(0, 0), xattrs=None):
        self.path, self.kind, self.mode = path.strip("/"), kind, mode
        self.uid, self.gid, self.data, self.target = uid, gid, data, target
        self.dev, self.xattrs = dev, xattrs or {}


def D(p, mode=0o755, uid=0, gid=0, **kw): return Entry(p, "dir", mode, uid, gid, **kw)
def F(p, data, mode=0o644, uid=0, gid=0, **kw): return Entry(p, "file", mode, uid, gid, data=data, **kw)
def L(p, target): return Entry(p, "symlink", 0o777, target=target)
def H(p, target): return Entry(p, "hardlink", 0o644, target=target.strip("/"))
def FIFO(p, mode=0o644): return Entry(p, "fifo", mode)
def CHR(p, major, minor, mode=0o666): return Entry(p, "char", mode, dev=(major, minor))


KINDS = {"dir": tarfile.DIRTYPE, "file": tarfile.REGTYPE, "symlink": tarfile.SYMTYPE,
         "hardlink": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE, "char": tarfile.CHRTYPE}


def make_tar(entries, sort=True):
    """Deterministic PAX tar. Sorted by path components so parents precede children."""
    if sort:
        entries = sorted(entries, key=lambda e: e.path.split("/"))
    seen = set()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for e in entries:
            assert e.path not in seen, e.path
            seen.add(e.path)
            ti = tarfile.TarInfo(e.path)
            ti.type = KINDS[e.kind]
            ti.mode, ti.uid, ti.gid, ti.mtime = e.mode, e.uid, e.gid, EPOCH
            ti.uname = ti.gname = ""
            if e.kind in ("symlink", "hardlink"):
                if e.kind == "hardlink":
                    assert e.target in seen, "hardlink before its target: " + e.path
                ti.linkname = e.target
            if e.kind == "char":
                ti.devmajor, ti.devminor = e.dev
            if e.xattrs:
                ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in sorted(e.xattrs.items())}
            if e.kind == "file":
                ti.size = len(e.data)
                tf.addfile(ti, io.BytesIO(e.data))
            else:
                tf.addfile(ti)
    return buf.getvalue()


def gz(b):
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as g:
        g.write(b)
    return out.getvalue()


def zst(b):
    return subprocess.run(["zstd", "-q", "-c", "-T1", "-10", "--no-progress"], input=b,
                          stdout=subprocess.PIPE, check=True).stdout


def write_archive(name, files):
    """files: dict path -> bytes (dirs implied). Outer tar is sorted, dirs 0755, files 0644."""
    entries, dirs = [], set()
    for p in files:
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    entries += [D(d) for d in dirs]
    entries += [F(p, b) for p, b in files.items()]
    data = make_tar(entries)
    tmp = os.path.join(OUT, ".%s.tmp%d" % (name, os.getpid()))
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(OUT, name))


def write_file(name, data):
    tmp = os.path.join(OUT, ".%s.tmp%d" % (name, os.getpid()))
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, os.path.join(OUT, name))


# ---------------------------------------------------------------- busybox rootfs
with open(BUSYBOX, "rb") as f:
    busybox_bin = f.read()
applets = sorted(set(subprocess.run([BUSYBOX, "--list"], stdout=subprocess.PIPE, check=True,
                                    text=True).stdout.split()) - {"busybox"})
for need in ("sh", "echo", "ls", "cat", "true", "false", "sleep", "id", "env", "ps", "mount",
             "hostname", "wget", "nc", "top", "kill", "grep", "head", "tail", "wc", "touch",
             "mkdir", "rm", "dd", "sed", "stat", "whoami"):
    assert need in applets, "busybox lacks applet " + need

PASSWD = b"""root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
berthuser:x:1000:1000:berth test user:/home/berthuser:/bin/sh
"""
GROUP = b"""root:x:0:
daemon:x:1:
berthgroup:x:1000:
extra:x:2000:berthuser
nogroup:x:65534:
"""
rootfs_entries = [
    D("bin"), F("bin/busybox", busybox_bin, 0o755),
    D("etc"), F("etc/passwd", PASSWD), F("etc/group", GROUP),
    D("dev"), D("proc", 0o555), D("sys", 0o555), D("root", 0o700), D("tmp", 0o1777),
    D("home"), D("home/berthuser", 0o755, 1000, 1000), D("var"),
] + [L("bin/" + a, "busybox") for a in applets]
ROOTFS = make_tar(rootfs_entries)
write_file("rootfs.tar", ROOTFS)
BUSYBOX_DIFF = sha(ROOTFS)


def config(diff_ids, history, architecture="amd64", variant=None, **cfg):
    c = {"Env": [PATH_ENV], "Cmd": ["sh"]}
    c.update(cfg)
    platform = {"architecture": architecture}
    if variant:
        platform["variant"] = variant
    return jbytes(dict(platform, **{
        "os": "linux", "created": CREATED,
        "config": c,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
        "history": [dict(created=CREATED, **h) for h in history],
    }))


BUSYBOX_HISTORY = [
    {"created_by": "/bin/sh -c #(nop) ADD file:busybox-static in / ",
     "comment": "berth make-fixtures.sh: busybox-static rootfs"},
    {"created_by": '/bin/sh -c #(nop)  CMD ["sh"]', "empty_layer": True},
]
BUSYBOX_CONFIG = config([BUSYBOX_DIFF], BUSYBOX_HISTORY)
ids = []


def docker_save(name, images, layers):
    """images: list of (tags, config bytes, [layer keys]); layers: key -> (file path, bytes).
    Legacy `docker save` layout: manifest.json, <config-hex>.json, repositories, layers."""
    files, manifest, repos = {}, [], {}
    for tags, cfg, lkeys in images:
        cid = sha(cfg)
        files[cid + ".json"] = cfg
        lpaths, parent = [], None
        for k in lkeys:
            path, data = layers[k]
            files[path] = data
            lpaths.append(path)
            d = os.path.dirname(path)
            if path.endswith("/layer.tar"):  # legacy v1 files beside plain layers
                v1 = {"id": d, "created": CREATED}
                if parent:
                    v1["parent"] = parent
                files[d + "/VERSION"] = b"1.0"
                files[d + "/json"] = jbytes(v1)
            parent = d or None
        manifest.append({"Config": cid + ".json", "RepoTags": tags, "Layers": lpaths})
        top = os.path.dirname(lpaths[-1]) if lpaths[-1].endswith("/layer.tar") else None
        for t in tags:
            repo, tag = t.rsplit(":", 1)
            if top:
                repos.setdefault(repo, {})[tag] = top
        for t in tags:
            ids.append((name, t, "sha256:" + cid))
    files["manifest.json"] = jbytes(manifest) + b"\n"
    if repos:
        files["repositories"] = jbytes(repos) + b"\n"
    write_archive(name, files)


# ---------------------------------------------------------------- busybox-docker.tar
plain = lambda data: (sha(data) + "/layer.tar", data)
docker_save("busybox-docker.tar", [(["busybox:latest"], BUSYBOX_CONFIG, ["bb"])],
            {"bb": plain(ROOTFS)})

# ---------------------------------------------------------------- busybox-oci.tar
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"


def oci_archive(name, ref_name, tag, with_docker_manifest):
    layer_gz = gz(ROOTFS)
    files = {}
    blob = lambda b: files.__setitem__("blobs/sha256/" + sha(b), b) or \
        {"digest": "sha256:" + sha(b), "size": len(b)}
    cfg = dict(mediaType=OCI_CONFIG, **blob(BUSYBOX_CONFIG))
    lay = dict(mediaType=OCI_LAYER_GZ, **blob(layer_gz))
    man = jbytes({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cfg, "layers": [lay]})
    mdesc = dict(mediaType=OCI_MANIFEST, **blob(man))
    mdesc["annotations"] = {"io.containerd.image.name": ref_name,
                            "org.opencontainers.image.ref.name": tag}
    files["index.json"] = jbytes({"schemaVersion": 2, "mediaType": OCI_INDEX,
                                  "manifests": [mdesc]}) + b"\n"
    files["oci-layout"] = jbytes({"imageLayoutVersion": "1.0.0"}) + b"\n"
    if with_docker_manifest:
        short = ref_name.rsplit("/", 1)[-1]
        files["manifest.json"] = jbytes([{
            "Config": "blobs/sha256/" + sha(BUSYBOX_CONFIG), "RepoTags": [short],
            "Layers": ["blobs/sha256/" + sha(layer_gz)]}]) + b"\n"
    write_archive(name, files)
    ids.append((name, ref_name.rsplit("/", 1)[-1], "sha256:" + sha(BUSYBOX_CONFIG)))


oci_archive("busybox-oci.tar", "docker.io/library/busybox-oci:latest", "latest", False)
oci_archive("busybox-oci-docker.tar", "docker.io/library/busybox-oci-docker:latest", "latest", True)

# ---------------------------------------------------------------- layers-docker.tar
# Layer 1 (plain tar) : the busybox rootfs (same diff_id as busybox:latest).
# Layer 2 (gzip)      : /fixture base content that layer 3 then changes.
# Layer 3 (zstd)      : whiteouts, type changes, an opaque dir, an overwrite.
# Layer 4 (zstd)      : hardlink, fifo, char device, xattr, setuid, 1000:1000 0640 file.
L2 = make_tar([
    D("fixture"),
    F("fixture/keep", b"keep\n"),
    F("fixture/overwritten", b"version 1\n"),
    F("fixture/deleted-file", b"deleted\n"),
    L("fixture/deleted-link", "keep"),
    D("fixture/deleted-dir"), D("fixture/deleted-dir/sub"),
    F("fixture/deleted-dir/a", b"a\n"), F("fixture/deleted-dir/sub/b", b"b\n"),
    F("fixture/file-to-dir", b"I was a file\n"),
    D("fixture/dir-to-file", 0o700), F("fixture/dir-to-file/child", b"child\n"),
    D("fixture/opaque"), F("fixture/opaque/old1", b"old1\n"), F("fixture/opaque/readded", b"old\n"),
    D("fixture/opaque/olddir"), F("fixture/opaque/olddir/old2", b"old2\n"),
    D("fixture/notopaque"), F("fixture/notopaque/lower", b"lower\n"),
])
L3 = make_tar([
    D("fixture"),
    F("fixture/.wh.deleted-file", b""),
    F("fixture/.wh.deleted-link", b""),
    F("fixture/.wh.deleted-dir", b""),
    F("fixture/overwritten", b"version 2\n", 0o600),
    D("fixture/file-to-dir", 0o750), F("fixture/file-to-dir/inner", b"inner\n"),
    F("fixture/dir-to-file", b"I was a directory\n", 0o644),
    D("fixture/opaque", 0o755), F("fixture/opaque/.wh..wh..opq", b""),
    F("fixture/opaque/readded", b"new\n"),
    D("fixture/notopaque"), F("fixture/notopaque/upper", b"upper\n"),
])
L4 = make_tar([
    D("fixture"), D("fixture/special"),
    F("fixture/special/hardlink-src", b"linked\n", 0o644),
    H("fixture/special/hardlink-to-src", "fixture/special/hardlink-src"),
    FIFO("fixture/special/fifo", 0o644),
    F("fixture/special/xattr", b"xattr\n", xattrs={"user.berth": "fixture"}),
    F("fixture/special/setuid", b"setuid\n", 0o4755),
    F("fixture/special/owned", b"owned\n", 0o640, 1000, 1000),
    L("fixture/special/abs-symlink", "/etc/passwd"),
    L("fixture/special/rel-symlink", "../keep"),
    D("dev-fixture"), CHR("dev-fixture/null", 1, 3, 0o666),
])
diffs = [sha(x) for x in (ROOTFS, L2, L3, L4)]
L2c, L3c, L4c = gz(L2), zst(L3), zst(L4)
LAYERS_CONFIG = config(diffs, BUSYBOX_HISTORY[:1] + [
    {"created_by": "berth fixture: layer 2 (gzip) base /fixture content"},
    {"created_by": "berth fixture: layer 3 (zstd) whiteouts, opaque dir, type changes"},
    {"created_by": "berth fixture: layer 4 (zstd) hardlink fifo chardev xattr setuid owner"},
    {"created_by": '/bin/sh -c #(nop)  CMD ["sh"]', "empty_layer": True},
], Labels={"org.berth.fixture": "layers"})
docker_save("layers-docker.tar", [(["layers:latest"], LAYERS_CONFIG, ["1", "2", "3", "4"])], {
    "1": plain(ROOTFS),
    "2": (sha(L2c) + ".tar.gz", L2c),
    "3": (sha(L3c) + ".tar.zst", L3c),
    "4": (sha(L4c) + ".tar.zst", L4c),
})
# Same image (same config, so same image id) with gzip instead of zstd: Docker < 23 (Debian 12
# ships 20.10) cannot decompress zstd layers in `docker load`, so conformance tests load this
# one into Docker and layers-docker.tar into berth.
L3g, L4g = gz(L3), gz(L4)
docker_save("layers-docker-gzip.tar", [(["layers:latest"], LAYERS_CONFIG, ["1", "2", "3", "4"])], {
    "1": plain(ROOTFS),
    "2": (sha(L2c) + ".tar.gz", L2c),
    "3": (sha(L3g) + ".tar.gz", L3g),
    "4": (sha(L4g) + ".tar.gz", L4g),
})

# layers-expected.txt: one row per path, tab-separated, generated from this table.
ENTRIES_FIXTURE = "dir-to-file,file-to-dir,keep,notopaque,opaque,overwritten,special"
ENTRIES_SPECIAL = "abs-symlink,fifo,hardlink-src,hardlink-to-src,owned,rel-symlink,setuid,xattr"
EXPECTED_ROWS = [
    # path, type, mode, uid, gid, [(key, value), ...]
    ("/fixture", "dir", 0o755, 0, 0, [("entries", ENTRIES_FIXTURE)]),
    ("/fixture/keep", "file", 0o644, 0, 0, [("content", "keep\n"), ("nlink", "1")]),
    ("/fixture/overwritten", "file", 0o600, 0, 0, [("content", "version 2\n")]),
    ("/fixture/deleted-file", "absent", None, None, None, [("note", "whiteout fixture/.wh.deleted-file (layer 3)")]),
    ("/fixture/deleted-link", "absent", None, None, None, [("note", "symlink removed by whiteout (layer 3)")]),
    ("/fixture/deleted-dir", "absent", None, None, None, [("note", "directory removed by whiteout fixture/.wh.deleted-dir (layer 3)")]),
    ("/fixture/.wh.deleted-file", "absent", None, None, None, [("note", "whiteout markers never appear")]),
    ("/fixture/file-to-dir", "dir", 0o750, 0, 0, [("entries", "inner")]),
    ("/fixture/file-to-dir/inner", "file", 0o644, 0, 0, [("content", "inner\n")]),
    ("/fixture/dir-to-file", "file", 0o644, 0, 0, [("content", "I was a directory\n")]),
    ("/fixture/opaque", "dir", 0o755, 0, 0, [("entries", "readded")]),
    ("/fixture/opaque/readded", "file", 0o644, 0, 0, [("content", "new\n")]),
    ("/fixture/opaque/old1", "absent", None, None, None, [("note", "hidden by fixture/opaque/.wh..wh..opq (layer 3)")]),
    ("/fixture/opaque/olddir", "absent", None, None, None, [("note", "hidden by the opaque marker (layer 3)")]),
    ("/fixture/opaque/.wh..wh..opq", "absent", None, None, None, [("note", "opaque markers never appear")]),
    ("/fixture/notopaque", "dir", 0o755, 0, 0, [("entries", "lower,upper")]),
    ("/fixture/notopaque/lower", "file", 0o644, 0, 0, [("content", "lower\n")]),
    ("/fixture/notopaque/upper", "file", 0o644, 0, 0, [("content", "upper\n")]),
    ("/fixture/special", "dir", 0o755, 0, 0, [("entries", ENTRIES_SPECIAL)]),
    ("/fixture/special/hardlink-src", "file", 0o644, 0, 0, [("content", "linked\n"), ("nlink", "2")]),
    ("/fixture/special/hardlink-to-src", "file", 0o644, 0, 0,
     [("content", "linked\n"), ("nlink", "2"), ("same-inode-as", "/fixture/special/hardlink-src")]),
    ("/fixture/special/fifo", "fifo", 0o644, 0, 0, []),
    ("/fixture/special/xattr", "file", 0o644, 0, 0, [("content", "xattr\n"), ("xattr", "user.berth=fixture")]),
    ("/fixture/special/setuid", "file", 0o4755, 0, 0, [("content", "setuid\n")]),
    ("/fixture/special/owned", "file", 0o640, 1000, 1000, [("content", "owned\n")]),
    ("/fixture/special/abs-symlink", "symlink", None, 0, 0, [("target", "/etc/passwd")]),
    ("/fixture/special/rel-symlink", "symlink", None, 0, 0, [("target", "../keep")]),
    ("/dev-fixture", "dir", 0o755, 0, 0, [("entries", "null")]),
    ("/dev-fixture/null", "char", 0o666, 0, 0, [("dev", "1:3")]),
    ("/bin/busybox", "file", 0o755, 0, 0, [("note", "static busybox from Debian busybox-static")]),
    ("/bin/sh", "symlink", None, 0, 0, [("target", "busybox")]),
    ("/etc/passwd", "file", 0o644, 0, 0, [("content", PASSWD.decode())]),
    ("/etc/group", "file", 0o644, 0, 0, [("content", GROUP.decode())]),
    ("/home/berthuser", "dir", 0o755, 1000, 1000, []),
    ("/tmp", "dir", 0o1777, 0, 0, []),
    ("/root", "dir", 0o700, 0, 0, []),
]


def esc(v):
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


EXPECTED = """\
# What the merged rootfs of layers:latest (layers-docker.tar, layers-docker-gzip.tar) must hold.
# One row per path, tab-separated: PATH TYPE MODE UID GID [KEY=VALUE ...]
#   TYPE   file | dir | symlink | fifo | char | absent
#   MODE   4-digit octal permission bits incl. setuid/setgid/sticky; "-" for symlink/absent
#   UID GID numeric; "-" for absent
#   KEY=VALUE (zero or more, each its own tab-separated field; values escape \\\\ \\n \\t):
#     content=<exact bytes>  nlink=<n>  same-inode-as=<path>  xattr=<name>=<value>
#     target=<symlink target>  dev=<major>:<minor>  entries=<sorted names, comma-separated>
#     note=<free text, nothing to check>
# Layers: 1 plain busybox rootfs, 2 gzip base /fixture, 3 zstd whiteouts/opaque/type changes,
# 4 zstd specials. Paths not listed come from the busybox rootfs (layer 1) unchanged.
""" + "".join(
    "\t".join([p, t, "-" if m is None else "%04o" % m, "-" if u is None else str(u),
               "-" if g is None else str(g)] + ["%s=%s" % (k, esc(v)) for k, v in kv]) + "\n"
    for p, t, m, u, g, kv in EXPECTED_ROWS)
write_file("layers-expected.txt", EXPECTED.encode())

# ---------------------------------------------------------------- busybox-extra.tar
EXTRA_L = make_tar([D("etc"), F("etc/extra-release", b"extra\n")])
OTHER_L = make_tar([F("other.txt", b"other\n")])
EXTRA_CONFIG = config([BUSYBOX_DIFF, sha(EXTRA_L)], BUSYBOX_HISTORY[:1] + [
    {"created_by": "berth fixture: /etc/extra-release"},
    {"created_by": "berth fixture: config", "empty_layer": True},
], Env=[PATH_ENV, "EXTRA=1"], User="berthuser", WorkingDir="/home/berthuser",
    Labels={"org.berth.fixture": "extra"}, ExposedPorts={"8080/tcp": {}}, StopSignal="SIGTERM")
OTHER_CONFIG = config([BUSYBOX_DIFF, sha(OTHER_L)], BUSYBOX_HISTORY[:1] + [
    {"created_by": "berth fixture: /other.txt"},
    {"created_by": "berth fixture: ENTRYPOINT [\"echo\"] CMD [\"other\"]", "empty_layer": True},
], Entrypoint=["echo"], Cmd=["other"], Labels={"org.berth.fixture": "other"})
docker_save("busybox-extra.tar", [
    (["extra:1", "extra:latest"], EXTRA_CONFIG, ["bb", "extra"]),
    (["other:latest"], OTHER_CONFIG, ["bb", "other"]),
], {"bb": plain(ROOTFS), "extra": plain(EXTRA_L), "other": plain(OTHER_L)})

# ---------------------------------------------------------------- iperf3-docker.tar
# berth-test/iperf3:latest = busybox layer + one layer with the host's (Debian's) iperf3 and
# every shared object `ldd` resolves for it, each at the path ldd prints (so the dynamic
# loader at /lib64/ld-linux-x86-64.so.2 finds them in its built-in /lib/<triplet> search
# path without an ld.so.cache). Symlinked libraries are stored as the files they point to.
def ldd_deps(binary):
    out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, check=True, text=True).stdout
    deps = set()
    for line in out.splitlines():
        m = re.match(r"\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)\s*$", line)
        if m:
            deps.add(m.group(1))
        elif "=>" in line and "not found" in line:
            raise SystemExit("make-fixtures: %s: missing library: %s" % (binary, line.strip()))
    assert any("ld-linux" in d for d in deps), "no dynamic loader in ldd output:\n" + out
    return sorted(deps)


def read(path):
    with open(path, "rb") as f:
        return f.read()


iperf_files = {"usr/bin/iperf3": (read(IPERF3), 0o755)}
for dep in ldd_deps(IPERF3):
    iperf_files[dep.strip("/")] = (read(os.path.realpath(dep)), 0o755 if "ld-linux" in dep else 0o644)
iperf_dirs = set()
for p in iperf_files:
    parts = p.split("/")[:-1]
    iperf_dirs.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
IPERF_L = make_tar([D(d) for d in iperf_dirs] +
                   [F(p, data, mode) for p, (data, mode) in iperf_files.items()])
iperf_version = subprocess.run([IPERF3, "--version"], stdout=subprocess.PIPE, text=True,
                               check=True).stdout.split("\n")[0].strip()
IPERF_CONFIG = config([BUSYBOX_DIFF, sha(IPERF_L)], BUSYBOX_HISTORY[:1] + [
    {"created_by": "berth fixture: %s + its shared libraries (ldd)" % iperf_version},
    {"created_by": 'berth fixture: ENTRYPOINT ["iperf3"] CMD ["-s"] EXPOSE 5201/tcp',
     "empty_layer": True},
], Entrypoint=["iperf3"], Cmd=["-s"], ExposedPorts={"5201/tcp": {}},
    Labels={"org.berth.fixture": "iperf3"})
ids_before_iperf = len(ids)
docker_save("iperf3-docker.tar", [(["berth-test/iperf3:latest"], IPERF_CONFIG, ["bb", "iperf3"])],
            {"bb": plain(ROOTFS), "iperf3": plain(IPERF_L)})
# Kept out of image-ids.txt: check-fixtures-docker.sh expects every ref listed there to be
# loaded by it, and it loads only the busybox/layers/extra archives.
del ids[ids_before_iperf:]

# ---------------------------------------------------------------- busybox-arm64-docker.tar
# The same rootfs with Debian's arm64 busybox (the same package version: the same applets).
if ARM64_BUSYBOX:
    ARM64_ROOTFS = make_tar([F("bin/busybox", read(ARM64_BUSYBOX), 0o755) if e.path == "bin/busybox"
                             else e for e in rootfs_entries])
    ARM64_CONFIG = config([sha(ARM64_ROOTFS)], BUSYBOX_HISTORY, architecture="arm64", variant="v8")
    ids_before_arm64 = len(ids)
    docker_save("busybox-arm64-docker.tar", [(["busybox-arm64:latest"], ARM64_CONFIG, ["bb"])],
                {"bb": plain(ARM64_ROOTFS)})
    del ids[ids_before_arm64:]
elif os.path.exists(os.path.join(OUT, "busybox-arm64-docker.tar")):
    os.remove(os.path.join(OUT, "busybox-arm64-docker.tar"))

lines = "".join("%s\t%s\t%s\n" % row for row in ids)
write_file("image-ids.txt", lines.encode())
sys.stdout.write(lines)
PY
