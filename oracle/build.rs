//! Link arguments of the `tandem` command: every `mmap64` call linked into it goes
//! through its `__wrap_mmap64` (`src/main.rs`), which maps Unicorn's translation buffer
//! just below the command's code, where translated code reaches Unicorn's helpers by
//! direct calls (`exec::emu::mmap_for_unicorn` says why). The library and its tests
//! link Unicorn as it is.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,--wrap=mmap64");
    }
}
