use super::*;

struct W(Vec<u8>);
impl W {
    fn new(what: u8) -> Self {
        let mut v = Vec::new();
        v.extend_from_slice(&PY_PAYLOAD_MARK.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&[1, what]);
        W(v)
    }
    /// The format version (`new` writes 1, the layout older sessions stored).
    fn version(mut self, v: u8) -> Self {
        self.0[8] = v;
        self
    }
    fn u8(mut self, b: u8) -> Self {
        self.0.push(b);
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn name(mut self, s: &str) -> Self {
        self.0.extend_from_slice(&(s.len() as u16).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn raw(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn done(mut self) -> Vec<u8> {
        let n = self.0.len() as u32;
        self.0[4..8].copy_from_slice(&n.to_le_bytes());
        self.0
    }
}

#[test]
fn a_pause_decodes_frames_and_typed_locals() {
    let key = |w: W, k: &str| {
        w.u8(Tag::Str as u8)
            .u32(k.len() as u32)
            .u32(k.len() as u32)
            .raw(k.as_bytes())
    };
    let w = W::new(6)
        .u32(2)
        .name("compute")
        .name("/app/a.py")
        .u32(20)
        .name("<module>")
        .name("/app/a.py")
        .u32(31)
        .u8(Tag::Dict as u8)
        .u32(3)
        .u32(2);
    let w = key(w, "x").u8(Tag::Int as u8).u64(6);
    let p = key(w, "ok").u8(Tag::True as u8).done();
    let (frames, locals) = paused(&p).expect("a pause");
    assert_eq!(
        frames,
        [
            json!({"function": "compute", "file": "/app/a.py", "line": 20}),
            json!({"function": "<module>", "file": "/app/a.py", "line": 31})
        ]
    );
    assert_eq!(
        locals,
        [
            json!({"name": "x", "type": "int", "value": 6}),
            json!({"name": "ok", "type": "bool", "value": true}),
            json!({"name": "…", "omitted": 1})
        ]
    );
    assert!(paused(&W::new(4).name("t").done()).is_none());
}

#[test]
fn a_global_read_decodes_its_value_or_why_not() {
    let ok = W::new(7)
        .u8(0)
        .name("shop.LIMIT")
        .u8(Tag::Int as u8)
        .u64(5)
        .done();
    assert_eq!(global(&ok), Some(Ok(("int".to_string(), json!(5)))));
    let missing = W::new(7).u8(2).name("NOPE").u8(Tag::None as u8).done();
    assert_eq!(global(&missing), Some(Err((2, "NOPE".to_string()))));
}

#[test]
fn raises_and_watch_values_decode() {
    let raised_here = W::new(8)
        .name("ValueError")
        .u8(Tag::Str as u8)
        .u32(3)
        .u32(3)
        .raw(b"bad")
        .u32(28)
        .done();
    assert_eq!(
        raised(&raised_here),
        Some(("ValueError".to_string(), Some("bad".to_string()), 28))
    );
    let left = |origin: u8| {
        W::new(2)
            .name("KeyError")
            .u8(Tag::None as u8)
            .u8(origin)
            .u8(1)
            .name("twice")
            .u8(Tag::Int as u8)
            .u64(6)
            .done()
    };
    assert!(raised_in_frame(&left(1)));
    assert!(!raised_in_frame(&left(0)));
    assert_eq!(decode(&left(0))["watchValues"], json!({"twice": 6}));
    let ret = W::new(1)
        .u8(Tag::Int as u8)
        .u64(3)
        .u8(1)
        .name("w")
        .u8(Tag::True as u8)
        .done();
    let v = decode(&ret);
    assert_eq!(v["returnValue"], 3);
    assert_eq!(v["watchValues"], json!({"w": true}));
    assert!(
        decode(&W::new(1).u8(Tag::None as u8).done())
            .get("watchValues")
            .is_none()
    );
}

#[test]
fn arguments_decode_with_names_and_types() {
    let p = W::new(0)
        .u8(3)
        .name("item")
        .u8(Tag::Object as u8)
        .name("Item")
        .u32(2)
        .u32(2)
        .name("name")
        .u8(Tag::Str as u8)
        .u32(6)
        .u32(6)
        .raw(b"widget")
        .name("tags")
        .u8(Tag::List as u8)
        .u32(30)
        .u32(1)
        .u8(Tag::Int as u8)
        .u64(7)
        .name("percent")
        .u8(Tag::Float as u8)
        .u64(15.5f64.to_bits())
        .name("k")
        .u8(Tag::Bytes as u8)
        .u32(2)
        .u32(2)
        .raw(&[0, 0xff])
        .done();
    assert!(is_python(&p));
    let v = decode(&p);
    let args = v["arguments"].as_array().unwrap();
    assert_eq!(args[0]["name"], "item");
    assert_eq!(args[0]["type"], "Item");
    assert_eq!(args[0]["value"]["$type"], "Item");
    assert_eq!(args[0]["value"]["name"], "widget");
    assert_eq!(args[0]["value"]["tags"], json!([7, "… 29 more"]));
    assert_eq!(args[1]["value"], json!(15.5));
    assert_eq!(args[2]["value"], json!("b'\\x00\\xff'"));
}

#[test]
fn version_2_arguments_give_their_names_first() {
    let p = W::new(0)
        .version(2)
        .u8(2)
        .name("a")
        .name("label")
        .u8(Tag::Int as u8)
        .u64(4)
        .u8(Tag::Str as u8)
        .u32(2)
        .u32(2)
        .raw(b"hi")
        .u8(1)
        .name("w")
        .u8(Tag::True as u8)
        .done();
    let v = decode(&p);
    assert_eq!(
        v["arguments"],
        json!([{"name": "a", "type": "int", "value": 4}, {"name": "label", "type": "str", "value": "hi"}])
    );
    assert_eq!(v["watchValues"], json!({"w": true}));
}

#[test]
fn exits_give_values_keys_and_exceptions() {
    let ret = W::new(1).u8(Tag::Int as u8).u64(-3i64 as u64).done();
    assert_eq!(decode(&ret)["returnValue"], json!(-3));
    assert_eq!(return_key(&ret), Some(-3i64 as u64));
    let none = W::new(1).u8(Tag::None as u8).done();
    assert_eq!(decode(&none)["returnType"], "NoneType");
    let exc = W::new(2)
        .name("ValueError")
        .u8(Tag::Tuple as u8)
        .u32(1)
        .u32(1)
        .u8(Tag::Str as u8)
        .u32(3)
        .u32(3)
        .raw(b"bad")
        .done();
    assert_eq!(decode(&exc)["exception"]["message"], "bad");
    assert_eq!(
        exception_of(&exc),
        Some(("ValueError".into(), Some("bad".into())))
    );
    assert_eq!(return_key(&exc), None);
}

#[test]
fn uncaught_exceptions_carry_their_traceback_and_locals() {
    let p = W::new(3)
        .name("KeyError")
        .u8(Tag::Tuple as u8)
        .u32(1)
        .u32(1)
        .u8(Tag::Str as u8)
        .u32(6)
        .u32(6)
        .raw(b"gadget")
        .u32(1)
        .u32(2)
        .name("checkout")
        .name("/p/inventory.py")
        .u32(40)
        .u8(Tag::Dict as u8)
        .u32(1)
        .u32(1)
        .u8(Tag::Str as u8)
        .u32(3)
        .u32(3)
        .raw(b"sku")
        .u8(Tag::Str as u8)
        .u32(6)
        .u32(6)
        .raw(b"gadget")
        .done();
    let v = decode(&p);
    assert_eq!(v["exception"]["message"], "gadget");
    assert_eq!(v["traceback"][0]["function"], "checkout");
    assert_eq!(v["traceback"][0]["line"], 40);
    assert_eq!(v["traceback"][0]["locals"]["sku"], "gadget");
    assert_eq!(v["tracebackOmitted"], 2);
}

#[test]
fn truncated_and_corrupt_payloads_never_panic() {
    let p = W::new(0).u8(2).name("a").u8(Tag::Cut as u8).done();
    let v = decode(&p);
    assert!(v["arguments"][0]["value"].as_str().unwrap().contains("cut"));
    for n in 0..p.len() {
        let _ = decode(&p[..n]);
    }
    let mut junk = W::new(0).u8(5).raw(&[0xff; 40]).done();
    junk[12] = 200;
    let _ = decode(&junk);
}

#[test]
fn a_javascript_payload_names_types_the_javascript_way() {
    let enter = W::new(0)
        .version(JAVASCRIPT_VERSION)
        .u8(5)
        .name("a")
        .name("n")
        .name("big")
        .name("buf")
        .name("point")
        .u8(Tag::Undefined as u8)
        .u8(Tag::Int as u8)
        .u64(7)
        .u8(Tag::BigInt as u8)
        .u8(1)
        .u64(12)
        .u8(Tag::Bytes as u8)
        .u32(2)
        .u32(2)
        .raw(b"hi")
        .u8(Tag::Object as u8)
        .name("Object")
        .u32(1)
        .u32(1)
        .name("x")
        .u8(Tag::Opaque as u8)
        .name("Promise")
        .u64(0)
        .done();
    let v = decode(&enter);
    let args = v["arguments"].as_array().unwrap();
    let got: Vec<(&str, &Value)> = args
        .iter()
        .map(|a| (a["type"].as_str().unwrap(), &a["value"]))
        .collect();
    assert_eq!(
        got,
        [
            ("undefined", &Value::Null),
            ("number", &json!(7)),
            ("bigint", &json!("-12n")),
            ("Uint8Array", &json!("<Buffer 68 69>")),
            ("Object", &json!({"x": "<Promise>"})),
        ]
    );
    // A synchronous exit by a throw: no type (the exception record has it)
    // and reported elsewhere, so no event of its own.
    let threw = W::new(2)
        .version(JAVASCRIPT_VERSION)
        .name("")
        .u8(Tag::List as u8)
        .u32(0)
        .u32(0)
        .u8(1)
        .done();
    assert_eq!(exception_of(&threw), Some((String::new(), None)));
    assert!(raised_in_frame(&threw));
}
