// Strobe's ES module loader hooks (registered by preload.cjs with
// `module.register`; Node runs them on a loader thread of their own). A
// module whose text is the text the daemon probed loads as the probed copy
// instead, exactly as preload.cjs does for CommonJS (see there).
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

let dir = "";
let files = Object.create(null);

/** FNV-1a over UTF-16 units (the same as preload.cjs and the daemon). */
function fnv(text) {
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    return h >>> 0;
}

let mtime = 0;

function readManifest() {
    try {
        mtime = statSync(join(dir, "manifest.json")).mtimeMs;
        files = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")).files || files;
    } catch (_) {
        // Nothing probed.
    }
}

export async function initialize(data) {
    dir = (data && data.dir) || "";
    readManifest();
}

export async function load(url, context, nextLoad) {
    const loaded = await nextLoad(url, context);
    if (loaded.format !== "module" || !url.startsWith("file:") || loaded.source == null) return loaded;
    const file = fileURLToPath(url);
    let e = files[file];
    // A package probed since the manifest was read (as preload.cjs does).
    if (e === undefined && file.includes("/node_modules/")) {
        try {
            if (statSync(join(dir, "manifest.json")).mtimeMs !== mtime) readManifest();
        } catch (_) {
            // Keep what was read.
        }
        e = files[file];
    }
    if (e === undefined) return loaded;
    const text = typeof loaded.source === "string" ? loaded.source : Buffer.from(loaded.source).toString("utf8");
    if (text.length !== e.len || fnv(text) !== e.hash) return loaded;
    try {
        return { ...loaded, source: readFileSync(join(dir, e.probed), "utf8") };
    } catch (_) {
        return loaded;
    }
}
