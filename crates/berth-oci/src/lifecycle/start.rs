//! `start`: opens the exec FIFO the created container's init waits on, reads its byte (the
//! init then execs the program), removes the FIFO (the container is `running` from then on),
//! runs the poststart hooks.

use fs_err::os::unix::fs::OpenOptionsExt;
use std::io::Read;
use std::os::fd::AsFd;
use std::time::Duration;

use crate::error::{OciError, Result};
use crate::hooks;
use crate::state::Status;
use crate::store::Store;

pub fn start(store: &Store, id: &str) -> Result<()> {
    let (_lock, record) = store.lock(id)?;
    match store.status_held(&record) {
        Status::Created => {}
        Status::Stopped => {
            return Err(OciError::WrongState(
                "cannot start a container that has stopped".to_owned(),
            ))
        }
        _ => {
            return Err(OciError::WrongState(
                "cannot start an already running container".to_owned(),
            ))
        }
    }
    let path = store.exec_fifo(id);
    let mut fifo = fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(OciError::io("open the exec fifo", &path))?
        .into_parts()
        .0;
    let mut byte = [0u8; 1];
    loop {
        match fifo.read(&mut byte) {
            Ok(1) => break,
            // No writer yet (0) or nothing written yet (EAGAIN): the init is on its way to
            // the FIFO, unless it died.
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(OciError::io("read the exec fifo", &path)(error)),
        }
        if !record.init_alive() {
            return Err(OciError::WrongState(
                "cannot start a container that has stopped".to_owned(),
            ));
        }
        let mut poll = [nix::poll::PollFd::new(
            fifo.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        let _ = nix::poll::poll(&mut poll, nix::poll::PollTimeout::from(10u8));
        std::thread::sleep(Duration::from_micros(100));
    }
    drop(fifo);
    // runc 1.1 runs poststart hooks before it removes the FIFO, so they see `created`;
    // hooks written against runc get the same.
    let poststart = record.config.hooks.clone().unwrap_or_default().poststart;
    let hooked = hooks::run("poststart", &poststart, &record.state(Status::Created));
    fs_err::remove_file(&path).map_err(OciError::io("remove the exec fifo", &path))?;
    if let Err(error) = hooked {
        // runc's rule: a failing poststart hook ends the container.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(record.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        return Err(error);
    }
    Ok(())
}
