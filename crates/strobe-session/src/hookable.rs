//! Which functions trace patterns may hook.
//!
//! Strobe's hook runs inside the target on every traced call, and it calls a
//! few libc functions itself: the thread's state (`pthread_getspecific`), the
//! clock, an allocation on a thread's first call, `process_vm_readv` for
//! captured memory. Hooking one of those makes the hook enter itself until the
//! stack overflows, which kills the target with no crash report (this is what
//! `debug_trace {add: ["**"]}` did to a running C program). The dynamic loader
//! is used by Frida and by the unwinder under locks of its own. So:
//!
//! - the loader is never hooked, and neither are the hook's own libc
//!   functions (by address, so their aliases are covered too);
//! - patterns that *start* with a wildcard (`**`, `*`, `**::name`) do not
//!   reach system libraries (`/lib`, `/usr/lib`, …): an agent asking for
//!   "everything" means its program, not thousands of C runtime functions. A
//!   library function is still traced when named (`fopen`) or matched by a
//!   literal prefix (`sqlite3_*`).

use std::collections::HashSet;
use std::path::Path;
use strobe_symbols::{Pattern, SymbolIndex, Token};

/// Functions the hook itself calls (see the CModule in
/// `agent/src/tracers/native/cmodule.ts`) and what they call in turn.
pub const HOOK_PATH_FUNCTIONS: &[&str] = &[
    "pthread_getspecific",
    "pthread_setspecific",
    "clock_gettime",
    "gettid",
    "getpid",
    "sched_yield",
    "process_vm_readv",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "mmap",
    "mmap64",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "brk",
    "sbrk",
    // glibc's allocator inside (named where a symbol table lists them).
    "int_malloc",
    "int_free",
    "int_realloc",
    "sysmalloc",
    "malloc_consolidate",
    "tcache_init",
    "arena_get2",
    "default_morecore",
    "lll_lock_wait_private",
    "lll_lock_wake_private",
];

/// True for the dynamic loader (`ld-linux-x86-64.so.2`, `ld-2.31.so`, …).
pub fn is_loader(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("ld-linux") || (n.starts_with("ld-") && n.contains(".so")))
}

/// True for a library installed in the system's library directories.
pub fn is_system_library(path: &Path) -> bool {
    [
        "/lib/",
        "/lib64/",
        "/usr/lib/",
        "/usr/lib64/",
        "/lib32/",
        "/usr/lib32/",
    ]
    .iter()
    .any(|dir| path.starts_with(dir))
}

/// True when a pattern begins with a wildcard, so it names no library.
pub fn starts_with_wildcard(pattern: &Pattern) -> bool {
    match pattern {
        Pattern::Glob { tokens, .. } => matches!(
            tokens.first(),
            Some(Token::Star | Token::GlobStar | Token::Segments)
        ),
        Pattern::UserCode | Pattern::File(_) => false,
    }
}

/// Entry offsets in `index` that must never be hooked: the functions named
/// in [`HOOK_PATH_FUNCTIONS`], also under their internal names (`__mmap`,
/// `__libc_malloc`), wherever the index lists them.
pub fn hook_path_offsets(index: &SymbolIndex) -> HashSet<u64> {
    index
        .functions
        .iter()
        .filter(|f| is_hook_path_name(&f.name))
        .map(|f| f.entry_offset)
        .collect()
}

fn is_hook_path_name(name: &str) -> bool {
    let bare = name.trim_start_matches('_');
    let bare = bare.strip_prefix("libc_").unwrap_or(bare);
    HOOK_PATH_FUNCTIONS.contains(&bare)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaders_and_system_libraries_are_recognised() {
        assert!(is_loader(Path::new("/lib64/ld-linux-x86-64.so.2")));
        assert!(is_loader(Path::new("/usr/lib/ld-2.31.so")));
        assert!(!is_loader(Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6")));
        assert!(!is_loader(Path::new("/home/me/build/ld-helper")));
        assert!(is_system_library(Path::new(
            "/usr/lib/x86_64-linux-gnu/libc.so.6"
        )));
        assert!(is_system_library(Path::new(
            "/lib/x86_64-linux-gnu/libm.so.6"
        )));
        assert!(!is_system_library(Path::new("/home/me/proj/libfoo.so")));
    }

    #[test]
    fn internal_names_of_the_hook_path_are_recognised() {
        for n in [
            "malloc",
            "__libc_malloc",
            "__mmap",
            "__pthread_getspecific",
            "clock_gettime",
        ] {
            assert!(is_hook_path_name(n), "{n}");
        }
        for n in ["fopen", "malloc_trim", "my_malloc", "__libc_start_main"] {
            assert!(!is_hook_path_name(n), "{n}");
        }
    }

    #[test]
    fn only_patterns_starting_with_a_wildcard_skip_system_libraries() {
        let p = |t: &str| starts_with_wildcard(&Pattern::parse(t).unwrap());
        assert!(p("**"));
        assert!(p("*"));
        assert!(p("**::**::**"));
        assert!(p("**::validate"));
        assert!(p("*_alloc"));
        assert!(!p("sqlite3_*"));
        assert!(!p("fopen"));
        assert!(!p("std::**"));
        assert!(!p("@usercode"));
    }
}
