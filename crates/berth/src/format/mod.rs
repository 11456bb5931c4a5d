//! Output formatting shared by the `berth` commands, matching the docker CLI: Go-style
//! `--format` templates, tables aligned like Go's tabwriter, and go-units sizes and
//! durations.

pub mod gofmt;
pub mod table;
pub mod tabwriter;
pub mod template;
pub mod units;

pub use table::render_rows;
pub use template::Template;
