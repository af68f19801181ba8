// Strobe's in-process agent. Compiled by Frida's own compiler (frida.Compiler)
// in the bridge; the daemon embeds these sources and caches the compiled
// output by content hash, so an edited source is never shadowed by a stale build.
import { armPause, updateBreakpoints } from "./breakpoints.js";
import { installLifecycleHooks, markFollowing } from "./lifecycle.js";
import { guardBulkCloses } from "./native/bulkclose.js";
import { forgetSignalStacks, giveThreadsSignalStacks } from "./native/signal_stack.js";
import { closeFds, ownOutput } from "./output.js";
import { watchSockets } from "./sockets.js";
import { journalAddress, undoAllPatches, undoJournal } from "./native/patch.js";
import { AgentMessage, DaemonMessage, HookTarget, PyTarget, send_ } from "./protocol.js";
import { crashContext, detachTracers, drainTracers, guardForks, startTracers, tracerFor } from "./tracers/index.js";

type Answer = Extract<AgentMessage, { error: string | null }>;

/** Answers a daemon request with what `work` returns; when it throws, with
 *  `failed` and the error. */
function answer(work: () => Answer, failed: Answer): void {
    let reply: Answer;
    try { reply = work(); } catch (e) { reply = { ...failed, error: String(e) }; }
    send_(reply);
}

/** The answer to request `msg` when handling it threw (a tracer that could
 *  not start: its C did not compile, say): every item it asked for failed
 *  with the error, so the daemon's call returns it rather than waiting for
 *  an answer that never comes. Null for messages nobody waits on. */
function failure(msg: DaemonMessage, e: unknown): AgentMessage | null {
    const error = `the agent failed: ${String(e)}`;
    switch (msg.type) {
        case "hooks": {
            const ids = msg.action === "add"
                ? (msg.functions as Array<HookTarget | PyTarget>).map(f => f[0])
                : msg.functions;
            return { type: "hooks_updated", id: msg.id, installed: [], failed: ids.map(i => [i, error]), activeCount: 0, ms: 0 };
        }
        case "plans": return { type: "plans_updated", id: msg.id, count: 0 };
        case "exprs": return { type: "exprs_updated", id: msg.id, errors: msg.exprs.map(([, label]) => [label, error]) };
        case "breakpoints":
        case "python-breakpoints":
            return { type: "breakpoints_updated", id: msg.id, installed: [], failed: (msg.set ?? []).map(b => [b.id, error]) };
        case "python-memory": return { type: "python_memory", id: msg.id, results: msg.targets.map(() => [null, null, error]) };
        case "load-runtime": return { type: "runtime_loaded", id: msg.id, how: null, error };
        default: return null;
    }
}

// Messages from the daemon. Those a blocked thread waits for (exit-ack,
// crash-ack, fork-barrier-ack, module-hooks, resume-<tid>, callee-<tid>) are
// taken by that thread's own receive(); everything else arrives here.
function listen(): void {
    recv((msg: DaemonMessage) => {
        try {
            switch (msg.type) {
                case "hooks":
                    if (msg.action === "add") tracerFor(msg.tracer).install(msg);
                    else tracerFor(msg.tracer).remove(msg);
                    break;
                case "plans": tracerFor(msg.tracer).sync(msg); break;
                case "exprs": tracerFor(msg.tracer).sync(msg); break;
                case "breakpoints": updateBreakpoints(msg); break;
                case "python-breakpoints":
                case "python-memory": {
                    // Source-level debugging: a Node.js program's, else Python's.
                    const js = tracerFor("javascript");
                    (js.handlesDebug?.() ? js : tracerFor("python")).debug?.(msg);
                    break;
                }
                case "module-base": {
                    const path = msg.path;
                    const m = Process.enumerateModules().find(x => x.path === path)
                        ?? Process.findModuleByName(path.split("/").pop()!);
                    send_({ type: "module_base", id: msg.id, base: m ? m.base.toString() : null });
                    break;
                }
                case "trace-ack": tracerFor(msg.tracer).ack(1); break;
                case "own-output": {
                    const { id, fds } = msg;
                    answer(() => ({ type: "output_owned", id, readFds: ownOutput(fds), error: null }),
                        { type: "output_owned", id, readFds: {}, error: null });
                    break;
                }
                case "close-fds": {
                    const { id, fds } = msg;
                    answer(() => { closeFds(fds); return { type: "fds_closed", id, closed: fds.length, error: null }; },
                        { type: "fds_closed", id, closed: 0, error: null });
                    break;
                }
                case "guard-forks": {
                    const { id } = msg;
                    markFollowing();
                    answer(() => ({ type: "forks_guarded", id, slots: guardForks(), error: null }),
                        { type: "forks_guarded", id, slots: 0, error: null });
                    break;
                }
                case "load-runtime": {
                    const tracer = tracerFor(msg.tracer);
                    if (tracer.loadRuntime === undefined) {
                        send_({ type: "runtime_loaded", id: msg.id, how: null, error: `the ${msg.tracer} tracer has no runtime to load` });
                    } else {
                        tracer.loadRuntime(msg);
                    }
                    break;
                }
                case "flush": {
                    const { id } = msg;
                    answer(() => { drainTracers(true); return { type: "flushed", id, error: null }; },
                        { type: "flushed", id, error: null });
                    break;
                }
                case "watch-sockets": {
                    const { id, on } = msg;
                    answer(() => ({ type: "sockets_watched", id, hooked: watchSockets(on), error: null }),
                        { type: "sockets_watched", id, hooked: 0, error: null });
                    break;
                }
                case "pause-thread": {
                    const { id, tid, stops } = msg;
                    answer(() => ({ type: "pause_armed", id, failed: armPause(tid, stops), error: null }),
                        { type: "pause_armed", id, failed: [], error: null });
                    break;
                }
                case "own-threads": {
                    // Gum cloaks the threads Frida runs in the program, the
                    // ones a thread list must not show as the program's.
                    const { id, tids } = msg;
                    answer(() => ({ type: "own_threads", id, own: tids.filter(t => Cloak.hasThread(t)), error: null }),
                        { type: "own_threads", id, own: [], error: null });
                    break;
                }
                case "inherit": {
                    const { id, journal } = msg;
                    answer(() => ({ type: "inherited", id, undone: undoJournal(ptr(journal)), error: null }),
                        { type: "inherited", id, undone: 0, error: null });
                    break;
                }
                default:
                    // Acknowledgements and answers whose thread stopped waiting.
                    break;
            }
        } catch (e) {
            const reply = failure(msg, e);
            if (reply === null) throw e;
            send_(reply);
        } finally {
            listen();
        }
    });
}

installLifecycleHooks(() => drainTracers(true), crashContext);
try {
    guardBulkCloses();
} catch (_e) {
    // Without the guard, a followed child that closes every descriptor
    // before exec may hang; everything else works.
}
try {
    giveThreadsSignalStacks();
} catch (_e) {
    // Without signal stacks, a stack overflow kills the process unreported
    // (the daemon still records the death as a crash); everything else works.
}
startTracers();
listen();
rpc.exports = {
    dispose: () => {
        drainTracers(true);
        // Detached from a process that runs on: leave it as it was.
        undoAllPatches();
        detachTracers();
        forgetSignalStacks();
    },
};
send_({
    type: "agent_loaded", pid: Process.id, arch: Process.arch, platform: Process.platform,
    journal: journalAddress().toString(),
});
