//! `checkpoint` and `restore`: berth has no CRIU integration; said so, never ignored.

pub fn run(verb: &str) -> anyhow::Result<i32> {
    anyhow::bail!("{verb} is not supported by berth (no CRIU checkpoint/restore)")
}
