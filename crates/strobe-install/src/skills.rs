//! Strobe's skills for agents that read them (a folder per skill with a
//! `SKILL.md`): how to debug with Strobe, and test-first bug fixing. A file
//! the installer wrote carries [`MARK`]; one without it is the person's and
//! is never overwritten or removed.

/// The line that says a skill file is Strobe's.
pub(crate) const MARK: &str =
    "<!-- installed by `strobe install`; `strobe install --uninstall` removes it -->";

/// (folder name, `SKILL.md` content) of each skill.
pub(crate) fn skills() -> [(&'static str, String); 2] {
    [
        (
            "strobe-debugging",
            format!("{DEBUGGING_HEAD}{MARK}\n{DEBUGGING_BODY}"),
        ),
        ("strobe-tdd", format!("{TDD_HEAD}{MARK}\n{TDD_BODY}")),
    ]
}

const DEBUGGING_HEAD: &str = "---
name: strobe-debugging
description: Debug a misbehaving program with Strobe's MCP tools (debug_launch, debug_query, debug_trace, debug_breakpoint): launch it clean, read what it printed, trace narrowly, and only then stop it at breakpoints.
---
";

const DEBUGGING_BODY: &str = "
# Debugging with Strobe

Use this when a program crashes, hangs, prints the wrong thing or a test fails and the cause is
not obvious from the code.

1. **Launch it clean.** `debug_launch` with the command and `projectRoot`, nothing traced. Most
   bugs show themselves in the output or the exit: read the reply, then `debug_query` with
   `eventType: \"stderr\"` (and `stdout`). A crash comes back with its signal, the faulting
   frame and the backtrace; start there.
2. **Form one hypothesis**, then trace narrowly to test it: `debug_trace {add: [\"module::fn\"]}`
   on the two or three functions it is about (a file with `@file:name.c`), never `*`. Run
   again (or keep the session running) and read the calls with `debug_query {function: ...}`:
   arguments, return values, durations, in order with the output.
3. **Widen only when the trace says where.** Add the callers or callees the calls point at;
   remove what answered its question (`debug_trace {remove: [...]}`) so the timeline stays
   small.
4. **Breakpoints last**, for state that tracing cannot show: `debug_breakpoint` on a line (with
   a condition when the bad case is rare), then `debug_continue` to step, and `debug_memory`
   to read or change variables while it is paused.
5. **Drive it through its inputs** with `debug_channel` (stdin, files, loopback HTTP, MIDI,
   audio) or a `debug_test_scenario`, so the bad case is reproduced by a request, not by hand.
6. Say what you found with the event ids that show it, and stop the session
   (`debug_session {action: \"stop\"}`) when done.

Every reply says what it left out and how to get it: follow those hints before asking for
more.
";

const TDD_HEAD: &str = "---
name: strobe-tdd
description: When a bug is reported and no test covers it, write a failing test first (Strobe's debug_test runs it and says when a project has no tests), then fix the code until it passes.
---
";

const TDD_BODY: &str = "
# Test first, then fix

Use this when someone reports a bug.

1. **Look for a test that covers it**: run the suite with `debug_test` (it finds the framework).
   If it answers that the project has no tests, or none exercises the reported behaviour,
   write one before touching the code.
2. **Write the failing test** from the report: the smallest input that shows the bug, and the
   expected result the person described. Run it with `debug_test` and see it fail for the
   reported reason (not for a typo in the test).
3. **Find the cause** with Strobe (the strobe-debugging skill): trace the functions the failing
   test reaches, or rerun the single test with a breakpoint. A test that hangs is reported as
   stuck with the threads' stacks.
4. **Fix the code, not the test**, and run the test again, then the whole suite with
   `debug_test`, so the fix breaks nothing else.
5. Keep the test: it is the proof the bug is fixed and that it stays fixed.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_skill_has_its_name_a_description_and_the_mark() {
        for (name, text) in skills() {
            assert!(
                text.starts_with(&format!("---\nname: {name}\ndescription: ")),
                "{text}"
            );
            assert!(text.contains(MARK));
        }
    }
}
