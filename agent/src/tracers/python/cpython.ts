// Finding the CPython interpreter in this process (an executable that links
// it statically, or libpython), its version, and the internal layouts the
// C side reads for that version.
import { LAYOUT } from "./offsets.js";

/** The interpreter: its image, version and the exports the tracer uses. */
export interface CPython {
    module: Module;
    /** "3.11.7". */
    version: string;
    /** The minor version (11 for 3.11). */
    minor: number;
    /** Traced through sys.monitoring (3.12 and later), not the eval stub. */
    monitoring: boolean;
    /** Offsets, indexed by LAYOUT. */
    layout: number[];
    /** An export of the interpreter (throws when missing). */
    fn(name: string): NativePointer;
}

/** CPython 3.11's layouts (x86-64), checked against the headers of 3.11.2
 *  and 3.11.7 (crates/strobe-frida/tests/python_layout.rs compiles
 *  offsetof() against the system's Python.h and compares). An offset of -1
 *  is a field the version does not have. */
const LAYOUT_3_11: Record<keyof typeof LAYOUT, number> = {
    frameCode: 32, // _PyInterpreterFrame.f_code
    frameOwner: 69, // .owner
    frameLocals: 72, // .localsplus
    codeFlags: 48, // PyCodeObject.co_flags
    codeArgc: 56, // .co_argcount
    codeKwonly: 64, // .co_kwonlyargcount
    codeFilename: 112, // .co_filename
    codeQualname: 128, // .co_qualname
    codeNames: 96, // .co_localsplusnames
    codeExtra: 176, // .co_extra
    tstateTid: 160, // PyThreadState.native_thread_id
    genIframe: 80, // PyGenObject.gi_iframe
    genState: 75, // .gi_frame_state
    typeName: 24, // PyTypeObject.tp_name
    typeFlags: 168, // .tp_flags
    excArgs: 24, // PyBaseExceptionObject.args
    listItems: 24, // PyListObject.ob_item
    tupleItems: 24, // PyTupleObject.ob_item
    managedDict: -24, // _PyObject_ManagedDictPointer
    managedValues: -32, // _PyObject_ValuesPointer
    typeDictOffset: 288, // PyTypeObject.tp_dictoffset
    cachedKeys: 872, // PyHeapTypeObject.ht_cached_keys
    keysEntries: 24, // PyDictKeysObject.dk_nentries
    keysIndices: 32, // .dk_indices
    keysIndexBytes: 9, // .dk_log2_index_bytes
    tbNext: 16, // PyTracebackObject.tb_next
    tbFrame: 24, // .tb_frame
    tbLineno: 36, // .tb_lineno
    tbLasti: 32, // .tb_lasti
    tstateCframe: 56, // PyThreadState.cframe
    cframeCurrent: 8, // _PyCFrame.current_frame
    framePrevious: 48, // _PyInterpreterFrame.previous
    framePrevInstr: 56, // .prev_instr
    codeAdaptive: 184, // PyCodeObject.co_code_adaptive
    codeFirstLine: 72, // .co_firstlineno
    funcQualname: 40, // PyFunctionObject.func_qualname
    funcModule: 104, // .func_module
    strState: 32, // PyASCIIObject.state
    strLength: 16, // .length
    strAsciiData: 48, // sizeof(PyASCIIObject): a compact ASCII string's characters follow it
    tstateProfileFunc: 64, // PyThreadState.c_profilefunc
    tstateTraceFunc: 72, // .c_tracefunc
    cframeUseTracing: 0, // _PyCFrame.use_tracing
    cframePrevious: 16, // .previous
    pyFrameFrame: 24, // PyFrameObject.f_frame
    frameGlobals: 8, // _PyInterpreterFrame.f_globals
    tstateTracing: 44, // PyThreadState.tracing
    longDigits: 24, // PyLongObject.ob_digit
    floatValue: 16, // PyFloatObject.ob_fval
    frameFunc: 0, // _PyInterpreterFrame.f_func
    tstateFrame: -1, // none in 3.11: the current frame is in tstate's C frame
    excTraceback: 40, // PyBaseExceptionObject.traceback
    typeBasicSize: 32, // PyTypeObject.tp_basicsize
    valuesValid: -1, // none in 3.11: managed values are a bare array
    valuesValues: -1, // none in 3.11
};

/** CPython 3.12's layouts (x86-64), checked against pyenv's 3.12.1
 *  headers where the machine has them (python_layout.rs). 3.12 traces
 *  through sys.monitoring, not the eval stub: the fields only the stub's
 *  debugger read are gone. */
const LAYOUT_3_12: Record<keyof typeof LAYOUT, number> = {
    ...LAYOUT_3_11,
    frameCode: 0, // _PyInterpreterFrame.f_code
    frameOwner: 70, // .owner
    framePrevious: 8, // .previous
    frameGlobals: 24, // .f_globals
    frameFunc: 16, // .f_funcobj
    codeArgc: 52, // PyCodeObject.co_argcount
    codeKwonly: 60, // .co_kwonlyargcount
    codeExtra: 184, // .co_extra
    codeAdaptive: 192, // .co_code_adaptive
    codeFirstLine: 68, // .co_firstlineno
    tstateTid: 144, // PyThreadState.native_thread_id
    genIframe: 72, // PyGenObject.gi_iframe
    genState: 67, // .gi_frame_state
    cachedKeys: 880, // PyHeapTypeObject.ht_cached_keys
    managedDict: -24, // _PyObject_DictOrValuesPointer: the dict, or the values pointer minus one
    managedValues: -1, // none in 3.12: see managedDict
    cframeCurrent: 0, // _PyCFrame.current_frame
    cframePrevious: 8, // .previous
    cframeUseTracing: -1, // none in 3.12: tracing is sys.monitoring's
    strAsciiData: 40, // sizeof(PyASCIIObject): a compact ASCII string's characters follow it
    longDigits: 24, // PyLongObject.long_value.ob_digit
};

/** CPython 3.13's layouts (x86-64), checked against pyenv's 3.13.0
 *  headers where the machine has them. Traced through sys.monitoring. */
const LAYOUT_3_13: Record<keyof typeof LAYOUT, number> = {
    ...LAYOUT_3_12,
    frameCode: 0, // _PyInterpreterFrame.f_executable
    codeExtra: 192, // PyCodeObject.co_extra
    codeAdaptive: 200, // .co_code_adaptive
    tstateTid: 160, // PyThreadState.native_thread_id
    tstateTracing: 60, // .tracing
    tstateProfileFunc: 80, // .c_profilefunc
    tstateTraceFunc: 88, // .c_tracefunc
    tstateFrame: 72, // .current_frame
    tstateCframe: -1, // none in 3.13: tstateFrame instead
    cframeCurrent: -1, // none in 3.13
    cframePrevious: -1, // none in 3.13
    framePrevInstr: 56, // _PyInterpreterFrame.instr_ptr
    managedDict: -24, // _PyObject_ManagedDictPointer
    valuesValid: 3, // PyDictValues.valid
    valuesValues: 8, // .values
};

/** Layouts by "major.minor". */
const LAYOUTS: Record<string, Record<keyof typeof LAYOUT, number>> = {
    "3.11": LAYOUT_3_11,
    "3.12": LAYOUT_3_12,
    "3.13": LAYOUT_3_13,
};

/** Exports by the names 3.11 has, where a later version renamed them. */
const RENAMED: Record<string, string> = {
    _PyEval_RequestCodeExtraIndex: "PyUnstable_Eval_RequestCodeExtraIndex",
    _PyCode_SetExtra: "PyUnstable_Code_SetExtra",
};

/** The versions the tracer supports, for messages. */
export const SUPPORTED = Object.keys(LAYOUTS).join(", ");

/** Why the interpreter found cannot be traced, or null when it can. */
export let unsupported: string | null = null;

let found: CPython | null | undefined;

/** The interpreter in this process, if there is one the tracer supports
 *  (`unsupported` says why not, when one was found but cannot be traced). */
export function cpython(): CPython | null {
    if (found !== undefined) return found;
    found = null;
    const module = Process.enumerateModules().find(m => m.findExportByName("_PyEval_EvalFrameDefault") !== null);
    if (module === undefined) {
        unsupported = "no CPython interpreter is loaded in this process (no _PyEval_EvalFrameDefault export): "
            + "a statically linked or stripped interpreter cannot be traced";
        return null;
    }
    const getVersion = module.findExportByName("Py_GetVersion");
    const version = getVersion === null ? "?" : (new NativeFunction(getVersion, "pointer", [])() as NativePointer)
        .readCString()!.split(" ")[0];
    const minor = version.split(".").slice(0, 2).join(".");
    const layout = LAYOUTS[minor];
    if (layout === undefined) {
        unsupported = `CPython ${version} is not supported by the Python tracer yet (supported: ${SUPPORTED})`;
        return null;
    }
    const offsets: number[] = [];
    for (const [key, index] of Object.entries(LAYOUT)) offsets[index] = layout[key as keyof typeof LAYOUT];
    const minorNumber = Number(minor.split(".")[1]);
    found = {
        module,
        version,
        minor: minorNumber,
        monitoring: minorNumber >= 12,
        layout: offsets,
        fn(name: string): NativePointer {
            const p = module.findExportByName(name) ?? (name in RENAMED ? module.findExportByName(RENAMED[name]) : null);
            if (p === null) throw new Error(`CPython ${version} in ${module.path} has no export ${name}`);
            return p;
        },
    };
    return found;
}
