// Which text Node runs for each file (part of Strobe's runtime in a Node
// program; preload.cjs loads it): the copy with probes written in, when the
// daemon made one and the text Node loaded is the text it probed (same
// UTF-16 length and FNV-1a hash; a file edited since runs as it is).
// CommonJS goes through Module.prototype._compile; ES modules through the
// loader hooks in hooks.mjs, registered only when an ES module was probed.
// The manifest (crates/strobe-symbols/src/resolvers/javascript/probes.rs)
// also gives each probe's parameter names, which the payloads carry.
"use strict";

const fs = require("fs");
const path = require("path");

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
            const m = JSON.parse(fs.readFileSync(manifest, "utf8"));
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
            return fs.readFileSync(path.join(dir, e.probed), "utf8");
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
    const Module = require("module");
    const compile = Module.prototype._compile;
    Module.prototype._compile = function (content, filename) {
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

module.exports = { serveProbedSources, fnv };
