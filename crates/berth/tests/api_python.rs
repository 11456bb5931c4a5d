//! `berth serve` driven by docker-py, the Docker SDK for Python (PyPI's
//! `docker`): tests/api/python/docker_py_suite.py runs its cases against a
//! private server and exits with the number that failed.

#![allow(clippy::unwrap_used)] // integration tests: a failed step is a failed test

#[path = "api/harness.rs"]
mod harness;
#[path = "api/python_env.rs"]
mod python_env;
mod support;

use harness::Server;

#[test]
fn docker_py_suite() {
    let Some(python) = python_env::docker_py_python() else {
        return;
    };
    let Some(server) = Server::start() else {
        return;
    };
    let (code, stdout, stderr) =
        python_env::run_script(&python, "docker_py_suite.py", &server.host(), &[], 300.0);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        code == 0 && stdout.contains("all passed"),
        "docker-py suite failed (exit {code}):\n{stdout}\n{stderr}"
    );
}
