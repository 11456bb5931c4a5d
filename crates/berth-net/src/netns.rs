//! Doing something inside another network namespace without moving the
//! calling thread: a short-lived thread enters the namespace and runs the
//! closure there. Sockets it creates keep that namespace for their life.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error("failed to enter the network namespace")]
    Enter(#[source] nix::Error),
    #[error("failed to duplicate the namespace descriptor")]
    Duplicate(#[source] std::io::Error),
    #[error("the thread working in the namespace panicked")]
    Panicked,
}

/// Runs `work` in a thread that first joins the network namespace `netns`.
pub fn in_netns<T: Send + 'static>(
    netns: BorrowedFd<'_>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NetnsError> {
    let netns: OwnedFd = netns.try_clone_to_owned().map_err(NetnsError::Duplicate)?;
    std::thread::spawn(move || {
        nix::sched::setns(netns.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(NetnsError::Enter)?;
        Ok(work())
    })
    .join()
    .map_err(|_| NetnsError::Panicked)?
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn work_runs_in_the_other_namespace_and_the_caller_stays() {
        let own = fs_err::read_link("/proc/thread-self/ns/net").unwrap();
        // A namespace of the test's own, made by a thread that keeps it open.
        let other = std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            fs_err::File::open("/proc/thread-self/ns/net").unwrap()
        })
        .join()
        .unwrap();
        let seen = in_netns(other.as_fd(), || {
            fs_err::read_link("/proc/thread-self/ns/net").unwrap()
        })
        .unwrap();
        assert_ne!(seen, own);
        assert_eq!(fs_err::read_link("/proc/thread-self/ns/net").unwrap(), own);
    }
}
