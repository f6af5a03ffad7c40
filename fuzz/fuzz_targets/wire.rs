//! `toolgate_runtime::fuzzing::wire`: what it asserts is documented there.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| toolgate_runtime::fuzzing::wire(bytes));
