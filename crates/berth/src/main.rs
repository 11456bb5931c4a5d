//! The `berth` command line.
mod format;
fn main() {}
