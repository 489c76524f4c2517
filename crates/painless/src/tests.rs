use super::*;
use serde_json::json;

fn run_with(script: Value, mut doc: Value) -> (ScriptOp, Value) {
    let op = apply_update_script(&script, &mut doc)
        .unwrap_or_else(|e| panic!("{script}: {}", e.to_response_json()));
    (op, doc)
}

/// Runs `src` against `doc` and answers the resulting document.
fn run(src: &str, doc: Value) -> Value {
    let (op, doc) = run_with(json!(src), doc);
    assert_eq!(op, ScriptOp::Index, "{src}");
    doc
}

/// Runs `src` and answers what it stored in `ctx._source.r`.
fn result(src: &str) -> Value {
    run(src, json!({}))["r"].clone()
}

fn fail(script: Value, mut doc: Value) -> EsError {
    match apply_update_script(&script, &mut doc) {
        Ok(op) => panic!("{script} did not fail: {op:?} {doc}"),
        Err(e) => e,
    }
}

fn cause(e: &EsError) -> (String, String) {
    let c = e.caused_by.as_ref().expect("caused_by");
    (c.kind.clone(), c.reason.clone())
}

#[test]
fn common_update_scripts() {
    let mut doc = json!({"count": 1, "tags": "a"});
    let op = apply_update_script(&json!({"source": "ctx._source.count += params.n; ctx._source.x = 'y'", "params": {"n": 4}}), &mut doc).unwrap();
    assert_eq!(op, ScriptOp::Index);
    assert_eq!(doc, json!({"count": 5, "tags": "a", "x": "y"}));
    apply_update_script(
        &json!("ctx._source.remove('tags'); ctx._source.count++"),
        &mut doc,
    )
    .unwrap();
    assert_eq!(doc, json!({"count": 6, "x": "y"}));
    assert_eq!(
        apply_update_script(&json!("ctx.op = 'delete'"), &mut doc).unwrap(),
        ScriptOp::Delete
    );
    assert!(apply_update_script(&json!("for (x in y) {}"), &mut doc).is_err());
}

#[test]
fn elasticsearch_conformance_examples() {
    let s = r#"if (ctx._source.user == "foobar") {ctx._source.user = "not" + ctx._source.user} else {ctx.op = "noop"}"#;
    assert_eq!(
        run(s, json!({"user": "foobar"})),
        json!({"user": "notfoobar"})
    );
    assert_eq!(run_with(json!(s), json!({"user": "x"})).0, ScriptOp::Noop);

    let s = r#"if (ctx._source.level != 11) {ctx._source.last_updated = "2016-01-02T00:00:00Z"} else {ctx.op = "delete"}"#;
    assert_eq!(
        run(s, json!({"level": 9}))["last_updated"],
        "2016-01-02T00:00:00Z"
    );
    assert_eq!(run_with(json!(s), json!({"level": 11})).0, ScriptOp::Delete);

    let s = "int choice = ctx._source.level % 3;\n\
             if (choice == 0) {\n  ctx._source.last_updated = \"2016-01-02T00:00:00Z\";\n\
             } else if (choice == 1) {\n  ctx.op = \"noop\";\n} else {\n  ctx.op = \"delete\";\n}\n";
    let ops: Vec<ScriptOp> = [9, 10, 11, 12]
        .iter()
        .map(|l| run_with(json!(s), json!({"level": l})).0)
        .collect();
    assert_eq!(
        ops,
        [
            ScriptOp::Index,
            ScriptOp::Noop,
            ScriptOp::Delete,
            ScriptOp::Index
        ]
    );

    let (_, doc) = run_with(
        json!({"source": "ctx._source.count += params.count", "lang": "painless", "params": {"count": 4}}),
        json!({"count": 1}),
    );
    assert_eq!(doc, json!({"count": 5}));

    let (_, doc) = run_with(
        json!({"source": "ctx._source.tags.add(params.tag)", "params": {"tag": "blue"}}),
        json!({"tags": ["red"]}),
    );
    assert_eq!(doc, json!({"tags": ["red", "blue"]}));

    let (_, doc) = run_with(
        json!({"source": "if (ctx._source.tags.contains(params.tag)) { ctx._source.tags.remove(ctx._source.tags.indexOf(params.tag)) }", "params": {"tag": "blue"}}),
        json!({"tags": ["red", "blue", "green"]}),
    );
    assert_eq!(doc, json!({"tags": ["red", "green"]}));

    assert_eq!(
        run(
            "ctx._source.remove('field')",
            json!({"field": 1, "keep": 2})
        ),
        json!({"keep": 2})
    );

    let s = "ctx._source.counter = (ctx._source.counter ?: 0) + 1";
    assert_eq!(run(s, json!({})), json!({"counter": 1}));
    assert_eq!(run(s, json!({"counter": 41})), json!({"counter": 42}));

    // from the painless update tests
    let doc = run(
        "ctx._source.missing_length = ctx._source.missing?.length(); ctx._source.foo_length = ctx._source.foo?.length()",
        json!({"foo": "yyy"}),
    );
    assert_eq!(
        doc,
        json!({"foo": "yyy", "missing_length": null, "foo_length": 3})
    );
}

#[test]
fn script_object_forms() {
    let doc = json!({"a": 1});
    assert_eq!(
        run_with(json!({"inline": "ctx._source.a = 2"}), doc.clone()).1,
        json!({"a": 2})
    );
    assert_eq!(
        run_with(
            json!({"source": "ctx._source.a = params['v']", "params": {"v": "x"}}),
            doc.clone()
        )
        .1,
        json!({"a": "x"})
    );
    let e = fail(
        json!({"source": "ctx._source.a = 2", "lang": "groovy"}),
        doc.clone(),
    );
    assert_eq!(
        (e.status, e.kind.as_str(), e.reason.as_str()),
        (
            400,
            "illegal_argument_exception",
            "script_lang not supported [groovy]"
        )
    );
    // unknown keys are ES's ObjectParser error, not ignored
    let e = fail(
        json!({"source": "ctx._source.a = 2", "nope": 1}),
        doc.clone(),
    );
    assert_eq!(
        (e.status, e.kind.as_str(), e.reason.as_str()),
        (
            400,
            "x_content_parse_exception",
            "[script] unknown field [nope]"
        )
    );
    let e = fail(json!({"source": "x", "id": "y"}), doc.clone());
    assert_eq!(e.kind, "illegal_argument_exception");
    let e = fail(json!({"params": {}}), doc.clone());
    assert_eq!(e.kind, "illegal_argument_exception");

    let e = fail(json!({"id": "my-script"}), doc.clone());
    assert_eq!(
        (e.status, e.kind.as_str(), e.reason.as_str()),
        (
            404,
            "resource_not_found_exception",
            "unable to find script [my-script] in cluster state"
        )
    );
    let lookup = |id: &str| match id {
        "plus" => Some(json!({"lang": "painless", "source": "ctx._source.a += params.n"})),
        "wrapped" => Some(json!({"script": {"lang": "painless", "source": "ctx._source.a = 0"}})),
        _ => None,
    };
    let ctx = UpdateContext {
        stored_scripts: Some(&lookup),
        ..Default::default()
    };
    let mut d = doc.clone();
    apply_update_script_with(&json!({"id": "plus", "params": {"n": 5}}), &mut d, &ctx).unwrap();
    assert_eq!(d, json!({"a": 6}));
    apply_update_script_with(&json!({"id": "wrapped"}), &mut d, &ctx).unwrap();
    assert_eq!(d, json!({"a": 0}));
    let e = apply_update_script_with(&json!({"id": "nope"}), &mut d, &ctx).unwrap_err();
    assert_eq!(e.status, 404);
}

#[test]
fn ctx_metadata_and_op_rules() {
    let lookup = |_: &str| None;
    let ctx = UpdateContext {
        index: Some("idx"),
        id: Some("7"),
        routing: None,
        version: Some(3),
        now_millis: Some(1000),
        upsert: false,
        stored_scripts: Some(&lookup),
    };
    let mut doc = json!({});
    let src = "ctx._source.meta = ctx._index + '/' + ctx._id + '@' + ctx._version + ' ' + ctx._routing + ' ' + ctx.op + ' ' + ctx._now; ctx['_source'].b = ctx['_id']";
    apply_update_script_with(&json!(src), &mut doc, &ctx).unwrap();
    assert_eq!(doc, json!({"meta": "idx/7@3 null index 1000", "b": "7"}));

    for key in ["_id", "_index", "_routing", "_version"] {
        let e = apply_update_script_with(&json!(format!("ctx.{key} = 'x'")), &mut doc, &ctx)
            .unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str(), e.reason),
            (
                400,
                "illegal_argument_exception",
                format!("Modifying [{key}] not allowed")
            )
        );
    }
    // writing the same value back is not a modification
    apply_update_script_with(&json!("ctx._id = '7'"), &mut doc, &ctx).unwrap();

    let e = fail(json!("ctx.op = 'junk'"), json!({}));
    assert_eq!(
        (e.status, e.kind.as_str(), e.reason.as_str()),
        (
            400,
            "illegal_argument_exception",
            "Operation type [junk] not allowed, only [noop, index, delete] are allowed"
        )
    );
    let e = fail(json!("ctx.junk = \"stuff\""), json!({}));
    assert_eq!(
        (e.status, e.kind.as_str(), e.reason.as_str()),
        (
            400,
            "illegal_argument_exception",
            "Invalid fields added to context [junk]"
        )
    );
    assert_eq!(
        run_with(json!("ctx.op = 'none'"), json!({})).0,
        ScriptOp::Noop
    );
    assert_eq!(
        run_with(json!("ctx.op = 'index'"), json!({})).0,
        ScriptOp::Index
    );
    // a noop leaves the caller's source alone
    let (op, doc) = run_with(json!("ctx._source.a = 1; ctx.op = 'noop'"), json!({"a": 0}));
    assert_eq!((op, doc), (ScriptOp::Noop, json!({"a": 0})));

    let upsert = UpdateContext {
        upsert: true,
        ..Default::default()
    };
    let mut doc = json!({});
    let op =
        apply_update_script_with(&json!("ctx._source.op = ctx.op"), &mut doc, &upsert).unwrap();
    assert_eq!((op, doc), (ScriptOp::Index, json!({"op": "create"})));
    let mut doc = json!({});
    assert_eq!(
        apply_update_script_with(&json!("ctx.op = 'noop'"), &mut doc, &upsert).unwrap(),
        ScriptOp::Noop
    );
    let e = apply_update_script_with(&json!("ctx.op = 'delete'"), &mut doc, &upsert).unwrap_err();
    assert_eq!(
        e.reason,
        "Operation type [delete] not allowed, only [noop, create] are allowed"
    );

    let e = fail(json!("ctx._source.ctx = ctx"), json!({}));
    assert_eq!(
        (e.kind.as_str(), e.reason.as_str()),
        (
            "illegal_argument_exception",
            "Iterable object is self-referencing itself"
        )
    );
    let e = fail(json!("ctx._source = 'x'"), json!({}));
    assert_eq!(e.kind, "illegal_argument_exception");
    // replacing the whole source is allowed
    assert_eq!(
        run("ctx._source = ['b': 2]", json!({"a": 1})),
        json!({"b": 2})
    );
}

#[test]
fn compile_error_shape() {
    let e = fail(json!("syntax errors are fun!"), json!({}));
    assert_eq!(e.status, 400);
    let body = e.to_response_json();
    assert_eq!(body["status"], 400);
    let err = &body["error"];
    assert_eq!(err["type"], "script_exception");
    assert_eq!(err["reason"], "compile error");
    assert_eq!(err["lang"], "painless");
    assert_eq!(err["script"], "syntax errors are fun!");
    assert_eq!(
        err["script_stack"],
        json!(["syntax errors are fun!", "       ^---- HERE"])
    );
    assert_eq!(err["position"], json!({"offset": 7, "start": 0, "end": 22}));
    assert_eq!(err["caused_by"]["type"], "illegal_argument_exception");
    assert_eq!(
        err["caused_by"]["reason"],
        "unexpected token ['errors'] was expecting one of [{<EOF>, ';'}]."
    );
    assert_eq!(err["root_cause"][0]["type"], "script_exception");
    assert_eq!(err["root_cause"][0]["reason"], "compile error");

    // the position test from the painless REST tests
    let e = fail(
        json!("_score * foo bar + doc['myParent.weight'].value"),
        json!({}),
    );
    assert_eq!(
        e.extra["position"],
        json!({"offset": 13, "start": 0, "end": 38})
    );

    for (src, reason) in [
        ("ctx._source.x = y", "cannot resolve symbol [y]"),
        ("def x = 1; def x = 2", "variable [x] is already defined"),
        (
            "ctx._source.x == 1; ctx._source.y = 2",
            "not a statement: result not used",
        ),
        ("break", "invalid break statement: not inside a loop"),
        ("params = [:]", "variable [params] is read-only"),
        ("ctx._source.x = 'abc", "unterminated string"),
        (
            "Math.nope(1)",
            "unknown call [nope] with [1] arguments on type [Math]",
        ),
        ("ctx._source.x = new Foo()", "cannot resolve type [Foo]"),
        (
            "if (true) { ctx.op = 'noop'",
            "unexpected token [<EOF>] was expecting one of ['}'].",
        ),
        (
            "ctx._source.x = 1 +",
            "unexpected token [<EOF>] was expecting one of [<expression>].",
        ),
        (
            "1 = 2",
            "invalid assignment: cannot assign a value to this expression",
        ),
    ] {
        let e = fail(json!(src), json!({}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("script_exception", "compile error"),
            "{src}"
        );
        assert_eq!(
            cause(&e),
            ("illegal_argument_exception".into(), reason.into()),
            "{src}"
        );
    }

    // long scripts get a window with ellipses around the failure
    let src = format!(
        "{}ctx._source.x = nope; {}",
        "ctx._source.a = 1; ".repeat(3),
        "ctx._source.b = 2; ".repeat(3)
    );
    let e = fail(json!(src), json!({}));
    let stack = &e.extra["script_stack"];
    assert!(stack[0].as_str().unwrap().starts_with("... "), "{stack}");
    assert!(stack[0].as_str().unwrap().ends_with(" ..."), "{stack}");
    assert_eq!(
        stack[1],
        "    ".to_string() + &" ".repeat(25) + "^---- HERE"
    );
}

#[test]
fn runtime_error_shapes() {
    let e = fail(json!("ctx._source.a.b = 1"), json!({}));
    assert_eq!(
        (e.status, e.kind.as_str(), e.reason.as_str()),
        (400, "script_exception", "runtime error")
    );
    assert_eq!(cause(&e).0, "null_pointer_exception");
    assert_eq!(e.extra["lang"], "painless");
    assert_eq!(e.extra["script"], "ctx._source.a.b = 1");
    assert_eq!(e.extra["position"]["offset"], 13);
    let body = e.to_response_json();
    assert_eq!(body["error"]["caused_by"]["type"], "null_pointer_exception");
    assert_eq!(body["error"]["root_cause"][0]["type"], "script_exception");

    for (src, kind) in [
        (
            "ctx._source.n = ctx._source.missing.length()",
            "null_pointer_exception",
        ),
        (
            "ctx._source.n = ctx._source.missing + 1",
            "null_pointer_exception",
        ),
        (
            "ctx._source.n = ctx._source.list[5]",
            "index_out_of_bounds_exception",
        ),
        (
            "ctx._source.n = ctx._source.list.get(-1)",
            "index_out_of_bounds_exception",
        ),
        (
            "ctx._source.list.remove(9)",
            "index_out_of_bounds_exception",
        ),
        ("int x = 'a' + 1", "class_cast_exception"),
        ("ctx._source.n = 1 / 0", "arithmetic_exception"),
        ("ctx._source.n = 5 % 0", "arithmetic_exception"),
        (
            "ctx._source.n = Integer.parseInt('abc')",
            "number_format_exception",
        ),
        (
            "ctx._source.n = 'abc'.substring(2, 9)",
            "string_index_out_of_bounds_exception",
        ),
        ("ctx._source.n = 'abc'.nope()", "illegal_argument_exception"),
        ("if ('yes') { ctx._source.n = 1 }", "class_cast_exception"),
        ("ctx._source.n = true - 1", "class_cast_exception"),
        ("ctx._source.n = 'a' < 'b'", "class_cast_exception"),
        (
            "throw new IllegalArgumentException('no way')",
            "illegal_argument_exception",
        ),
        ("for (def x : ctx._source) {}", "illegal_argument_exception"),
        ("String s = 5", "class_cast_exception"),
    ] {
        let e = fail(json!(src), json!({"list": [1, 2]}));
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("script_exception", "runtime error"),
            "{src}"
        );
        assert_eq!(cause(&e).0, kind, "{src}: {}", cause(&e).1);
    }
    let e = fail(
        json!("throw new IllegalArgumentException('no way')"),
        json!({}),
    );
    assert_eq!(cause(&e).1, "no way");
}

#[test]
fn runaway_loops_stop() {
    for src in [
        "while (true) {}",
        "for (;;) { ctx._source.n = 1 }",
        "do { } while (true)",
        "def l = [1]; for (int i = 0; i < 10000000; i++) { l.add(i) }",
    ] {
        let e = fail(json!(src), json!({}));
        assert_eq!(e.reason, "runtime error", "{src}");
        assert_eq!(
            cause(&e),
            (
                "painless_error".into(),
                "The maximum number of statements that can be executed in a loop has been reached."
                    .into()
            )
        );
    }
    // a large but bounded loop is fine
    assert_eq!(
        result("int s = 0; for (int i = 0; i < 100000; i++) { s += i } ctx._source.r = s"),
        json!(4999950000i64)
    );
    let e = fail(
        json!("String s = 'ab'; while (true) { s = s + s }"),
        json!({}),
    );
    assert_eq!(cause(&e).0, "painless_error");
}

#[test]
fn deep_nesting_is_a_compile_error_not_a_crash() {
    for src in [
        format!("ctx._source.x = {}1{}", "(".repeat(5000), ")".repeat(5000)),
        format!("ctx._source.x = 1{}", " + 1".repeat(5000)),
        format!("ctx._source.x = {}1", "-".repeat(5000)),
        format!("{}{}", "if (true) {".repeat(5000), "}".repeat(5000)),
        format!("ctx._source.x = {}1{}", "[".repeat(5000), "]".repeat(5000)),
    ] {
        let e = fail(json!(src), json!({}));
        assert_eq!(e.reason, "compile error");
    }
    // moderately deep is fine
    assert_eq!(
        result(&format!("ctx._source.r = 1{}", " + 1".repeat(150))),
        json!(151)
    );
}

#[test]
fn statements_and_control_flow() {
    let src = "
        def total = 0
        int evens = 0
        for (int i = 0; i < 10; i++) {
            if (i == 7) { break }
            if (i % 2 == 1) { continue; }
            evens++;
            total += i
        }
        def seen = []
        for (def t : ctx._source.tags) { seen.add(t.toUpperCase()) }
        for (t in ctx._source.tags) { seen.add(t) }
        int n = 0; while (n < 5) { n += 2 }
        int m = 10; do { m-- } while (m > 7);
        ctx._source.r = [total, evens, seen, n, m];
    ";
    assert_eq!(
        run(src, json!({"tags": ["a", "b"]}))["r"],
        json!([12, 4, ["A", "B", "a", "b"], 6, 7])
    );
    // return ends the script, keeping the changes so far
    assert_eq!(
        run(
            "ctx._source.a = 1; if (true) { return; } ctx._source.b = 2",
            json!({})
        ),
        json!({"a": 1})
    );
    assert_eq!(
        run(
            "for (int i = 0, j = 10; i < j; i++, j--) { ctx._source.n = j - i }",
            json!({})
        ),
        json!({"n": 2})
    );
    // blocks scope their locals
    assert_eq!(
        result("if (true) { def x = 1 } def x = 2; ctx._source.r = x"),
        json!(2)
    );
    assert_eq!(
        result("def x = 1; /* block */ if (x > 0) ctx._source.r = 'pos'; else ctx._source.r = 'neg' // tail"),
        json!("pos")
    );
    assert_eq!(
        result("int x = 5; ctx._source.r = x > 3 ? (x > 4 ? 'big' : 'mid') : 'small'"),
        json!("big")
    );
    // nested loops: break leaves only the inner one
    assert_eq!(
        result("int c = 0; for (int i = 0; i < 3; i++) { for (int j = 0; j < 3; j++) { if (j == 1) break; c++ } } ctx._source.r = c"),
        json!(3)
    );
}

#[test]
fn assignment_forms() {
    let doc = json!({"a": {"b": 1}, "list": [1, 2, 3], "s": "x"});
    let src = "
        ctx._source.a.b += 10;
        ctx._source['a']['c'] = 5;
        ctx._source.a.c *= 3;
        ctx._source.list[0] = 100;
        ctx._source.list[-1]++;
        ++ctx._source.list[1];
        ctx._source.s += 'y';
        ctx._source.a.b -= 1;
        ctx._source.a.c /= 2;
        ctx._source.a.c %= 4;
        def pre = ++ctx._source.a.b;
        def post = ctx._source.a.b--;
        ctx._source.pp = [pre, post];
        int i = 7; i /= 2; i -= 1; long l = 3; l *= 4; double d = 1; d /= 4;
        ctx._source.locals = [i, l, d];
        int k = 1; k += 1.7;
        ctx._source.k = k;
    ";
    assert_eq!(
        run(src, doc),
        json!({"a": {"b": 10, "c": 3}, "list": [100, 3, 4], "s": "xy", "pp": [11, 11], "locals": [2, 12, 0.25], "k": 2})
    );
    assert_eq!(
        result("def a; def b; a = b = 3; ctx._source.r = a + b"),
        json!(6)
    );
}

#[test]
fn arithmetic_follows_java() {
    assert_eq!(result("ctx._source.r = [7 / 2, -7 / 2, 7 % 3, -7 % 3, 7 / 2.0, 7.5 % 2, 2 * 3 + 4, 2 * (3 + 4), 10 - 2 - 3]"),
        json!([3, -3, 1, -1, 3.5, 1.5, 10, 14, 5]));
    assert_eq!(
        result("ctx._source.r = ['a' + 1 + 2, 1 + 2 + 'a', 'x' + 1.0, 'x' + 2.5, '' + 1e10, 'n' + null, 'b' + true, '' + [1, 'a'], '' + ['k': 1]]"),
        json!(["a12", "3a", "x1.0", "x2.5", "1.0E10", "nnull", "btrue", "[1, a]", "{k=1}"])
    );
    assert_eq!(
        result("ctx._source.r = [1 == 1.0, 2 > 1.5, 1 < 1, 1 <= 1, 'a' == 'a', 'a' != 'b', [1, 2] == [1, 2], ['a': 1] == ['a': 1], null == null, 1 == null, 3 >= 4]"),
        json!([true, true, false, true, true, true, true, true, true, false, false])
    );
    assert_eq!(
        result("ctx._source.r = [-5, -(2 + 3), !true, ~0, 6 & 3, 6 | 3, 6 ^ 3, 1 << 4, -16 >> 2, true ^ true, 0x1F, 1.5e2, 5L, 2.0f]"),
        json!([-5, -5, false, -1, 2, 7, 5, 16, -4, false, 31, 150.0, 5, 2.0])
    );
    // a JSON double stays a double, an integer stays an integer
    assert_eq!(
        run(
            "ctx._source.a += 1; ctx._source.b += 1",
            json!({"a": 1.0, "b": 1})
        ),
        json!({"a": 2.0, "b": 2})
    );
}

#[test]
fn logic_short_circuits() {
    assert_eq!(
        run(
            "def v = ctx._source.v; ctx._source.r = v != null && v.length() > 0 || false",
            json!({"v": null})
        )["r"],
        json!(false)
    );
    assert_eq!(
        result("def v = null; ctx._source.r = v == null || v.length() > 0"),
        json!(true)
    );
    assert_eq!(
        result("def m = null; ctx._source.r = [m?.a?.b, m?.size(), m ?: 'dflt', 'x' ?: 'y']"),
        json!([null, null, "dflt", "x"])
    );
}

#[test]
fn literals_params_and_constructors() {
    let (_, doc) = run_with(
        json!({"source": "ctx._source.r = [params.a, params['b'], params.nested.c, params.list[1], params.missing]", "params": {"a": 1, "b": "two", "nested": {"c": true}, "list": [0, 5]}}),
        json!({}),
    );
    assert_eq!(doc["r"], json!([1, "two", true, 5, null]));
    assert_eq!(
        result("def l = new ArrayList(); l.add(1); def m = new HashMap(); m.put('k', l); def s = new HashSet(); s.add(1); s.add(1); ctx._source.r = [m, s, [:], [], ['a': [1, 2], 'b': null], new ArrayList([3, 4]), new HashMap(['q': 1])]"),
        json!([{"k": [1]}, [1], {}, [], {"a": [1, 2], "b": null}, [3, 4], {"q": 1}])
    );
    assert_eq!(
        result(r#"ctx._source.r = ["dq \"x\"", 'sq \'y\'', 'back\\slash']"#),
        json!(["dq \"x\"", "sq 'y'", "back\\slash"])
    );
}

#[test]
fn references_are_shared_like_java() {
    assert_eq!(
        run("def tags = ctx._source.tags; tags.add('x'); List copy = new ArrayList(tags); copy.add('y'); Map src = ctx._source; src.n = copy.size()", json!({"tags": []})),
        json!({"tags": ["x"], "n": 2})
    );
    assert_eq!(
        run(
            "def m = ['a': 1]; ctx._source.x = m; ctx._source.y = m; m.a = 2",
            json!({})
        ),
        json!({"x": {"a": 2}, "y": {"a": 2}})
    );
}

#[test]
fn string_methods() {
    assert_eq!(
        result("def s = '  Hello World  '.trim(); ctx._source.r = [s.length(), s.contains('World'), s.startsWith('He'), s.endsWith('d'), s.toLowerCase(), s.toUpperCase(), s.substring(6), s.substring(0, 5), s.indexOf('o'), s.indexOf('o', 5), s.lastIndexOf('o'), s.replace('l', 'L'), s.equals('Hello World'), s.isEmpty(), s.charAt(1), s.equalsIgnoreCase('hello world'), 'b'.compareTo('a'), s.split(' '), 'a,b,,c'.splitOnToken(','), s.concat('!')]"),
        json!([11, true, true, true, "hello world", "HELLO WORLD", "World", "Hello", 4, 7, 7, "HeLLo WorLd", true, false, "e", true, 1, ["Hello", "World"], ["a", "b", "", "c"], "Hello World!"])
    );
    assert_eq!(
        result("ctx._source.r = 'héllo'.substring(1, 2) + 'héllo'.length()"),
        json!("é5")
    );
}

#[test]
fn list_set_and_map_methods() {
    assert_eq!(
        result("def l = [1, 2, 3]; l.add(0, 9); l.addAll([4, 5]); def removed = l.remove(1); boolean byValue = l.remove('nope'); l.set(0, 8); ctx._source.r = [l, removed, byValue, l.size(), l.isEmpty(), l.contains(4), l.indexOf(5), l.get(2), l.lastIndexOf(8), l.subList(1, 3), l.containsAll([2, 3])]"),
        json!([[8, 2, 3, 4, 5], 1, false, 5, false, true, 4, 3, 0, [2, 3], true])
    );
    assert_eq!(
        result("def l = ['a', 'b', 'a']; l.remove('a'); def c = new ArrayList(l); c.clear(); ctx._source.r = [l, c]"),
        json!([["b", "a"], []])
    );
    assert_eq!(
        result("def m = ['a': 1]; m.put('b', 2); def old = m.put('a', 3); def gone = m.remove('b'); m.putIfAbsent('c', 4); m.putAll(['d': 5]); ctx._source.r = [m, old, gone, m.get('a'), m.get('zz'), m.containsKey('c'), m.containsValue(5), m.getOrDefault('x', 0), m.size(), m.isEmpty(), m.keySet(), m.values()]"),
        json!([{"a": 3, "c": 4, "d": 5}, 1, 2, 3, null, true, true, 0, 3, false, ["a", "c", "d"], [3, 4, 5]])
    );
    assert_eq!(
        result("def out = []; for (def e : ['x': 1, 'y': 2].entrySet()) { out.add(e.getKey() + '=' + e.getValue()); out.add(e.key) } for (String k : ['z': 0].keySet()) { out.add(k) } ctx._source.r = out"),
        json!(["x=1", "x", "y=2", "y", "z"])
    );
    // removing from a map that has had many removals keeps order and lookups straight
    assert_eq!(
        result("def m = [:]; for (int i = 0; i < 50; i++) { m.put('k' + i, i) } for (int i = 0; i < 48; i++) { m.remove('k' + i) } m.put('k0', 0); ctx._source.r = [m, m.get('k49')]"),
        json!([{"k48": 48, "k49": 49, "k0": 0}, 49])
    );
    assert_eq!(
        result("def s = new HashSet(['a', 'b', 'a']); s.addAll(['c', 'a']); s.remove('b'); ctx._source.r = [s, s.size(), s.contains('c')]"),
        json!([["a", "c"], 2, true])
    );
}

#[test]
fn statics_casts_and_instanceof() {
    assert_eq!(
        result("ctx._source.r = [Math.max(1, 5), Math.min(1.5, 2), Math.abs(-3), Math.floor(2.7), Math.ceil(2.1), Math.round(2.5), Math.round(-2.5), Math.pow(2, 10), Math.sqrt(16), Integer.parseInt('42'), Long.parseLong('-7'), Double.parseDouble('2.5'), String.valueOf(3), String.valueOf(1.5), Integer.toString(5), Boolean.parseBoolean('TRUE'), String.join('-', ['a', 'b']), Math.floorMod(-7, 3), Integer.MAX_VALUE, Long.MIN_VALUE, Math.floorDiv(Long.MIN_VALUE, -1), Math.floorMod(Long.MIN_VALUE, -1), Math.floorDiv(-7, 2)]"),
        json!([5, 1.5, 3, 2.0, 3.0, 3, -2, 1024.0, 4.0, 42, -7, 2.5, "3", "1.5", "5", true, "a-b", 2, 2147483647, i64::MIN, i64::MIN, 0, -4])
    );
    assert!(
        result("ctx._source.r = System.currentTimeMillis()")
            .as_i64()
            .unwrap()
            > 1_600_000_000_000
    );
    assert_eq!(
        result("def l = [3, 1, 2]; Collections.sort(l); def w = ['b', 'a']; Collections.sort(w); Collections.reverse(w); ctx._source.r = [l, w]"),
        json!([[1, 2, 3], ["b", "a"]])
    );
    assert_eq!(
        result("ctx._source.r = [(int) 3.9, (long) -2.5, (double) 2, (int) 'A', (String) null, (def) 1, (char) 66, (float) 1]"),
        json!([3, -2, 2.0, 65, null, 1, "B", 1.0])
    );
    assert_eq!(
        result("ctx._source.r = ['s' instanceof String, 1 instanceof Integer, 1.0 instanceof Double, 1 instanceof Number, [] instanceof List, [:] instanceof Map, null instanceof Object, 's' instanceof List]"),
        json!([true, true, true, true, true, true, false, false])
    );
    assert_eq!(
        result("ctx._source.r = [5.toString(), 2.5.intValue(), 'x'.equals('x'), [1].toString(), 3.compareTo(4)]"),
        json!(["5", 2, true, "[1]", -1])
    );
}

#[test]
fn typed_locals() {
    assert_eq!(
        result("int i = 1; long l = 2; double d = 3; float f = 1; boolean b = true; String s = 'x'; List li = [1]; Map m = [:]; def x = null; Integer boxed = 4; ctx._source.r = [i, l, d, f, b, s, li, m, x, boxed]"),
        json!([1, 2, 3.0, 1.0, true, "x", [1], {}, null, 4])
    );
    assert_eq!(
        result("int i; double d; boolean b; String s; ctx._source.r = [i, d, b, s]"),
        json!([0, 0.0, false, null])
    );
    let e = fail(json!("int i = 2.5"), json!({}));
    assert_eq!(cause(&e).0, "class_cast_exception");
    let e = fail(json!("Map m = []"), json!({}));
    assert_eq!(cause(&e).0, "class_cast_exception");
}

#[test]
fn worst_case_nesting_runs_in_a_small_stack() {
    // the deepest expression the parser accepts, inside nested blocks, in a quarter of the
    // stack a Tokio blocking thread gets
    let mut src = "if (true) { ".repeat(30);
    src.push_str(&format!("ctx._source.x = 1{}", " + 1".repeat(198)));
    src.push_str(&" }".repeat(30));
    let run = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let mut d = json!({});
            apply_update_script(&json!(src), &mut d).map(|_| d)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(run.unwrap(), json!({"x": 199}));
}

#[test]
fn resource_budgets() {
    let limit = |src: &str| {
        let e = fail(json!(src), json!({}));
        assert_eq!(e.reason, "runtime error", "{src}");
        let (kind, reason) = cause(&e);
        assert_eq!(kind, "painless_error", "{src}: {reason}");
        reason
    };
    assert!(
        limit("def l = [1]; for (int i = 0; i < 40; i++) { l.addAll(l) }").contains("allocated")
    );
    assert!(
        limit("String s = 'x'; for (int i = 0; i < 100; i++) { s = s + s }")
            .contains("string length")
    );
    assert!(
        limit("String s = 'x'; for (int i = 0; i < 100; i++) { s = s.replace('x', 'xx') }")
            .contains("string length")
    );
    assert!(limit("def l = []; for (int i = 0; i < 100000; i++) { l.add(i) } for (int i = 0; i < 2000; i++) { l.contains(-1) }").contains("operations"));

    let e = fail(
        json!("def l = [1]; for (int i = 0; i < 64; i++) { l = [l, l] } ctx._source.x = l"),
        json!({}),
    );
    assert_eq!(e.kind, "illegal_argument_exception");
    assert!(e.reason.contains("too large"), "{}", e.reason);
    let e = fail(json!("def l = []; def cur = l; for (int i = 0; i < 200; i++) { def n = []; cur.add(n); cur = n } ctx._source.x = l"), json!({}));
    assert!(e.reason.contains("nested"), "{}", e.reason);

    // hashing keeps big sets fast
    assert_eq!(
        result("def s = new HashSet(); for (int i = 0; i < 100000; i++) { s.add(i % 5000); s.add('k' + (i % 10)) } ctx._source.r = s.size()"),
        json!(5010)
    );
    // sharing a value a few times is fine
    assert_eq!(
        run(
            "ctx._source.b = ctx._source.a; ctx._source.c = ctx._source.a",
            json!({"a": [1, 2]})
        ),
        json!({"a": [1, 2], "b": [1, 2], "c": [1, 2]})
    );
}

#[test]
fn compiled_scripts_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Script>();
    let script = Script::compile(
        &json!({"source": "ctx._source.n += params.k", "params": {"k": 2}}),
        None,
    )
    .unwrap();
    assert_eq!(script.source(), "ctx._source.n += params.k");
    std::thread::scope(|s| {
        for start in 0..3 {
            let script = &script;
            s.spawn(move || {
                let mut doc = json!({"n": start});
                assert_eq!(
                    script
                        .run_update(&mut doc, &UpdateContext::default())
                        .unwrap(),
                    ScriptOp::Index
                );
                assert_eq!(doc, json!({"n": start + 2}));
            });
        }
    });
}

// ---- search scripts: `doc`, `params`, `_score` ----------------------------------------------

/// A document: field → values; `text` is a text field without fielddata.
struct TestDoc(Vec<(&'static str, DocFieldSpec)>);

#[derive(Clone)]
enum DocFieldSpec {
    Long(Vec<i64>),
    Double(Vec<f64>),
    Str(Vec<&'static str>),
    Date(Vec<i64>),
    Text,
}

impl DocLookup for TestDoc {
    fn field(&mut self, name: &str) -> Result<DocField, String> {
        let Some((_, spec)) = self.0.iter().find(|(n, _)| *n == name) else {
            return Err(format!("No field found for [{name}] in mapping"));
        };
        Ok(match spec.clone() {
            DocFieldSpec::Long(v) => DocField::Long(v),
            DocFieldSpec::Double(v) => DocField::Double(v),
            DocFieldSpec::Str(v) => DocField::Str(v.into_iter().map(String::from).collect()),
            DocFieldSpec::Date(v) => DocField::Date(v),
            DocFieldSpec::Text => return Err(format!("Text fields are not optimised [{name}]")),
        })
    }

    fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| *n == name)
    }
}

fn test_doc() -> TestDoc {
    TestDoc(vec![
        ("n", DocFieldSpec::Long(vec![3, 7])),
        ("x", DocFieldSpec::Double(vec![1.5])),
        ("k", DocFieldSpec::Str(vec!["a", "b"])),
        ("d", DocFieldSpec::Date(vec![1_700_000_000_123])),
        ("none", DocFieldSpec::Long(vec![])),
        ("t", DocFieldSpec::Text),
    ])
}

fn search_value(src: &str, params: Value) -> Value {
    let s = SearchScript::compile(&json!({"source": src, "params": params}), None)
        .unwrap_or_else(|e| panic!("{src}: {}", e.to_response_json()));
    s.value(&mut test_doc(), 2.5)
        .unwrap_or_else(|e| panic!("{src}: {}", e.to_response_json()))
}

fn search_fail(src: &str) -> EsError {
    let s = SearchScript::compile(&json!(src), None).unwrap();
    s.value(&mut test_doc(), 0.0).expect_err(src)
}

#[test]
fn doc_values_access() {
    for (src, want) in [
        ("doc['n'].value", json!(3)),
        ("doc['n'].size()", json!(2)),
        ("doc['n'].length", json!(2)),
        ("doc['n'][1]", json!(7)),
        ("doc['n'].get(1)", json!(7)),
        ("doc['n'].empty", json!(false)),
        ("doc['none'].empty", json!(true)),
        ("doc['none'].isEmpty()", json!(true)),
        ("doc['none'].size() == 0", json!(true)),
        ("doc['x'].value * 2", json!(3.0)),
        ("doc['k'].value + doc['k'][1]", json!("ab")),
        ("doc['k'].contains('b')", json!(true)),
        ("doc.n.value", json!(3)),
        ("doc.get('n').value", json!(3)),
        ("doc.containsKey('n')", json!(true)),
        ("doc.containsKey('zz')", json!(false)),
        (
            "long s = 0; for (def v : doc['n']) { s += v } return s",
            json!(10),
        ),
        ("doc['d'].value.millis", json!(1_700_000_000_123i64)),
        ("doc['d'].value.getMillis()", json!(1_700_000_000_123i64)),
        (
            "doc['d'].value.toInstant().toEpochMilli()",
            json!(1_700_000_000_123i64),
        ),
        (
            "doc['d'].value.toString()",
            json!("2023-11-14T22:13:20.123Z"),
        ),
        ("doc['d'].value.millis > params.now", json!(true)),
        ("doc['n'].value > params.now", json!(false)),
        ("_score * 2", json!(5.0)),
        (
            "if (doc['n'].value == 3) { return 'three' } return 'other'",
            json!("three"),
        ),
    ] {
        assert_eq!(
            search_value(src, json!({"now": 1_700_000_000_000i64})),
            want,
            "{src}"
        );
    }
}

#[test]
fn doc_values_errors() {
    for (src, kind, reason) in [
        (
            "doc['none'].value",
            "illegal_state_exception",
            "A document doesn't have a value for a field! Use doc[<field>].size()==0 to check if a document is missing a field!",
        ),
        (
            "doc['none'][0]",
            "illegal_state_exception",
            "A document doesn't have a value for a field! Use doc[<field>].size()==0 to check if a document is missing a field!",
        ),
        (
            "doc['zz'].value",
            "illegal_argument_exception",
            "No field found for [zz] in mapping",
        ),
        (
            "doc['t'].value",
            "illegal_argument_exception",
            "Text fields are not optimised [t]",
        ),
        (
            "doc['d'].value > 5",
            "class_cast_exception",
            "",
        ),
    ] {
        let e = search_fail(src);
        assert_eq!((e.status, &*e.kind, &*e.reason), (400, "script_exception", "runtime error"), "{src}");
        let (k, r) = cause(&e);
        assert_eq!(k, kind, "{src}: {r}");
        if !reason.is_empty() {
            assert_eq!(r, reason, "{src}");
        }
    }
    // `doc` is read-only and `ctx` does not exist in a search script.
    for src in ["doc = 1", "ctx._source"] {
        let e = SearchScript::compile(&json!(src), None).expect_err(src);
        assert_eq!(e.reason, "compile error", "{src}");
    }
    let s = SearchScript::compile(&json!("doc['n'].value"), None).unwrap();
    let e = s.filter(&mut test_doc()).unwrap_err();
    assert_eq!(cause(&e).0, "class_cast_exception");
    // Update scripts still have no `doc`.
    assert!(Script::compile(&json!("doc['n'].value"), None).is_err());
}

mod agg_scripts {
    use crate::AggScript;
    use serde_json::json;

    #[test]
    fn bucket_script_sees_vars_and_params() {
        let s = AggScript::compile_bucket(
            &json!({"source": "params.a / params.b * params.factor", "params": {"factor": 2}}),
            None,
        )
        .unwrap();
        assert_eq!(s.number(&[("a", 3.0), ("b", 4.0)]).unwrap(), Some(1.5));
        let null = AggScript::compile_bucket(&json!("return null"), None).unwrap();
        assert_eq!(null.number(&[]).unwrap(), None);
        let text = AggScript::compile_bucket(&json!("'x'"), None).unwrap();
        assert!(text.number(&[]).is_err());
    }

    #[test]
    fn bucket_selector_needs_a_boolean() {
        let s = AggScript::compile_bucket(&json!("params.total > 10"), None).unwrap();
        assert!(s.select(&[("total", 11.0)]).unwrap());
        assert!(!s.select(&[("total", 10.0)]).unwrap());
        let n = AggScript::compile_bucket(&json!("params.total"), None).unwrap();
        assert!(n.select(&[("total", 1.0)]).is_err());
    }

    #[test]
    fn moving_fn_values_and_functions() {
        let run = |src: &str, v: &[f64]| {
            AggScript::compile_moving_fn(&json!(src), None)
                .unwrap()
                .moving(v)
                .unwrap()
        };
        assert_eq!(
            run("MovingFunctions.unweightedAvg(values)", &[1.0, 2.0, 6.0]),
            3.0
        );
        assert_eq!(run("values.length", &[1.0, 2.0]), 2.0);
        assert_eq!(
            run(
                "double t = 0; for (double v : values) { t += v } t",
                &[1.5, 2.0]
            ),
            3.5
        );
        assert_eq!(run("values[1]", &[1.5, 2.0]), 2.0);
        assert!(run("MovingFunctions.max(values)", &[]).is_nan());
        assert_eq!(
            run("MovingFunctions.ewma(values, 0.5)", &[1.0, 4.0, 2.0]),
            2.25
        );
        let hw = AggScript::compile_moving_fn(
            &json!("MovingFunctions.holtWinters(values, 0.5, 0.5, 0.5, 2, false)"),
            None,
        )
        .unwrap();
        assert!(hw.moving(&[1.0, 2.0]).is_err());
        // Only moving_fn scripts know the class.
        assert!(AggScript::compile_bucket(&json!("MovingFunctions.sum([])"), None).is_err());
        assert!(AggScript::compile_bucket(&json!("values"), None).is_err());
    }
}

#[test]
fn integers_beyond_doubles_stay_exact() {
    // 2^53 + 1 is the first integer a double cannot hold.
    let doc = json!({"n": 9_007_199_254_740_993_i64, "m": 1});
    assert_eq!(
        run("ctx._source.m += 1", doc.clone()),
        json!({"n": 9_007_199_254_740_993_i64, "m": 2})
    );
    assert_eq!(
        run("ctx._source.n += 1", doc.clone())["n"],
        json!(9_007_199_254_740_994_i64)
    );
    assert_eq!(
        run(
            "ctx._source.r = [ctx._source.n instanceof Long, ctx._source.m instanceof Integer]",
            doc
        )["r"],
        json!([true, true])
    );
}

#[test]
fn integers_beyond_long_are_big_integers() {
    // Jackson reads an integer beyond `long` as a BigInteger: passed along, it is kept.
    let u = u64::MAX - 1;
    let marked = format!("{BIG_INTEGER_MARK}-123456789012345678901234567890");
    let doc = json!({"u": u, "b": marked, "m": 1});
    let out = run(
        "ctx._source.m += 1; ctx._source.c = [ctx._source.u, ctx._source.b]",
        doc,
    );
    assert_eq!(out, json!({"u": u, "b": marked, "m": 2, "c": [u, marked]}));
    let out = run(
        "ctx._source.r = [ctx._source.u instanceof Number, \
         ctx._source.u.toString(), ctx._source.u.longValue(), ctx._source.b.longValue(), \
         ctx._source.u.doubleValue(), ctx._source.u == ctx._source.u, ctx._source.u.equals(ctx._source.b)]",
        json!({"u": u, "b": marked}),
    );
    // longValue is the low 64 bits of the two's complement, as Java's.
    let b_low = (-123_456_789_012_345_678_901_234_567_890_i128) as i64;
    assert_eq!(
        out["r"],
        json!([true, u.to_string(), -2, b_low, u as f64, true, false])
    );
    let e = fail(json!("ctx._source.u += 1"), json!({"u": u}));
    assert_eq!(
        cause(&e),
        (
            "class_cast_exception".into(),
            "Cannot apply [+] operation to types [java.math.BigInteger] and [java.lang.Integer]."
                .into()
        )
    );
}
