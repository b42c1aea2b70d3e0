#![no_main]
//! See `poll::fuzz::flags`: the body is a function of the crate, run on the seeds by `cargo test`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| poll::fuzz::flags(data));
