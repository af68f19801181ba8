// The top-level bindings of the program's modules, for `debug_memory`
// while the program runs (a paused frame's are read in the frame).
//
// Every probed file starts with a statement Strobe wrote into its copy
// (crates/strobe-symbols/src/resolvers/javascript/instrument.rs,
// `bindings_reader`) that hands the runtime its module name (the name
// patterns use: `orders`, `api.users`), the names it declares at top
// level, a reader and a writer (`switch`es over those names, run in the
// module's own scope). A name `orders.cart.items[0]` is the binding
// `cart` of module `orders`, then a path walked by property descriptors
// as for any name (no getter runs). The last file loaded under a module
// name holds it (Jest loads a module anew for each test file).
"use strict";

/** `runtime` is the program's `__strobe` (preload.cjs); `walk` walks a
 *  path's rest from the value of its head; `named` makes a read's
 *  payload; `poke` sets what a path names. Adds `b`, `peekm` and `pokem`
 *  to it. */
module.exports = function moduleBindings(runtime, { walk, named, poke }) {
    /** Module name → {names, read, write}. */
    const modules = new Map();

    /** The longest module name `path` starts with that declares the next
     *  part: {m, i (binding index), k (where the binding is in path)}. */
    function bindingOf(path) {
        for (let k = path.length - 1; k >= 1; k--) {
            const m = modules.get(path.slice(0, k).join("."));
            if (m === undefined) continue;
            const i = m.names.indexOf(path[k]);
            if (i >= 0) return { m, i, k };
        }
        return null;
    }

    /** A binding's value; one whose declaration has not run yet says so. */
    function valueOf(path, b) {
        try {
            return b.m.read(b.i);
        } catch (e) {
            if (e instanceof ReferenceError) {
                throw new Error(`${path.slice(0, b.k + 1).join(".")} is not initialized yet (its module has not run its declaration)`);
            }
            throw e;
        }
    }

    /** Why `path` names nothing: not a global, and not a module's binding
     *  (the modules that declare its head are named). */
    function unknown(path) {
        const owners = [];
        for (const [name, m] of modules) if (m.names.includes(path[0])) owners.push(`${name}.${path[0]}`);
        const hint = owners.length > 0
            ? `; a module's top-level binding is named by its module: ${owners.slice(0, 3).join(", ")}`
            : "; a module's top-level binding is named module.name (the module named as in trace patterns), and a frame's locals are read at a pause";
        return new Error(`${path[0]} is not a global${hint}`);
    }

    /** A global's path (on `globalThis`, by descriptor). */
    function onGlobal(path) {
        if (Object.getOwnPropertyDescriptor(globalThis, path[0]) === undefined && !(path[0] in globalThis)) throw unknown(path);
        return ["globalThis", ...path];
    }

    Object.assign(runtime, {
        /** A probed file's bindings, given as its top level starts. */
        b(module, names, read, write) {
            modules.set(module, { names, read, write });
        },
        /** Reads what `path` names outside any frame: a module's binding,
         *  else a global. A `what` 7 payload (base64). */
        peekm(path, depth) {
            const b = bindingOf(path);
            if (b === null) return runtime.peek(onGlobal(path), () => globalThis, depth);
            return named(path, walk(path.slice(b.k), valueOf(path, b)), depth);
        },
        /** Sets what `path` names outside any frame to `v`: [its previous
         *  value's payload, its new one's]. */
        pokem(path, v, depth) {
            const b = bindingOf(path);
            if (b === null) return poke(onGlobal(path), () => globalThis, () => {}, v, depth);
            const whole = path.slice(0, b.k + 1).join(".");
            return poke(path.slice(b.k), () => valueOf(path, b), (x) => {
                b.m.write(b.i, x);
                if (!Object.is(b.m.read(b.i), x)) throw new Error(`${whole} cannot be set: it is a const, a class or an import`);
            }, v, depth);
        },
    });
};
