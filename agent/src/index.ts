// Strobe's in-process agent. Compiled by Frida's own compiler (frida.Compiler)
// in the bridge; the daemon embeds these sources and caches the compiled
// output by content hash, so an edited source is never shadowed by a stale build.
import { BreakpointsRequest, updateBreakpoints } from "./breakpoints.js";
import { installLifecycleHooks, markFollowing } from "./lifecycle.js";
import { closeFds, ownOutput } from "./output.js";
import { journalAddress, undoAllPatches, undoJournal } from "./native/patch.js";
import { send_ } from "./protocol.js";
import { detachTracers, drainTracers, guardForks, startTracers, tracerFor } from "./tracers/index.js";
import { ExprsRequest, HookRequest, PlansRequest } from "./tracers/tracer.js";

// Messages from the daemon. Typed acks (exit-ack, crash-ack) are taken by
// their own recv() calls; everything else arrives here.
/** Answers a daemon request: `{type, id, [key]: value, error}`, where a
 *  failure of `work` becomes `error` and `key` keeps its fallback. */
function answer<T>(msg: Record<string, unknown>, type: string, key: string, fallback: T, work: () => T): void {
    let value = fallback;
    let error: string | null = null;
    try { value = work(); } catch (e) { error = String(e); }
    send({ type, id: msg.id, [key]: value, error });
}

function listen(): void {
    recv((msg: { type: string } & Record<string, unknown>) => {
        try {
            if (msg.type === "hooks") {
                const req = msg as unknown as HookRequest;
                if (req.action === "add") tracerFor(req.tracer).install(req);
                else tracerFor(req.tracer).remove(req);
            }
            else if (msg.type === "plans") tracerFor(msg.tracer).sync(msg as unknown as PlansRequest);
            else if (msg.type === "exprs") tracerFor(msg.tracer).sync(msg as unknown as ExprsRequest);
            else if (msg.type === "breakpoints") updateBreakpoints(msg as unknown as BreakpointsRequest);
            else if (msg.type === "module-base") {
                const path = String(msg.path);
                const m = Process.enumerateModules().find(x => x.path === path)
                    ?? Process.findModuleByName(path.split("/").pop()!);
                send({ type: "module_base", id: msg.id, base: m ? m.base.toString() : null });
            }
            else if (msg.type === "trace-ack") tracerFor(msg.tracer).ack(1);
            else if (msg.type === "own-output") {
                answer(msg, "output_owned", "readFds", {}, () => ownOutput(msg.fds as number[]));
            }
            else if (msg.type === "close-fds") {
                answer(msg, "fds_closed", "closed", 0, () => { closeFds(msg.fds as number[]); return (msg.fds as number[]).length; });
            }
            else if (msg.type === "guard-forks") {
                markFollowing();
                answer(msg, "forks_guarded", "slots", 0, guardForks);
            }
            else if (msg.type === "inherit") {
                answer(msg, "inherited", "undone", 0, () => undoJournal(ptr(String(msg.journal))));
            }
        } finally {
            listen();
        }
    });
}

installLifecycleHooks(() => drainTracers(true));
startTracers();
listen();
rpc.exports = {
    dispose: () => {
        drainTracers(true);
        // Detached from a process that runs on: leave it as it was.
        undoAllPatches();
        detachTracers();
    },
};
send_({
    type: "agent_loaded", pid: Process.id, arch: Process.arch, platform: Process.platform,
    journal: journalAddress().toString(),
});
