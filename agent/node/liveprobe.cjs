// Probes for the functions a Node.js program compiled before Strobe
// attached to it (agent/src/tracers/javascript/attach.ts loads the runtime
// into a running program; a launch probes every file as Node loads it).
// The debugger worker (debugger.cjs) swaps a loaded script's text for its
// probed copy through V8's live edit (`Debugger.setScriptSource`): V8
// recompiles the script and gives every function already made from it,
// closures and methods included, the new code. Only the files whose
// functions a pattern names are swapped, when it names them; a detach
// puts each one's own text back.
//
// V8 refuses the swap while a function of the script is running or
// suspended (an `await`, a generator): the file then stays untraced, and
// the reason reaches the pattern's reply.
"use strict";

const fs = require("fs");
const path = require("path");
const { pathToFileURL } = require("url");
const { fnv } = require("./sources.cjs");

/** Why V8 refused a swap, by its status. */
const REFUSED = {
    BlockedByActiveFunction: "one of its functions is running on the main thread",
    BlockedByActiveGenerator: "one of its async functions or generators is suspended (awaiting or yielded)",
    BlockedByTopLevelEsModuleChange: "V8 does not swap an ES module's code (Node 20's V8 counts any edit of one as a change of its top level)",
    CompileError: "V8 did not compile its probed copy",
};
/** Why an ES module not loaded yet cannot be traced in an attached program. */
const NOT_LOADED_ESM = "it is an ES module Node has not loaded yet, and in an attached program ES modules load unprobed "
    + "(Node's loader hooks would leave a thread behind after the detach; V8 cannot swap an ES module's code once loaded)";

/** A function that is running now may return a moment later: the swap is
 *  tried again this often, this many ms apart. */
const TRIES = 25;
const RETRY_MS = 20;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A probed copy without the statement that gives the runtime its
 *  module's bindings (bindings.cjs): it only runs at load, which is past,
 *  and it would change an ES module's top-level code, which V8 refuses to
 *  swap. It is one line, `;__strobe.b(…,function(__sb,__sbv){…}});`. */
function withoutBindings(text) {
    const start = text.indexOf(";__strobe.b(");
    const writer = start < 0 ? -1 : text.indexOf("},function(__sb,__sbv){switch(__sb){", start);
    const end = writer < 0 ? -1 : text.indexOf("}});", writer);
    return end < 0 ? text : text.slice(0, start) + text.slice(end + 4);
}

/**
 * The live probing of one session whose probed copies and manifest are in
 * `dir`. `post` sends an inspector command to the main thread's V8 (the
 * debugger must be enabled); `urls` maps script ids to URLs (from
 * `Debugger.scriptParsed`); `attached`: the runtime was loaded into the
 * running program (it has no ES module loader hooks).
 */
module.exports = function liveProbes(dir, post, urls, attached) {
    /** Scripts swapped: script id → {file, original text}. */
    const swapped = new Map();
    /** Files whose loaded scripts are probed (or that were not loaded). */
    const settled = new Map();

    function manifest() {
        try {
            return JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")).files || {};
        } catch (_) {
            return {};
        }
    }

    /** The loaded scripts of `file` (a CommonJS module's URL is its path,
     *  an ES module's its file: URL). */
    function scriptsOf(file) {
        const href = pathToFileURL(file).href;
        return [...urls].filter(([, u]) => u === file || u === href).map(([id]) => id);
    }

    /** Swaps script `id` of `file` (manifest entry `e`) for its probed
     *  copy; null, or why not. */
    async function swap(id, file, e) {
        const { scriptSource } = await post("Debugger.getScriptSource", { scriptId: id });
        const probed = fs.readFileSync(path.join(dir, e.probed), "utf8");
        const swapIn = withoutBindings(probed);
        // Loaded after the attach: served probed by sources.cjs already; or
        // a clone V8 keeps of a script an earlier session swapped.
        if (scriptSource === probed || scriptSource === swapIn) return null;
        if (scriptSource.length !== e.len || fnv(scriptSource) !== e.hash) {
            return "the program loaded another text of it (the file changed since, or an earlier session left it probed)";
        }
        for (let i = 0; ; i++) {
            const r = await post("Debugger.setScriptSource", { scriptId: id, scriptSource: swapIn });
            if (r.exceptionDetails !== undefined) return `${REFUSED.CompileError}: ${r.exceptionDetails.text}`;
            const status = r.status || "Ok";
            if (status === "Ok") {
                swapped.set(id, { file, original: scriptSource });
                return null;
            }
            if (status !== "BlockedByActiveFunction" || i + 1 >= TRIES) return REFUSED[status] || status;
            await sleep(RETRY_MS);
        }
    }

    async function settle(file, e) {
        const ids = scriptsOf(file);
        for (const id of ids) {
            if (swapped.has(id)) continue;
            const why = await swap(id, file, e).catch((err) => String(err.message || err));
            if (why !== null) return why;
        }
        // Not loaded (yet): sources.cjs serves a CommonJS module's probed
        // copy when it is. An ES module would load unprobed: an attached
        // program has no loader hooks (their thread would outlive the
        // session), and V8 refuses to swap an ES module's code once loaded.
        if (ids.length === 0 && e.module === true && attached) return NOT_LOADED_ESM;
        return null;
    }

    return {
        /**
         * Makes probes `probes` (indices) live: each one's file is swapped
         * for its probed copy if it was loaded before the attach. Returns
         * `[probe, why]` for those that cannot be.
         */
        async probe(probes) {
            const files = manifest();
            const failed = [];
            /** Files that could not be swapped in this request: tried
             *  once each, and again by a later request. */
            const refused = new Map();
            for (const p of probes) {
                const hit = Object.entries(files).find(([, e]) => p >= e.first && p < e.first + (e.names || []).length);
                if (hit === undefined) {
                    failed.push([p, `probe ${p} is in no probed file of this session`]);
                    continue;
                }
                const [file, e] = hit;
                if (!settled.has(file) && !refused.has(file)) {
                    const why = await settle(file, e);
                    if (why === null) settled.set(file, null);
                    else refused.set(file, why);
                }
                const why = refused.get(file);
                if (why !== undefined) {
                    const when = why === NOT_LOADED_ESM ? "cannot be probed"
                        : "was loaded before its probes existed (before Strobe attached, or before a pattern named its package) and cannot be probed now";
                    failed.push([p, `${path.basename(file)} ${when}: ${why}; `
                        + "add the pattern again later, or name it before debug_launch to trace it from the start"]);
                }
            }
            return failed;
        },

        /** Puts back each swapped script's own text (a detach); one V8
         *  keeps refusing stays probed, its probes off. */
        async restore() {
            for (const [id, s] of swapped) {
                let done = false;
                for (let i = 0; i < TRIES && !done; i++) {
                    const r = await post("Debugger.setScriptSource", { scriptId: id, scriptSource: s.original }).catch(() => null);
                    done = r !== null && r.exceptionDetails === undefined && (r.status || "Ok") === "Ok";
                    if (!done) await sleep(RETRY_MS);
                }
            }
            swapped.clear();
            settled.clear();
        },
    };
};
