//! jq filters poll implements in jaq's place, and the bound on recursion jaq
//! lacks. The gaps:
//!
//! - jaq's `fromjson` reads a string's JSON values one after another
//!   (`"3/5"` gives 3, then fails, and `--until` sees the 3), with no bound on
//!   how deeply they nest (a hostile `"[[[[…"` overflowed the stack), and its
//!   `tonumber` is `fromjson` with a type check. jq 1.7 reads the whole
//!   string as one value, or fails. Placed before jaq's natives, which a call
//!   resolves to the first of, and jaq's own definitions of these names are
//!   left out of the library ([`REPLACED`], read by `prelude.rs`), since a
//!   definition wins over a native.
//! - jaq evaluates recursively and bounds no recursion: `def f: 1 + f; f`
//!   overflowed the thread's stack and aborted the process. The body of
//!   every definition that can call itself, and every argument of a call to
//!   one, starts with [`GUARD`] ([`guarded`]), which fails with "recursion
//!   too deep" once the thread's stack is low (`util/stack.rs`). Recursion in
//!   a tail call (`def f: f; f`, `repeat`, `until`) takes no stack in jaq,
//!   and loops as in jq.

use jaq_core::box_iter::box_once;
use jaq_core::data::JustLut;
use jaq_core::load::lex::{Lexer, StrPart, Tok, Token};
use jaq_core::native::{Filter, Fun, bome, run, v};
use jaq_core::{Exn, Native, PathsPtr, RunPtr, UpdatePtr};
use jaq_json::Val;
use serde::Deserialize as _;

use crate::util::stack;
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

/// The filter [`guarded`] puts where a recursion goes through: `.` while the
/// stack is not low, else a jq error.
pub(crate) const GUARD: &str = "__poll_guard";

/// poll's natives, to be placed before jaq's.
pub(crate) fn funs() -> impl Iterator<Item = Fun<Data>> {
    let natives: [Filter<RunPtr<Data>>; 2] =
        [("fromjson", v(0), |cv| bome(from_json(cv.1))), ("tonumber", v(0), |cv| bome(to_number(cv.1)))];
    natives.into_iter().map(run::<Data>).chain([guard()])
}

/// [`GUARD`]: `.` in every mode a filter runs in (a value, a path, an update), so that a body
/// or an argument that starts with it means what it meant without it.
fn guard() -> Fun<Data> {
    let run: RunPtr<Data> = |cv| bome(deep_enough().map(|()| cv.1));
    let paths: PathsPtr<Data> = |cv| box_once(deep_enough().map(|()| cv.1).map_err(Exn::from));
    let update: UpdatePtr<Data> = |cv, update| match deep_enough() {
        Ok(()) => update(cv.1),
        Err(e) => bome(Err(e)),
    };
    (GUARD, v(0), Native::<Data>::new(run).with_paths(paths).with_update(update))
}

/// Whether the stack has room for going one call deeper.
fn deep_enough() -> Result<(), jaq_core::Error<Val>> {
    match stack::low() {
        true => Err(message("recursion too deep".to_string())),
        false => Ok(()),
    }
}

/// A filter as poll compiles it: its source with [`GUARD`] at the start of
/// the body of every definition that can call itself, directly or through
/// others (`def f: __poll_guard|BODY;`), and of every argument of a call to
/// one (`f(__poll_guard|A)`: a definition that hands itself a closure of its
/// own argument grows a chain of closures, tail call or not). `|` binds
/// loosest, so each still means what it did, and a tail call stays one.
/// Nothing else can recurse: the library's definitions do only in tail
/// calls, so a filter that defines nothing recursive runs as written. Also
/// whether it defines something recursive. A source that does not lex is
/// returned as it is (compiling it says why).
pub(crate) fn guarded(source: &str) -> (String, bool) {
    let Ok(tokens) = Lexer::new(source).lex() else { return (source.to_string(), false) };
    let mut found = Sites::default();
    sites(&tokens, source, &mut found);
    let recursive = found.recursive();
    let bodies = found.bodies.iter().filter(|body| recursive.contains(&body.name)).map(|body| body.at);
    let arguments = found.arguments.iter().filter(|(name, _)| recursive.contains(name)).map(|(_, at)| *at);
    let mut at: Vec<usize> = bodies.chain(arguments).collect();
    at.sort_unstable();
    let mut text = String::with_capacity(source.len() + at.len() * (GUARD.len() + 1));
    let mut from = 0;
    for offset in at {
        text.push_str(&source[from..offset]);
        text.push_str(GUARD);
        text.push('|');
        from = offset;
    }
    text.push_str(&source[from..]);
    (text, !recursive.is_empty())
}

/// The definitions and calls of a filter's source.
#[derive(Default)]
struct Sites<'s> {
    bodies: Vec<Body<'s>>,
    /// Where each argument of a call starts, with the name called.
    arguments: Vec<(&'s str, usize)>,
}

/// A definition's body: the name it defines, where it starts, and the names it calls
/// (every word in it, the calls of the definitions inside it too: more is only safer).
struct Body<'s> {
    name: &'s str,
    at: usize,
    calls: Vec<&'s str>,
}

impl<'s> Sites<'s> {
    /// The names defined that can call themselves (all of a name's arities as one).
    fn recursive(&self) -> Vec<&'s str> {
        let mut recursive = Vec::new();
        for name in self.bodies.iter().map(|body| body.name) {
            let (mut seen, mut next) = (Vec::new(), self.calls(name));
            while let Some(called) = next.pop() {
                if !seen.contains(&called) {
                    seen.push(called);
                    next.extend(self.calls(called));
                }
            }
            if seen.contains(&name) && !recursive.contains(&name) {
                recursive.push(name);
            }
        }
        recursive
    }

    /// What the definitions of `name` call.
    fn calls(&self, name: &str) -> Vec<&'s str> {
        self.bodies.iter().filter(|body| body.name == name).flat_map(|body| body.calls.iter().copied()).collect()
    }
}

/// The definitions and calls among `tokens`, slices of `source`, added to `found`.
fn sites<'s>(tokens: &[Token<&'s str>], source: &str, found: &mut Sites<'s>) {
    // Each token is a slice of `source`, so its offset is where it starts.
    let offset = |text: &str| text.as_ptr() as usize - source.as_ptr() as usize;
    let parens = |i: usize| match tokens.get(i) {
        Some(Token(text, Tok::Block(inner))) if text.starts_with('(') => Some(inner),
        _ => None,
    };
    let colon = |i: usize| matches!(tokens.get(i), Some(Token(text, Tok::Sym)) if *text == ":");
    let mut i = 0;
    while let Some(Token(text, tok)) = tokens.get(i) {
        i += 1;
        match (tok, tokens.get(i)) {
            // `def NAME: BODY;` or `def NAME(PARAMS): BODY;`: the body starts after the colon, and
            // goes on to the `;` that no definition inside it takes.
            (Tok::Word, Some(Token(name, Tok::Word))) if *text == "def" => {
                let after = if parens(i + 1).is_some() { i + 2 } else { i + 1 };
                if let (true, Some(Token(colon_text, _))) = (colon(after), tokens.get(after)) {
                    let body = &tokens[after + 1..body_end(tokens, after + 1)];
                    let mut calls = Vec::new();
                    words(body, &mut calls);
                    found.bodies.push(Body { name, at: offset(colon_text) + 1, calls });
                    i = after + 1;
                }
            }
            // `NAME(A; B)`: a call (or a keyword before a bracket, `if (A)`, which no one defines).
            (Tok::Word, _) => {
                if let Some(inner) = parens(i) {
                    for argument in inner.split(|token| matches!(token, Token(text, Tok::Sym) if *text == ";")) {
                        if let Some(Token(first, _)) = argument.first() {
                            found.arguments.push((text, offset(first)));
                        }
                    }
                    sites(inner, source, found);
                    i += 1;
                }
            }
            (Tok::Block(inner), _) => sites(inner, source, found),
            (Tok::Str(parts), _) => each_term(parts, &mut |term| sites(term, source, found)),
            (Tok::Var | Tok::Fmt | Tok::Num | Tok::Sym, _) => {}
        }
    }
}

/// Where the body that starts at `tokens[from]` ends: at the `;` that no `def` inside it takes.
fn body_end(tokens: &[Token<&str>], from: usize) -> usize {
    let mut open = 0usize;
    for (i, Token(text, tok)) in tokens.iter().enumerate().skip(from) {
        match tok {
            Tok::Word if *text == "def" => open += 1,
            Tok::Sym if *text == ";" && open == 0 => return i,
            Tok::Sym if *text == ";" => open -= 1,
            _ => {}
        }
    }
    tokens.len()
}

/// Every word among `tokens`, inside brackets and strings too.
fn words<'s>(tokens: &[Token<&'s str>], found: &mut Vec<&'s str>) {
    for Token(text, tok) in tokens {
        match tok {
            Tok::Word => found.push(text),
            Tok::Block(inner) => words(inner, found),
            Tok::Str(parts) => each_term(parts, &mut |term| words(term, found)),
            Tok::Var | Tok::Fmt | Tok::Num | Tok::Sym => {}
        }
    }
}

/// Calls `visit` on each interpolated term of a string (`"\(.a)"`).
fn each_term<'t, 's>(parts: &'t [StrPart<&'s str, Token<&'s str>>], visit: &mut dyn FnMut(&'t [Token<&'s str>])) {
    for part in parts {
        if let StrPart::Term(term) = part {
            visit(std::slice::from_ref(term));
        }
    }
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

    #[test]
    fn guarded_puts_the_guard_in_what_can_call_itself() {
        #[rustfmt::skip] // One row per line: the table is the test.
        let rows = [
            ("def f: 1 + f; f", "def f:G| 1 + f; f", true),
            ("def f(g; $x): f(g; $x + 1); f(1; 2)", "def f(g; $x):G| f(G|g; G|$x + 1); f(G|1; G|2)", true),
            // Through another definition, inside one.
            ("def f: def g(x): [x, f]; g(1); f", "def f:G| def g(x):G| [x, f]; g(G|1); f", true),
            (r#"def f(x): "\(f(x))"; f(1)"#, r#"def f(x):G| "\(f(G|x))"; f(G|1)"#, true),
            // A definition that cannot call itself takes no guard, nor does what the library defines.
            ("def inc: . + 1; def g(x): x | inc; g(1) | map(inc)", "def inc: . + 1; def g(x): x | inc; g(1) | map(inc)", false),
            // Names are told apart by name only: one shadowing another counts as calling it.
            ("def f: def f: 1; f; f", "def f:G| def f:G| 1; f; f", true),
            ("if (.a) then (1) else (3) end | reduce .[] as $x (0; . + $x)", "if (.a) then (1) else (3) end | reduce .[] as $x (0; . + $x)", false),
            ("{def: 1} | .def", "{def: 1} | .def", false),
            // What does not lex is left as it is, for its compiler's message.
            ("def f: f; \"", "def f: f; \"", false),
        ];
        for (source, want, recurses) in rows {
            let want = want.replace('G', GUARD);
            assert_eq!(guarded(source), (want, recurses), "{source}");
        }
    }
}
