//! The text parsers behind query values: `filters` JSON, reference globs,
//! versioned paths, percent-decoding, query strings, durations.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    berth_api::fuzzing::check_text_inputs(data);
});
