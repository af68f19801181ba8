// Strobe's own code running on a program's thread (a breakpoint's trap
// handler, an exit or crash report, a fork's barrier, a library load's
// wait) calls libc like any code: Frida reads /proc/self/maps with sscanf,
// allocates, writes to its pipes. With those functions traced, the calls
// entered the program's hooks, were recorded as the program's own (about
// 300 sscanf calls per breakpoint added) and could nest inside a call the
// thread was already recording. While marked, a thread's traced calls run
// untraced. The native tracer provides the marker when it creates its
// runtime; before that no function is hooked and nothing needs marking.

/** Marks the calling thread (returns what `end` restores) and unmarks it. */
interface OwnCodeMarkers {
    begin: () => number;
    end: (previous: number) => void;
}

let markers: OwnCodeMarkers | null = null;

/** Called once by the native tracer's runtime. */
export function provideOwnCodeMarkers(m: OwnCodeMarkers): void {
    markers = m;
}

/** Runs `fn` with the calling thread's traced calls untraced: `fn` is
 *  Strobe's code, not the program's. Nests. */
export function asOwnCode<T>(fn: () => T): T {
    const m = markers;
    if (m === null) return fn();
    const previous = m.begin();
    try {
        return fn();
    } finally {
        m.end(previous);
    }
}
