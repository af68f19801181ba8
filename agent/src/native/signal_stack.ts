// A signal stack for every thread of the program, so that a stack overflow
// is reported like any other crash. A thread that overflows faults on its
// stack's guard page, and the kernel can only run a handler for that fault
// on an alternate signal stack: without one the process dies at once, with
// no report and no backtrace (measured: a C program recursing without end
// died of SIGSEGV with Frida's exception handler never called). Frida's
// handler asks for the alternate stack (SA_ONSTACK), and a thread that has
// one runs the crash report there.
//
// A thread's alternate stack can only be set by the thread itself: the
// main thread gets one when it enters the program's `main` (a process
// Strobe launches: a listener on __libc_start_main, attached when the
// agent loads, never fires, measured; a process Strobe attaches to is past
// `main`; an executable without the symbol gets none), and every thread
// pthread_create starts gets one before its start routine runs, given back
// by a thread-specific-data destructor when the thread ends. A thread that
// already has one (the program's own, Rust's std's) keeps it. Memory is
// reserved, not committed: only the pages a handler touches cost anything.
//
// The set-up runs in the program's threads before their own code, so it
// makes no libc call a trace could record as the program's: system calls
// go through `syscall`, and the start routine travels in the new stack's
// own memory rather than a malloc'd block.
//
// The agent can be unloaded from a process that runs on (a detached
// attach session), and its CModule's code with it. So no frame of that
// code stays on a thread's stack: a few instructions in memory that is
// never freed call the set-up, then jump (not call) to the start routine;
// and on unload the destructor key is deleted, so no ending thread calls
// into freed code (the stacks of threads alive then are left mapped).

import { rawAlloc, u32Bytes, u64Bytes } from "./memory.js";

const SOURCE = `
#include <glib.h>

extern long syscall(long, ...);
extern int pthread_setspecific(unsigned int, const void *);
extern int pthread_create(void *, const void *, void *(*)(void *), void *);
extern unsigned int strobe_stack_key;
/* The start tail's address (see startTail), written once it exists. */
extern void *(*strobe_start_tail)(void *);

#define SYS_MMAP 9
#define SYS_MPROTECT 10
#define SYS_MUNMAP 11
#define SYS_SIGALTSTACK 131
#define PROT_NONE 0
#define PROT_RW 3
#define MAP_FLAGS (0x02 | 0x20 | 0x4000 | 0x20000) /* PRIVATE ANONYMOUS NORESERVE STACK */
#define SS_DISABLE 2
#define PAGE 4096
/* The crash report (Frida's handler, the JavaScript engine, symbol lookup,
   the message to the daemon) runs on this stack: measured to need under
   256 KiB; twice that, reserved only. */
#define STACK_SIZE (512 * 1024)
/* A guard page below the stack, and a page above it for the start routine. */
#define REGION_SIZE (PAGE + STACK_SIZE + PAGE)
/* Where the start routine and its argument are kept: START_AT in TypeScript. */
#define START_AT (PAGE + STACK_SIZE)

typedef struct {
    void *ss_sp;
    int ss_flags;
    unsigned long ss_size;
} AltStack;

typedef struct {
    void *(*start)(void *);
    void *arg;
} Start;

/* Regions of ended threads, for the next threads: mapping, guarding and
   unmapping one per thread cost about 35 us per thread created (measured,
   against about 50 us for a thread's whole start and join). Taken only with
   a try-lock: a fork while another thread held it leaves it held in the
   child, which then maps and unmaps as if the cache were empty. */
#define CACHED_MAX 64
typedef struct {
    volatile int lock;
    int count;
    char *regions[CACHED_MAX];
} Cache;
/* In memory the script allocates: a CModule's own data is read-only. */
extern Cache strobe_stack_cache;

static int try_lock(void) {
    int prev, one = 1;
    volatile int *l = &strobe_stack_cache.lock;
    __asm__ volatile("lock; cmpxchgl %2, %1" : "=a"(prev), "+m"(*l) : "r"(one), "0"(0) : "memory");
    return prev == 0;
}

static void unlock(void) {
    volatile int *l = &strobe_stack_cache.lock;
    __asm__ volatile("" : : : "memory");
    *l = 0;
}

static char *cached_region(void) {
    char *region = NULL;
    if (!try_lock()) return NULL;
    if (strobe_stack_cache.count > 0) region = strobe_stack_cache.regions[--strobe_stack_cache.count];
    unlock();
    return region;
}

/* Keeps region for another thread, or unmaps it. */
static void drop_region(char *region) {
    int kept = 0;
    if (try_lock()) {
        if (strobe_stack_cache.count < CACHED_MAX) {
            strobe_stack_cache.regions[strobe_stack_cache.count++] = region;
            kept = 1;
        }
        unlock();
    }
    if (!kept) syscall(SYS_MUNMAP, region, REGION_SIZE);
}

static char *new_region(void) {
    char *reused = cached_region();
    if (reused != NULL) return reused;
    long at = syscall(SYS_MMAP, 0, REGION_SIZE, PROT_RW, MAP_FLAGS, -1, 0);
    if (at < 0 && at > -4096) return NULL;
    syscall(SYS_MPROTECT, at, PAGE, PROT_NONE);
    return (char *)at;
}

static int has_stack(void) {
    AltStack current;
    if (syscall(SYS_SIGALTSTACK, NULL, &current) != 0) return 1;
    return (current.ss_flags & SS_DISABLE) == 0;
}

/* Gives the calling thread the stack in region; 0 when it did. */
static int use_region(char *region) {
    AltStack stack;
    stack.ss_sp = region + PAGE;
    stack.ss_flags = 0;
    stack.ss_size = STACK_SIZE;
    return (int)syscall(SYS_SIGALTSTACK, &stack, NULL);
}

/* The main thread's, kept for the life of the process. */
void strobe_stack_for_main(void) {
    if (has_stack()) return;
    char *region = new_region();
    if (region != NULL && use_region(region) != 0) syscall(SYS_MUNMAP, region, REGION_SIZE);
}

/* Runs when a thread that got a stack below ends. */
void strobe_stack_release(void *region) {
    AltStack current;
    if (syscall(SYS_SIGALTSTACK, NULL, &current) == 0 && current.ss_sp == (char *)region + PAGE) {
        AltStack off;
        off.ss_sp = NULL;
        off.ss_flags = SS_DISABLE;
        off.ss_size = 0;
        syscall(SYS_SIGALTSTACK, &off, NULL);
    }
    drop_region(region);
}

/* Called on the new thread by the start tail (see startTail). A region
   that could not be used stays mapped until the thread ends (the tail still
   reads the start routine from it). */
void strobe_stack_setup(char *region) {
    if (!has_stack()) use_region(region);
    pthread_setspecific(strobe_stack_key, region);
}

/* Replaces pthread_create; calling pthread_create from here reaches the original. */
int strobe_pthread_create(void *thread, const void *attr, void *(*fn)(void *), void *arg) {
    char *region = new_region();
    if (region == NULL) return pthread_create(thread, attr, fn, arg);
    Start *start = (Start *)(region + START_AT);
    start->start = fn;
    start->arg = arg;
    int result = pthread_create(thread, attr, strobe_start_tail, region);
    if (result != 0) drop_region(region);
    return result;
}
`;

/** START_AT of the C source: the start routine's offset in a region. */
const START_AT = 4096 + 512 * 1024;

let module: CModule | null = null;
let key: NativePointer | null = null;
let tailCell: NativePointer | null = null;
let cache: NativePointer | null = null;

/** Machine code, in memory never freed, that a new thread starts in with
 *  its region: calls strobe_stack_setup(region), then jumps to the start
 *  routine with its argument, so the routine returns straight to libc. */
function startTail(setup: NativePointer): NativePointer {
    const code = [
        0x57, //                                   push rdi (region; aligns the call)
        0x48, 0xb8, ...u64Bytes(setup), //         mov rax, setup
        0xff, 0xd0, //                             call rax
        0x5f, //                                   pop rdi
        0x48, 0x8b, 0x87, ...u32Bytes(START_AT), //     mov rax, [rdi + START_AT]
        0x48, 0x8b, 0xbf, ...u32Bytes(START_AT + 8), // mov rdi, [rdi + START_AT + 8]
        0xff, 0xe0, //                             jmp rax
    ];
    const at = rawAlloc(Process.pageSize);
    at.writeByteArray(code);
    Memory.protect(at, Process.pageSize, "r-x");
    return at;
}

/** Gives the program's threads signal stacks from now on: the main thread
 *  when it enters `main` (a launched program), every thread pthread_create
 *  starts. */
export function giveThreadsSignalStacks(): void {
    if (module !== null || Process.arch !== "x64") return;
    const libc = (name: string) => Module.findGlobalExportByName(name);
    const syscall = libc("syscall");
    const create = libc("pthread_create");
    const keyCreate = libc("pthread_key_create");
    const setSpecific = libc("pthread_setspecific");
    const program = Process.mainModule;
    const main = program.findExportByName("main") ?? program.findSymbolByName("main");
    if (syscall === null || create === null || keyCreate === null || setSpecific === null) return;
    key = Memory.alloc(4);
    // The tail needs the set-up's address and the module the tail's: the
    // tail is written once the module exists, into a cell the module reads.
    tailCell = Memory.alloc(Process.pointerSize);
    // Cache of the C source: lock, count, 64 regions (zeroed: empty).
    cache = Memory.alloc(8 + 64 * Process.pointerSize);
    cache.writeU64(0);
    module = new CModule(SOURCE, {
        syscall, pthread_create: create, pthread_setspecific: setSpecific, strobe_stack_key: key,
        strobe_start_tail: tailCell, strobe_stack_cache: cache,
    });
    tailCell.writePointer(startTail(module.strobe_stack_setup));
    const made = new NativeFunction(keyCreate, "int", ["pointer", "pointer"])(
        key, module.strobe_stack_release) as number;
    if (made !== 0) throw new Error(`pthread_key_create failed: ${made}`);
    Interceptor.replace(create, module.strobe_pthread_create);
    if (main !== null) Interceptor.attach(main, { onEnter: module.strobe_stack_for_main });
}

/** Before the agent is unloaded from a process that runs on: threads that
 *  end later must not call the destructor, whose code goes with the agent. */
export function forgetSignalStacks(): void {
    const keyDelete = Module.findGlobalExportByName("pthread_key_delete");
    if (module === null || key === null || keyDelete === null) return;
    new NativeFunction(keyDelete, "int", ["uint"])(key.readU32());
}
