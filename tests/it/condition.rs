//! Table tests of the jq conditions (`--until`, `--fail-when`, `--show`) as pure
//! functions: a filter and a body in, a verdict out.

use poll::condition::{self, Conditions, Filter, Input, Judgement};
use poll::policy::Verdict::{self, FailWhen, Met, NotJson, NotMet};

fn filter(source: &str) -> Filter {
    Filter::compile(source).unwrap_or_else(|e| panic!("`{source}` should compile: {e}"))
}

fn input(body: &str) -> Input {
    Input::parse(body.as_bytes()).unwrap_or_else(|why| panic!("{body:?} should parse as JSON: {why}"))
}

fn conditions(until: Option<&str>, fail_when: Option<&str>, show: Option<&str>) -> Conditions {
    Conditions {
        until: until.map(filter),
        fail_when: fail_when.map(filter),
        show: show.map(filter),
        ..Conditions::default()
    }
}

fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

#[test]
fn compile_errors_name_the_position() {
    #[rustfmt::skip] // One row per line: the table is the test.
    let rows: [(&str, &str); 9] = [
        (".a | ", "at end of input (col 6): expected term, found end of input"),
        (".a ]", "at col 4: expected token"),
        ("foo", "at col 1: undefined filter `foo`"),
        (".a | foo(1)", "at col 6: undefined filter `foo`"),
        ("$x", "at col 1: undefined variable `$x`"),
        (".x == $nope", "at col 7: undefined variable `$nope`"),
        ("\"abc", "at end of input (col 5): expected closing quote"),
        // Columns count characters, not bytes: `"é" | ` is 6 characters, 7 bytes.
        ("\"é\" | nope", "at col 7: undefined filter `nope`"),
        ("if . then 1", "at end of input (col 12): expected else or end, found end of input"),
    ];
    for (source, want) in rows {
        assert_eq!(Filter::compile(source).map(|_| ()), Err(want.to_string()), "compiling `{source}`");
    }
    // Several mistakes are all reported.
    let both = Filter::compile("foo | bar").unwrap_err();
    assert!(both.contains("`foo`") && both.contains("`bar`"), "{both}");
}

#[test]
fn the_standard_library_is_available() {
    let rows = [
        (".items | length > 2", r#"{"items":[1,2,3]}"#, true),
        (".items | map(.n) | add == 6", r#"{"items":[{"n":1},{"n":2},{"n":3}]}"#, true),
        (r#"any(.jobs[]; .state == "failed")"#, r#"{"jobs":[{"state":"ok"},{"state":"failed"}]}"#, true),
        (r#"all(.jobs[]; .state == "ok")"#, r#"{"jobs":[{"state":"ok"},{"state":"failed"}]}"#, false),
        (r#".name | test("^db-[0-9]+$")"#, r#"{"name":"db-42"}"#, true),
        (r#".status | ascii_downcase == "ready""#, r#"{"status":"READY"}"#, true),
        (r#".tags | index("x") != null"#, r#"{"tags":["a","x"]}"#, true),
        (".n | tostring | length == 3", r#"{"n":100}"#, true),
        ("[.[] | select(. > 1)] | length", "[1,2,3]", true),
        ("has(\"done\")", r#"{"done":false}"#, true),
        (".a // \"fallback\" | . == \"fallback\"", r#"{"a":null}"#, true),
        ("@base64 == \"aGk=\"", "\"hi\"", true),
    ];
    for (source, body, want) in rows {
        assert_eq!(filter(source).holds(&input(body)), Ok(want), "`{source}` on {body}");
    }
}

#[test]
fn truthiness_of_the_first_output() {
    #[rustfmt::skip] // One row per line: the table is the test.
    let rows: [(&str, &str, bool); 25] = [
        (".ready", r#"{"ready":true}"#, true),
        (".ready", r#"{"ready":false}"#, false),
        (".ready", r#"{"ready":null}"#, false),
        (".ready", r#"{}"#, false),
        (".ready", r#"{"ready":0}"#, true),
        (".ready", r#"{"ready":""}"#, true),
        (".ready", r#"{"ready":"false"}"#, true),
        (".ready", r#"{"ready":[]}"#, true),
        (".ready", r#"{"ready":{}}"#, true),
        (".ready", r#"{"ready":-1.5}"#, true),
        (".", "true", true),
        (".", "null", false),
        (".", "0", true),
        // The first output decides; later ones are never looked at.
        (".[]", "[false,true]", false),
        (".[]", "[true,false]", true),
        (".[]", "[null,1,2]", false),
        (".a, .b", r#"{"a":1,"b":false}"#, true),
        ("false, error(\"never reached\")", "{}", false),
        ("true, error(\"never reached\")", "{}", true),
        // No output at all is "not met".
        ("empty", "{}", false),
        (".[]", "[]", false),
        ("select(.x)", r#"{"x":false}"#, false),
        ("select(.x)", r#"{"x":1}"#, true),
        ("limit(0; .[])", "[1]", false),
        ("label $out | break $out, true", "{}", false),
    ];
    for (source, body, want) in rows {
        assert_eq!(filter(source).holds(&input(body)), Ok(want), "`{source}` on {body}");
    }
}

#[test]
fn runtime_errors_are_returned_not_raised() {
    let rows = [
        (".a.b", r#"{"a":1}"#),
        (".[]", "1"),
        ("error(\"boom\")", "{}"),
        (".a + 1", r#"{"a":"x"}"#),
        ("keys", "1"),
        // `halt` and `halt_error` are in halt_probe: were they to exit, they would end this process.
    ];
    for (source, body) in rows {
        let f = filter(source);
        let held = f.holds(&input(body));
        let shown = f.show(&input(body));
        let prefix = format!("jq error in `{source}`: ");
        match (&held, &shown) {
            (Err(a), Err(b)) if a.starts_with(&prefix) && a == b => {}
            _ => panic!("`{source}` on {body}: holds {held:?}, show {shown:?}; want errors starting {prefix:?}"),
        }
    }
    let message = filter("error(\"boom\")").holds(&input("{}")).unwrap_err();
    assert!(message.contains("boom"), "the jq error text is kept: {message}");
}

#[test]
fn halt_does_not_exit_the_process() {
    // jq's `halt` exits 0: if it ended this process, every check after it would
    // silently pass. So the probe runs in a child and must print its marker.
    let exe = std::env::current_exe().expect("the test binary");
    let output = std::process::Command::new(exe)
        .args(["--exact", "condition::halt_probe", "--ignored", "--nocapture", "--test-threads=1"])
        .output()
        .expect("run the probe");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the probe failed: {output:?}");
    assert!(stdout.contains("halt probe survived"), "the process ended inside a filter: {stdout}");
}

#[test]
#[ignore = "run by halt_does_not_exit_the_process in a child process"]
fn halt_probe() {
    for source in ["halt", "halt_error", "halt_error(0)", "halt_error(1)", "\"bye\" | halt_error", "1, halt"] {
        let f = filter(source);
        let body = input(r#"{"a":1}"#);
        let held = f.holds(&body);
        let shown = f.show(&body);
        if source == "1, halt" {
            assert_eq!((held, shown), (Ok(true), Ok(Some("1".into()))), "`{source}`: the first output comes first");
        } else {
            let prefix = format!("jq error in `{source}`: ");
            assert!(held.as_ref().is_err_and(|e| e.starts_with(&prefix)), "`{source}`: {held:?}");
            assert!(shown.as_ref().is_err_and(|e| e.starts_with(&prefix)), "`{source}`: {shown:?}");
        }
        let judged = conditions(Some(source), None, None).judge(br#"{"a":1}"#);
        assert_eq!(judged.verdict, if source == "1, halt" { Met } else { NotMet }, "`{source}`");
    }
    println!("halt probe survived");
}

#[test]
fn judge_applies_the_filters_in_order() {
    type Row = (&'static str, Option<&'static str>, Option<&'static str>, &'static str, Verdict, usize);
    #[rustfmt::skip] // One row per line: the table is the test.
    let rows: [Row; 22] = [
        // (description, until, fail_when, body, verdict, runtime errors)
        ("no filters: any 2xx is done", None, None, r#"{"a":1}"#, Met, 0),
        ("no filters: a non-JSON body is done", None, None, "<html>ok</html>", Met, 0),
        ("no filters: an empty body is done", None, None, "", Met, 0),
        ("until holds", Some(".ready"), None, r#"{"ready":true}"#, Met, 0),
        ("until false", Some(".ready"), None, r#"{"ready":false}"#, NotMet, 0),
        ("until null", Some(".ready"), None, r#"{}"#, NotMet, 0),
        ("until zero is truthy", Some(".count"), None, r#"{"count":0}"#, Met, 0),
        ("until with no output", Some("empty"), None, r#"{}"#, NotMet, 0),
        ("until on a non-JSON body", Some(".ready"), None, "<html>", NotJson, 0),
        ("until on an empty body", Some(".ready"), None, "", NotJson, 0),
        ("until on a truncated body", Some(".ready"), None, r#"{"ready":tr"#, NotJson, 0),
        ("until runtime error is not met", Some(".a.b"), None, r#"{"a":1}"#, NotMet, 1),
        ("fail-when alone holds", None, Some(".failed"), r#"{"failed":true}"#, FailWhen, 0),
        ("fail-when alone does not hold: done", None, Some(".failed"), r#"{"failed":false}"#, Met, 0),
        ("fail-when alone on a non-JSON body", None, Some(".failed"), "oops", NotJson, 0),
        ("fail-when is checked before until", Some(".ready"), Some(".failed"), r#"{"ready":true,"failed":true}"#, FailWhen, 0),
        ("fail-when wins over a pending until", Some(".ready"), Some(".failed"), r#"{"ready":false,"failed":true}"#, FailWhen, 0),
        ("neither holds", Some(".ready"), Some(".failed"), r#"{"ready":false,"failed":false}"#, NotMet, 0),
        ("until holds, fail-when does not", Some(".ready"), Some(".failed"), r#"{"ready":true,"failed":null}"#, Met, 0),
        ("fail-when error, until holds", Some(".ready"), Some(".x.y"), r#"{"ready":true,"x":1}"#, Met, 1),
        ("fail-when error, until error", Some(".x.z"), Some(".x.y"), r#"{"x":1}"#, NotMet, 2),
        ("fail-when error alone is done", None, Some(".x.y"), r#"{"x":1}"#, Met, 1),
    ];
    for (description, until, fail_when, body, verdict, errors) in rows {
        let judged = conditions(until, fail_when, None).judge(body.as_bytes());
        assert_eq!(judged.verdict, verdict, "{description}: {judged:?}");
        assert_eq!(judged.errors.len(), errors, "{description}: {judged:?}");
        assert_eq!(judged.shown, None, "{description}: nothing to show");
        for error in &judged.errors {
            assert!(error.starts_with("jq error in `"), "{description}: the error names its filter: {error}");
        }
    }
}

#[test]
fn judge_records_the_error_text() {
    let judged = conditions(Some(".a.b"), None, None).judge(br#"{"a":1}"#);
    assert_eq!(judged.verdict, NotMet);
    assert_eq!(judged.errors.len(), 1);
    assert!(judged.errors[0].starts_with("jq error in `.a.b`: "), "{:?}", judged.errors);
    let judged = conditions(Some("error(\"not yet\")"), None, None).judge(b"{}");
    assert_eq!((judged.verdict, judged.errors.len(), judged.shown), (NotMet, 1, None));
    assert!(judged.errors[0].starts_with("jq error in `error(\"not yet\")`: "), "{:?}", judged.errors);
    assert!(judged.errors[0].contains("not yet"), "{:?}", judged.errors);
}

#[test]
fn show_renders_the_first_output() {
    #[rustfmt::skip] // One row per line: the table is the test.
    let rows: [(&str, &str, Option<&str>); 14] = [
        // A simple path labels the value; strings lose their quotes.
        (".state", r#"{"state":"running"}"#, Some("state running")),
        (".progress", r#"{"progress":42}"#, Some("progress 42")),
        (".job.state", r#"{"job":{"state":"queued"}}"#, Some("job.state queued")),
        (".s", r#"{"s":"say \"hi\"\nbye"}"#, Some("s say \"hi\"\nbye")),
        (".o", r#"{"o":{"a":[1,2]}}"#, Some(r#"o {"a":[1,2]}"#)),
        (".n", r#"{"n":null}"#, Some("n null")),
        (".b", r#"{"b":false}"#, Some("b false")),
        // Anything else is shown bare.
        (".state | ascii_upcase", r#"{"state":"running"}"#, Some("RUNNING")),
        (r#".["state"]"#, r#"{"state":"running"}"#, Some("running")),
        (".", r#""plain""#, Some("plain")),
        (".", r#"[1,"a",null]"#, Some(r#"[1,"a",null]"#)),
        (r#""\(.done)/\(.total)""#, r#"{"done":3,"total":7}"#, Some("3/7")),
        (".[]", "[5,6]", Some("5")),
        ("empty", "{}", None),
    ];
    for (source, body, want) in rows {
        assert_eq!(filter(source).show(&input(body)), Ok(want.map(String::from)), "`{source}` on {body}");
        let judged = conditions(None, None, Some(source)).judge(body.as_bytes());
        assert_eq!(
            judged,
            Judgement { verdict: Met, errors: vec![], shown: want.map(String::from), show_error: None },
            "judge with --show `{source}`"
        );
    }
}

#[test]
fn show_alongside_conditions() {
    let c = conditions(Some(".ready"), None, Some(".state"));
    let judged = c.judge(br#"{"ready":false,"state":"booting"}"#);
    assert_eq!(
        judged,
        Judgement { verdict: NotMet, errors: vec![], shown: Some("state booting".into()), show_error: None }
    );
    // A non-JSON body has nothing to show.
    let judged = c.judge(b"<html>");
    assert_eq!(judged, Judgement { verdict: NotJson, errors: vec![], shown: None, show_error: None });
    // A --show error is recorded apart and shows nothing: no error of the condition, whose verdict it leaves.
    let c = conditions(Some(".ready"), None, Some(".state.x"));
    for (body, verdict) in [(&br#"{"ready":true,"state":"up"}"#[..], Met), (br#"{"ready":false,"state":"up"}"#, NotMet)]
    {
        let judged = c.judge(body);
        assert_eq!(judged.verdict, verdict);
        assert_eq!((judged.shown.as_deref(), judged.errors.len()), (None, 0), "{judged:?}");
        let shown = judged.show_error.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(shown.starts_with("jq error in `.state.x`: "), "{judged:?}");
    }
    // Without --until, a --show on a non-JSON body is no error.
    let judged = conditions(None, None, Some(".state")).judge(b"plain text");
    assert_eq!(judged, Judgement { verdict: Met, errors: vec![], shown: None, show_error: None });
}

#[test]
fn hostile_filters_are_refused_without_crashing() {
    // Nesting: 128 brackets compile, 129 are refused before jaq's recursive parser sees them.
    for (open, close) in [("(", ")"), ("[", "]")] {
        let at_limit = nested(open, ".", close, 128);
        assert!(Filter::compile(&at_limit).is_ok(), "128 nested `{open}` compile");
        let too_deep = nested(open, ".", close, 129);
        assert_eq!(
            Filter::compile(&too_deep).map(|_| ()),
            Err("at col 129: brackets nested deeper than 128".to_string()),
            "129 nested `{open}`"
        );
    }
    let mixed = nested("([{\"k\":", ".", "}])", 50);
    assert!(Filter::compile(&mixed).unwrap_err().contains("nested deeper than 128"), "mixed brackets count together");
    for source in [
        "(".repeat(100_000),
        "[".repeat(10_000),
        "{".repeat(10_000),
        nested("(", ".", ")", 5_000),
        format!("{}.", "[".repeat(129)),
    ] {
        let error = Filter::compile(&source).unwrap_err();
        assert!(error.contains("nested deeper than 128") || error.contains("bytes long"), "{error}");
    }
    // Length: 4 KiB compiles, one byte more is refused.
    let at_limit = format!("\"{}\" | length > 0", "a".repeat(4 * 1024 - 15));
    assert_eq!(at_limit.len(), 4 * 1024);
    assert_eq!(filter(&at_limit).holds(&input("null")), Ok(true));
    let too_long = format!("\"{}\" | length > 0", "a".repeat(4 * 1024 - 14));
    assert_eq!(
        Filter::compile(&too_long).map(|_| ()),
        Err(format!("filter is {} bytes long; the limit is 4096", 4 * 1024 + 1))
    );
    assert!(Filter::compile(&".a".repeat(1_000_000)).unwrap_err().contains("bytes long"));
    // Closing brackets never drive the depth below zero.
    assert!(Filter::compile(&format!("{}.", ")".repeat(1000))).is_err());
}

#[test]
fn hostile_bodies_are_not_json_without_crashing() {
    for (open, inner, close) in [("[", "", "]"), ("{\"a\":", "1", "}")] {
        let deep = nested(open, inner, close, 10_000);
        assert_eq!(Input::parse(deep.as_bytes()).err(), Some(condition::NotJson::TooDeep), "10,000 nested `{open}`");
        let until = conditions(Some("."), None, Some(".")).judge(deep.as_bytes());
        assert_eq!((until.verdict, until.errors.len(), until.shown), (NotJson, 1, None));
        let plain = conditions(None, None, None).judge(deep.as_bytes());
        assert_eq!(plain.verdict, Met, "no filters: any 2xx is done");
    }
    // Reasonable nesting is fine.
    let deep_enough = nested("[", "1", "]", 100);
    assert_eq!(filter("flatten == [1]").holds(&input(&deep_enough)), Ok(true));
    // Bodies that are not one JSON value.
    for body in [&b""[..], b" ", b"{", b"[1,]", b"{\"a\":1} {\"b\":2}", b"\xff\xfe", b"NaN", b"undefined", b"'x'"] {
        assert_eq!(Input::parse(body).err(), Some(condition::NotJson::Invalid), "{:?}", String::from_utf8_lossy(body));
        let until = conditions(Some("."), None, None).judge(body);
        assert_eq!(
            until,
            Judgement { verdict: NotJson, errors: vec![], shown: None, show_error: None },
            "no error: it is just not JSON"
        );
    }
    // JSON with surrounding whitespace, scalars and unicode is.
    for body in [" {\"a\":1}\n", "1", "\"s\"", "null", "[\"\\u00e9\"]", "{\"é\":\"ü\"}"] {
        assert!(Input::parse(body.as_bytes()).is_ok(), "{body:?} is JSON");
    }
}

/// JSON nested deeper than serde_json reads is no body "not JSON": the filter that could not
/// read it says how deep is too deep, as its error (the warning and the run's last words), at
/// exactly the depth the words name (issue 39, row 13).
#[test]
fn json_nested_too_deep_is_said_so() {
    let words = condition::NotJson::TooDeep.to_string();
    let limit: usize = words.split(' ').find_map(|word| word.parse().ok()).expect("the words name the limit");
    assert!(words.contains("nested too deep"), "{words}");
    for (open, inner, close) in [("[", "", "]"), ("{\"a\":", "1", "}")] {
        assert!(Input::parse(nested(open, inner, close, limit).as_bytes()).is_ok(), "{limit} levels of `{open}`");
        let deep = nested(open, inner, close, limit + 1);
        assert_eq!(Input::parse(deep.as_bytes()).err(), Some(condition::NotJson::TooDeep));
        for (until, fail_when) in [(Some("."), None), (None, Some(".a")), (Some("."), Some(".a"))] {
            let judged = conditions(until, fail_when, None).judge(deep.as_bytes());
            assert_eq!(judged.verdict, NotJson);
            let [error] = judged.errors.as_slice() else { panic!("one error: {judged:?}") };
            assert_eq!(error.as_cause(), format!("{} failed on the body: {words}", error.flag()));
            assert!(error.contains(&words) && error.contains(fail_when.or(until).unwrap_or_default()), "{error}");
        }
        // No filter: any 2xx is done, however deep.
        assert_eq!(conditions(None, None, None).judge(deep.as_bytes()).verdict, Met);
    }
}

#[test]
fn a_filter_keeps_its_source() {
    let f = filter(".status == \"done\"");
    assert_eq!(f.source(), ".status == \"done\"");
    assert_eq!(format!("{f:?}"), "Filter(\".status == \\\"done\\\"\")");
    // One compiled filter judges any number of bodies.
    for (body, want) in
        [(r#"{"status":"done"}"#, true), (r#"{"status":"running"}"#, false), (r#"{"status":"done"}"#, true)]
    {
        assert_eq!(f.holds(&input(body)), Ok(want), "{body}");
    }
}

#[test]
fn the_builtins_read_azure_arm_github_and_aip_151_as_the_contract_orders() {
    use poll::condition::Builtin;
    use poll::condition::Subject::{Operation, Resource};
    use poll::condition::Word::{Done, Failed, Other, Running};
    let builtin = Builtin::new().expect("the built-ins compile");
    #[rustfmt::skip] // One row per line: the table is the test.
    let rows = [
        // (body, read as an operation's status, read as a resource)
        (r#"{"status":"Succeeded"}"#, Done, Done),
        (r#"{"status":"SUCCESS"}"#, Done, Done),
        (r#"{"status":"completed"}"#, Done, Done),
        (r#"{"status":"Done"}"#, Done, Done),
        (r#"{"status":"Running"}"#, Running, Running),
        (r#"{"status":"NotStarted"}"#, Running, Running),
        (r#"{"status":"in_progress"}"#, Running, Running),
        (r#"{"status":"Failed"}"#, Failed, Failed),
        (r#"{"status":"failure"}"#, Failed, Failed),
        (r#"{"status":"Canceled"}"#, Failed, Failed),
        (r#"{"status":"CANCELLED"}"#, Failed, Failed),
        (r#"{"status":"error"}"#, Failed, Failed),
        (r#"{"status":"timed_out"}"#, Failed, Failed),
        (r#"{"state":"TERMINATED"}"#, Failed, Failed),
        (r#"{"state":"queued"}"#, Running, Running),
        // AIP-151 first.
        (r#"{"done":true,"response":{"id":1}}"#, Done, Done),
        (r#"{"done":true,"error":{"code":3}}"#, Failed, Failed),
        (r#"{"done":false,"status":"Succeeded"}"#, Running, Running),
        // GitHub: a completed run failed unless its conclusion is success, neutral or skipped.
        (r#"{"status":"completed","conclusion":"failure"}"#, Failed, Failed),
        (r#"{"status":"completed","conclusion":"cancelled"}"#, Failed, Failed),
        (r#"{"status":"completed","conclusion":"timed_out"}"#, Failed, Failed),
        (r#"{"status":"completed","conclusion":"skipped"}"#, Done, Done),
        (r#"{"status":"completed","conclusion":"neutral"}"#, Done, Done),
        (r#"{"status":"completed","conclusion":null}"#, Done, Done),
        // ARM: a resource's provisioningState before its .status (a VM's power state).
        (r#"{"properties":{"provisioningState":"Succeeded"}}"#, Done, Done),
        (r#"{"properties":{"provisioningState":"Creating"}}"#, Running, Running),
        (r#"{"properties":{"provisioningState":"Failed"}}"#, Failed, Failed),
        (r#"{"properties":{"provisioningState":"Succeeded"},"status":"Running"}"#, Running, Done),
        (r#"{"properties":{"provisioningState":"Updating"},"status":"Succeeded"}"#, Done, Running),
        (r#"{"properties":{"provisioningState":"Deleting"},"status":"Stopped"}"#, Other, Running),
        // No word, or one not listed: "other", which the loop reads by mode.
        (r#"{"name":"vm-1"}"#, Other, Other),
        (r#"{"status":"Healthy"}"#, Other, Other),
        (r#"{"status":7}"#, Other, Other),
        (r#"{"status":7,"state":"done"}"#, Done, Done),
        ("[1,2]", Other, Other),
        ("\"Succeeded\"", Other, Other),
    ];
    for (body, operation, resource) in rows {
        assert_eq!(builtin.word(Operation, &input(body)), operation, "{body} as an operation's status");
        assert_eq!(builtin.word(Resource, &input(body)), resource, "{body} as a resource");
    }
}

#[test]
fn the_builtin_filters_as_shown_compile_and_answer_as_the_builtins() {
    use poll::condition::{Builtin, Subject, builtin_filter};
    let builtin = Builtin::new().expect("the built-ins compile");
    for subject in [Subject::Operation, Subject::Resource] {
        // What --help and the guide show is what a user can copy into --until.
        let done = filter(&format!("{} == \"done\"", builtin_filter(subject)));
        for body in [r#"{"status":"Succeeded"}"#, r#"{"status":"Running"}"#, r#"{"name":1}"#, r#"{"done":true}"#] {
            let said = builtin.word(subject, &input(body)) == poll::condition::Word::Done;
            assert_eq!(done.holds(&input(body)), Ok(said), "{body} as {subject:?}");
        }
    }
}

/// README's "The filter language" lists where jaq differs from jq 1.7 with examples; each is run
/// here on `null`, so that the list stays true (issue 39, row 19). A bullet's claims: "`F` is
/// `V`" (F's first output, as `tojson` writes it, is V; with ", then fails" after it, F fails
/// after that output), "`F` fails" (it compiles, and fails when run), "`F` gives nothing";
/// "not there:" (none compiles), "are refused" (each fails, compiled or run), "poll adds" (each
/// variable compiles). Every bullet must say something this test checks. It runs on a thread
/// started as poll's own are, whose stack a runaway recursion finds low before its end.
#[test]
fn readmes_jq_differences_hold() {
    let checks = poll::spawn_on_a_large_stack("readme", readmes_claims_hold).expect("a thread");
    if let Err(panic) = checks.join() {
        std::panic::resume_unwind(panic);
    }
}

fn readmes_claims_hold() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let section = readme.split("\n## The filter language\n").nth(1).expect("README's filter language section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut bullets: Vec<String> = Vec::new();
    for line in section.lines() {
        match (line.strip_prefix("- "), bullets.last_mut()) {
            (Some(start), _) => bullets.push(start.to_string()),
            (None, Some(bullet)) if line.starts_with("  ") => bullet.push_str(&format!(" {}", line.trim())),
            _ => {}
        }
    }
    assert!(bullets.len() >= 8, "{bullets:#?}");
    let null = input("null");
    // All of `source`'s outputs on null as JSON, or why it does not compile or failed.
    let run = |source: &str| -> Result<String, String> {
        let filter = Filter::compile(&format!("[{source}] | tojson"))?;
        filter.show(&null).map(Option::unwrap_or_default).map_err(|e| e.to_string())
    };
    let first = |source: &str| {
        let filter = Filter::compile(&format!("first({source}) | tojson")).expect("compiles");
        filter.show(&null).map_err(|e| e.to_string())
    };
    for bullet in &bullets {
        // Each code span with the words after it, up to the next span.
        let parts: Vec<&str> = bullet.split('`').collect();
        let spans: Vec<(&str, &str)> =
            parts[1..].chunks(2).map(|pair| (pair[0], pair.get(1).copied().unwrap_or(""))).collect();
        let mut checked = 0;
        for (i, &(source, words)) in spans.iter().enumerate() {
            if bullet.starts_with("not there:") {
                assert!(Filter::compile(source).is_err(), "`{source}` compiles: {bullet}");
            } else if bullet.starts_with("poll adds") {
                if !source.starts_with('$') && source != "env" {
                    continue;
                }
                assert!(Filter::compile(source).is_ok(), "`{source}` does not compile: {bullet}");
            } else if bullet.contains(" are refused") {
                if !bullet.split(" are refused").next().unwrap_or_default().contains(&format!("`{source}`")) {
                    continue;
                }
                assert!(run(source).is_err(), "`{source}` is not refused: {bullet}");
            } else if words == " is " {
                let (value, after) = spans[i + 1];
                assert_eq!(first(source), Ok(Some(value.to_string())), "`{source}`: {bullet}");
                if after.starts_with(", then fails") {
                    assert!(run(source).is_err(), "`{source}` does not fail after `{value}`: {:?}", run(source));
                }
            } else if words.starts_with(" fails") {
                assert!(Filter::compile(source).is_ok(), "`{source}` does not compile: {bullet}");
                assert!(run(source).is_err(), "`{source}` does not fail: {:?}", run(source));
            } else if words.starts_with(" gives nothing") {
                assert_eq!(run(source), Ok("[]".to_string()), "`{source}`: {bullet}");
            } else {
                continue;
            }
            checked += 1;
        }
        assert!(checked > 0, "nothing to check in: {bullet}");
    }
}
