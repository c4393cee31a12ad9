//! Fuzz target: a generated test case (from libFuzzer's bytes) verifies, round-trips
//! through print and parse, and runs deterministically in the reference interpreter.
//! The check lives in `tandem_oracle::gen::check_test_case`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tandem_oracle::gen::{check_test_case, TestCase};

fuzz_target!(|case: TestCase| {
    if let Err(e) = check_test_case(&case) {
        panic!("{e}\n{}", case.case.print());
    }
});
