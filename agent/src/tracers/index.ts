// The registry of tracers: the one place a tracer is listed. The agent's
// entry point (index.ts) routes each tracer request to the tracer it names
// (tracerFor) and runs the agent-wide steps on all of them: start at load,
// a final drain before an exit, crash, fork or unload, detach on unload.
import { nativeTracer } from "./native/index.js";
import { pythonTracer } from "./python/index.js";
import { javascriptTracer } from "./javascript/index.js";
import { CrashContext } from "../protocol.js";
import { Tracer } from "./tracer.js";

/** Every tracer. A new tracer is its module plus one line here. */
const TRACERS: readonly Tracer[] = [
    nativeTracer,
    pythonTracer,
    javascriptTracer,
];

/** The tracer a request that names none is for (every request today). */
export const DEFAULT_TRACER = "native";

for (const [i, t] of TRACERS.entries()) {
    if (TRACERS.findIndex(u => u.name === t.name) !== i) throw new Error(`two tracers are named "${t.name}"`);
}

/** The tracer a request's `tracer` field names (undefined: the default).
 *  Throws for a name no tracer has: such a request is never answered by
 *  another tracer. */
export function tracerFor(field: unknown): Tracer {
    const name = field === undefined ? DEFAULT_TRACER : String(field);
    const tracer = TRACERS.find(t => t.name === name);
    if (tracer === undefined) throw new Error(`no tracer named "${name}"`);
    return tracer;
}

/** Runs `step` on every tracer; one that throws does not keep the others
 *  from running, and the first error is rethrown once all have run. */
function eachTracer(step: (t: Tracer) => void): void {
    const errors: unknown[] = [];
    for (const t of TRACERS) {
        try {
            step(t);
        } catch (e) {
            errors.push(e);
        }
    }
    if (errors.length > 0) throw errors[0];
}

/** Starts every tracer, as the agent loads (before the first request). */
export function startTracers(): void {
    eachTracer(t => t.start());
}

/** Drains every tracer (see Tracer.drain); `final` before an exit, crash,
 *  fork or unload. */
export function drainTracers(final: boolean): void {
    eachTracer(t => t.drain(final));
}

/** What the tracers know of where the crashing thread was (see
 *  Tracer.crashContext); one that fails adds nothing. */
export function crashContext(): CrashContext {
    let out: CrashContext = {};
    for (const t of TRACERS) {
        try {
            if (t.crashContext !== undefined) out = { ...out, ...t.crashContext() };
        } catch (_e) {
            // The crash report matters more than any part of it.
        }
    }
    return out;
}

/** Detaches every tracer: the agent unloads from a process that lives on. */
export function detachTracers(): void {
    eachTracer(t => t.detach());
}

/** Routes the program's fork() calls through the native tracer's fork guard
 *  (native code forks, whichever tracer records); its barrier drains every
 *  tracer. Returns how many GOT slots point at it. */
export function guardForks(): number {
    return nativeTracer.guardForks(() => drainTracers(true));
}
