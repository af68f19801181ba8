//! Examples of every message, written to agent/test/protocol.fixtures.{agent,daemon}.ts
//! where the TypeScript compiler checks them against agent/src/protocol.ts
//! (agent/test/protocol_check.ts, run by `./dev test`).
//!
//! Each variant (and each variant of the enums nested in messages) has a
//! number given by an exhaustive `match`, so a new variant does not compile
//! until it has one, and the tests fail until it has an example. A variant
//! has a full example (every field present, optional ones too) and, where
//! it has optional or nullable fields, a minimal one (those absent or
//! null), so the TypeScript side must accept both.
//!
//! The fixture file is TypeScript rather than JSON because a JSON import
//! widens every string to `string`, and the unions are told apart by
//! string literals.

use super::wire::{Hex, OrderedMap};
use super::*;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;

/// An enum whose variants all need examples.
trait Covered: Sized + Serialize {
    /// How many numbers [`Covered::variant`] gives.
    const VARIANTS: usize;
    /// The variant's number (an exhaustive match: no wildcard arms).
    fn variant(&self) -> usize;
    /// Examples; together they cover every variant.
    fn examples() -> Vec<Self>;
}

fn regs() -> OrderedMap<String> {
    OrderedMap(vec![
        ("pc".into(), "0x401136".into()),
        ("sp".into(), "0x7ffc0000e0f0".into()),
        ("rip".into(), "0x401136".into()),
    ])
}

fn frames() -> Vec<Frame> {
    vec![
        Frame {
            address: "0x401136".into(),
            module: Some("app".into()),
            name: Some("crash_here".into()),
            file: Some("/src/app.c".into()),
            line: Some(12),
        },
        Frame {
            address: "0x7f0000001000".into(),
            module: None,
            name: None,
            file: None,
            line: None,
        },
    ]
}

impl Covered for AgentMessage {
    const VARIANTS: usize = 26;

    fn variant(&self) -> usize {
        match self {
            AgentMessage::AgentLoaded(_) => 0,
            AgentMessage::Exit(_) => 1,
            AgentMessage::Crash(_) => 2,
            AgentMessage::Trace(_) => 3,
            AgentMessage::TraceDrops(_) => 4,
            AgentMessage::ForkBarrier(_) => 5,
            AgentMessage::PlansUpdated(_) => 6,
            AgentMessage::ModuleBase(_) => 7,
            AgentMessage::ExprsUpdated(_) => 8,
            AgentMessage::Inherited(_) => 9,
            AgentMessage::ForksGuarded(_) => 10,
            AgentMessage::OutputOwned(_) => 11,
            AgentMessage::FdsClosed(_) => 12,
            AgentMessage::HooksUpdated(_) => 13,
            AgentMessage::Sampling(_) => 14,
            AgentMessage::Modules(_) => 15,
            AgentMessage::ModuleLoaded(_) => 16,
            AgentMessage::Paused(_) => 17,
            AgentMessage::StepCall(_) => 18,
            AgentMessage::Logpoint(_) => 19,
            AgentMessage::BreakpointError(_) => 20,
            AgentMessage::BreakpointsUpdated(_) => 21,
            AgentMessage::StepFailed(_) => 22,
            AgentMessage::PythonUncaught(_) => 23,
            AgentMessage::PythonPaused(_) => 24,
            AgentMessage::PythonMemory(_) => 25,
        }
    }

    fn examples() -> Vec<Self> {
        use AgentMessage as M;
        let crash = CrashReport {
            pid: 4242,
            tid: 4243,
            signal: "SIGSEGV".into(),
            kind: "access-violation".into(),
            address: "0x401136".into(),
            memory: Some(CrashMemory {
                operation: "write".into(),
                address: "0x0".into(),
            }),
            registers: regs(),
            backtrace: frames(),
            exception_type: Some("St13runtime_error".into()),
            python_backtrace: Some(vec![ScriptFrame {
                function: "trigger".into(),
                file: "/app/run.py".into(),
                line: 3,
            }]),
        };
        let paused = Paused {
            tid: 4243,
            pid: 4242,
            ts: 1_234_567_890_123,
            reason: PauseReason::Breakpoint,
            breakpoint: Some("bp-1@0".into()),
            hits: 3,
            address: Hex(0x401136),
            registers: regs(),
            backtrace: frames(),
        };
        vec![
            M::AgentLoaded(AgentLoaded {
                pid: 4242,
                arch: "x64".into(),
                platform: "linux".into(),
                journal: "0x7f0000100000".into(),
            }),
            M::Exit(ExitReport { pid: 4242, code: 3 }),
            M::Crash(crash.clone()),
            M::Crash(CrashReport {
                signal: "SIGABRT".into(),
                kind: "abort".into(),
                memory: None,
                exception_type: None,
                python_backtrace: None,
                backtrace: Vec::new(),
                ..crash
            }),
            M::Trace(TraceChunk { count: 4096 }),
            M::TraceDrops(TraceDrops {
                drops: [(7, 120), (262_145, 3)].into(),
            }),
            M::ForkBarrier(ForkBarrier { pid: 4242 }),
            M::PlansUpdated(PlansUpdated { id: 5, count: 2 }),
            M::ModuleBase(ModuleBaseAnswer {
                id: 6,
                base: Some(Hex(0x7f0000200000)),
            }),
            M::ModuleBase(ModuleBaseAnswer { id: 6, base: None }),
            M::ExprsUpdated(ExprsUpdated {
                id: 7,
                errors: vec![("n".into(), "SyntaxError: unexpected token".into())],
            }),
            M::Inherited(Inherited {
                id: 8,
                undone: 14,
                error: Some("journal unreadable".into()),
            }),
            M::Inherited(Inherited {
                id: 8,
                undone: 14,
                error: None,
            }),
            M::ForksGuarded(ForksGuarded {
                id: 9,
                slots: 2,
                error: Some("no fork".into()),
            }),
            M::ForksGuarded(ForksGuarded {
                id: 9,
                slots: 2,
                error: None,
            }),
            M::OutputOwned(OutputOwned {
                id: 10,
                read_fds: [(1, 17), (2, 18)].into(),
                error: Some("pipe2 failed for fd 1".into()),
            }),
            M::OutputOwned(OutputOwned {
                id: 10,
                read_fds: [(1, 17)].into(),
                error: None,
            }),
            M::FdsClosed(FdsClosed {
                id: 11,
                closed: 2,
                error: Some("bad fd".into()),
            }),
            M::FdsClosed(FdsClosed {
                id: 11,
                closed: 2,
                error: None,
            }),
            M::HooksUpdated(HooksUpdated {
                id: 12,
                installed: vec![1, 2],
                failed: vec![(3, "too small to patch".into())],
                active_count: 2,
                ms: 4,
            }),
            M::Sampling(SamplingChanges {
                changes: vec![(1, 100), (2, 0)],
            }),
            M::Modules(Modules {
                paths: vec!["/usr/bin/app".into(), "/lib/libc.so.6".into()],
            }),
            M::ModuleLoaded(ModuleLoaded {
                path: "/lib/libm.so.6".into(),
                wait: true,
            }),
            M::Paused(paused.clone()),
            M::Paused(Paused {
                reason: PauseReason::Step,
                breakpoint: None,
                hits: 0,
                ..paused
            }),
            M::StepCall(StepCall {
                tid: 4243,
                target: Hex(0x401200),
            }),
            M::Logpoint(Logpoint {
                id: "bp-2@0".into(),
                tid: 4243,
                pid: 4242,
                ts: 1_234_567_890_456,
                message: "n = 3".into(),
            }),
            M::BreakpointError(BreakpointError {
                id: "bp-3@1".into(),
                error: "ReferenceError: y is not defined".into(),
            }),
            M::BreakpointsUpdated(BreakpointsUpdated {
                id: 13,
                installed: vec!["bp-1@0".into()],
                failed: vec![("bp-1@1".into(), "not code".into())],
            }),
            M::PythonUncaught(PythonUncaught {
                tid: 4243,
                payload: vec![0xff, 0xff, 0, 0, 12, 0, 0, 0, 1, 3, 0, 0],
            }),
            M::PythonMemory(PythonMemory {
                id: 14,
                results: vec![
                    (Some(vec![0xff, 0xff, 0, 0, 10, 0, 0, 0, 1, 7]), None, None),
                    (None, None, Some("no module named shop".into())),
                ],
            }),
            M::PythonPaused(PythonPaused {
                tid: 4243,
                pid: 4242,
                ts: 1_234_567_890_123,
                reason: PauseReason::Step,
                breakpoint: None,
                hits: 0,
                payload: vec![0xff, 0xff, 0, 0, 15, 0, 0, 0, 1, 6, 0, 0, 0, 0, 0],
            }),
            M::StepFailed(StepFailed {
                tid: 4243,
                failed: vec!["0x401300: access violation".into()],
            }),
        ]
    }
}

impl Covered for DaemonMessage {
    const VARIANTS: usize = 22;

    fn variant(&self) -> usize {
        use DaemonMessage as D;
        match self {
            D::Hooks(HooksRequest {
                change: HookChange::Add { .. },
                ..
            }) => 0,
            D::Hooks(HooksRequest {
                change: HookChange::Remove { .. },
                ..
            }) => 1,
            D::ModuleHooks(_) => 2,
            D::Plans { .. } => 3,
            D::Exprs { .. } => 4,
            D::Breakpoints(_) => 5,
            D::ModuleBase { .. } => 6,
            D::TraceAck { .. } => 7,
            D::OwnOutput { .. } => 8,
            D::CloseFds { .. } => 9,
            D::GuardForks { .. } => 10,
            D::Inherit { .. } => 11,
            D::ExitAck => 12,
            D::CrashAck => 13,
            D::ForkBarrierAck => 14,
            D::Resume(Resume {
                order: ResumeOrder::Continue,
                ..
            }) => 15,
            D::Resume(Resume {
                order: ResumeOrder::Step { .. },
                ..
            }) => 16,
            D::Callee(_) => 17,
            D::PythonBreakpoints(_) => 18,
            D::PythonMemory(_) => 20,
            D::Resume(Resume {
                order: ResumeOrder::PySet { .. },
                ..
            }) => 21,
            D::Resume(Resume {
                order: ResumeOrder::PyStep { .. },
                ..
            }) => 19,
        }
    }

    fn examples() -> Vec<Self> {
        use DaemonMessage as D;
        let target = HookTarget(1, 0x1136, Some(vec![1, 0, 2, 0]), 256, 48);
        let spec = BreakpointSpec {
            id: "bp-1@0".into(),
            address: Hex(0x401136),
            cfa: Some((7, 16)),
            vars: VarLocation::examples()
                .into_iter()
                .zip(TypeDesc::examples().into_iter().cycle())
                .enumerate()
                .map(|(i, (loc, ty))| VarDesc {
                    name: format!("v{i}"),
                    param: i == 0,
                    loc,
                    ty,
                })
                .collect(),
            condition: Some("v0 > 2".into()),
            message: Some("v0 = {v0}".into()),
            hit_count: Some(3),
        };
        vec![
            D::Hooks(HooksRequest {
                id: 1,
                tracer: Some("native".into()),
                change: HookChange::Add {
                    functions: HookFunctions::Native(vec![
                        target.clone(),
                        HookTarget(2, 0x1200, None, 0, 0),
                    ]),
                    module: Some("/lib/libm.so.6".into()),
                    sampling: true,
                    hot_calls_per_second: 100_000,
                    runtime: None,
                },
                watch_libraries: true,
            }),
            D::Hooks(HooksRequest {
                id: 1,
                tracer: None,
                change: HookChange::Add {
                    functions: HookFunctions::Native(vec![]),
                    module: None,
                    sampling: false,
                    hot_calls_per_second: 100_000,
                    runtime: None,
                },
                watch_libraries: false,
            }),
            D::Hooks(HooksRequest {
                id: 3,
                tracer: Some("python".into()),
                change: HookChange::Add {
                    functions: HookFunctions::Python(vec![PyTarget(
                        7,
                        "/app/inventory.py".into(),
                        "Bin.add".into(),
                    )]),
                    module: None,
                    sampling: false,
                    hot_calls_per_second: 100_000,
                    runtime: Some(PyRuntimeMatch {
                        patterns: vec!["inventory.**".into()],
                        main_module: "app".into(),
                        first_id: 131_073,
                        max_ids: 131_071,
                    }),
                },
                watch_libraries: true,
            }),
            D::Hooks(HooksRequest {
                id: 2,
                tracer: Some("native".into()),
                change: HookChange::Remove {
                    functions: vec![1, 2],
                },
                watch_libraries: true,
            }),
            D::Hooks(HooksRequest {
                id: 2,
                tracer: None,
                change: HookChange::Remove { functions: vec![] },
                watch_libraries: false,
            }),
            D::ModuleHooks(ModuleHooks {
                module: "/lib/libm.so.6".into(),
                functions: vec![target],
            }),
            D::Plans {
                id: 3,
                tracer: Some("native".into()),
                plans: vec![FunctionPlan(1, Some(vec![1, 0])), FunctionPlan(2, None)],
            },
            D::Plans {
                id: 3,
                tracer: None,
                plans: vec![],
            },
            D::Exprs {
                id: 4,
                tracer: Some("native".into()),
                exprs: vec![(1, "n".into(), "args[0].toInt32()".into())],
            },
            D::Exprs {
                id: 4,
                tracer: None,
                exprs: vec![],
            },
            D::Breakpoints(BreakpointsRequest {
                id: 5,
                set: Some(vec![
                    spec.clone(),
                    BreakpointSpec {
                        cfa: None,
                        vars: Vec::new(),
                        condition: None,
                        message: None,
                        hit_count: None,
                        ..spec
                    },
                ]),
                remove: vec!["bp-0@0".into()],
            }),
            D::Breakpoints(BreakpointsRequest {
                id: 5,
                set: None,
                remove: vec!["bp-1@0".into()],
            }),
            D::PythonBreakpoints(PyBreakpointsRequest {
                id: 6,
                set: vec![
                    PyBreakpointSpec {
                        id: "bp-2@0".into(),
                        file: "/app/shop.py".into(),
                        line: 12,
                        qualname: None,
                        condition: Some("qty > 2".into()),
                        hit_count: Some(2),
                        message: None,
                    },
                    PyBreakpointSpec {
                        id: "lp-3@0".into(),
                        file: "/app/shop.py".into(),
                        line: 20,
                        qualname: Some("Cart.total".into()),
                        condition: None,
                        hit_count: None,
                        message: Some("total={total}".into()),
                    },
                ],
                remove: vec!["bp-1@0".into()],
            }),
            D::PythonMemory(PyMemoryRequest {
                id: 7,
                targets: vec![
                    ("shop.STOCK".into(), 2, false, serde_json::Value::Null),
                    ("shop.LIMIT".into(), 1, true, serde_json::json!(5)),
                ],
            }),
            D::ModuleBase {
                id: 6,
                path: "/lib/libm.so.6".into(),
            },
            D::TraceAck {
                tracer: Some("native".into()),
            },
            D::TraceAck { tracer: None },
            D::OwnOutput {
                id: 7,
                fds: vec![1, 2],
            },
            D::CloseFds {
                id: 8,
                fds: vec![17, 18],
            },
            D::GuardForks { id: 9 },
            D::Inherit {
                id: 10,
                journal: "0x7f0000100000".into(),
            },
            D::ExitAck,
            D::CrashAck,
            D::ForkBarrierAck,
            D::Resume(Resume {
                tid: 4243,
                order: ResumeOrder::Continue,
            }),
            D::Resume(Resume {
                tid: 4243,
                order: ResumeOrder::PyStep {
                    mode: PyStepMode::Over,
                },
            }),
            D::Resume(Resume {
                tid: 4243,
                order: ResumeOrder::PySet {
                    id: 15,
                    name: "qty".into(),
                    value: serde_json::json!(3),
                },
            }),
            D::Resume(Resume {
                tid: 4243,
                order: ResumeOrder::Step {
                    stops: vec![
                        StepStop(
                            Hex(0x401140),
                            Some(FrameCheck(7, 0, Hex(0x7ffc0000e100))),
                            false,
                        ),
                        StepStop(Hex(0x401150), None, true),
                    ],
                    scan: Some((Hex(0x401136), Hex(0x401150))),
                    scan_frame: Some(FrameCheck(7, 16, Hex(0x7ffc0000e100))),
                },
            }),
            D::Resume(Resume {
                tid: 4243,
                order: ResumeOrder::Step {
                    stops: vec![],
                    scan: None,
                    scan_frame: None,
                },
            }),
            D::Callee(Callee {
                tid: 4243,
                address: Some(Hex(0x401300)),
            }),
            D::Callee(Callee {
                tid: 4243,
                address: None,
            }),
        ]
    }
}

impl Covered for VarLocation {
    const VARIANTS: usize = 6;

    fn variant(&self) -> usize {
        match self {
            VarLocation::Mem(MemLocation::Cfa { .. }) => 0,
            VarLocation::Mem(MemLocation::Reg { .. }) => 1,
            VarLocation::Mem(MemLocation::Abs { .. }) => 2,
            VarLocation::Reg { .. } => 3,
            VarLocation::Const { .. } => 4,
            VarLocation::Unavailable { .. } => 5,
        }
    }

    fn examples() -> Vec<Self> {
        vec![
            VarLocation::Mem(MemLocation::Cfa { off: -20 }),
            VarLocation::Mem(MemLocation::Reg { reg: 6, off: -8 }),
            VarLocation::Mem(MemLocation::Abs { off: Hex(0x404040) }),
            VarLocation::Reg { reg: 5 },
            VarLocation::Const { v: -1 },
            VarLocation::Unavailable {
                why: "optimized out here".into(),
            },
        ]
    }
}

impl Covered for TypeDesc {
    const VARIANTS: usize = 7;

    fn variant(&self) -> usize {
        match self {
            TypeDesc::Int { .. } => 0,
            TypeDesc::Float { .. } => 1,
            TypeDesc::Bool { .. } => 2,
            TypeDesc::Enum { .. } => 3,
            TypeDesc::Ptr { .. } => 4,
            TypeDesc::Struct { .. } => 5,
            TypeDesc::Opaque => 6,
        }
    }

    fn examples() -> Vec<Self> {
        let int = TypeDesc::Int {
            size: 4,
            signed: true,
        };
        let point = TypeDesc::Struct {
            fields: vec![("x".into(), 0, int.clone()), ("y".into(), 4, int.clone())],
        };
        vec![
            int,
            TypeDesc::Float { size: 8 },
            TypeDesc::Bool { size: 1 },
            TypeDesc::Enum {
                size: 4,
                signed: false,
                names: OrderedMap(vec![
                    ("0".into(), "RED".into()),
                    ("1".into(), "GREEN".into()),
                ]),
            },
            TypeDesc::Ptr {
                str: true,
                to: Some(Box::new(point.clone())),
            },
            TypeDesc::Ptr {
                str: false,
                to: None,
            },
            point,
            TypeDesc::Opaque,
        ]
    }
}

/// Fails unless `T`'s examples cover exactly its variants.
fn assert_covered<T: Covered>(what: &str) {
    let seen: BTreeSet<usize> = T::examples().iter().map(T::variant).collect();
    let all: BTreeSet<usize> = (0..T::VARIANTS).collect();
    assert!(
        seen.is_subset(&all),
        "{what}: variant numbers {:?} are not below VARIANTS ({}): raise VARIANTS",
        seen.difference(&all).collect::<Vec<_>>(),
        T::VARIANTS
    );
    assert_eq!(
        seen,
        all,
        "{what}: variants {:?} have no example in fixtures.rs",
        all.difference(&seen).collect::<Vec<_>>()
    );
}

/// One `export const` of the fixture file.
fn section<T: Covered>(out: &mut String, name: &str, ts_type: &str) {
    out.push_str(&format!("\nexport const {name} = [\n"));
    for e in T::examples() {
        let mut json = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        e.serialize(&mut serde_json::Serializer::with_formatter(&mut json, fmt))
            .expect("examples serialize");
        for line in String::from_utf8(json).expect("JSON is UTF-8").lines() {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
        out.pop();
        out.push_str(",\n");
    }
    out.push_str(&format!("] satisfies {ts_type}[];\n"));
}

/// The fixture files (by direction, each a size to read), and their text.
fn fixture_files() -> [(&'static str, String); 2] {
    let head = |types: &str| {
        format!(
            "// Generated by crates/strobe-frida/src/agent_protocol/fixtures.rs: do not edit.\n\
             // Regenerate with `STROBE_BLESS=1 cargo test -p strobe-frida agent_protocol`.\n\
             // One example of every message variant (full, and minimal where fields are\n\
             // optional or nullable), checked against agent/src/protocol.ts by\n\
             // agent/test/protocol_check.ts (`tsc -p agent/test`, run by ./dev test).\n\
             import type {{ {types} }} from \"../src/protocol.js\";\n"
        )
    };
    let mut agent = head("AgentMessage");
    section::<AgentMessage>(&mut agent, "agentMessages", "AgentMessage");
    let mut daemon = head("DaemonMessage, TypeDesc, VarLocation");
    section::<DaemonMessage>(&mut daemon, "daemonMessages", "DaemonMessage");
    section::<VarLocation>(&mut daemon, "varLocations", "VarLocation");
    section::<TypeDesc>(&mut daemon, "typeDescs", "TypeDesc");
    [
        ("agent/test/protocol.fixtures.agent.ts", agent),
        ("agent/test/protocol.fixtures.daemon.ts", daemon),
    ]
}

#[test]
fn every_variant_has_an_example() {
    assert_covered::<AgentMessage>("AgentMessage");
    assert_covered::<DaemonMessage>("DaemonMessage");
    assert_covered::<VarLocation>("VarLocation");
    assert_covered::<TypeDesc>("TypeDesc");
}

#[test]
fn examples_decode_to_what_was_encoded() {
    for m in AgentMessage::examples() {
        let text = serde_json::json!({"type": "send", "payload": m}).to_string();
        assert_eq!(
            decode(text.as_bytes()).unwrap(),
            Incoming::Message(m),
            "{text}"
        );
    }
    for m in DaemonMessage::examples() {
        let text = m.to_json();
        let back: DaemonMessage = serde_json::from_slice(&text).unwrap();
        assert_eq!(back, m, "{}", String::from_utf8_lossy(&text));
        assert!(
            serde_json::from_slice::<serde_json::Value>(&text).unwrap()["type"]
                .as_str()
                .unwrap()
                .starts_with(m.type_name())
        );
    }
}

#[test]
fn the_typescript_fixtures_match_the_rust_protocol() {
    // crates/strobe-frida → the repository's root.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2);
    let root = root.expect("the crate is two levels below the root");
    let bless = std::env::var_os("STROBE_BLESS").is_some_and(|v| v == "1");
    for (file, want) in fixture_files() {
        let path = root.join(file);
        if bless {
            std::fs::write(&path, &want).expect("write the fixture file");
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} does not match the Rust agent protocol (crates/strobe-frida/src/agent_protocol): \
             regenerate it with `STROBE_BLESS=1 cargo test -p strobe-frida agent_protocol`, then make \
             agent/src/protocol.ts agree (`./dev test` type-checks it against the new fixtures)",
            path.display()
        );
    }
}
