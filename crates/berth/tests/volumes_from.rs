//! `--volumes-from CONTAINER[:ro|rw]` as dockerd does it: the other
//! container's volumes and binds at the same places, its modes kept (or
//! read-only with `:ro`), the container's own mounts first; an anonymous
//! volume two containers mount stays until the last one is removed.
//! The expected mounts are what docker 20.10 showed for the same commands.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

mod support;

use support::Berth;

fn busybox() -> Berth {
    let berth = Berth::new();
    berth.load("busybox-docker.tar");
    berth
}

/// `DESTINATION OPTIONS` of the container's mounts at /b, /n and /anon.
const MOUNTS: &str =
    r#"grep -E " /(b|n|anon) " /proc/mounts | cut -d" " -f2,4 | cut -d, -f1 | sort"#;

#[test]
fn volumes_from_copies_the_mounts_with_their_modes() {
    let berth = busybox();
    let host = tempfile::tempdir().unwrap();
    let bind = format!("{}:/b:ro", host.path().display());
    berth
        .run(&[
            "create",
            "--name",
            "vf-src",
            "-v",
            &bind,
            "-v",
            "vfnamed:/n",
            "-v",
            "/anon",
            "busybox",
            "true",
        ])
        .ok();
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--volumes-from",
            "vf-src",
            "busybox",
            "sh",
            "-c",
            MOUNTS,
        ])
        .ok();
    assert_eq!(out, "/anon rw\n/b ro\n/n rw\n");
    let out = berth
        .run(&[
            "run",
            "--rm",
            "--volumes-from",
            "vf-src:ro",
            "busybox",
            "sh",
            "-c",
            MOUNTS,
        ])
        .ok();
    assert_eq!(out, "/anon ro\n/b ro\n/n ro\n");
    // The same volumes: what one writes the other reads.
    berth
        .run(&[
            "run",
            "--rm",
            "--volumes-from",
            "vf-src",
            "busybox",
            "sh",
            "-c",
            "echo hi > /n/f && echo there > /anon/g",
        ])
        .ok();
    let out = berth
        .run(&["run", "--rm", "-v", "vfnamed:/n", "busybox", "cat", "/n/f"])
        .ok();
    assert_eq!(out, "hi\n");
    // The container's own mount at a copied destination wins.
    let own = format!("{}:/n", host.path().display());
    berth
        .run(&[
            "create",
            "--name",
            "vf-own",
            "--volumes-from",
            "vf-src",
            "-v",
            &own,
            "busybox",
            "true",
        ])
        .ok();
    let mounts = berth
        .run(&[
            "inspect", "-f",
            "{{json .HostConfig.VolumesFrom}} {{range .Mounts}}{{.Type}}:{{.Destination}}:{{.RW}} {{end}}",
            "vf-own",
        ])
        .ok();
    let mut words: Vec<&str> = mounts.split_whitespace().collect();
    words.sort_unstable();
    assert_eq!(
        words,
        [
            "[\"vf-src\"]",
            "bind:/b:false",
            "bind:/n:true",
            "volume:/anon:true"
        ],
        "{mounts}"
    );
    berth.run(&["rm", "vf-own"]).ok();

    // The source's anonymous volume stays while another container mounts it.
    berth
        .run(&[
            "create",
            "--name",
            "vf-user",
            "--volumes-from",
            "vf-src",
            "busybox",
            "cat",
            "/anon/g",
        ])
        .ok();
    let volumes = |berth: &Berth| berth.run(&["volume", "ls", "-q"]).ok().lines().count();
    assert_eq!(volumes(&berth), 2); // vfnamed and the anonymous one
    berth.run(&["rm", "-v", "vf-src"]).ok();
    assert_eq!(volumes(&berth), 2);
    let out = berth.run(&["start", "-a", "vf-user"]).ok();
    assert_eq!(out, "there\n");
    berth.run(&["rm", "-v", "vf-user"]).ok();
    assert_eq!(volumes(&berth), 1);
    berth.run(&["volume", "rm", "vfnamed"]).ok();
}

#[test]
fn bad_volumes_from_is_refused_in_dockers_words_and_makes_nothing() {
    let berth = busybox();
    berth
        .run(&["create", "--name", "vf-src", "busybox", "true"])
        .ok();
    let error = berth
        .run(&[
            "run",
            "--rm",
            "--volumes-from",
            "vf-src:xx",
            "busybox",
            "true",
        ])
        .fails(125);
    assert!(error.contains("invalid mode: xx"), "{error}");
    let error = berth
        .run(&["run", "--rm", "--volumes-from", "nosuch", "busybox", "true"])
        .fails(125);
    assert!(error.contains("No such container: nosuch"), "{error}");
    let all = berth.run(&["ps", "-aq"]).ok();
    assert_eq!(all.lines().count(), 1, "{all}");
    berth.run(&["rm", "vf-src"]).ok();
}
