// Strobe's in-process agent. Compiled by Frida's own compiler (frida.Compiler)
// in the bridge; the daemon embeds these sources and caches the compiled
// output by content hash, so an edited source is never shadowed by a stale build.
import { BreakpointsRequest, updateBreakpoints } from "./breakpoints.js";
import { installLifecycleHooks, markFollowing } from "./lifecycle.js";
import { closeFds, ownOutput } from "./output.js";
import { send_ } from "./protocol.js";
import {
    detachHooks, drain, guardForks, journalAddress, onTraceAck, undoJournal, updateExprs, updateHooks, updatePlans, watchModules, ExprsRequest, HookRequest, PlansRequest,
} from "./tracers/native.js";

// Messages from the daemon. Typed acks (exit-ack, crash-ack) are taken by
// their own recv() calls; everything else arrives here.
function listen(): void {
    recv((msg: { type: string } & Record<string, unknown>) => {
        try {
            if (msg.type === "hooks") updateHooks(msg as unknown as HookRequest);
            else if (msg.type === "plans") updatePlans(msg as unknown as PlansRequest);
            else if (msg.type === "exprs") updateExprs(msg as unknown as ExprsRequest);
            else if (msg.type === "breakpoints") updateBreakpoints(msg as unknown as BreakpointsRequest);
            else if (msg.type === "module-base") {
                const path = String(msg.path);
                const m = Process.enumerateModules().find(x => x.path === path)
                    ?? Process.findModuleByName(path.split("/").pop()!);
                send({ type: "module_base", id: msg.id, base: m ? m.base.toString() : null });
            }
            else if (msg.type === "trace-ack") onTraceAck(1);
            else if (msg.type === "own-output") {
                let readFds: Record<string, number> = {};
                let error: string | null = null;
                try { readFds = ownOutput(msg.fds as number[]); } catch (e) { error = String(e); }
                send({ type: "output_owned", id: msg.id, readFds, error });
            }
            else if (msg.type === "close-fds") {
                closeFds(msg.fds as number[]);
                send({ type: "fds_closed", id: msg.id });
            }
            else if (msg.type === "guard-forks") {
                let slots = 0;
                let error: string | null = null;
                markFollowing();
                try { slots = guardForks(); } catch (e) { error = String(e); }
                send({ type: "forks_guarded", id: msg.id, slots, error });
            }
            else if (msg.type === "inherit") {
                let undone = 0;
                let error: string | null = null;
                try { undone = undoJournal(ptr(String(msg.journal))); } catch (e) { error = String(e); }
                send({ type: "inherited", id: msg.id, undone, error });
            }
        } finally {
            listen();
        }
    });
}

installLifecycleHooks(() => drain(true));
watchModules();
listen();
rpc.exports = {
    dispose: () => {
        drain(true);
        // Detached from a process that runs on: leave it as it was.
        detachHooks();
    },
};
send_({
    type: "agent_loaded", pid: Process.id, arch: Process.arch, platform: Process.platform,
    journal: journalAddress().toString(),
});
