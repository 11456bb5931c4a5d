//! The two halves of a container that runs in a microVM (berth-vm), which
//! reuse this runtime's own steps so that a VM container gets the same
//! settings as a namespace one, applied twice (defence in depth, as Kata):
//!
//! - on the host, [`arrange_shared_root`] builds the tree the guest gets
//!   over virtio-fs: the overlay root with the per-container `/etc` files
//!   and the user's mounts on it, in the caller's private mount namespace
//!   (so they vanish with the processes that serve it);
//! - in the guest, [`enter_guest_container`] runs in the child the agent
//!   cloned into new pid and mount namespaces: a `/proc` of its own,
//!   `chroot` into the shared root, hostname, masked and read-only paths,
//!   then limits, identity, capabilities, no_new_privs and seccomp, and
//!   `execve`.

use std::os::fd::OwnedFd;
use std::path::Path;

use super::{exec, mounts, InitFailure, InitResult};
use crate::spec::ContainerSpec;

/// Mounts `spec`'s root at `spec.rootfs` with its `/etc` files and user
/// mounts, without `/proc`, `/sys` or `/dev` (the guest mounts its own) and
/// without `pivot_root`. The caller must be in a mount namespace of its own
/// (`unshare(CLONE_NEWNS)`): propagation is made private first.
pub fn arrange_shared_root(spec: &ContainerSpec) -> Result<(), InitFailure> {
    mounts::private_propagation()?;
    arrange_shared_root_in_private_namespace(spec)
}

/// [`arrange_shared_root`] where the caller made its mount namespace's
/// propagation private itself, earlier, and keeps a shared mount of its own
/// there that must stay shared (a warm VM member's share, which its
/// virtiofsd receives the claimed root through).
pub fn arrange_shared_root_in_private_namespace(spec: &ContainerSpec) -> Result<(), InitFailure> {
    mounts::prepare_shared_root(spec)?;
    mounts::apply_user_mounts(spec)?;
    if spec.readonly_rootfs {
        mounts::remount_bind_readonly(&spec.rootfs)?;
    }
    Ok(())
}

/// Makes the caller's (new) mount namespace's propagation private: nothing
/// mounted in it reaches the namespace it was copied from.
pub fn make_mounts_private() -> Result<(), InitFailure> {
    mounts::private_propagation()
}

/// In the guest: enters the container whose root the agent mounted at
/// `root` and execs its process; returns only why it could not.
/// With `console` (`-t`), the process gets a terminal made in the
/// container's devpts, whose master goes to the agent over that socket.
pub fn enter_guest_container(
    spec: &ContainerSpec,
    root: &Path,
    console: Option<&OwnedFd>,
) -> InitFailure {
    match enter(spec, root, console) {
        Ok(never) => match never {},
        Err(failure) => failure,
    }
}

fn enter(spec: &ContainerSpec, root: &Path, console: Option<&OwnedFd>) -> InitResult<super::Never> {
    super::set_container_umask();
    super::reset_signals();
    mounts::private_propagation()?;
    // The agent's /proc there shows the whole guest; this pid namespace's
    // own goes over it.
    mounts::mount_proc(&root.join("proc"))?;
    nix::unistd::chroot(root).map_err(|error| InitFailure::nix("chroot", error))?;
    nix::unistd::chdir("/").map_err(|error| InitFailure::nix("chdir to /", error))?;
    if !spec.hostname.is_empty() {
        nix::unistd::sethostname(&spec.hostname)
            .map_err(|error| InitFailure::nix("sethostname", error))?;
    }
    super::set_domainname(&spec.domainname)?;
    // `--read-only` was applied on the host (the share is a read-only
    // bind): the masks come on top of it here.
    let in_guest = ContainerSpec {
        readonly_rootfs: false,
        ..spec.clone()
    };
    mounts::after_pivot(&in_guest)?;
    if let Some(console) = console {
        let slave = super::terminal(console, true, spec.process.console_size)?;
        super::set_stdio(&slave, &slave, &slave, true)?;
    }
    exec::finish_and_exec(&spec.process, None)
}
