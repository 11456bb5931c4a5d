//! The namespace container runtime: clone3 into new namespaces, overlayfs
//! root, pivot_root, Docker's mounts, capabilities, seccomp, cgroups, and
//! the exec path. The engine's monitor process drives it.

pub mod backend;
pub mod capabilities;
pub mod cgroups;
pub mod clone;
pub mod console;
pub mod devices;
pub mod exec;
pub mod handoff;
pub mod in_root;
pub mod init;
pub mod launch;
pub mod rootfs;
pub mod sealed_exe;
pub mod seccomp;
pub mod spec;
pub mod user;

pub use backend::{ContainerRef, NamespaceRuntime, NetworkIo, ProcessTable, Runtime, RuntimeError};
pub use launch::{launch, wait_exit_code, LaunchError, Launched, Sandbox, Stdio};
pub use spec::{ContainerSpec, MountKind, MountSpec, NetworkMode, ProcessSpec, Rlimit};
