// The records' clock: CLOCK_MONOTONIC in ns (the store's one clock), read
// from the CPU's time-stamp counter where the kernel itself keeps time with
// it. rdtsc and a multiply cost ~8 ns here; clock_gettime through the vDSO
// ~17 ns, and a traced call reads the clock twice (its enter and its exit).
//
// The conversion is anchored: ns = ns0 + ((tsc - tsc0) * mult >> 32), with
// (tsc0, ns0, mult) in the runtime's config page under a sequence count.
// The drain timer re-anchors about every 50 ms (clock_anchor): a new
// anchor never moves time back (ns0 is the larger of the converted and the
// true reading), and when the conversion ran ahead it runs slower for the
// next period, so each thread's readings stay monotonic and track
// CLOCK_MONOTONIC (NTP's slewing included) to within the error of one
// period. A reading that meets an update, or lies more than 2^32 ticks
// (~1.4 s at 3 GHz) past its anchor — a forked child nobody re-anchors, an
// agent that stopped — takes clock_gettime instead, as does every reading
// where the kernel does not use the TSC as its clock source. The first
// anchor (as the runtime starts) measures the counter's rate over 1 ms.

/** Config page words (u64 index) of the clock. */
const SEQ = 8, TSC = 9, MULT = 10, NS = 11, ON = 12, FIRST_TSC = 13, FIRST_NS = 14, ALLOWED = 15;
/** The words the native hook's machine code reads (hook_code.ts). */
export const CLOCK_WORDS = { SEQ, TSC, MULT, NS, ON } as const;

/** C for both tracers' modules: `NOW(out)`. Needs `config` and
 *  clock_gettime. */
export const CLOCK_C = `
#define SLOW_NOW(out) do { struct { gint64 s; gint64 ns; } t_; clock_gettime(1, &t_); \\
    out = (guint64)t_.s * 1000000000ULL + (guint64)t_.ns; } while (0)
/* A macro: TinyCC inlines nothing. Plain variables in the asm operands:
   TinyCC allocated an expression operand on top of an output register. */
#define NOW(out) do { \\
    if (config[${ON}]) { \\
        guint64 q_ = config[${SEQ}], d_; guint32 lo_, hi_; \\
        __asm__ volatile("rdtsc" : "=a"(lo_), "=d"(hi_)); \\
        d_ = ((((guint64)hi_) << 32) | lo_) - config[${TSC}]; \\
        out = config[${NS}] + ((d_ * config[${MULT}]) >> 32); \\
        if ((q_ & 1) || q_ != config[${SEQ}] || d_ >= (1ULL << 32)) SLOW_NOW(out); \\
    } else SLOW_NOW(out); } while (0)
`;

/** C for the native module only: clock_anchor(), called by the drain. */
export const CLOCK_ANCHOR_C = `
/* A lead over the true clock is given back over the next period (the drain
   anchors every 50 ms), by running at most half speed meanwhile. */
#define ANCHOR_PERIOD_NS 50000000.0

/* The (tsc, ns) pair with the shortest rdtsc bracket of three tries; 0 if
   none was usable. */
static int clock_sample(guint64 *t, guint64 *ns) {
    guint64 gap = ~0ULL;
    for (int i = 0; i < 3; i++) {
        guint32 lo, hi, lo2, hi2;
        guint64 now;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        SLOW_NOW(now);
        __asm__ volatile("rdtsc" : "=a"(lo2), "=d"(hi2));
        guint64 a = (((guint64)hi) << 32) | lo, b = (((guint64)hi2) << 32) | lo2;
        if (b > a && b - a < gap) { gap = b - a; *t = a + (b - a) / 2; *ns = now; }
    }
    return gap != ~0ULL;
}

void clock_anchor(void) {
    if (!config[${ALLOWED}]) return;
    guint64 t = 0, ns = 0;
    if (config[${FIRST_TSC}] == 0) {
        /* The first anchor measures the rate over 1 ms (to ~50 ppm; each
           later anchor measures it over the whole run), so the counter is
           used from the first traced calls on. */
        if (!clock_sample(&t, &ns)) return;
        config[${FIRST_TSC}] = t;
        config[${FIRST_NS}] = ns;
        guint64 now;
        do SLOW_NOW(now); while (now < ns + 1000000ULL);
    }
    if (!clock_sample(&t, &ns)) return;
    if (t <= config[${FIRST_TSC}] || ns < config[${FIRST_NS}] + 1000000ULL) return;
    /* Through signed integers: TinyCC has no helpers for unsigned 64-bit
       conversions to and from double (both values are far below 2^63). */
    double rate = (double)(gint64)(ns - config[${FIRST_NS}]) / (double)(gint64)(t - config[${FIRST_TSC}]);
    /* Where the current anchor puts this moment. */
    guint64 conv = ns;
    if (config[${ON}]) {
        guint64 d = t - config[${TSC}];
        if (t > config[${TSC}] && d < (1ULL << 32)) conv = config[${NS}] + ((d * config[${MULT}]) >> 32);
    }
    guint64 base = conv > ns ? conv : ns;
    double lead = conv > ns ? (double)(gint64)(conv - ns) / ANCHOR_PERIOD_NS : 0.0;
    if (lead > 0.5) lead = 0.5;
    double mult = rate * (1.0 - lead) * 4294967296.0;
    if (!(mult >= 1.0 && mult < 4294967296.0)) { config[${ON}] = 0; return; }
    config[${SEQ}] = config[${SEQ}] + 1;
    __asm__ volatile("" ::: "memory");
    config[${TSC}] = t;
    config[${MULT}] = (guint64)(gint64)mult;
    config[${NS}] = base;
    __asm__ volatile("" ::: "memory");
    config[${SEQ}] = config[${SEQ}] + 1;
    config[${ON}] = 1;
}
`;

/** Lets the counter be used where the kernel keeps time with it (its clock
 *  source is "tsc": invariant and synchronized across CPUs); elsewhere every
 *  reading is clock_gettime's. */
export function allowCounterClock(config: NativePointer): void {
    let source = "";
    try {
        source = File.readAllText("/sys/devices/system/clocksource/clocksource0/current_clocksource").trim();
    } catch (_e) {
        // Unreadable: keep clock_gettime.
    }
    config.add(ALLOWED * 8).writeU64(Process.arch === "x64" && source === "tsc" ? 1 : 0);
}
