//! `berth container …` and the top-level `run`/`create`/`ps`/….

pub mod attach;
pub mod attach_command;
pub mod changes;
pub mod commit;
pub mod copy;
mod detach;
pub mod exec;
pub mod inspect;
pub mod lifecycle;
pub mod list;
pub mod logs;
pub mod options;
mod pty;
pub mod run;
pub mod top;
