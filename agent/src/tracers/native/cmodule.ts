// The CModule (compiled by Frida's TinyCC) the hook calls on every traced
// call: fast_enter / fast_leave write records into the shared MPSC ring
// (and run the function's capture plan), committed / release let the JS
// drain ship them. Record layout and limits: layout.ts.
import { CLOCK_ANCHOR_C } from "../clock.js";
import { CONFIG_BEFORE_RECORD, RING_WRITER_C } from "../ring.js";
import { PAYLOAD_MAX, WINDOW_NS } from "./layout.js";
import { OWN_CODE_BUSY } from "./own_threads.js";
import { STAGE_C } from "./stage.js";

/** The C source. Its externs are bound in runtime.ts: ring, drops, fstate,
 *  config, plans, stages (stage.ts), own_thread_asked (own_threads.ts),
 *  own_state (runtime.ts), and the libc functions it calls. */
export const CMODULE_SOURCE = `
#include <glib.h>

extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 fstate[];
extern volatile guint64 config[];
extern volatile guint64 plans[];
extern volatile guint64 stages[];
extern guint32 own_thread_asked(guint32);
extern volatile guint64 own_state[];
extern int gettid(void);
extern int getpid(void);
extern void *calloc(gsize, gsize);
extern void *malloc(gsize);
extern void free(void *);
extern void *pthread_getspecific(unsigned int);
extern int pthread_setspecific(unsigned int, const void *);
extern long process_vm_readv(int, void *, unsigned long, void *, unsigned long, unsigned long);
extern int clock_gettime(int, void *);
extern int sched_yield(void);
extern int usleep(unsigned int);

${RING_WRITER_C}
${CLOCK_ANCHOR_C}
struct Stage;
/* The hook's machine code reads tid, busy and stage (hook_code.ts TS_*). */
typedef struct { guint32 tid; guint32 busy; guint8 *scratch; struct Stage *stage; } ThreadState;
/* Per call, in the hook's frame (32 bytes there): the enter's decisions and
   the thread state it found, for the exit. */
typedef struct { guint16 record; guint16 typed; guint32 sampled; ThreadState *st; } CallState;
typedef struct { guint64 window; guint64 calls; guint64 every; guint64 tick; guint64 hot; guint64 trampoline; guint64 copy; guint64 id; } FuncState;
/* Saved by the hook at entry: rdi, rsi, rdx, rcx, r8, r9, rax, r10, xmm0-7. */
typedef struct { guint64 gp[6]; guint64 rax; guint64 r10; guint64 xmm[8][2]; } Regs;
/* Saved by the hook at exit. */
typedef struct { guint64 rax; guint64 rdx; guint64 xmm0[2]; guint64 xmm1[2]; } RetRegs;
typedef struct { guint8 src; guint8 flags; guint16 parent; guint32 size; guint64 arg; gint64 addend; } Node;
typedef struct { guint16 n_enter; guint16 n_exit; guint16 stack_bytes; guint16 id; guint16 n_expr; guint16 pad[3]; } PlanHeader;
/* Evaluates a function's expression watches (JS) into out; returns bytes written. */
typedef guint32 (*ExprFn)(guint32 func, guint32 exit, const guint64 *regs, guint8 *out, guint32 cap);
#define SAMPLED 0x100u
${STAGE_C}
#define PAYLOAD_MAX ${PAYLOAD_MAX}u
#define MAX_NODES 256u

/* busy while Strobe's own code runs on the thread (own_begin), and for
   good on Frida's own threads: their traced calls run untraced. */
#define OWN_CODE ${OWN_CODE_BUSY}u

/* A thread of Frida's (cloaked): asked once, at its first traced call.
   The process's main thread is the program's. */
static int is_own_thread(guint32 tid) {
    return tid != (guint32)config[2] && own_thread_asked(tid);
}

/* The calling thread's state, created on its first traced call (the
   caller found none under the pthread key) and freed by thread_gone (the
   key's destructor) when the thread ends. It is stored first, busy: a
   traced function called while the thread is asked about runs untraced. */
static ThreadState *new_thread_state(void) {
    ThreadState *st = calloc(1, sizeof(ThreadState));
    if (st == NULL) return NULL;
    st->tid = (guint32)gettid();
    st->busy = OWN_CODE;
    pthread_setspecific((unsigned int)config[3], st);
    if (!is_own_thread(st->tid)) {
        st->stage = claim_stage();
        st->busy = 0;
    }
    return st;
}

/* What own_begin returns for a thread that had no state: own_end takes
   the shared one away again. */
#define OWN_HAD_NONE 0xffffffffu

/* Strobe's code starts running on this thread (native/own_code.ts): its
   traced calls run untraced until own_end(the value returned). A thread
   with no state yet gets the shared, never-written own_state (runtime.ts)
   rather than a new one: this runs in the exception handler, maybe on a
   thread that crashed inside malloc, where calloc would wait for ever. */
guint32 own_begin(void) {
    ThreadState *st = pthread_getspecific((unsigned int)config[3]);
    if (st == NULL) {
        pthread_setspecific((unsigned int)config[3], (void *)own_state);
        return OWN_HAD_NONE;
    }
    guint32 previous = st->busy;
    if (st != (ThreadState *)own_state) st->busy = OWN_CODE;
    return previous;
}

void own_end(guint32 previous) {
    ThreadState *st = pthread_getspecific((unsigned int)config[3]);
    if (st == NULL || st == (ThreadState *)own_state) {
        if (previous == OWN_HAD_NONE) pthread_setspecific((unsigned int)config[3], NULL);
        return;
    }
    st->busy = previous;
}

void thread_gone(void *p) {
    ThreadState *st = p;
    if (st == NULL || st == (ThreadState *)own_state) return;
    release_stage(st);
    free(st->scratch);
    free(st);
}

/* Writes a record straight into the ring, after the thread's staged ones.
   Returns 0 when it had to be dropped (ring full for too long). */
static int put(ThreadState *st, guint32 func, guint32 kind, guint64 value, guint64 ts, const guint8 *payload, guint32 len) {
    flush_own(st);
    return put_record_unstaged(st->tid, func, kind, value, ts, payload, len);
}

/* Records another tracer made earlier on this thread go first (ring.ts
   CONFIG_BEFORE_RECORD): called before an enter or exit is written, typed
   or not. */
#define BEFORE_RECORD(st) do { guint64 b_ = config[${CONFIG_BEFORE_RECORD}]; \
    if (b_) ((void (*)(guint32))(gsize)b_)((st)->tid); } while (0)

/* Copies len bytes at addr without ever faulting (unmapped memory just
   reads short): page by page through process_vm_readv on this process.
   For C strings, stops at NUL (*found set) and excludes it. */
static guint32 safe_read(guint8 *dst, guint64 addr, guint32 len, int cstring, int *found) {
    struct { void *base; gsize len; } local, remote;
    guint32 done = 0;
    *found = 0;
    int self_pid = (int)config[2];
    while (done < len) {
        guint64 a = addr + done;
        guint32 chunk = 4096 - (guint32)(a & 4095);
        if (chunk > len - done) chunk = len - done;
        local.base = dst + done; local.len = chunk;
        remote.base = (void *)a; remote.len = chunk;
        long n = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
        if (n <= 0) break;
        if (cstring) {
            for (long i = 0; i < n; i++) {
                if (dst[done + i] == 0) { *found = 1; return done + (guint32)i; }
            }
        }
        done += (guint32)n;
        if ((guint32)n < chunk) break;
    }
    return done;
}

/* Executes plan nodes: one block (u64 addr, u32 len, u32 status, data
   padded to 8) per node, appended at out[pos]. gp: the six argument
   registers (NULL at exit); rax/rdx: return registers; stack: where the
   caller put the stack arguments. */
static guint32 run_nodes(const Node *nodes, guint32 n, const guint64 *gp, guint64 rax, guint64 rdx, guint64 stack, guint8 *out, guint32 pos) {
    guint32 offs[MAX_NODES];
    guint32 lens[MAX_NODES];
    if (n > MAX_NODES) n = MAX_NODES;
    for (guint32 i = 0; i < n; i++) {
        const Node *nd = &nodes[i];
        guint64 addr = 0, len_hint = nd->size;
        guint32 status = 0;
        int have = 1;
        switch (nd->src) {
            case 0: {
                guint64 a = nd->arg < 5 ? nd->arg : 5;
                addr = gp ? gp[a] : 0;
                if ((nd->flags & 2) && gp && nd->arg < 5) { guint64 l = gp[nd->arg + 1]; if (l < len_hint) len_hint = l; }
                break;
            }
            case 1: {
                int f; guint64 v = 0;
                if (safe_read((guint8 *)&v, stack + nd->arg, 8, 0, &f) != 8) { have = 0; status = 2; }
                addr = v;
                if (have && (nd->flags & 2)) { guint64 l = 0; safe_read((guint8 *)&l, stack + nd->arg + 8, 8, 0, &f); if (l < len_hint) len_hint = l; }
                break;
            }
            case 2: {
                guint16 p = nd->parent;
                if (p >= i || lens[p] < nd->arg + 8) { have = 0; status = 3; break; }
                const guint8 *pd = out + offs[p] + nd->arg;
                addr = *(const guint64 *)pd;
                if ((nd->flags & 2) && lens[p] >= nd->arg + 16) { guint64 l = *(const guint64 *)(pd + 8); if (l < len_hint) len_hint = l; }
                break;
            }
            case 3: addr = nd->arg == 0 ? rax : rdx; break;
            default: addr = nd->arg; break;
        }
        if (have) addr += (guint64)nd->addend;
        if (pos + 16 > PAYLOAD_MAX) { n = i; break; }
        guint8 *h = out + pos;
        pos += 16;
        guint32 got = 0;
        if (have && addr == (guint64)nd->addend && nd->src != 4) status = 1;
        else if (have) {
            guint32 want = (guint32)len_hint;
            int cut = 0;
            if (want > PAYLOAD_MAX - pos) { want = PAYLOAD_MAX - pos; cut = 1; }
            int found;
            got = safe_read(out + pos, addr, want, nd->flags & 1, &found);
            if (nd->flags & 1) status = found ? 0 : (got == 0 ? 2 : 5);
            else if (got < want) status = got == 0 ? 2 : 5;
            if (cut && status == 0) status = 5;
        }
        *(guint64 *)h = addr;
        *(guint32 *)(h + 8) = got;
        *(guint32 *)(h + 12) = status;
        offs[i] = pos;
        lens[i] = (status == 0 || status == 5) ? got : 0;
        pos += (got + 7) & ~7u;
    }
    return pos;
}

static guint8 *scratch_of(ThreadState *st) {
    /* One buffer per traced thread, kept for the thread's life. */
    if (st->scratch == NULL) st->scratch = malloc(PAYLOAD_MAX + 64);
    return st->scratch;
}

static int put_enter(ThreadState *st, guint32 func, guint32 kind, guint64 ts, const PlanHeader *plan, const Regs *r, guint64 stack) {
    guint8 *out = scratch_of(st);
    if (out == NULL) return put(st, func, kind, r->gp[0], ts, NULL, 0);
    guint64 *regs = (guint64 *)(out + 8);
    for (int i = 0; i < 6; i++) regs[i] = r->gp[i];
    for (int i = 0; i < 8; i++) regs[6 + i] = r->xmm[i][0];
    guint32 pos = 8 + 14 * 8;
    guint32 sb = (plan->stack_bytes + 7u) & ~7u;
    if (sb) {
        int f;
        guint32 got = safe_read(out + pos, stack, sb, 0, &f);
        for (guint32 i = got; i < sb; i++) out[pos + i] = 0;
        pos += sb;
    }
    pos = run_nodes((const Node *)(plan + 1), plan->n_enter, r->gp, 0, 0, stack, out, pos);
    if (plan->n_expr && config[4]) pos += ((ExprFn)(gsize)config[4])(func, 0, r->gp, out + pos, PAYLOAD_MAX - pos);
    *(guint32 *)out = plan->id;
    *(guint32 *)(out + 4) = pos;
    return put(st, func, kind, r->gp[0], ts, out, pos);
}

static void put_exit(ThreadState *st, guint32 func, guint32 kind, guint64 ts, const PlanHeader *plan, const RetRegs *r) {
    guint8 *out = scratch_of(st);
    if (out == NULL) { put(st, func, kind, r->rax, ts, NULL, 0); return; }
    guint64 *regs = (guint64 *)(out + 8);
    regs[0] = r->rax; regs[1] = r->rdx;
    regs[2] = r->xmm0[0]; regs[3] = r->xmm1[0];
    guint32 pos = 8 + 4 * 8;
    pos = run_nodes((const Node *)(plan + 1) + plan->n_enter, plan->n_exit, NULL, r->rax, r->rdx, 0, out, pos);
    if (plan->n_expr && config[4]) pos += ((ExprFn)(gsize)config[4])(func, 1, &r->rax, out + pos, PAYLOAD_MAX - pos);
    *(guint32 *)out = plan->id;
    *(guint32 *)(out + 4) = pos;
    put(st, func, kind, r->rax, ts, out, pos);
}

/* Called by the hook before the original function runs. Decides, once per
   call, whether it is recorded (sampling of hot functions); the exit of a
   call follows its enter's decision. Counters are racy on purpose: rates
   only need to be approximate. A traced function called from this code
   itself (busy) runs untraced. */
void fast_enter(FuncState *fs, const Regs *r, guint64 stack, CallState *cs) {
    cs->record = 0;
    if (config[5]) return;
    ThreadState *st = pthread_getspecific((unsigned int)config[3]);
    if (st == NULL) st = new_thread_state();
    if (st == NULL || st->busy) return;
    st->busy = 1;
    cs->st = st;
    guint32 func = (guint32)fs->id;
    guint64 t;
    NOW(t);
    if (t - fs->window >= ${WINDOW_NS}ULL) {
        guint64 calls = fs->calls;
        fs->window = t;
        fs->calls = 0;
        if (config[1] && calls > config[0]) fs->every = calls / config[0] + 1;
        else if (!config[1] || calls * (fs->every ? fs->every : 1) < config[0] / 2) fs->every = 0;
        /* With sampling off, a hot function's every call is recorded, but
           without typed values: capturing and decoding them for each of
           millions of calls would slow the program many times over. */
        fs->hot = !config[1] && calls > config[0];
    }
    fs->calls++;
    guint64 every = fs->every;
    guint32 sampled = every > 1;
    cs->sampled = sampled;
    int record = every <= 1 || (fs->tick++ % every) == 0;
    int typed = !fs->hot;
    cs->typed = (guint16)typed;
    /* An enter that could not be recorded takes its exit with it. */
    if (record) {
        BEFORE_RECORD(st);
        guint32 kind = 1 | (sampled ? SAMPLED : 0);
        const PlanHeader *plan = typed ? (const PlanHeader *)(gsize)plans[func & (MAXF - 1)] : NULL;
        if (plan) record = put_enter(st, func, kind, t, plan, r, stack);
        else record = stage_put(st, func, kind, r->gp[0], t);
    }
    cs->record = (guint16)record;
    st->busy = 0;
}

/* Called by the hook after the original function returned. */
void fast_leave(FuncState *fs, const RetRegs *r, CallState *cs) {
    /* A call that forked returns in the child too, which must not write
       into its parent's shared ring (ring.ts put_record). */
    if (!cs->record || config[5]) return;
    ThreadState *st = cs->st;
    st->busy = 1;
    BEFORE_RECORD(st);
    guint32 func = (guint32)fs->id;
    guint32 kind = 2 | (cs->sampled ? SAMPLED : 0);
    guint64 t;
    NOW(t);
    const PlanHeader *plan = cs->typed ? (const PlanHeader *)(gsize)plans[func & (MAXF - 1)] : NULL;
    if (plan) put_exit(st, func, kind, t, plan, r);
    else stage_put(st, func, kind, r->rax, t);
    st->busy = 0;
}

/* Slots of whole records committed contiguously from the tail, at most
   max (unless one record alone is larger), not crossing the ring's end. */
guint32 committed(guint32 max) {
    guint64 tail = ring[1];
    guint32 n = 0;
    while (n < max) {
        guint64 slot = tail + n;
        if (n > 0 && (slot & (CAP - 1)) == 0) break;
        Rec *r = (Rec *)((char *)ring + 64) + (slot & (CAP - 1));
        if (*(volatile guint32 *)&r->kind == 0) break;
        __asm__ volatile("" ::: "memory");
        guint32 size = 1 + r->extra;
        if (n > 0 && n + size > max) break;
        n += size;
    }
    return n;
}

/* Frees n records at the tail. */
void release(guint32 n) {
    guint64 tail = ring[1];
    for (guint32 i = 0; i < n; i++) {
        Rec *r = (Rec *)((char *)ring + 64) + ((tail + i) & (CAP - 1));
        *(volatile guint32 *)&r->kind = 0;
    }
    ring[1] = tail + n;
}
`;
