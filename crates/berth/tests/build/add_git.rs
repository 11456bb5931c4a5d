//! `ADD git://…#ref:subdir`: a repository served by `git daemon` on
//! 127.0.0.1 (the test's own, never the internet): a branch, a tag and a
//! subdirectory checked out without `.git` (kept with `--keep-git-dir`),
//! the cache keyed by the commit the remote names (a push rebuilds, no push
//! is a cache hit), and a missing ref or an unreachable server named.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{berth_with_busybox, cached_steps, context};

/// `git daemon` serving one repository (`repo.git`), killed on drop.
struct GitServer {
    port: u16,
    child: Child,
    directory: tempfile::TempDir,
}

fn git(directory: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(directory)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

impl GitServer {
    /// None (the reason printed) without git's daemon.
    fn start() -> Option<Self> {
        if !Path::new("/usr/lib/git-core/git-daemon").exists() {
            eprintln!("SKIP: git daemon missing (apt-get install git)");
            return None;
        }
        let directory = tempfile::tempdir().unwrap();
        let work = directory.path().join("work");
        fs_err::create_dir_all(work.join("docs")).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        fs_err::write(work.join("README"), "v1\n").unwrap();
        fs_err::write(work.join("docs/guide.txt"), "guide\n").unwrap();
        fs_err::write(work.join("run.sh"), "#!/bin/sh\n").unwrap();
        Command::new("chmod")
            .arg("755")
            .arg(work.join("run.sh"))
            .status()
            .unwrap();
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "one"]);
        git(&work, &["tag", "-a", "v1", "-m", "v1"]);
        let bare = directory.path().join("repo.git");
        let status = Command::new("git")
            .args(["clone", "-q", "--bare"])
            .arg(&work)
            .arg(&bare)
            .status()
            .unwrap();
        assert!(status.success());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let child = Command::new("git")
            .args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--listen=127.0.0.1",
            ])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", directory.path().display()))
            .arg(directory.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "git daemon did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self {
            port,
            child,
            directory,
        })
    }

    fn url(&self) -> String {
        format!("git://127.0.0.1:{}/repo.git", self.port)
    }

    /// A new commit on `main` that changes README.
    fn push(&self, readme: &str) {
        let work = self.directory.path().join("work");
        fs_err::write(work.join("README"), readme).unwrap();
        git(&work, &["commit", "-q", "-am", "next"]);
        let bare = self.directory.path().join("repo.git");
        git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
    }
}

impl Drop for GitServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn add_of_a_git_repository_checks_out_the_ref_and_caches_by_commit() {
    let Some(server) = GitServer::start() else {
        return;
    };
    let berth = berth_with_busybox();
    let url = server.url();
    let dockerfile = format!(
        "FROM busybox\nADD {url}#main /src\nADD {url}#v1:docs /guide\n\
         ADD --keep-git-dir=true {url} /kept\nRUN cat /src/README\n"
    );
    let directory = context(&[("Dockerfile", &dockerfile)]);
    let path = directory.path().to_str().unwrap();
    let build = berth.run(&["build", "--progress", "plain", "-t", "from-git", path]);
    assert_eq!(build.code(), 0, "{}", build.stderr());
    let show = |command: &str| {
        berth
            .run(&["run", "--rm", "from-git", "sh", "-c", command])
            .ok()
    };
    assert_eq!(show("cat /src/README /guide/guide.txt"), "v1\nguide\n");
    assert_eq!(show("ls -A /src"), "README\ndocs\nrun.sh\n");
    assert_eq!(show("ls -A /guide"), "guide.txt\n");
    assert_eq!(
        show("stat -c '%a %u:%g' /src/run.sh /src/README"),
        "755 0:0\n644 0:0\n"
    );
    assert_eq!(show("test -d /kept/.git && echo kept"), "kept\n");

    // Nothing pushed: every step from the cache.
    let again = berth.run(&["build", "--progress", "plain", "-t", "from-git", path]);
    assert_eq!(again.code(), 0, "{}", again.stderr());
    assert_eq!(cached_steps(&again.stderr()).len(), 4, "{}", again.stderr());
    // A push to main: the first ADD's commit changed, so it and every step
    // after it rebuild.
    server.push("v2\n");
    let pushed = berth.run(&["build", "--progress", "plain", "-t", "from-git", path]);
    assert_eq!(pushed.code(), 0, "{}", pushed.stderr());
    assert!(
        cached_steps(&pushed.stderr()).is_empty(),
        "{}",
        pushed.stderr()
    );
    assert_eq!(show("cat /src/README /kept/README"), "v2\nv2\n");

    for (bad, words) in [
        (
            format!("{url}#nosuchref"),
            "no ref \"nosuchref\" in the repository",
        ),
        (
            format!("{url}#main:nosuchdir"),
            "no directory \"nosuchdir\"",
        ),
        (
            "git://127.0.0.1:1/repo.git".to_owned(),
            "failed to resolve git://127.0.0.1:1/repo.git",
        ),
    ] {
        let bad_file = context(&[("Dockerfile", &format!("FROM busybox\nADD {bad} /x\n"))]);
        let failed = berth.run(&["build", bad_file.path().to_str().unwrap()]);
        assert_eq!(failed.code(), 1, "{bad}: {}", failed.stderr());
        assert!(
            failed.stderr().contains(words),
            "{bad}: {}",
            failed.stderr()
        );
    }
    assert_eq!(berth.run(&["ps", "-aq"]).ok(), "");
    let downloads = berth.root().join("build-downloads");
    let left: Vec<_> = fs_err::read_dir(&downloads)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
