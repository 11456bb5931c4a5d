//! A Python virtual environment with docker-py (the `docker` package from
//! PyPI), made once under the target directory and reused by later runs.
#![allow(dead_code, clippy::unwrap_used)] // test support: a failed step is a failed test

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What the environment holds; a change here makes a fresh one.
const REQUIREMENT: &str = "docker>=7,<8";

/// The Python that makes the environment: `$BERTH_TEST_PYTHON`, else
/// Debian's /usr/bin/python3 (its venv module is the `python3-venv`
/// package), else `python3` on PATH. None (with the reason printed) when
/// there is none.
pub fn system_python() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BERTH_TEST_PYTHON") {
        return Some(PathBuf::from(path));
    }
    let debian = Path::new("/usr/bin/python3");
    if debian.exists() {
        return Some(debian.to_owned());
    }
    let found = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if found {
        Some(PathBuf::from("python3"))
    } else {
        eprintln!("SKIP: no python3 (set BERTH_TEST_PYTHON)");
        None
    }
}

/// The environment's python, with docker-py installed; made on first use
/// (`python3 -m venv`, then `pip install docker`), under a lock so that
/// parallel test processes make it once.
pub fn docker_py_python() -> Option<PathBuf> {
    let python = system_python()?;
    let directory = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docker-py-venv");
    let marker = directory.join("berth-requirement.txt");
    let lock = fs_err::File::create(directory.with_extension("lock"))
        .unwrap()
        .into_file();
    let _guard = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let venv_python = directory.join("bin/python");
    if fs_err::read_to_string(&marker).is_ok_and(|text| text == REQUIREMENT) && venv_python.exists()
    {
        return Some(venv_python);
    }
    let _ = fs_err::remove_dir_all(&directory);
    let venv = Command::new(&python)
        .args(["-m", "venv"])
        .arg(&directory)
        .output()
        .unwrap();
    assert!(
        venv.status.success(),
        "`{} -m venv` failed (on Debian: apt-get install python3-venv):\n{}",
        python.display(),
        String::from_utf8_lossy(&venv.stderr)
    );
    let pip = Command::new(&venv_python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            REQUIREMENT,
        ])
        .output()
        .unwrap();
    assert!(
        pip.status.success(),
        "`pip install {REQUIREMENT}` failed (PyPI unreachable?):\n{}{}",
        String::from_utf8_lossy(&pip.stdout),
        String::from_utf8_lossy(&pip.stderr)
    );
    fs_err::write(&marker, REQUIREMENT).unwrap();
    Some(venv_python)
}

/// A script under crates/berth/tests/api/python/.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/api/python")
        .join(name)
}

/// Runs a script of tests/api/python/ with `DOCKER_HOST` at `host`; kills
/// it after `seconds`. Returns (exit code, stdout, stderr).
pub fn run_script(
    python: &Path,
    name: &str,
    host: &str,
    args: &[&str],
    seconds: f64,
) -> (i32, String, String) {
    let mut child = Command::new(python)
        .arg(script(name))
        .args(args)
        .env("DOCKER_HOST", host)
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("DOCKER_TLS_VERIFY")
        .env_remove("DOCKER_CERT_PATH")
        .env_remove("DOCKER_API_VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let status = crate::support::containers::wait_child(&mut child, seconds, name);
    (
        status.code().unwrap_or(-1),
        stdout.join().unwrap(),
        stderr.join().unwrap(),
    )
}
