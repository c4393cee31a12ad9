//! Fuzz target: a generated test case (from libFuzzer's bytes) goes through every stage —
//! the reference interpreter, the interpreter after every IR pass, and the x86 code
//! without and with the passes in the emulator — and every stage must agree. The check
//! lives in `tandem_oracle::campaign::check_test_case_stages`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tandem_oracle::campaign::check_test_case_stages;
use tandem_oracle::gen::TestCase;

fuzz_target!(|case: TestCase| {
    if let Err(e) = check_test_case_stages(&case) {
        panic!("{e}\n{}", case.case.print());
    }
});
