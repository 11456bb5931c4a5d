"""docker-py (the `docker` package from PyPI) against `berth serve`.

Run by crates/berth/tests/api_python.rs with DOCKER_HOST=unix://... pointing
at a private server that has busybox:latest loaded. No pytest: each
`check_*` function is one case with plain asserts; every case runs, the
failures are printed with their tracebacks, and the exit status is the
number of failed cases (0: all passed).

    python3 docker_py_suite.py [NAME-SUBSTRING ...]
"""

import io
import json
import sys
import tarfile
import time
import traceback

import docker
from docker.errors import APIError, ImageNotFound, NotFound

IMAGE = "busybox:latest"


def client():
    # from_env reads DOCKER_HOST; "auto" negotiates the API version, as the
    # docker CLI does.
    return docker.from_env(version="auto", timeout=60)


def wait_for(what, predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def check_ping_and_version(docker_client):
    assert docker_client.ping() is True
    version = docker_client.version()
    assert version["ApiVersion"] == "1.43", version
    assert version["Os"] == "linux", version
    info = docker_client.info()
    assert info["Driver"] == "overlay", info
    assert info["Images"] >= 1, info


def check_run_detached_list_inspect_logs_stop_remove(docker_client):
    container = docker_client.containers.run(
        IMAGE,
        ["sh", "-c", "echo first; echo to-stderr >&2; sleep 100"],
        detach=True,
        name="pyweb",
        network_mode="none",
        labels={"suite": "docker-py", "case": "run"},
    )
    try:
        assert len(container.id) == 64, container.id
        assert container.name == "pyweb"
        container.reload()
        assert container.status == "running", container.status
        assert container.attrs["Config"]["Labels"]["suite"] == "docker-py"
        assert container.image.tags == [IMAGE], container.image.tags

        listed = docker_client.containers.list()
        assert [c.id for c in listed] == [container.id], listed
        by_label = docker_client.containers.list(filters={"label": "suite=docker-py"})
        assert [c.id for c in by_label] == [container.id], by_label
        assert docker_client.containers.list(filters={"label": "suite=other"}) == []
        by_name = docker_client.containers.list(filters={"name": "pyweb"})
        assert [c.name for c in by_name] == ["pyweb"], by_name
        assert docker_client.containers.get("pyweb").id == container.id

        wait_for("both log lines", lambda: b"to-stderr" in container.logs())
        assert container.logs(stdout=True, stderr=False) == b"first\n"
        assert container.logs(stdout=False, stderr=True) == b"to-stderr\n"
        stamped = container.logs(timestamps=True, stdout=True, stderr=False)
        assert stamped.endswith(b" first\n") and stamped[:4].isdigit(), stamped

        container.stop(timeout=1)
        container.reload()
        assert container.status == "exited", container.status
        assert container.attrs["State"]["ExitCode"] == 137, container.attrs["State"]
        # Stopped ones show with all=True only.
        assert docker_client.containers.list() == []
        assert [c.id for c in docker_client.containers.list(all=True)] == [container.id]
        exited = docker_client.containers.list(all=True, filters={"status": "exited"})
        assert [c.id for c in exited] == [container.id]
    finally:
        container.remove(force=True)
    try:
        docker_client.containers.get("pyweb")
        raise AssertionError("the removed container is still there")
    except NotFound:
        pass


def check_logs_stream_follows_until_exit(docker_client):
    container = docker_client.containers.run(
        IMAGE,
        ["sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.3; done"],
        detach=True,
        network_mode="none",
    )
    try:
        chunks = list(container.logs(stream=True, follow=True))
        assert b"".join(chunks) == b"line 1\nline 2\nline 3\n", chunks
        result = container.wait(timeout=30)
        assert result["StatusCode"] == 0, result
    finally:
        container.remove(force=True)


def check_wait_and_exit_codes(docker_client):
    container = docker_client.containers.run(
        IMAGE, ["sh", "-c", "sleep 0.5; exit 7"], detach=True, network_mode="none"
    )
    try:
        result = container.wait(timeout=30)
        assert result["StatusCode"] == 7, result
        container.reload()
        assert container.attrs["State"]["ExitCode"] == 7
    finally:
        container.remove()

    # run() without detach: the output, or ContainerError with the status.
    output = docker_client.containers.run(
        IMAGE, ["echo", "hello"], remove=True, network_mode="none"
    )
    assert output == b"hello\n", output
    try:
        docker_client.containers.run(
            IMAGE, ["sh", "-c", "echo bad >&2; exit 3"], remove=True, network_mode="none"
        )
        raise AssertionError("exit 3 raised no ContainerError")
    except docker.errors.ContainerError as error:
        assert error.exit_status == 3, error
        assert b"bad" in error.stderr, error.stderr
    try:
        docker_client.containers.run(IMAGE, ["no-such-command"], network_mode="none")
        raise AssertionError("a missing command started")
    except (APIError, docker.errors.ContainerError) as error:
        assert "no-such-command" in str(error), error
    for container in docker_client.containers.list(all=True):
        container.remove(force=True)


def check_exec_run(docker_client):
    container = docker_client.containers.run(
        IMAGE, ["sleep", "100"], detach=True, network_mode="none"
    )
    try:
        result = container.exec_run(["sh", "-c", "echo out; exit 4"])
        assert result.exit_code == 4, result
        assert result.output == b"out\n", result
        result = container.exec_run(
            ["sh", "-c", "echo $GREETING $(pwd); echo err >&2"],
            environment={"GREETING": "hello"},
            workdir="/etc",
            demux=True,
        )
        assert result.exit_code == 0, result
        assert result.output == (b"hello /etc\n", b"err\n"), result
        streamed = container.exec_run(["sh", "-c", "echo a; sleep 0.2; echo b"], stream=True)
        assert b"".join(streamed.output) == b"a\nb\n"
        result = container.exec_run("id -u", user="nobody")
        assert result.output.strip() == b"65534", result
    finally:
        container.remove(force=True)


def check_images_list_get_tag_remove(docker_client):
    images = docker_client.images.list()
    assert [image.tags for image in images] == [[IMAGE]], images
    image = docker_client.images.get(IMAGE)
    assert image.id.startswith("sha256:"), image.id
    assert image.attrs["Os"] == "linux"
    assert docker_client.images.get(image.short_id).id == image.id

    assert image.tag("pybox", "v1") is True
    image.reload()
    assert sorted(image.tags) == [IMAGE, "pybox:v1"], image.tags
    assert len(docker_client.images.list(name="pybox")) == 1
    assert docker_client.images.list(filters={"reference": "pybox:*"})[0].id == image.id
    history = image.history()
    assert history and history[0]["Id"] == image.id, history

    # save (GET /images/get) is a Docker archive with the tag in it.
    archive = b"".join(image.save(named=True))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
    assert manifest[0]["RepoTags"] == [IMAGE], manifest

    docker_client.images.remove("pybox:v1")
    assert docker_client.images.get(IMAGE).tags == [IMAGE]
    try:
        docker_client.images.get("pybox:v1")
        raise AssertionError("the removed tag is still there")
    except ImageNotFound:
        pass

    # Removing the only tag of an image a container uses is refused (409).
    container = docker_client.containers.create(IMAGE, ["true"], network_mode="none")
    try:
        docker_client.images.remove(IMAGE)
        raise AssertionError("an image in use was removed")
    except APIError as error:
        assert error.status_code == 409, error
    finally:
        container.remove()

    # The saved archive loads back (POST /images/load) as the same image.
    image.tag("pybox", "again")
    docker_client.images.remove("pybox:again")
    loaded = docker_client.images.load(archive)
    assert [i.id for i in loaded] == [image.id], loaded


def check_networks_create_list_connect_remove(docker_client):
    network = docker_client.networks.create(
        "pynet", driver="bridge", labels={"suite": "docker-py"}
    )
    try:
        assert len(network.id) == 64
        names = sorted(n.name for n in docker_client.networks.list())
        assert names == ["bridge", "host", "none", "pynet"], names
        found = docker_client.networks.list(filters={"label": "suite=docker-py"})
        assert [n.id for n in found] == [network.id], found
        assert docker_client.networks.list(names=["pynet"])[0].id == network.id
        subnet = network.attrs["IPAM"]["Config"][0]["Subnet"]
        assert subnet.count(".") == 3 and "/" in subnet, network.attrs

        server = docker_client.containers.run(
            IMAGE,
            ["sh", "-c", "mkdir /www && echo served > /www/index.html && httpd -f -p 80 -h /www"],
            detach=True,
            name="pyserver",
            network="pynet",
        )
        # On the default bridge first: Docker refuses to connect a
        # network_mode="none" container to anything else.
        client_container = docker_client.containers.run(
            IMAGE, ["sleep", "100"], detach=True, name="pyclient"
        )
        try:
            network.connect(client_container, aliases=["pyclient-alias"])
            network.reload()
            attached = sorted(c.name for c in network.containers)
            assert attached == ["pyclient", "pyserver"], attached
            client_container.reload()
            assert "pynet" in client_container.attrs["NetworkSettings"]["Networks"]

            server.reload()
            address = server.attrs["NetworkSettings"]["Networks"]["pynet"]["IPAddress"]
            assert address.count(".") == 3, server.attrs["NetworkSettings"]

            # By address: the container started on the default bridge has
            # the host's resolv.conf, not the network's names. (busybox
            # wget's own -T crashes here; `timeout` bounds it instead.)
            def fetch():
                result = client_container.exec_run(
                    ["timeout", "3", "wget", "-qO-", f"http://{address}/index.html"]
                )
                return result.exit_code == 0 and result.output == b"served\n"

            wait_for("the server over the connected network", fetch)
            # By name from a container started on the network.
            by_name = docker_client.containers.run(
                IMAGE,
                ["timeout", "10", "wget", "-qO-", "http://pyserver/index.html"],
                network="pynet",
                remove=True,
            )
            assert by_name == b"served\n", by_name
            network.disconnect(client_container)
            network.reload()
            assert [c.name for c in network.containers] == ["pyserver"]
        finally:
            server.remove(force=True)
            client_container.remove(force=True)
    finally:
        network.remove()
    assert docker_client.networks.list(names=["pynet"]) == []
    try:
        docker_client.networks.get("pynet")
        raise AssertionError("the removed network is still there")
    except NotFound:
        pass


def check_volumes_create_list_use_remove(docker_client):
    volume = docker_client.volumes.create("pyvol", labels={"suite": "docker-py"})
    try:
        assert volume.name == "pyvol"
        assert volume.attrs["Driver"] == "local"
        assert [v.name for v in docker_client.volumes.list()] == ["pyvol"]
        assert [
            v.name for v in docker_client.volumes.list(filters={"label": "suite=docker-py"})
        ] == ["pyvol"]
        assert docker_client.volumes.get("pyvol").attrs["Mountpoint"] == volume.attrs["Mountpoint"]
        docker_client.containers.run(
            IMAGE,
            ["sh", "-c", "echo kept > /data/file"],
            volumes={"pyvol": {"bind": "/data", "mode": "rw"}},
            remove=True,
            network_mode="none",
        )
        read = docker_client.containers.run(
            IMAGE,
            ["cat", "/data/file"],
            volumes=["pyvol:/data:ro"],
            remove=True,
            network_mode="none",
        )
        assert read == b"kept\n", read
        # A volume in use is not removed.
        holder = docker_client.containers.create(
            IMAGE, ["true"], volumes=["pyvol:/data"], network_mode="none"
        )
        try:
            volume.remove()
            raise AssertionError("a volume in use was removed")
        except APIError as error:
            assert error.status_code == 409, error
        finally:
            holder.remove()
    finally:
        volume.remove()
    assert docker_client.volumes.list() == []


def check_errors_are_docker_errors(docker_client):
    try:
        docker_client.containers.get("nosuch")
        raise AssertionError("found a missing container")
    except NotFound as error:
        assert "No such container: nosuch" in str(error), error
    try:
        docker_client.images.get("nosuch:1")
        raise AssertionError("found a missing image")
    except ImageNotFound:
        pass
    try:
        docker_client.containers.create("nosuch:1", ["true"])
        raise AssertionError("created from a missing image")
    except ImageNotFound:
        pass


def check_events_past_and_live(docker_client):
    since = time.time()
    docker_client.containers.run(
        IMAGE, ["true"], name="pyevents", remove=True, network_mode="none"
    )
    volume = docker_client.volumes.create("pyevents-volume")
    volume.remove()
    until = time.time()
    # since/until: the logged events in that window, then the stream ends.
    past = list(docker_client.events(since=since, until=until, decode=True))
    seen = [(event["Type"], event["Action"]) for event in past]
    assert seen == [
        ("container", "create"),
        ("container", "start"),
        ("container", "die"),
        ("container", "destroy"),
        ("volume", "create"),
        ("volume", "destroy"),
    ], seen
    assert past[0]["Actor"]["Attributes"]["name"] == "pyevents", past[0]
    assert past[2]["Actor"]["Attributes"]["exitCode"] == "0", past[2]
    assert all(event["timeNano"] // 10**9 == event["time"] for event in past)
    only_die = list(
        docker_client.events(
            since=since, until=until, decode=True, filters={"event": "die", "type": "container"}
        )
    )
    assert [event["Action"] for event in only_die] == ["die"], only_die

    # Live: a stream without until follows new events until closed.
    stream = docker_client.events(decode=True, filters={"type": "volume"})
    try:
        docker_client.volumes.create("pyevents-live").remove()
        first, second = next(stream), next(stream)
        assert (first["Action"], second["Action"]) == ("create", "destroy"), (first, second)
        assert first["Actor"]["ID"] == "pyevents-live", first
    finally:
        stream.close()


CASES = [value for name, value in list(globals().items()) if name.startswith("check_")]


def main():
    wanted = sys.argv[1:]
    docker_client = client()
    failed = []
    for case in CASES:
        if wanted and not any(word in case.__name__ for word in wanted):
            continue
        started = time.monotonic()
        try:
            case(docker_client)
        except Exception:  # noqa: BLE001 - every failure is reported
            failed.append(case.__name__)
            print(f"FAIL {case.__name__}", flush=True)
            traceback.print_exc()
            # Leave nothing behind for the next case.
            for container in docker_client.containers.list(all=True):
                try:
                    container.remove(force=True)
                except APIError:
                    pass
        else:
            print(f"ok   {case.__name__} ({time.monotonic() - started:.1f}s)", flush=True)
    print(f"{len(failed)} failed: {failed}" if failed else "all passed", flush=True)
    return len(failed)


if __name__ == "__main__":
    sys.exit(main())
