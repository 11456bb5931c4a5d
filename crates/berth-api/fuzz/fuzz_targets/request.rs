//! Request heads and bodies as a connection reads them (pipelined,
//! chunked, any arrival pattern): no panic, and the invariants of
//! `berth_api::fuzzing::check_requests`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    berth_api::fuzzing::check_requests(data);
});
