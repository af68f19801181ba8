//! Plans built from DWARF-shaped type tables and payloads built by hand.

use crate::decode::*;
use crate::memory::*;
use crate::plan::*;
use crate::wire::*;
use serde_json::{Value, json};
use strobe_symbols::{Member, Signature, Type, TypeId, TypeTable};

#[test]
fn strings_mark_invalid_utf8_bytes() {
    assert_eq!(text(b"caf\xc3\xa9", false), "café");
    assert_eq!(text(b"caf\xe9 \xff!", false), "caf\\xe9 \\xff!");
    // Cut inside a character: the partial character is dropped.
    assert_eq!(text(b"ab\xc3", true), "ab…");
}

fn int(t: &mut TypeTable, name: &str, size: u8, signed: bool) -> TypeId {
    t.push(Type::Int {
        name: name.into(),
        size,
        signed,
        is_char: name == "char",
    })
}

fn ptr(t: &mut TypeTable, target: TypeId) -> TypeId {
    t.push(Type::Pointer {
        target,
        reference: false,
    })
}

fn member(name: &str, offset: u64, ty: TypeId) -> Member {
    Member {
        name: name.into(),
        offset,
        ty,
        bits: None,
    }
}

fn payload(regs: &[u64], stack: &[u8], blocks: &[(u64, u32, Vec<u8>)]) -> Vec<u8> {
    let mut p = vec![0u8; 8];
    for r in regs {
        p.extend_from_slice(&r.to_le_bytes());
    }
    p.extend_from_slice(stack);
    for (addr, status, data) in blocks {
        p.extend_from_slice(&addr.to_le_bytes());
        p.extend_from_slice(&(data.len() as u32).to_le_bytes());
        p.extend_from_slice(&status.to_le_bytes());
        p.extend_from_slice(data);
        p.resize(p.len().div_ceil(8) * 8, 0);
    }
    p
}

fn regs14(gp: &[u64], xmm: &[f64]) -> Vec<u64> {
    let mut r = vec![0u64; 14];
    r[..gp.len()].copy_from_slice(gp);
    for (i, x) in xmm.iter().enumerate() {
        r[6 + i] = x.to_bits();
    }
    r
}

#[test]
fn arrays_cut_by_the_depth_limit_are_said_once() {
    let mut t = TypeTable::default();
    let i32t = int(&mut t, "int", 4, true);
    let account = t.push(Type::Struct {
        name: "account".into(),
        size: 8,
        members: vec![member("id", 0, i32t), member("balance", 4, i32t)],
        is_union: false,
        by_reference: false,
    });
    let spare = t.push(Type::Array {
        elem: account,
        count: Some(64),
    });
    let store = t.push(Type::Struct {
        name: "store".into(),
        size: 8 + 64 * 8,
        members: vec![member("n", 0, i32t), member("spare", 8, spare)],
        is_union: false,
        by_reference: false,
    });
    let t = std::sync::Arc::new(t);
    let bytes = vec![1u8; 8 + 64 * 8];
    let typed = |ty| WatchType::Typed(ty, t.clone(), 0);
    assert_eq!(
        render_memory(&typed(spare), &bytes[8..], 0x1008, 1, "store.spare"),
        "[64 × account] @0x1008 (depth limit: ask for store.spare[i] or depth 2)"
    );
    // Nested: the path and address of the member, the depth from the top.
    let v = render_memory(&typed(store), &bytes, 0x1000, 2, "store");
    assert_eq!(
        v["spare"],
        "[64 × account] @0x1008 (depth limit: ask for store.spare[i] or depth 3)"
    );
    // Deep enough: the elements themselves.
    let v = render_memory(&typed(spare), &bytes[8..], 0x1008, 2, "store.spare");
    assert_eq!(v[63]["balance"], 0x01010101);
    assert_eq!(v.as_array().unwrap().len(), 64);
    // Inside a slice (`T[n]` of stores), hints name elements by their
    // index in the array sliced, never the slice: both paths read.
    let mut t2 = (*t).clone();
    let two = t2.push(Type::Array {
        elem: store,
        count: Some(2),
    });
    let t2 = std::sync::Arc::new(t2);
    let bytes = vec![1u8; 2 * (8 + 64 * 8)];
    let slice = WatchType::Typed(two, t2, 0);
    let v = render_memory(&slice, &bytes, 0x1000, 3, "shops[4:6]");
    assert_eq!(
        v[1]["spare"],
        "[64 × account] @0x1210 (depth limit: ask for shops[5].spare[i] or depth 4)"
    );
    assert_eq!(
        render_memory(&slice, &bytes, 0x1000, 1, "shops[4:6]"),
        "[2 × store] @0x1000 (depth limit: ask for shops[i] or depth 2)"
    );
}

#[test]
fn pointers_strings_enums_and_cycles() {
    let mut t = TypeTable::default();
    let i32t = int(&mut t, "int", 4, true);
    let ch = int(&mut t, "char", 1, true);
    let cstr = ptr(&mut t, ch);
    let color = t.push(Type::Enum {
        name: "color".into(),
        size: 4,
        signed: false,
        variants: vec![(1, "RED".into()), (4, "BLUE".into())],
    });
    let node = t.push(Type::Void);
    let node_ptr = ptr(&mut t, node);
    t.set(
        node,
        Type::Struct {
            name: "node".into(),
            size: 16,
            members: vec![member("value", 0, i32t), member("next", 8, node_ptr)],
            is_union: false,
            by_reference: false,
        },
    );
    let sig = Signature {
        params: vec![
            ("head".into(), node_ptr),
            ("label".into(), cstr),
            ("c".into(), color),
            ("bad".into(), cstr),
        ],
        ret: Some(i32t),
        variadic: false,
        ..Default::default()
    };
    let plan = FunctionPlan::build(1, &sig, &t, 3, &[]);
    // Level by level: head, label, bad; then head → node → node
    // (depth 3).
    let srcs: Vec<(u8, u16, u64)> = plan
        .enter
        .iter()
        .map(|n| (n.src, n.parent, n.arg))
        .collect();
    assert_eq!(
        srcs,
        [
            (SRC_GP, NO_PARENT, 0),
            (SRC_GP, NO_PARENT, 1),
            (SRC_GP, NO_PARENT, 3),
            (SRC_FIELD, 0, 8),
            (SRC_FIELD, 3, 8)
        ]
    );
    let node_bytes = |v: i32, next: u64| {
        let mut b = v.to_le_bytes().to_vec();
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&next.to_le_bytes());
        b
    };
    // a(0x100) -> b(0x200) -> a: a cycle.
    let p = payload(
        &regs14(&[0x100, 0x500, 4, 0x10], &[]),
        &[],
        &[
            (0x100, ST_OK, node_bytes(1, 0x200)),
            (0x500, ST_OK, b"tracer".to_vec()),
            (0x10, ST_UNREADABLE, vec![]),
            (0x200, ST_OK, node_bytes(2, 0x100)),
            (0x100, ST_OK, node_bytes(1, 0x200)),
        ],
    );
    let v = plan.decode_enter(&t, &p);
    let args = &v["arguments"];
    assert_eq!(args[0]["type"], "node *");
    assert_eq!(args[0]["value"]["value"], 1);
    assert_eq!(args[0]["value"]["@addr"], "0x100");
    assert_eq!(args[0]["value"]["next"]["value"], 2);
    assert_eq!(args[0]["value"]["next"]["next"], "<circular ref to 0x100>");
    assert_eq!(args[1]["value"], "tracer");
    assert_eq!(args[2]["value"], "BLUE");
    assert_eq!(args[3]["value"], "<unreadable 0x10>");

    // Exit: the int return value from rax.
    let mut x = vec![0u8; 8];
    x.extend_from_slice(&(-7i64 as u64).to_le_bytes());
    x.extend_from_slice(&[0; 24]);
    assert_eq!(plan.decode_exit(&t, &x)["returnValue"], -7);

    // Depth 1: the pointer target is read, its own pointers are not.
    let shallow = FunctionPlan::build(2, &sig, &t, 1, &[]);
    assert_eq!(shallow.enter.len(), 3);
}

/// SQLite's `sqlite3_prepare_v2(sqlite3 *db, const char *zSql, …)`:
/// the struct graph behind `db` needs more reads than the budget, and
/// the string after it must still be read.
#[test]
fn a_large_struct_graph_leaves_later_arguments_their_reads() {
    let mut t = TypeTable::default();
    let i32t = int(&mut t, "int", 4, true);
    let ch = int(&mut t, "char", 1, true);
    let cstr = ptr(&mut t, ch);
    let int_ptr = ptr(&mut t, i32t);
    let members: Vec<Member> = (0..ARG_NODES_MAX as u64 + 10)
        .map(|i| member(&format!("p{i}"), i * 8, int_ptr))
        .collect();
    let db = t.push(Type::Struct {
        name: "sqlite3".into(),
        size: members.len() as u64 * 8,
        members,
        is_union: false,
        by_reference: false,
    });
    let db_ptr = ptr(&mut t, db);
    let sig = Signature {
        params: vec![("db".into(), db_ptr), ("zSql".into(), cstr)],
        ret: Some(i32t),
        variadic: false,
        ..Default::default()
    };
    let plan = FunctionPlan::build(1, &sig, &t, 3, &[]);
    assert_eq!(plan.enter.len(), ARG_NODES_MAX);
    let sql = plan
        .enter
        .iter()
        .position(|n| (n.src, n.parent, n.arg) == (SRC_GP, NO_PARENT, 1))
        .expect("zSql is read");
    assert_eq!(plan.enter[sql].flags, FLAG_CSTRING);
    // Decoded: the text, and db's pointers as far as the budget went.
    let mut blocks = vec![(0x1000, ST_OK, vec![0u8; 8 * (ARG_NODES_MAX + 10)])];
    blocks.push((0x2000, ST_OK, b"SELECT 1".to_vec()));
    blocks.extend((2..ARG_NODES_MAX).map(|_| (0, ST_NULL, vec![])));
    let p = payload(&regs14(&[0x1000, 0x2000], &[]), &[], &blocks);
    let v = plan.decode_enter(&t, &p);
    assert_eq!(v["arguments"][1]["value"], "SELECT 1", "{v}");
    assert_eq!(v["arguments"][0]["value"]["p0"], Value::Null, "{v}");
}

#[test]
fn abi_floats_small_structs_stack_and_memory_returns() {
    let mut t = TypeTable::default();
    let dbl = t.push(Type::Float {
        name: "double".into(),
        size: 8,
    });
    let flt = t.push(Type::Float {
        name: "float".into(),
        size: 4,
    });
    let long = int(&mut t, "long", 8, true);
    let i32t = int(&mut t, "int", 4, true);
    let vec2 = t.push(Type::Struct {
        name: "vec2".into(),
        size: 16,
        members: vec![member("x", 0, dbl), member("y", 8, dbl)],
        is_union: false,
        by_reference: false,
    });
    let big = t.push(Type::Struct {
        name: "big".into(),
        size: 32,
        members: vec![
            member("a", 0, long),
            member("b", 8, long),
            member("c", 16, long),
            member("d", 24, long),
        ],
        is_union: false,
        by_reference: false,
    });
    // double mix(double a, float b, int n): xmm0, xmm1, rdi.
    let mix = Signature {
        params: vec![("a".into(), dbl), ("b".into(), flt), ("n".into(), i32t)],
        ret: Some(dbl),
        variadic: false,
        ..Default::default()
    };
    let plan = FunctionPlan::build(1, &mix, &t, 3, &[]);
    let mut regs = regs14(&[41], &[1.5]);
    regs[7] = (2.0f32).to_bits() as u64;
    let v = plan.decode_enter(&t, &payload(&regs, &[], &[]));
    assert_eq!(v["arguments"][0]["value"], 1.5);
    assert_eq!(v["arguments"][1]["value"], 2.0);
    assert_eq!(v["arguments"][2]["value"], 41);
    let mut x = vec![0u8; 24];
    x.extend_from_slice(&3.25f64.to_bits().to_le_bytes());
    x.extend_from_slice(&[0; 8]);
    assert_eq!(plan.decode_exit(&t, &x)["returnValue"], 3.25);

    // struct vec2 offset(struct vec2 v, double dx): v in xmm0+xmm1, dx in xmm2;
    // returned in xmm0+xmm1.
    let off = Signature {
        params: vec![("v".into(), vec2), ("dx".into(), dbl)],
        ret: Some(vec2),
        variadic: false,
        ..Default::default()
    };
    let plan = FunctionPlan::build(1, &off, &t, 3, &[]);
    let v = plan.decode_enter(&t, &payload(&regs14(&[], &[1.0, 2.0, 0.25]), &[], &[]));
    assert_eq!(v["arguments"][0]["value"], json!({"x": 1.0, "y": 2.0}));
    assert_eq!(v["arguments"][1]["value"], 0.25);
    let mut x = vec![0u8; 24];
    x.extend_from_slice(&1.25f64.to_bits().to_le_bytes());
    x.extend_from_slice(&1.75f64.to_bits().to_le_bytes());
    assert_eq!(
        plan.decode_exit(&t, &x)["returnValue"],
        json!({"x": 1.25, "y": 1.75})
    );

    // long sum_big(struct big b, int scale): b on the stack, scale in rdi.
    let sb = Signature {
        params: vec![("b".into(), big), ("scale".into(), i32t)],
        ret: Some(long),
        variadic: false,
        ..Default::default()
    };
    let plan = FunctionPlan::build(1, &sb, &t, 3, &[]);
    assert_eq!(plan.stack_bytes, 32);
    let stack: Vec<u8> = [1i64, 2, 3, 4]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let v = plan.decode_enter(&t, &payload(&regs14(&[2], &[]), &stack, &[]));
    assert_eq!(
        v["arguments"][0]["value"],
        json!({"a": 1, "b": 2, "c": 3, "d": 4})
    );
    assert_eq!(v["arguments"][1]["value"], 2);

    // struct big make(int): returned in memory; rdi is the hidden pointer,
    // so the int is in rsi, and rax points at the result on exit.
    let mk = Signature {
        params: vec![("n".into(), i32t)],
        ret: Some(big),
        variadic: false,
        ..Default::default()
    };
    let plan = FunctionPlan::build(1, &mk, &t, 3, &[]);
    let v = plan.decode_enter(&t, &payload(&regs14(&[0x7000, 9], &[]), &[], &[]));
    assert_eq!(v["arguments"][0]["value"], 9);
    assert_eq!(plan.exit.len(), 1);
    let mut x = vec![0u8; 8];
    x.extend_from_slice(&0x7000u64.to_le_bytes());
    x.extend_from_slice(&[0; 24]);
    let body: Vec<u8> = [5i64, 6, 7, 8]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    x.extend_from_slice(&0x7000u64.to_le_bytes());
    x.extend_from_slice(&32u32.to_le_bytes());
    x.extend_from_slice(&0u32.to_le_bytes());
    x.extend_from_slice(&body);
    assert_eq!(
        plan.decode_exit(&t, &x)["returnValue"],
        json!({"a": 5, "b": 6, "c": 7, "d": 8})
    );
}

#[test]
fn watches_read_chains_and_hints() {
    let mut t = TypeTable::default();
    let i32t = int(&mut t, "int", 4, true);
    let w = [
        WatchSpec {
            label: "count".into(),
            chain: vec![(0x1000, 0)],
            size: 4,
            ty: WatchType::Typed(i32t, std::sync::Arc::new(t.clone()), 0),
            string: false,
            slice: None,
        },
        WatchSpec {
            label: "cfg->level".into(),
            chain: vec![(0x2000, 0), (0, 8)],
            size: 4,
            ty: WatchType::Typed(i32t, std::sync::Arc::new(t.clone()), 0),
            string: false,
            slice: None,
        },
        WatchSpec {
            label: "raw".into(),
            chain: vec![(0x3000, 0)],
            size: 2,
            ty: WatchType::Hint("i16".into()),
            string: false,
            slice: None,
        },
    ];
    let sig = Signature::default();
    let plan = FunctionPlan::build(1, &sig, &t, 3, &w);
    assert_eq!(plan.enter.len(), 4);
    assert_eq!(plan.enter[2].src, SRC_FIELD);
    assert_eq!(plan.enter[2].addend, 8);
    let p = payload(
        &regs14(&[], &[]),
        &[],
        &[
            (0x1000, ST_OK, 5i32.to_le_bytes().to_vec()),
            (0x2000, ST_OK, 0x9000u64.to_le_bytes().to_vec()),
            (0x9008, ST_OK, 3i32.to_le_bytes().to_vec()),
            (0x3000, ST_OK, (-2i16).to_le_bytes().to_vec()),
        ],
    );
    let v = plan.decode_enter(&t, &p);
    assert_eq!(
        v["watchValues"],
        json!({"count": 5, "cfg->level": 3, "raw": -2})
    );
    // A record cut short marks the missing watches instead of failing.
    let short = &p[..p.len() - 16];
    let v = plan.decode_enter(&t, short);
    assert_eq!(v["watchValues"]["raw"], "<not captured: record truncated>");
}
