//! The release link's code ordering (hack/link-ordered.sh, hack/release-link.rs): the functions
//! a `text-order.keys` file names, hashes removed, end up first in the text, in the keys' order;
//! without the wrapper the same arguments still link, with only the names that carry no hash
//! (C functions) placed.
//!
//! Real parts: the machine's `cc` and `nm`, the linker rustc links release binaries with (its
//! own LLD) and the wrapper script itself. No network.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A C file whose functions carry the names Rust gives (legacy mangling with a hash) or plain C
/// names, each in its own section as rustc and aws-lc's build emit them.
const SOURCE: &str = r#"
void cold_first(void) { __asm__ volatile("nop"); }
void hot_c_function(void) { __asm__ volatile("nop"); }
void cold_second(void) { __asm__ volatile("nop"); }
void hot_rust_function(void) __asm__("_ZN4demo3hot17h0123456789abcdefE");
void hot_rust_function(void) { __asm__ volatile("nop"); }
void cold_third(void) { __asm__ volatile("nop"); }
int main(void) { cold_first(); hot_c_function(); cold_second(); hot_rust_function(); cold_third(); return 0; }
"#;

/// The keys as hack/text-order-keys.sh writes them: the Rust name without its hash, then a C
/// name, then a name this binary does not have.
const KEYS: &str = "_ZN4demo3hotE\nhot_c_function\n_ZN4demo7missingE\n";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// rustc's bundled LLD, as `cc -fuse-ld=lld` finds it.
fn rust_lld_dir() -> PathBuf {
    let sysroot = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let sysroot = String::from_utf8(sysroot.stdout).expect("utf-8");
    Path::new(sysroot.trim()).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld")
}

fn run(command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Text addresses of the symbols `nm` lists for `binary`.
fn addresses(binary: &Path) -> std::collections::HashMap<String, u64> {
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(binary)
        .output()
        .expect("nm");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let address = u64::from_str_radix(parts.next()?, 16).ok()?;
            let kind = parts.next()?;
            let name = parts.next()?;
            matches!(kind, "t" | "T").then(|| (name.to_string(), address))
        })
        .collect()
}

/// Links `object` into `output` with `linker` and the arguments hack/release-link.rs adds.
fn link(linker: &Path, object: &Path, keys: &Path, output: &Path) {
    let mut lld = std::ffi::OsString::from("-B");
    lld.push(rust_lld_dir());
    let mut ordering = std::ffi::OsString::from("-Wl,--symbol-ordering-file=");
    ordering.push(keys);
    run(Command::new(linker)
        .arg("-fuse-ld=lld")
        .arg(lld)
        .arg(object)
        .arg("-o")
        .arg(output)
        .arg(ordering)
        .arg("-Wl,--no-warn-symbol-ordering"));
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn the_functions_the_keys_name_come_first_in_their_order_whatever_their_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("demo.c");
    let object = dir.path().join("demo.o");
    let keys = dir.path().join("text-order.keys");
    std::fs::write(&source, SOURCE).expect("write the source");
    std::fs::write(&keys, KEYS).expect("write the keys");
    run(Command::new("cc")
        .args(["-c", "-O1", "-ffunction-sections"])
        .arg(&source)
        .arg("-o")
        .arg(&object));

    let ordered = dir.path().join("ordered");
    link(
        &repository_root().join("hack/link-ordered.sh"),
        &object,
        &keys,
        &ordered,
    );
    let at = addresses(&ordered);
    let rust = at["_ZN4demo3hot17h0123456789abcdefE"];
    let c = at["hot_c_function"];
    assert!(rust < c, "the first key is placed first: {at:?}");
    for cold in ["cold_first", "cold_second", "cold_third", "main"] {
        assert!(
            c < at[cold],
            "{cold} comes after the keyed functions: {at:?}"
        );
    }
    assert!(
        !dir.path().join("ordered.text-order").exists(),
        "the wrapper removes the ordering file it wrote"
    );

    // Without the wrapper the link still succeeds; a key without its hash matches nothing.
    let plain = dir.path().join("plain");
    link(Path::new("cc"), &object, &keys, &plain);
    let at = addresses(&plain);
    assert!(
        at["cold_first"] < at["_ZN4demo3hot17h0123456789abcdefE"],
        "the Rust function stays in source order: {at:?}"
    );
}
