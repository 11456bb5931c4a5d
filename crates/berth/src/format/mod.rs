//! Output formatting shared by the `berth` commands, matching the docker CLI: Go-style
//! `--format` templates, tables aligned like Go's tabwriter, and go-units sizes and
//! durations.

// Size parsing (`--memory 512m`) and ListFormat methods serve `run` and `ps`,
// which land with the runtime; until then some items have no caller.
#![allow(dead_code)]

pub mod gofmt;
pub mod table;
pub mod tabwriter;
pub mod template;
pub mod units;

pub use table::render_rows;
pub use template::Template;
