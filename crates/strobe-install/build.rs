//! Sets `strobe_root` when the crate is built as root, for the unit test
//! that needs root to chown: libtest cannot mark a test ignored at run
//! time, and a test that returned early would count as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(strobe_root)");
    // Nothing else is watched: who builds rarely changes, and a test built
    // as root and run as another user fails loudly.
    println!("cargo::rerun-if-changed=build.rs");
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        println!("cargo::rustc-cfg=strobe_root");
    }
}
