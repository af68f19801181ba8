// Loading Strobe's runtime (agent/node/preload.cjs) into a Node.js process
// Strobe attached to. A launch loads it with `--require`; a running
// process must be made to run it, and only on its main thread, at a point
// where V8 allows JavaScript. Two ways get there, whichever comes first:
//
// - Idle in its event loop: the loop is woken (its thread pool's async
//   handle, `uv_async_send` being safe from any thread), and a listener on
//   read(), where libuv takes the wake-up, runs a one-line script that
//   schedules the loading with `setImmediate`. The loading itself must not
//   run inside a listener: Frida does not intercept calls made in one, and
//   the runtime shows itself through a write() the agent intercepts.
// - Busy in JavaScript: V8's own interrupt (`Isolate::RequestInterrupt`)
//   runs the loading at its next stack check. It needs the isolate, which
//   lives in a thread-local of the main thread: a one-shot SIGURG handler
//   reads it there. SIGURG is ignored by default, so a signal arriving
//   after the handler is gone does nothing; a program that handles SIGURG
//   itself is left alone (only the idle way is tried).
//
// Neither way calls into the program while it is inside a system call or
// holding a lock of V8's, which is why Frida's `Process.runOnThread` is not
// used: measured on Node 20, it made the main thread's epoll_wait fail and
// libuv abort.
//
// V8 cannot take a requested interrupt back. Its callback is a stub in
// memory that outlives the agent: it jumps to the loading while the agent
// is here and returns at once after, so a program that never ran
// JavaScript again before the agent left cannot call freed code.
/** Most time the main thread has to reach JavaScript or its event loop. */
const LOAD_WAIT_MS = 5000;
const SIGURG = 23;
const SA_RESTART = 0x10000000, SA_RESETHAND = 0x80000000;
/** libuv's uv_handle_type of an async handle. */
const UV_ASYNC = 1;

/** The exports of Node's binary the loading calls (V8's embedder API). */
const V8_API = {
    get_current: "_ZN2v87Isolate10GetCurrentEv",
    hs_ctor: "_ZN2v811HandleScopeC1EPNS_7IsolateE",
    hs_dtor: "_ZN2v811HandleScopeD1Ev",
    tc_ctor: "_ZN2v88TryCatchC1EPNS_7IsolateE",
    tc_dtor: "_ZN2v88TryCatchD1Ev",
    get_context: "_ZN2v87Isolate17GetCurrentContextEv",
    new_utf8: "_ZN2v86String11NewFromUtf8EPNS_7IsolateEPKcNS_13NewStringTypeEi",
    compile: "_ZN2v86Script7CompileENS_5LocalINS_7ContextEEENS1_INS_6StringEEEPNS_12ScriptOriginE",
    run: "_ZN2v86Script3RunENS_5LocalINS_7ContextEEE",
};
const REQUEST_INTERRUPT = "_ZN2v87Isolate16RequestInterruptEPFvPS0_PvES2_";

const BOOT_C = `
#include <gum/guminterceptor.h>

/* [0] claimed (the first way in takes it) [1] 1 once a script ran, 2 if it
   threw or did not compile [2] the way: 1 read (idle), 2 interrupt (busy)
   [3] 1 once the signal handler read the isolate [4] 1 once V8 called the
   interrupt callback. */
extern volatile gint32 status[];
extern volatile gpointer isolate_slot[];
extern const char soon_source[];
extern const char now_source[];
extern void *get_current(void);
extern void hs_ctor(void *, void *);
extern void hs_dtor(void *);
extern void tc_ctor(void *, void *);
extern void tc_dtor(void *);
extern void *get_context(void *);
extern void *new_utf8(void *, const char *, int, int);
extern void *compile(void *, void *, void *);
extern void *run(void *, void *);
extern int gettid(void);
extern int getpid(void);

static int claim(void) {
    gint32 prev, one = 1;
    volatile gint32 *l = &status[0];
    __asm__ volatile("lock; cmpxchgl %2, %1" : "=a"(prev), "+m"(*l) : "r"(one), "0"(0) : "memory");
    return prev == 0;
}

/* Runs source in the main context. The TryCatch is on this stack, as V8
   requires; an exception stays in it. */
static void run_script(const char *source, int how) {
    void *iso = get_current();
    if (iso == NULL) { status[1] = 2; return; }
    gsize hs[8] = {0};
    gsize tc[32] = {0};
    hs_ctor(hs, iso);
    tc_ctor(tc, iso);
    void *ctx = get_context(iso);
    void *text = ctx != NULL ? new_utf8(iso, source, 0, -1) : NULL;
    void *script = text != NULL ? compile(ctx, text, NULL) : NULL;
    void *result = script != NULL ? run(script, ctx) : NULL;
    tc_dtor(tc);
    hs_dtor(hs);
    status[2] = how;
    status[1] = result != NULL ? 1 : 2;
}

/* Listener on read(): the main thread taking its loop's wake-up. */
void on_read(GumInvocationContext *ic) {
    if (status[0] != 0 || gettid() != getpid() || !claim()) return;
    run_script(soon_source, 1);
}

/* V8's interrupt callback (through the stub). */
void on_interrupt(void *isolate, void *data) {
    status[4] = 1;
    if (!claim()) return;
    run_script(now_source, 2);
}

/* The one-shot SIGURG handler, on the main thread. */
void on_signal(int sig) {
    isolate_slot[0] = get_current();
    status[3] = 1;
}
`;

/** The script the main thread runs: loads the runtime from `dir` (or, when
 *  it is already in, tells it a new agent came), at once or from the event
 *  loop (`soon`). Anything that fails is written to `dir/attach-error.txt`. */
function bootstrap(dir: string, soon: boolean): string {
    return `(function () {
  var dir = ${JSON.stringify(dir)};
  function load() {
    var fs = null;
    try {
      fs = typeof process.getBuiltinModule === "function" ? process.getBuiltinModule("fs") : null;
      var known = globalThis.__strobe;
      if (known !== undefined && typeof known.attached === "function") { known.attached(dir); return; }
      var req = typeof process.getBuiltinModule === "function"
        ? process.getBuiltinModule("module").createRequire(dir + "/preload.cjs")
        : (process.mainModule ? process.mainModule.require.bind(process.mainModule) : null);
      if (req === null) throw new Error("Node.js " + process.version + " has no process.getBuiltinModule (Node 20.16+) and its main module is not CommonJS: Strobe's runtime cannot be loaded");
      fs = fs || req("fs");
      process.env.STROBE_JS_DIR = dir;
      process.env.STROBE_JS_ATTACH = "1";
      try { req(dir + "/preload.cjs"); } finally { delete process.env.STROBE_JS_DIR; delete process.env.STROBE_JS_ATTACH; }
    } catch (e) {
      try { fs.writeFileSync(dir + "/attach-error.txt", String((e && e.stack) || e)); } catch (_) {}
    }
  }
  if (${soon}) setImmediate(load); else load();
})();`;
}

/** What an attach left that must outlive the agent or be put back. */
interface Loading {
    module: CModule;
    status: NativePointer;
    /** The interrupt stub's target slot (null: no stub). */
    stubSlot: NativePointer | null;
    stubPages: NativePointer | null;
    readListener: InvocationListener | null;
    /** SIGURG's action before ours (null: ours is not installed). */
    oldAction: NativePointer | null;
    keep: NativePointer[];
}

let loading: Loading | null = null;
/** Why the runtime could not be loaded (null: it was, or never tried). */
let missing: string | null = null;

/** The runtime was loaded into this program by this agent (an attach):
 *  its functions compiled before then get their probes live. */
let loaded = false;

/** Whether this agent loaded the runtime into a running program. */
export function nodeRuntimeAttached(): boolean {
    return loaded;
}

/** Why this attached program has no runtime: its loading failed. */
export function nodeRuntimeMissing(): string | null {
    return missing;
}

const libc = (name: string) => Module.findGlobalExportByName(name);

function nodeExport(name: string): NativePointer {
    const p = Process.mainModule.findExportByName(name) ?? Module.findGlobalExportByName(name);
    if (p === null) {
        throw new Error(`this Node.js binary does not export V8's ${name}: Strobe's runtime cannot be loaded into it`);
    }
    return p;
}

/** The async handle libuv's default loop keeps for its thread pool (the
 *  first async handle inside the loop structure, checked by its loop and
 *  type fields), or null. */
function loopWakeHandle(): NativePointer | null {
    const loop = new NativeFunction(nodeExport("uv_default_loop"), "pointer", [])();
    for (let off = 0; off < 512; off += 8) {
        const h = loop.add(off);
        if (h.add(8).readPointer().equals(loop) && h.add(16).readU32() === UV_ASYNC) return h;
    }
    return null;
}

/** Installs the one-shot SIGURG handler unless the program has its own;
 *  returns the action to put back, or null. */
function armSignal(handler: NativePointer): NativePointer | null {
    const sigaction = new NativeFunction(libc("sigaction")!, "int", ["int", "pointer", "pointer"]);
    const old = Memory.alloc(256);
    if (sigaction(SIGURG, NULL, old) !== 0) return null;
    const current = old.readPointer();
    if (!current.isNull() && !current.equals(ptr(1))) return null; // the program's own handler
    const act = Memory.alloc(256);
    act.writePointer(handler);
    // struct sigaction: handler, a 128-byte mask, then the flags.
    act.add(8 + 128).writeU32((SA_RESETHAND | SA_RESTART) >>> 0);
    if (sigaction(SIGURG, act, NULL) !== 0) return null;
    return old;
}

function disarmSignal(l: Loading): void {
    if (l.oldAction === null) return;
    new NativeFunction(libc("sigaction")!, "int", ["int", "pointer", "pointer"])(SIGURG, l.oldAction, NULL);
    l.oldAction = null;
}

/** An interrupt callback that outlives the agent: x86-64 code that jumps
 *  to the address in the slot of the page after it, or returns when the
 *  slot is 0. Null on other architectures. */
function interruptStub(target: NativePointer): { code: NativePointer; slot: NativePointer } | null {
    if (Process.arch !== "x64") return null;
    const mmap = new NativeFunction(libc("mmap")!, "pointer", ["pointer", "size_t", "int", "int", "int", "long"]);
    const mprotect = new NativeFunction(libc("mprotect")!, "int", ["pointer", "size_t", "int"]);
    const page = Process.pageSize;
    const pages = mmap(NULL, page * 2, 3 /* read, write */, 0x22 /* private, anonymous */, -1, 0);
    if (pages.equals(ptr(-1))) return null;
    const slot = pages.add(page);
    slot.writePointer(target);
    // mov rax, [rip + (page - 7)]; test rax, rax; jz +2; jmp rax; ret
    const disp = page - 7;
    pages.writeByteArray([0x48, 0x8b, 0x05, disp & 0xff, (disp >> 8) & 0xff, (disp >> 16) & 0xff, (disp >> 24) & 0xff,
        0x48, 0x85, 0xc0, 0x74, 0x02, 0xff, 0xe0, 0xc3]);
    if (mprotect(pages, page, 5 /* read, execute */) !== 0) return null;
    return { code: pages, slot };
}

/** Starts loading the runtime from `dir`; calls `done` with how it got in
 *  ("event loop" or "interrupt") or why it did not. `shown` tells how many
 *  buffers runtimes have shown the agent (the loading shows one). */
export function loadNodeRuntime(dir: string, shown: () => number,
    done: (how: string | null, error: string | null) => void): void {
    if (loading !== null) {
        done(null, "the runtime was loaded already by this agent");
        return;
    }
    const flag = permissionFlag();
    if (flag !== null) {
        // Node would refuse the runtime's files (and its worker): said now,
        // not after a load that fails inside the program, unseen.
        missing = `this Node.js program runs under Node's permission model (${flag}), which refuses Strobe's runtime; `
            + `its output, exit and native code are recorded, but its JavaScript is not traced and takes no breakpoints. `
            + `Start it without ${flag} to debug its JavaScript`;
        done(null, missing);
        return;
    }
    const before = shown();
    const status = Memory.alloc(64);
    const isolateSlot = Memory.alloc(16);
    const soon = Memory.allocUtf8String(bootstrap(dir, true));
    const now = Memory.allocUtf8String(bootstrap(dir, false));
    const symbols: Record<string, NativePointer> = {
        status, isolate_slot: isolateSlot, soon_source: soon, now_source: now,
        gettid: libc("gettid")!, getpid: libc("getpid")!,
    };
    for (const [name, symbol] of Object.entries(V8_API)) symbols[name] = nodeExport(symbol);
    const requestInterrupt = new NativeFunction(nodeExport(REQUEST_INTERRUPT), "void", ["pointer", "pointer", "pointer"]);
    const module = new CModule(BOOT_C, symbols);
    const l: Loading = {
        module, status, stubSlot: null, stubPages: null, readListener: null, oldAction: null,
        keep: [isolateSlot, soon, now],
    };
    loading = l;
    l.readListener = Interceptor.attach(libc("read")!, { onEnter: module.on_read });
    const wake = loopWakeHandle();
    if (wake !== null) new NativeFunction(nodeExport("uv_async_send"), "int", ["pointer"])(wake);
    l.oldAction = armSignal(module.on_signal);
    if (l.oldAction !== null) {
        new NativeFunction(libc("tgkill")!, "int", ["int", "int", "int"])(Process.id, Process.id, SIGURG);
    }
    const started = Date.now();
    let interruptRequested = false;
    const timer = setInterval(() => {
        if (!interruptRequested && status.add(12).readS32() === 1) {
            interruptRequested = true;
            disarmSignal(l);
            const stub = interruptStub(module.on_interrupt);
            if (stub !== null) {
                l.stubSlot = stub.slot;
                l.stubPages = stub.code;
            }
            const isolate = isolateSlot.readPointer();
            if (!isolate.isNull()) requestInterrupt(isolate, stub !== null ? stub.code : module.on_interrupt, NULL);
        }
        const ran = status.add(4).readS32();
        const how = status.add(8).readS32() === 1 ? "event loop" : "interrupt";
        let error: string | null = null;
        try {
            error = File.readAllText(`${dir}/attach-error.txt`).trim();
        } catch (_) {
            // None: nothing failed (yet).
        }
        const late = Date.now() - started > LOAD_WAIT_MS;
        if (shown() === before && error === null && ran !== 2 && !late) return;
        clearInterval(timer);
        finish(l);
        if (shown() > before) {
            loaded = true;
            done(how, null);
            return;
        }
        // Given up: an interrupt V8 runs later loads nothing (the daemon
        // was told there is no runtime).
        status.writeS32(1);
        if (error !== null) missing = `Strobe's runtime failed to load in the program: ${error}`;
        else if (ran === 2) missing = "the loading script threw before it could report why (V8 rejected it)";
        else {
            missing = `the main thread did not run JavaScript or return to its event loop within ${LOAD_WAIT_MS / 1000} s `
                + `(${mainThreadState()}); detach and attach again once it is responsive`;
        }
        done(null, missing);
    }, 5);
}

/** The permission-model flag this Node.js process was started with
 *  (`--experimental-permission` on Node 20, `--permission` from 22), in
 *  its arguments before the script or in NODE_OPTIONS, or null (the
 *  daemon's javascript_hooks::runtime_refused is the launch's check). */
function permissionFlag(): string | null {
    // Bytes: the words are NUL-separated (a text read stops at the first).
    const words = (path: string) => {
        try {
            const bytes = new Uint8Array(File.readAllBytes(path));
            let text = "";
            for (const b of bytes) text += String.fromCharCode(b);
            return text.split("\0");
        } catch (_) {
            return [];
        }
    };
    const args = words("/proc/self/cmdline").slice(1);
    // Node's own options come before the script (the first word that is
    // not an option; the flags in question take no value).
    const script = args.findIndex(a => !a.startsWith("-"));
    const own = script < 0 ? args : args.slice(0, script);
    const options = words("/proc/self/environ").find(e => e.startsWith("NODE_OPTIONS="));
    const all = own.concat(options === undefined ? [] : options.slice("NODE_OPTIONS=".length).split(/\s+/));
    return all.find(a => a === "--experimental-permission" || a === "--permission") ?? null;
}

/** Takes away what only the loading needed (the stub stays, pointing at
 *  the loading until the agent goes). */
function finish(l: Loading): void {
    l.readListener?.detach();
    l.readListener = null;
    disarmSignal(l);
}

/** What the main thread is doing, from /proc: "running", or the system
 *  call it waits in. */
function mainThreadState(): string {
    try {
        const call = File.readAllText(`/proc/self/task/${Process.id}/syscall`).trim().split(" ")[0];
        return call === "running" ? "it is running native code" : `it waits in system call ${call}`;
    } catch (_) {
        return "its state is unknown";
    }
}

/** The agent goes: the interrupt stub (if V8 may still call it) returns at
 *  once from now on; everything else the loading made is put back. */
export function forgetNodeRuntimeLoading(): void {
    const l = loading;
    if (l === null) return;
    finish(l);
    if (l.stubSlot !== null) {
        l.stubSlot.writePointer(NULL);
        if (l.status.add(16).readS32() === 1 && l.stubPages !== null) {
            // V8 took the interrupt: nothing can call the stub any more.
            new NativeFunction(libc("munmap")!, "int", ["pointer", "size_t"])(l.stubPages, Process.pageSize * 2);
        }
    }
    loading = null;
    loaded = false;
}
