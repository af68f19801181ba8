// Which text Node runs for each file (part of Strobe's runtime in a Node
// program; preload.cjs loads it): the copy with probes written in, when the
// daemon made one and the text Node loaded is the text it probed (same
// UTF-16 length and FNV-1a hash; a file edited since runs as it is).
// CommonJS goes through Module.prototype._compile; ES modules through the
// loader hooks in hooks.mjs, registered only when an ES module was probed.
// Test runners that load modules themselves are served where they read
// them (`serveRunners`).
// The manifest (crates/strobe-symbols/src/resolvers/javascript/probes.rs)
// also gives each probe's parameter names, which the payloads carry.
"use strict";

const fs = require("fs");
const path = require("path");
const vm = require("vm");

/** fs's own, before `serveRunners` wraps it. */
const readFileSync = fs.readFileSync;
const readFileAsync = fs.promises.readFile;

/** A script path of Jest's or Vitest's: their commands (`.bin/jest`,
 *  `jest-cli`, `vitest.mjs`) and their workers' entry points
 *  (`jest-worker/…/processChild.js`, `vitest/dist/workers/…`). */
const RUNNER_COMMAND = /(^|[\\/])(jest|vitest)[^\\/]*([\\/]|$)/;

/** FNV-1a over UTF-16 units: the daemon's hash of the text it probed. */
function fnv(text) {
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    return h >>> 0;
}

/**
 * Starts serving the probed copies in `dir`, filling `names` (parameter
 * names by probe index) from its manifest, now and whenever it is read
 * again, while `serving()` says so (an attached program's agent may
 * leave). ES modules are served by loader hooks unless `hooks` is false
 * (an attached program: the hooks' thread would outlive the session).
 * Returns `retarget(dir)`: a later attach's session serves its own copies
 * from then on.
 */
function serveProbedSources(dir, names, { serving = () => true, hooks = true } = {}) {
    let manifest = path.join(dir, "manifest.json");
    let files = Object.create(null);
    /** An ES module was probed: the loader hooks are needed. */
    let esm = false;
    /** The manifest's mtime when read: a package a pattern names while the
     *  program runs is probed then, and the manifest rewritten. */
    let mtime = 0;

    function changed() {
        try {
            return fs.statSync(manifest).mtimeMs !== mtime;
        } catch (_) {
            return false;
        }
    }

    function read() {
        try {
            mtime = fs.statSync(manifest).mtimeMs;
            const m = JSON.parse(readFileSync(manifest, "utf8"));
            files = m.files || files;
            esm = m.esm === true;
            for (const file of Object.keys(files)) {
                const e = files[file];
                (e.names || []).forEach((n, i) => { names[e.first + i] = n; });
            }
        } catch (_) {
            // No manifest: nothing was probed; the program runs as it is.
        }
    }

    /** The probed copy of `text` loaded from `file`, or `text`. */
    function probed(text, file) {
        let e = files[file];
        // A package's file the manifest does not list: the daemon may have
        // probed its package since (one stat per such file).
        if (e === undefined && file.includes("/node_modules/") && changed()) {
            read();
            e = files[file];
        }
        if (e === undefined || !serving() || text.length !== e.len || fnv(text) !== e.hash) return text;
        try {
            return readFileSync(path.join(dir, e.probed), "utf8");
        } catch (_) {
            return text;
        }
    }

    read();
    const retarget = (next) => {
        dir = next;
        manifest = path.join(dir, "manifest.json");
        files = Object.create(null);
        read();
    };
    // Only a test runner's process gets the read and vm wrappers
    // (`serveRunners`): one run by Jest or Vitest (its command, or a
    // worker of theirs), or one that loads jest-runtime; any other
    // program's reads stay Node's own.
    let runners = false;
    const serveRunnersOnce = () => {
        if (runners) return;
        runners = true;
        serveRunners(probed, (file) => files[file] !== undefined);
    };
    if (RUNNER_COMMAND.test(process.argv[1] || "")) serveRunnersOnce();
    const Module = require("module");
    const compile = Module.prototype._compile;
    Module.prototype._compile = function (content, filename) {
        if (!runners && filename.includes("/jest-runtime/")) serveRunnersOnce();
        return compile.call(this, probed(content, filename), filename);
    };
    const hooksFile = path.join(__dirname, "hooks.mjs");
    // The hooks start a loader thread (~30 ms): only when an ES module was
    // probed. A hooks module that fails to load ends the program (on that
    // thread, where no try here can catch it): only one that is there.
    if (hooks && esm && typeof Module.register === "function" && fs.existsSync(hooksFile)) {
        try {
            Module.register(require("url").pathToFileURL(hooksFile), { data: { dir } });
        } catch (_) {
            // ES modules then load unprobed.
        }
    }
    return retarget;
}

/**
 * Jest and Vitest read each module's file themselves, transform it, and
 * run the result: Jest (jest-runtime's file cache, a Buffer read) in a vm
 * context of its own, Vitest (Vite's `loadAndTransform`) in the test
 * worker. Each gets the probed copy of a probed file when that read comes
 * from them, found by the caller's frames: other reads of the same file
 * (a snapshot writer that reads, edits and writes a test file back) get
 * the file as it is, so the probes never reach the disk. Every vm context
 * made from now on gets `__strobe`, which the probes call.
 */
function serveRunners(probed, listed) {
    const from = (marker) => {
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = 12;
        const stack = new Error().stack || "";
        Error.stackTraceLimit = limit;
        return stack.includes(marker);
    };
    fs.readFileSync = function (file, options) {
        // Node's takes two arguments; no `arguments` object (it costs).
        const out = options === undefined ? readFileSync(file) : readFileSync(file, options);
        if (options === undefined && typeof file === "string" && Buffer.isBuffer(out) && listed(file)
            && from("/jest-runtime/build/")) {
            const text = out.toString("utf8");
            const served = probed(text, file);
            if (served !== text) return Buffer.from(served, "utf8");
        }
        return out;
    };
    fs.promises.readFile = async function (file, options) {
        const wanted = typeof file === "string" && listed(file) && (options === "utf-8" || options === "utf8")
            && from("loadAndTransform");
        const out = await readFileAsync.apply(this, arguments);
        return wanted && typeof out === "string" ? probed(out, file) : out;
    };
    const createContext = vm.createContext;
    vm.createContext = function () {
        const context = createContext.apply(this, arguments);
        try {
            Object.defineProperty(context, "__strobe", { value: globalThis.__strobe, configurable: true });
        } catch (_) {
            // A context that refuses it: probed code run there fails, as
            // it would without Strobe's runtime.
        }
        return context;
    };
}

module.exports = { serveProbedSources, fnv };
