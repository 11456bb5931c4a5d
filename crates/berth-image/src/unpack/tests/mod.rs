//! Unpack tests. They build layers with the `tar` crate (and by hand where it refuses a
//! hostile name) and need root for chown, mknod and `trusted.*` xattrs.

mod digests;
mod entries;
mod hostile;
mod support;
mod whiteouts;

/// Callers wrap `UnpackError` in their own errors; past 128 bytes clippy's
/// `result_large_err` fires on every function returning them.
#[test]
fn unpack_error_stays_small() {
    assert!(std::mem::size_of::<crate::unpack::UnpackError>() <= 64);
}
