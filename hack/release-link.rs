//! Build script of the two controller binaries: how their release builds are linked.
//!
//! Input: cargo's `PROFILE` and target. Output: linker arguments for the crate's binaries only.
//! No network, no files.
//!
//! Release builds on glibc targets pack their relative relocations (`DT_RELR`): a
//! position-independent executable keeps its address randomisation, but the 24,000 relocations
//! the loader reads at start take a few kilobytes of the file instead of 580 KB, which stayed
//! resident for the process's life (docs/performance/issue-27.md, fifteenth step). glibc 2.36 or
//! later loads such a binary; the images carry the build host's glibc.
//!
//! Release builds of a crate with a `text-order.keys` file also name it as the symbol ordering
//! file: hack/link-ordered.sh (the linker .cargo/config.toml names) turns its keys into this
//! link's symbols, so the functions that run sit together at the start of the text and fewer
//! 64 KiB windows of code become resident (issue 27, twenty-third step). Debug and test builds
//! are linked as before.

fn main() {
    println!("cargo:rerun-if-changed=../hack/release-link.rs");
    println!("cargo:rerun-if-env-changed=OLM_LINK_PLAIN_RELOCATIONS");
    let release = std::env::var("PROFILE").as_deref() == Ok("release");
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    // For a host whose glibc predates 2.36.
    let plain = std::env::var_os("OLM_LINK_PLAIN_RELOCATIONS").is_some();
    if release && linux_gnu && !plain {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let keys = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("text-order.keys");
    let has_keys = keys.is_file();
    // Only an existing file: a missing one would run this script again on every build (adding
    // keys to a crate without them means touching this file once).
    if has_keys {
        println!("cargo:rerun-if-changed={}", keys.display());
    }
    if release && linux_gnu && has_keys {
        // Without the wrapper the linker reads the keys as symbol names: it places the C
        // functions (their names carry no hash), matches no Rust function and, told so, does
        // not warn about the keys it cannot find.
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            keys.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
