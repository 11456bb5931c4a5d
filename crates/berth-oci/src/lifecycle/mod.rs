//! runc's lifecycle, one file per operation: `create` leaves the init waiting at its exec
//! FIFO, `start` lets it exec, `kill`, `delete`, `exec`, `pause`/`resume`, `update`.
//! Every operation on an existing container holds its lock (`store`).

mod create;
mod delete;
mod exec;
mod kill;
mod pause;
mod start;
mod stdio;
mod update;

pub use create::{create, CreateOptions, Created};
pub use delete::delete;
pub use exec::{exec, ExecOptions};
pub use kill::{kill, parse_signal};
pub use pause::{pause, resume};
pub use start::start;
pub use stdio::{StdioSource, Terminal};
pub use update::update;

use std::time::{Duration, Instant};

use crate::state::Record;

/// Waits up to `limit` for the container's init to be gone (or a zombie).
pub(crate) fn wait_gone(record: &Record, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while record.init_alive() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}
