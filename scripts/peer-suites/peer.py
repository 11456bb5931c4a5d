#!/usr/bin/env python3
"""Helpers of scripts/peer-suites.sh (standard library only).

  peer.py images REGISTRY ROOTFS_TAR     build the stand-in images and push them
  peer.py collect ENGINE JUNIT_DIR OUT   junit XML files -> OUT.json + OUT-summary.txt
  peer.py check RESULTS REFERENCE EXPECTED GAPS [RERUNS]
                                         berth's results against Docker's reference
  peer.py regressions RESULTS REFERENCE EXPECTED GAPS
                                         SUITE TEST-ID of each test the check would fail on
  peer.py reference RESULTS OUT          Docker's results -> the checked-in reference
  peer.py build-failures RESULTS REFERENCE
                                         lines for the expected-failures file: the tests
                                         Docker passes that berth fails on POST /build
"""
import datetime
import gzip
import hashlib
import http.client
import io
import json
import os
import re
import sys
import tarfile
import xml.etree.ElementTree as ElementTree

# ------------------------------------------------------------------ stand-in images
# The images the suites pull, none of which can be fetched here. Every one is the busybox
# rootfs of make-fixtures.sh (rootfs.tar) plus a second layer with the users, groups and
# directories of the image it stands in for that the tests use (docker-py execs `whoami` as
# alpine's `postgres` and `pwd` in its `/var/opt`; compose execs as busybox's `operator`),
# and its own `created` time, so each name:tag is an image of its own id, as on Docker Hub.
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# alpine 3.10's /etc/passwd and /etc/group.
ALPINE_PASSWD = """root:x:0:0:root:/root:/bin/ash
bin:x:1:1:bin:/bin:/sbin/nologin
daemon:x:2:2:daemon:/sbin:/sbin/nologin
adm:x:3:4:adm:/var/adm:/sbin/nologin
lp:x:4:7:lp:/var/spool/lpd:/sbin/nologin
sync:x:5:0:sync:/sbin:/bin/sync
shutdown:x:6:0:shutdown:/sbin:/sbin/shutdown
halt:x:7:0:halt:/sbin:/sbin/halt
mail:x:8:12:mail:/var/spool/mail:/sbin/nologin
news:x:9:13:news:/usr/lib/news:/sbin/nologin
uucp:x:10:14:uucp:/var/spool/uucppublic:/sbin/nologin
operator:x:11:0:operator:/root:/bin/sh
man:x:13:15:man:/usr/man:/sbin/nologin
postmaster:x:14:12:postmaster:/var/spool/mail:/sbin/nologin
cron:x:16:16:cron:/var/spool/cron:/sbin/nologin
ftp:x:21:21::/var/lib/ftp:/sbin/nologin
sshd:x:22:22:sshd:/dev/null:/sbin/nologin
at:x:25:25:at:/var/spool/cron/atjobs:/sbin/nologin
squid:x:31:31:Squid:/var/cache/squid:/sbin/nologin
xfs:x:33:33:X Font Server:/etc/X11/fs:/sbin/nologin
games:x:35:35:games:/usr/games:/sbin/nologin
postgres:x:70:70::/var/lib/postgresql:/bin/sh
cyrus:x:85:12::/usr/cyrus:/sbin/nologin
vpopmail:x:89:89::/var/vpopmail:/sbin/nologin
ntp:x:123:123:NTP:/var/empty:/sbin/nologin
smmsp:x:209:209:smmsp:/var/spool/mqueue:/sbin/nologin
guest:x:405:100:guest:/dev/null:/sbin/nologin
nobody:x:65534:65534:nobody:/:/sbin/nologin
"""
ALPINE_GROUP = """root:x:0:root
bin:x:1:root,bin,daemon
daemon:x:2:root,bin,daemon
sys:x:3:root,bin,adm
adm:x:4:root,adm,daemon
tty:x:5:
disk:x:6:root,adm
lp:x:7:lp
mem:x:8:
kmem:x:9:
wheel:x:10:root
floppy:x:11:root
mail:x:12:mail
news:x:13:news
uucp:x:14:uucp
man:x:15:man
cron:x:16:cron
console:x:17:
audio:x:18:
cdrom:x:19:
dialout:x:20:root
ftp:x:21:
sshd:x:22:
input:x:23:
at:x:25:at
tape:x:26:root
video:x:27:root
netdev:x:28:
readproc:x:30:
squid:x:31:squid
xfs:x:33:xfs
kvm:x:34:kvm
games:x:35:
shadow:x:42:
postgres:x:70:
cdrw:x:80:
usb:x:85:
vpopmail:x:89:
users:x:100:games
ntp:x:123:
nofiles:x:200:
smmsp:x:209:smmsp
locate:x:245:
abuild:x:300:
utmp:x:406:
ping:x:999:
nogroup:x:65533:
nobody:x:65534:
"""
# The official busybox image's /etc/passwd and /etc/group.
BUSYBOX_PASSWD = """root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
"""
BUSYBOX_GROUP = """root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
"""
ALPINE = {"files": {"etc/passwd": ALPINE_PASSWD, "etc/group": ALPINE_GROUP},
          "dirs": ["var/opt", "var/lib/postgresql"]}
BUSYBOX = {"files": {"etc/passwd": BUSYBOX_PASSWD, "etc/group": BUSYBOX_GROUP}, "dirs": []}
STAND_INS = [
    # (repository, tag, second layer, config)
    ("library/alpine", "3.10", ALPINE, {"Cmd": ["/bin/sh"]}),  # docker-py's TEST_IMG
    ("library/alpine", "latest", ALPINE, {"Cmd": ["/bin/sh"]}),  # docker-py models_images_test
    ("library/alpine", "3.10.1", ALPINE, {"Cmd": ["/bin/sh"]}),  # compose fixtures
    ("library/alpine", "3.12", ALPINE, {"Cmd": ["/bin/sh"]}),
    ("library/alpine", "edge", ALPINE, {"Cmd": ["/bin/sh"]}),
    ("library/busybox", "latest", BUSYBOX, {"Cmd": ["sh"]}),
    # compose's BUSYBOX_IMAGE_WITH_TAG
    ("library/busybox", "1.31.0-uclibc", BUSYBOX, {"Cmd": ["sh"]}),
    ("library/busybox", "1.27.2", BUSYBOX, {"Cmd": ["sh"]}),
    ("library/hello-world", "latest", BUSYBOX, {"Cmd": ["echo", "Hello from Docker!"]}),
    # compose's exec-novalue-var fixture runs `nginx` and execs into it: a server that
    # stays up is what the test needs (busybox httpd).
    ("library/nginx", "latest", BUSYBOX, {"Cmd": ["httpd", "-f", "-p", "80"],
                                          "ExposedPorts": {"80/tcp": {}}}),
]
MEDIA_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MEDIA_CONFIG = "application/vnd.docker.container.image.v1+json"
MEDIA_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


class Registry:
    def __init__(self, address):
        self.address = address

    def request(self, method, path, body=None, headers=None):
        connection = http.client.HTTPConnection(self.address, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def blob(self, repository, data):
        digest = sha256(data)
        status, _, _ = self.request("HEAD", "/v2/%s/blobs/%s" % (repository, digest))
        if status == 200:
            return digest
        status, headers, body = self.request("POST", "/v2/%s/blobs/uploads/" % repository)
        if status != 202:
            raise SystemExit("registry: starting an upload to %s: %d %r" % (repository, status, body))
        location = headers["Location"]
        if location.startswith("http"):
            location = "/" + location.split("/", 3)[3]
        location += ("&" if "?" in location else "?") + "digest=" + digest
        status, _, body = self.request("PUT", location, body=data, headers={
            "Content-Type": "application/octet-stream", "Content-Length": str(len(data))})
        if status != 201:
            raise SystemExit("registry: uploading %s: %d %r" % (digest, status, body))
        return digest

    def manifest(self, repository, tag, data):
        status, _, body = self.request("PUT", "/v2/%s/manifests/%s" % (repository, tag), body=data,
                                       headers={"Content-Type": MEDIA_MANIFEST})
        if status != 201:
            raise SystemExit("registry: putting %s:%s: %d %r" % (repository, tag, status, body))


EPOCH = 1704067200  # 2024-01-01, make-fixtures.sh's default mtime


def gzipped(data):
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as g:
        g.write(data)
    return out.getvalue()


def extra_layer(contents):
    """A deterministic tar of the stand-in's own files (directories 0755, files 0644)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = {"etc": None, "var": None}
        for path in contents["dirs"]:
            parts = path.split("/")
            for cut in range(1, len(parts) + 1):
                entries.setdefault("/".join(parts[:cut]), None)
        for path, text in contents["files"].items():
            entries[path] = text.encode()
        for path in sorted(entries, key=lambda p: p.split("/")):
            info = tarfile.TarInfo(path)
            info.mtime, info.uname, info.gname = EPOCH, "", ""
            data = entries[path]
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.mode, info.size = 0o644, len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def images(address, rootfs_path):
    with open(rootfs_path, "rb") as f:
        rootfs = f.read()
    base_layer = gzipped(rootfs)
    registry = Registry(address)
    base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    for index, (repository, tag, contents, settings) in enumerate(STAND_INS):
        created = (base + datetime.timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%SZ")
        extra = extra_layer(contents)
        layers = [(rootfs, base_layer), (extra, gzipped(extra))]
        config = canonical({
            "architecture": "amd64", "os": "linux", "created": created,
            "config": dict({"Env": [PATH_ENV]}, **settings),
            "rootfs": {"type": "layers", "diff_ids": [sha256(plain) for plain, _ in layers]},
            "history": [{"created": created,
                         "created_by": "/bin/sh -c #(nop) ADD file:busybox-static in / "},
                        {"created": created,
                         "created_by": "/bin/sh -c #(nop) ADD file:stand-in-files in / ",
                         "comment": "berth peer-suites stand-in for %s:%s" % (repository, tag)}],
        })
        manifest = canonical({
            "schemaVersion": 2, "mediaType": MEDIA_MANIFEST,
            "config": {"mediaType": MEDIA_CONFIG, "size": len(config),
                       "digest": registry.blob(repository, config)},
            "layers": [{"mediaType": MEDIA_LAYER, "size": len(packed),
                        "digest": registry.blob(repository, packed)} for _, packed in layers],
        })
        registry.manifest(repository, tag, manifest)
        print("%s:%s %s (image %s)" % (repository.replace("library/", ""), tag, sha256(manifest),
                                       sha256(config)[:19]))


# ------------------------------------------------------------------ results
BUILD_MARK = "POST /build is not implemented"
# The only reason a test Docker passes may be listed as berth's expected failure.
BUILD_REASON = "POST /build"

def test_id(case):
    """pytest's node id from a junit testcase: tests/x/y_test.py::Class::name."""
    classname, name = case.get("classname", ""), case.get("name", "")
    parts = classname.split(".")
    # The module is the longest prefix that names a *_test or test_* module.
    for cut in range(len(parts), 0, -1):
        module = parts[cut - 1]
        if module.endswith("_test") or module.startswith("test_"):
            return "::".join(["/".join(parts[:cut]) + ".py"] + parts[cut:] + [name])
    return "::".join([classname, name])


SECTION = re.compile(r"^_+ (?:ERROR at \w+ of )?(\S+) _+$")


def build_sections(log_path):
    """The names (Class.test or test) of the failure sections of a pytest log whose text
    (traceback and captured output) holds berth's answer to POST /build."""
    names, current, marked = set(), None, False
    try:
        with open(log_path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return names
    for line in lines + ["___ <end> ___"]:
        match = SECTION.match(line)
        if match or line.startswith("=" * 10):
            if current and marked:
                names.add(current)
            current, marked = (match.group(1) if match else None), False
        elif current and BUILD_MARK in line:
            marked = True
    return names


def outcome(case, built):
    for child in case:
        if child.tag in ("failure", "error"):
            message = child.get("message", "")
            # berth's answer to POST /build (berth-api router.rs), in the traceback or the
            # captured output (of the log's section): the test needs the build issue.
            text = "".join(case.itertext())
            section = case.get("classname", "").split(".")[-1] + "." + case.get("name", "")
            if (BUILD_MARK in message or BUILD_MARK in text or section in built
                    or case.get("name", "") in built):
                message = "[needs POST /build] " + message
            return ("failed" if child.tag == "failure" else "error"), message
        if child.tag == "skipped":
            kind = child.get("type", "")
            return ("xfailed" if kind == "pytest.xfail" else "skipped"), child.get("message", "")
    return "passed", ""


def collect(engine, junit_dir, out):
    """One JUnit file per (suite, test file), named SUITE--FILE.xml; FILE.status holds the
    session's exit code (a session that died left no XML or an incomplete one)."""
    results = []
    for name in sorted(os.listdir(junit_dir)):
        if not name.endswith(".status"):
            continue
        stem = name[: -len(".status")]
        suite, _, file = stem.partition("--")
        file = file.replace("+", "/") + ".py"
        with open(os.path.join(junit_dir, name)) as f:
            status = f.read().strip()
        xml = os.path.join(junit_dir, stem + ".xml")
        cases = []
        if os.path.exists(xml):
            try:
                cases = list(ElementTree.parse(xml).getroot().iter("testcase"))
            except ElementTree.ParseError:
                cases = []
        seen = {}
        built = build_sections(os.path.join(junit_dir, stem + ".log"))
        for case in cases:
            result, message = outcome(case, built)
            identity = test_id(case)
            # pytest writes a second testcase for a teardown error of a test that passed or
            # failed: the test's outcome is then the worse one.
            if identity in seen:
                entry = seen[identity]
                if entry["outcome"] == "passed" and result in ("failed", "error"):
                    entry["outcome"], entry["message"] = "error", message[:300]
                continue
            entry = {"suite": suite, "file": file, "test": identity, "outcome": result,
                     "time": round(float(case.get("time") or 0), 2), "message": message[:300]}
            seen[identity] = entry
            results.append(entry)
        if not cases or status not in ("0", "1", "5"):
            # pytest: 0 all passed, 1 some failed, 5 nothing collected; anything else (2
            # interrupted, 3 internal error, 4 usage, 124 timed out) means the file's
            # session did not finish: one entry says so.
            results.append({"suite": suite, "file": file, "test": file + "::<session>",
                            "outcome": "error", "time": 0,
                            "message": "pytest session exited %s" % status})
    document = {"engine": engine, "version": os.environ.get("PEER_ENGINE_VERSION", ""),
                "date": datetime.date.today().isoformat(), "results": results}
    with open(out + ".json", "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
    summary = summarize(document)
    with open(out + "-summary.txt", "w") as f:
        f.write(summary)
    sys.stdout.write(summary)


def counts(results):
    table = {}
    for entry in results:
        row = table.setdefault(entry["suite"], {})
        row[entry["outcome"]] = row.get(entry["outcome"], 0) + 1
    return table


def summarize(document):
    lines = ["peer suites on %s %s, %s" % (document["engine"], document.get("version", ""),
                                            document["date"])]
    total = {}
    for suite, row in sorted(counts(document["results"]).items()):
        lines.append("  %-20s %s" % (suite, format_row(row)))
        for key, value in row.items():
            total[key] = total.get(key, 0) + value
    lines.append("  %-20s %s" % ("total", format_row(total)))
    return "\n".join(lines) + "\n"


def format_row(row):
    order = ["passed", "failed", "error", "skipped", "xfailed"]
    return ", ".join("%d %s" % (row.get(key, 0), key) for key in order
                     if key in row or key in ("passed", "failed", "error"))


def load(path):
    with open(path) as f:
        return json.load(f)


def expected_failures(path):
    """`TEST-ID  reason` lines; # comments and blank lines ignored. A reason is required."""
    listed = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            identity, _, reason = line.partition(" ")
            if not reason.strip():
                raise SystemExit("%s:%d: %s has no reason" % (path, number, identity))
            listed[identity] = reason.strip()
    return listed


def regressions(results_path, reference_path, expected_path, gaps_path):
    """`SUITE TEST-ID` of each test Docker passes that berth did not and no list names."""
    berth, docker = load(results_path), load(reference_path)
    listed = expected_failures(expected_path)
    gaps = expected_failures(gaps_path)
    outcomes = {e["test"]: e for e in berth["results"]}
    for entry in docker["results"]:
        identity = entry["test"]
        if entry["outcome"] != "passed" or identity in listed or identity in gaps:
            continue
        here = outcomes.get(identity)
        if here is None or here["outcome"] == "passed":
            continue
        print("%s %s" % (here["suite"], identity))


def reruns(path):
    """`TEST-ID passed|failed` lines of the reruns (none when the file is absent)."""
    outcomes = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                identity, _, outcome = line.strip().rpartition(" ")
                if identity:
                    outcomes[identity] = outcome
    return outcomes


def check(results_path, reference_path, expected_path, gaps_path, rerun_path=None):
    berth, docker = load(results_path), load(reference_path)
    listed = expected_failures(expected_path)
    # Tests Docker passes and berth does not yet: defects to fix (issue 17), listed so that
    # the check fails on a regression today rather than on every gap until all are fixed.
    gaps = expected_failures(gaps_path)
    berth_outcomes = {e["test"]: e for e in berth["results"]}
    docker_passed = [e["test"] for e in docker["results"] if e["outcome"] == "passed"]
    if os.environ.get("PEER_FILES"):
        # A partial run (peer-suites.sh PEER_FILES=...): only the files it ran count.
        ran = {e["file"] for e in berth["results"]}
        docker_passed = [t for t in docker_passed if t.split("::")[0] in ran]
        print("PEER_FILES=%s: comparing only the %d files that ran" % (os.environ["PEER_FILES"], len(ran)))
    print("docker (%s, reference of %s):" % (reference_path, docker["date"]))
    sys.stdout.write(summarize(docker))
    print("berth (%s):" % results_path)
    sys.stdout.write(summarize(berth))
    docker_outcomes = {e["test"]: e["outcome"] for e in docker["results"]}
    misused = [identity for identity, reason in listed.items()
               if docker_outcomes.get(identity) == "passed" and not reason.startswith(BUILD_REASON)]
    for identity in misused:
        print("LISTED WITHOUT CAUSE %s: Docker passes it and its reason does not start with %r "
              "(only build tests and tests Docker fails here may be listed)"
              % (identity, BUILD_REASON))
    rerun = reruns(rerun_path)
    regressions, allowed, open_gaps, fixed, flaky = [], [], [], [], []
    for identity in docker_passed:
        entry = berth_outcomes.get(identity)
        outcome_here = entry["outcome"] if entry else "missing"
        # A skip is no pass: the suites skip on what the engine reports (API version, info).
        if outcome_here == "passed":
            if identity in listed or identity in gaps:
                fixed.append(identity)
            continue
        if identity in listed:
            allowed.append(identity)
        elif identity in gaps:
            open_gaps.append(identity)
        elif rerun.get(identity) == "passed":
            flaky.append(identity)
        else:
            regressions.append((identity, outcome_here, entry["message"] if entry else ""))
    print("%d tests Docker passes here; berth fails %d of them: %d build tests (%s), "
          "%d open gaps (%s), %d flaky (passed when run again), %d regressions"
          % (len(docker_passed), len(allowed) + len(open_gaps) + len(flaky) + len(regressions),
             len(allowed), expected_path, len(open_gaps), gaps_path, len(flaky),
             len(regressions)))
    for identity in fixed:
        print("now passes, remove it from %s: %s"
              % (expected_path if identity in listed else gaps_path, identity))
    for identity in flaky:
        print("FLAKY %s: failed in the run, passed when run again alone (not a regression)"
              % identity)
    for identity, outcome_here, message in regressions:
        print("REGRESSION %s: %s %s" % (identity, outcome_here, message.splitlines()[0][:200]
                                        if message else ""))
    return 1 if regressions or misused else 0


def reference(results_path, out):
    """Docker's outcomes, one test a line (diffs between two references stay readable)."""
    document = load(results_path)
    lines = [json.dumps({k: e[k] for k in ("suite", "file", "test", "outcome")}, sort_keys=True)
             for e in document["results"]]
    head = {k: v for k, v in document.items() if k != "results"}
    head["made_by"] = "scripts/peer-suites.sh --write-reference docker"
    with open(out + ".tmp", "w") as f:
        f.write(json.dumps(head, sort_keys=True)[:-1] + ', "results": [\n')
        f.write(",\n".join(lines))
        f.write("\n]}\n")
    os.replace(out + ".tmp", out)


def build_failures(results_path, reference_path):
    docker = {e["test"]: e["outcome"] for e in load(reference_path)["results"]}
    for entry in load(results_path)["results"]:
        if (docker.get(entry["test"]) == "passed" and entry["outcome"] in ("failed", "error")
                and entry["message"].startswith("[needs POST /build]")):
            print("%s %s: the test builds an image (issue 18)" % (entry["test"], BUILD_REASON))


def main(argv):
    if len(argv) >= 1 and argv[0] == "images" and len(argv) == 3:
        images(argv[1], argv[2])
    elif len(argv) >= 1 and argv[0] == "collect" and len(argv) == 4:
        collect(argv[1], argv[2], argv[3])
    elif len(argv) >= 1 and argv[0] == "check" and len(argv) in (5, 6):
        return check(*argv[1:])
    elif len(argv) >= 1 and argv[0] == "regressions" and len(argv) == 5:
        regressions(argv[1], argv[2], argv[3], argv[4])
    elif len(argv) >= 1 and argv[0] == "reference" and len(argv) == 3:
        reference(argv[1], argv[2])
    elif len(argv) >= 1 and argv[0] == "build-failures" and len(argv) == 3:
        build_failures(argv[1], argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
