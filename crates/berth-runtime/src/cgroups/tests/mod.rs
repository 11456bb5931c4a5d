//! Tests of both managers: on a fake cgroupfs directory (exact files and values written), and
//! on this machine's kernel as root (v1 hierarchies, and a cgroup2 mount of our own).

mod fake_tree;
mod kernel;
mod kernel_devices;
mod kernel_v1;
mod kernel_v2;
mod v1_fake;
mod v2_fake;
