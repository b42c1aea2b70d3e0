//! jq filters poll implements in jaq's place. The gap: jaq's `fromjson`
//! reads a string's JSON values one after another (`"3/5"` gives 3, then
//! fails, and `--until` sees the 3), with no bound on how deeply they nest
//! (a hostile `"[[[[…"` overflowed the stack), and its `tonumber` is
//! `fromjson` with a type check. jq 1.7 reads the whole string as one value,
//! or fails.
//!
//! Placed before jaq's natives, which a call resolves to the first of, and
//! jaq's own definitions of these names are left out of the library
//! ([`REPLACED`], read by `prelude.rs`), since a definition wins over a native.

use jaq_core::RunPtr;
use jaq_core::data::JustLut;
use jaq_core::native::{Filter, Fun, bome, run, v};
use jaq_json::Val;
use serde::Deserialize as _;

use crate::util::text::shorten;

/// The data jq filters run on in poll: jaq's JSON values.
pub(crate) type Data = JustLut<Val>;

/// The library's definitions that poll's natives replace.
pub(crate) const REPLACED: &[&str] = &["tonumber"];

/// How deeply serde_json reads JSON (its recursion limit, which keeps the
/// stack safe): the most a body or a `fromjson` string may nest.
pub(crate) const MAX_JSON_DEPTH: usize = 127;

/// Whether serde_json stopped at [`MAX_JSON_DEPTH`]: it has no `Category`
/// for it, only its words (`recursion limit exceeded at line 1 column N`),
/// which tests/it/condition.rs holds.
pub(crate) fn nested_too_deep(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

/// The words for JSON that nests deeper than poll reads.
pub(crate) fn too_deep_words() -> String {
    format!("JSON nested too deep (more than {MAX_JSON_DEPTH} levels)")
}

/// poll's natives, to be placed before jaq's.
pub(crate) fn funs() -> impl Iterator<Item = Fun<Data>> {
    let natives: [Filter<RunPtr<Data>>; 2] =
        [("fromjson", v(0), |cv| bome(from_json(cv.1))), ("tonumber", v(0), |cv| bome(to_number(cv.1)))];
    natives.into_iter().map(run::<Data>)
}

/// `fromjson`: the whole string as one JSON value (whitespace around it
/// aside), read as a body is read; else jq's words, `<why> (while parsing '<text>')`.
fn from_json(input: Val) -> Result<Val, jaq_core::Error<Val>> {
    let Val::TStr(text) = &input else { return Err(failure(&input, "only strings can be parsed")) };
    let mut json = serde_json::Deserializer::from_slice(text);
    let value = Val::deserialize(&mut json).and_then(|value| json.end().map(|()| value));
    value.map_err(|e| {
        let why = if nested_too_deep(&e) { too_deep_words() } else { e.to_string() };
        message(format!("{why} (while parsing '{}')", shorten(&String::from_utf8_lossy(text))))
    })
}

/// `tonumber`: a number as it is; a string that is one number, as jq 1.7
/// reads one (whitespace around it aside; `1e3`, `+3`, `.5`, `nan` and
/// `infinity` too, as C's strtod does); else jq's words.
fn to_number(input: Val) -> Result<Val, jaq_core::Error<Val>> {
    let parsed = match &input {
        Val::Num(_) => return Ok(input),
        Val::TStr(text) => std::str::from_utf8(text).ok().and_then(|text| {
            let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
            // Rust's float grammar is strtod's without hexadecimal: jq's, as both jqs here agree.
            let integer = text.parse::<isize>().ok().map(Val::from);
            integer.or_else(|| text.parse::<f64>().ok().map(Val::from))
        }),
        _ => None,
    };
    parsed.ok_or_else(|| failure(&input, "cannot be parsed as a number"))
}

/// jq's words for a value a filter cannot take: `string ("3/5") cannot be parsed as a number`.
fn failure(value: &Val, why: &str) -> jaq_core::Error<Val> {
    let kind = match value {
        Val::Null => "null",
        Val::Bool(_) => "boolean",
        Val::Num(_) => "number",
        Val::TStr(_) | Val::BStr(_) => "string",
        Val::Arr(_) => "array",
        Val::Obj(_) => "object",
    };
    message(format!("{kind} ({}) {why}", shorten(&value.to_string())))
}

/// An error whose value is its words, as jq's own errors are.
fn message(words: String) -> jaq_core::Error<Val> {
    jaq_core::Error::new(Val::from(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Val {
        Val::from(s.to_string())
    }

    /// An output as text, or the error's words.
    fn shown(result: Result<Val, jaq_core::Error<Val>>) -> String {
        result.map_or_else(|e| format!("error: {}", e.into_val()), |v| v.to_string())
    }

    /// What jq 1.6 (Debian) and jq 1.8.2 (PyPI's jq) agree on, and so jq 1.7; where they differ
    /// (whitespace around a number: 1.6 reads it, as 1.7's `jv_parse` does, 1.8 refuses), 1.7's.
    #[test]
    fn tonumber_reads_a_whole_string_as_one_number() {
        #[rustfmt::skip] // One row per line: the table is the test.
        let rows = [
            ("3", "3"), (" 3 ", "3"), ("\t-2\n", "-2"), ("+3", "3"), ("03", "3"), ("1.5", "1.5"), (".5", "0.5"),
            ("1e3", "1000.0"), ("-0", "0"),
            ("3/5", r#"error: "string (\"3/5\") cannot be parsed as a number""#),
            ("1 2", r#"error: "string (\"1 2\") cannot be parsed as a number""#),
            ("", r#"error: "string (\"\") cannot be parsed as a number""#),
            ("0x10", r#"error: "string (\"0x10\") cannot be parsed as a number""#),
            ("[1]", r#"error: "string (\"[1]\") cannot be parsed as a number""#),
            ("true", r#"error: "string (\"true\") cannot be parsed as a number""#),
            ("1e", r#"error: "string (\"1e\") cannot be parsed as a number""#),
            ("1_0", r#"error: "string (\"1_0\") cannot be parsed as a number""#),
        ];
        for (input, want) in rows {
            assert_eq!(shown(to_number(text(input))), want, "{input:?} | tonumber");
        }
        for nan in ["nan", "NaN", "-nan"] {
            assert!(matches!(to_number(text(nan)), Ok(Val::Num(n)) if n.to_string() == "NaN"), "{nan}");
        }
        assert_eq!(shown(to_number(Val::from(7isize))), "7");
        assert_eq!(shown(to_number(Val::Null)), r#"error: "null (null) cannot be parsed as a number""#);
        assert_eq!(shown(to_number(Val::Bool(true))), r#"error: "boolean (true) cannot be parsed as a number""#);
        // A long value is quoted by its start, so the words after it stay.
        let long = shown(to_number(text(&"x".repeat(400))));
        assert!(long.len() < 120 && long.ends_with(r#"…) cannot be parsed as a number""#), "{long}");
    }

    #[test]
    fn fromjson_reads_a_whole_string_as_one_value_as_a_body_is_read() {
        #[rustfmt::skip] // One row per line: the table is the test.
        let rows = [
            (r#" {"a":[1,"x"]} "#, r#"{"a":[1,"x"]}"#), ("3", "3"), (r#""a""#, r#""a""#),
            ("1 2", r#"error: "trailing characters at line 1 column 3 (while parsing '1 2')""#),
            ("3/5", r#"error: "trailing characters at line 1 column 2 (while parsing '3/5')""#),
            ("[1,", r#"error: "EOF while parsing a value at line 1 column 3 (while parsing '[1,')""#),
            ("", r#"error: "EOF while parsing a value at line 1 column 0 (while parsing '')""#),
            ("nan", r#"error: "expected ident at line 1 column 2 (while parsing 'nan')""#),
        ];
        for (input, want) in rows {
            assert_eq!(shown(from_json(text(input))), want, "{input:?} | fromjson");
        }
        assert_eq!(shown(from_json(Val::from(1isize))), r#"error: "number (1) only strings can be parsed""#);
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(from_json(text(&nested(MAX_JSON_DEPTH))).is_ok(), "{MAX_JSON_DEPTH} levels are read");
        let deep = shown(from_json(text(&nested(MAX_JSON_DEPTH + 1))));
        assert!(
            deep.starts_with(r#"error: "JSON nested too deep (more than 127 levels) (while parsing '[[["#),
            "{deep}"
        );
    }
}
