//! What every client is told at initialization: the recommended workflow
//! (kept apart from the tools so its wording can be reviewed on its own).

/// The `instructions` sent at initialization: the recommended workflow.
pub const INSTRUCTIONS: &str = "Strobe is a debugger for coding agents: it runs a program under Frida \
and records what it does on one timeline you can query.\n\
Recommended workflow:\n\
1. debug_launch the program with NO trace patterns. stdout and stderr are always recorded.\n\
2. Read the output first: debug_query {sessionId, eventType: \"stderr\"}, then \"stdout\". Crash \
messages, sanitizer reports, assertion failures and logs often explain the bug on their own. \
debug_session {action: \"status\"} shows whether it exited (and with which code) or crashed (which signal, \
and in `reason` the uncaught exception, panic or sanitizer error). A crash event (eventType \"crash\") has the \
backtrace, the crashing frame's locals, the fault's cause and the ids of the events just before it.\n\
3. Only if the output does not explain it, add targeted trace patterns to the running session \
(debug_trace) and query again. Narrow or widen without restarting. debug_memory reads globals live.\n\
   To stop at the moment of interest: debug_breakpoint (function or file+line, with a condition), \
then debug_session status shows the paused thread; read its locals with debug_memory and step with \
debug_continue. Logpoints (debug_breakpoint with message) log without pausing.\n\
   For a GUI program: debug_ui shows what its user sees (the accessibility tree with stable ids, or a \
screenshot); launch it with display: \"virtual\" when you have no screen.\n\
   To drive it: debug_channel sends to its stdin (launch with stdin: \"pipe\"), files or a loopback port; \
debug_test_scenario runs do/wait/assert steps in one call and stops at the first failing step, program left running.\n\
   Instead of polling: debug_query with waitMs returns when a matching event is stored; debug_session status \
with waitFor: \"exit\" or \"paused\". A run that works and one that does not, traced alike: debug_diff names the \
first call where they diverge.\n\
4. debug_session {action: \"stop\"} when done (retain: true keeps the data for later; list/delete manage retained sessions).\n\
Errors carry a code (VALIDATION_ERROR, SESSION_NOT_FOUND, FRIDA_UNAVAILABLE, …) and say what to do next.";
