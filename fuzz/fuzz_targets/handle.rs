//! `toolgate_runtime::fuzzing::handle`: what it asserts is documented there.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| toolgate_runtime::fuzzing::handle(bytes));
