//! The namespace container runtime: seccomp, cgroups, and (coming) the
//! clone3/pivot_root/exec path and the per-container monitor.

pub mod cgroups;
pub mod seccomp;
