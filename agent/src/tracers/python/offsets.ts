// Indexes shared by the Python tracer's C side and its JavaScript: the
// words of its configuration page and the CPython layout offsets.

/** Indexes into the `pycfg` page the C reads (written by index.ts). */
export const CFG = {
    /** Bumped on every change of targets: cached classifications are stale. */
    generation: 0,
    /** The co_extra index (~0 until the first frame requests one). */
    extraIndex: 1,
    /** The target table: a header slot whose first word is the slot count
     *  minus one (a power of two minus one), then the slots. */
    table: 3,
    /** Value limits: container depth, items shown per container, bytes per string. */
    depth: 4,
    items: 5,
    strBytes: 6,
    /** The payload scratch buffer (one: the GIL serializes its users). */
    scratch: 7,
    /** 1 while the tracer records. */
    enabled: 8,
    /** The set of thread ids already named (THREAD_SLOTS u32, open addressing). */
    threads: 9,
    /** Run-time matching of code without a source file (exec, generated
     *  methods): the patterns (an array of C strings) and their count, the
     *  main script's module name, the next id to give and the end of the
     *  id range. */
    patterns: 10,
    patternCount: 11,
    mainModule: 12,
    nextId: 13,
    idLimit: 14,
    /** Breakpoints (debug_c.ts): the table (a count, then BpEntry
     *  structs), its count (0: no breakpoint), the stepping threads'
     *  table (STEPPER_SLOTS entries) and how many are stepping. */
    bpTable: 15,
    bpCount: 16,
    steppers: 17,
    stepping: 18,
    /** Expression watches (watches_c.ts): [mask, then (function id, list)
     *  slots], or 0 when none. */
    watchTable: 19,
    /** Threads inside pause_here (paused, or on their way out of it): the
     *  detach waits for none before the C side goes away. */
    inPause: 20,
    /** 1 while functions are traced (sys.monitoring's events, 3.12 on:
     *  monitoring_c.ts). */
    monTrace: 21,
    /** sys.monitoring's state (monitoring_c.ts says what each holds). */
    monModule: 22,
    monDisable: 23,
    monArmed: 24,
    monTool: 25,
    monSet: 26,
    monDefs: 27,
    monError: 28,
    /** Threads inside a sys.monitoring callback that runs Python code. */
    inCallback: 29,
} as const;

/** Layout offsets for one CPython minor version (see cpython.ts). */
export const LAYOUT = {
    frameCode: 0, frameOwner: 1, frameLocals: 2, codeFlags: 3, codeArgc: 4,
    codeKwonly: 5, codeFilename: 6, codeQualname: 7, codeNames: 8, codeExtra: 9,
    tstateTid: 10, genIframe: 11, genState: 12, typeName: 13, typeFlags: 14,
    excArgs: 15, listItems: 16, tupleItems: 17, managedDict: 18, managedValues: 19,
    typeDictOffset: 20, cachedKeys: 21, keysEntries: 22, keysIndices: 23, keysIndexBytes: 24,
    tbNext: 25, tbFrame: 26, tbLineno: 27, tbLasti: 28, tstateCframe: 29, cframeCurrent: 30,
    framePrevious: 31, framePrevInstr: 32, codeAdaptive: 33, codeFirstLine: 34,
    funcQualname: 35, funcModule: 36, strState: 37, strLength: 38, strAsciiData: 39,
    tstateProfileFunc: 40, tstateTraceFunc: 41, cframeUseTracing: 42, cframePrevious: 43, pyFrameFrame: 44,
    frameGlobals: 45, tstateTracing: 46, longDigits: 47, floatValue: 48, frameFunc: 49,
    tstateFrame: 50, excTraceback: 51, typeBasicSize: 52, valuesValid: 53, valuesValues: 54,
} as const;

/** Slots of the named-threads set (a power of two). */
export const THREAD_SLOTS = 1024;

/** Bytes of one target table slot: hash, id, qualname and file pointers. */
export const TABLE_SLOT = 32;

