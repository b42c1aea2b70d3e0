//! The jq standard library (jaq's core, std and JSON definitions), parsed
//! once per process, and the part of it one filter can call. The gap: jaq
//! compiles every definition it is given into every filter, and a filter
//! calls a handful of the library's ~130; the whole library was most of a
//! `--until`'s start and nearly all of the jq fuzz target's time
//! (docs/BENCHMARKS.md, "The jq library a filter calls").
//!
//! The part is closed under calls: every definition named by a word of the
//! filter, then every definition those call, and so on, by name whatever the
//! arity. A call resolves to the last definition of its name and arity
//! before it; since every definition of a name is kept or none is, in their
//! order, each call resolves as with the whole library, and an undefined one
//! stays undefined.

use std::collections::HashMap;
use std::sync::OnceLock;

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};

type Name = &'static str;

/// The library's definitions in order, what each one calls, and where each name is defined.
struct Library {
    defs: Vec<Def<Name>>,
    calls: Vec<Vec<Name>>,
    by_name: HashMap<Name, Vec<usize>>,
}

fn library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let defs = jaq_core::defs().chain(jaq_std::defs()).chain(jaq_json::defs());
        // A definition would win over poll's native of the same name.
        let defs: Vec<Def<Name>> =
            defs.filter(|def| !crate::rules::jq::natives::REPLACED.contains(&def.name)).collect();
        let calls = defs
            .iter()
            .map(|def| {
                let mut names = Vec::new();
                calls_of(&def.body, &mut names);
                names
            })
            .collect();
        let mut by_name: HashMap<Name, Vec<usize>> = HashMap::new();
        for (i, def) in defs.iter().enumerate() {
            by_name.entry(def.name).or_default().push(i);
        }
        Library { defs, calls, by_name }
    })
}

/// Every definition of the library, in order.
#[cfg(test)]
pub(crate) fn all() -> impl Iterator<Item = Def<Name>> {
    library().defs.iter().cloned()
}

/// The definitions `source` can call, directly or through others, in the
/// library's order. `source` is read as words only (a word in a string or a
/// comment adds a definition that is never called, which costs only time).
pub(crate) fn for_filter(source: &str) -> impl Iterator<Item = Def<Name>> {
    let library = library();
    let mut wanted = vec![false; library.defs.len()];
    let mut names: Vec<&str> = words(source).collect();
    while let Some(name) = names.pop() {
        for &i in library.by_name.get(name).into_iter().flatten() {
            if !wanted[i] {
                wanted[i] = true;
                names.extend(library.calls[i].iter().copied());
            }
        }
    }
    library.defs.iter().zip(wanted).filter(|(_, wanted)| *wanted).map(|(def, _)| def.clone())
}

/// The words of jq source that can name a filter or a format, as jaq's lexer
/// cuts them (`[A-Za-z_@][A-Za-z0-9_]*`; `f::g` gives `f` and `g`), and more:
/// `.key`, `$var` and the insides of strings give words too.
fn words(source: &str) -> impl Iterator<Item = &str> {
    let starts = |c: u8| c.is_ascii_alphabetic() || c == b'_' || c == b'@';
    let goes_on = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = source.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !starts(bytes[i]) {
            // A digit run (`1e5`, `0x`) is not a word: skip it whole, as the lexer does.
            if bytes[i].is_ascii_digit() {
                while i < bytes.len() && goes_on(bytes[i]) {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        i += 1;
        while i < bytes.len() && goes_on(bytes[i]) {
            i += 1;
        }
        // Cut at ASCII bytes only, so always on a char boundary.
        source.get(start..i)
    })
}

/// The names a term calls: filters (`map(f)`, `true`) and string formats (`@base64 "\(.)"`).
fn calls_of(term: &Term<Name>, names: &mut Vec<Name>) {
    match term {
        Term::Str(format, _) => names.extend(format.iter().copied()),
        Term::Call(name, _) => names.push(name),
        _ => {}
    }
    each_part(term, &mut |part| match part {
        Part::Term(term) => calls_of(term, names),
        Part::Pattern(pattern) => pattern_calls(pattern, names),
    });
}

/// The names called by the keys of an object pattern (`. as {(f): $x}`).
fn pattern_calls(pattern: &Pattern<Name>, names: &mut Vec<Name>) {
    match pattern {
        Pattern::Var(_) => {}
        Pattern::Arr(patterns) => patterns.iter().for_each(|p| pattern_calls(p, names)),
        Pattern::Obj(entries) => {
            for (key, pattern) in entries {
                calls_of(key, names);
                pattern_calls(pattern, names);
            }
        }
    }
}

/// How deeply the terms of `source` nest (`1` for `.`; `- - 1` is 3), or
/// `None` when it does not parse (the loader then says why). jaq parses and
/// evaluates recursively, so this bounds the stack a filter's evaluation needs.
pub(crate) fn depth(source: &str) -> Option<usize> {
    fn of(term: &Term<&str>) -> usize {
        let mut deepest = 0;
        each_part(term, &mut |part| {
            let below = match part {
                Part::Term(term) => of(term),
                Part::Pattern(pattern) => pattern_depth(pattern, &of),
            };
            deepest = deepest.max(below);
        });
        deepest + 1
    }
    jaq_core::load::parse(source, |p| p.term()).map(|term| of(&term))
}

/// The depth of an object pattern's keys (`. as {(f): $x}`), by `of`.
fn pattern_depth<'s>(pattern: &Pattern<&'s str>, of: &dyn Fn(&Term<&'s str>) -> usize) -> usize {
    match pattern {
        Pattern::Var(_) => 0,
        Pattern::Arr(patterns) => patterns.iter().map(|p| pattern_depth(p, of)).max().unwrap_or(0),
        Pattern::Obj(entries) => {
            entries.iter().map(|(key, pattern)| of(key).max(pattern_depth(pattern, of))).max().unwrap_or(0)
        }
    }
}

/// A part of a term one level down: a term, or a pattern that binds names.
enum Part<'a, S> {
    Term(&'a Term<S>),
    Pattern(&'a Pattern<S>),
}

/// Calls `visit` on each part of `term` one level down: the one walk of jaq's
/// syntax tree that both [`calls_of`] and [`depth`] make.
fn each_part<'a, S>(term: &'a Term<S>, visit: &mut dyn FnMut(Part<'a, S>)) {
    let mut terms = |terms: &mut dyn Iterator<Item = &'a Term<S>>| terms.for_each(|t| visit(Part::Term(t)));
    match term {
        Term::Id | Term::Recurse | Term::Num(_) | Term::Var(_) | Term::Break(_) => {}
        Term::Str(_, parts) => terms(&mut parts.iter().filter_map(|part| match part {
            StrPart::Term(term) => Some(term),
            _ => None,
        })),
        Term::Arr(term) => terms(&mut term.iter().map(|t| &**t)),
        Term::Obj(entries) => terms(&mut entries.iter().flat_map(|(key, value)| std::iter::once(key).chain(value))),
        Term::Neg(term) | Term::Label(_, term) => terms(&mut std::iter::once(&**term)),
        Term::BinOp(left, op, right) => {
            if let BinaryOp::Pipe(Some(pattern)) = op {
                visit(Part::Pattern(pattern));
            }
            visit(Part::Term(left));
            visit(Part::Term(right));
        }
        Term::Fold(_, over, pattern, args) => {
            visit(Part::Term(over));
            visit(Part::Pattern(pattern));
            args.iter().for_each(|a| visit(Part::Term(a)));
        }
        Term::TryCatch(body, catch) => terms(&mut std::iter::once(&**body).chain(catch.iter().map(|c| &**c))),
        Term::IfThenElse(branches, otherwise) => terms(
            &mut branches.iter().flat_map(|(condition, then)| [condition, then]).chain(otherwise.iter().map(|o| &**o)),
        ),
        Term::Def(defs, rest) => terms(&mut defs.iter().map(|def| &def.body).chain(std::iter::once(&**rest))),
        Term::Call(_, args) => terms(&mut args.iter()),
        Term::Path(term, path) => {
            visit(Part::Term(term));
            for (part, _optional) in &path.0 {
                match part {
                    jaq_core::path::Part::Index(index) => visit(Part::Term(index)),
                    jaq_core::path::Part::Range(from, to) => from.iter().chain(to).for_each(|t| visit(Part::Term(t))),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(source: &str) -> Vec<&'static str> {
        for_filter(source).map(|def| def.name).collect()
    }

    #[test]
    fn words_are_cut_as_jaqs_lexer_cuts_names() {
        let cut: Vec<_> = words(r#"map(.a)|@base64 "x\(f::g)"+$v, 1e5 x1y a@b"#).collect();
        assert_eq!(cut, ["map", "a", "@base64", "x", "f", "g", "v", "x1y", "a", "@b"]);
        assert_eq!(words("").count(), 0);
        assert_eq!(words("é_1 ü").collect::<Vec<_>>(), ["_1"]);
    }

    #[test]
    fn a_filter_gets_what_it_calls_and_what_that_calls() {
        assert_eq!(names(".a == 1"), Vec::<&str>::new());
        // select calls empty; not calls true and false.
        let select = names("select(.a) | not");
        for name in ["select", "empty", "not", "true", "false"] {
            assert!(select.contains(&name), "{name} missing from {select:?}");
        }
        assert!(!select.contains(&"map"), "{select:?}");
        // Every arity of a name, in the library's order.
        let range = names("range(3)");
        assert_eq!(range.iter().filter(|n| **n == "range").count(), 2, "{range:?}");
        let mut rest = all().map(|def| def.name);
        assert!(range.iter().all(|name| rest.any(|n| n == *name)), "not in order: {range:?}");
        // A format calls its definition.
        assert!(names(r#"@json "\(.)""#).contains(&"@json"));
    }

    #[test]
    fn depth_counts_each_term_inside_another() {
        let cases = [
            (".", Some(1)),
            ("- - 1", Some(3)),
            ("1 | 2", Some(2)),
            ("[[1]]", Some(3)),
            ("if . then 1 else - 1 end", Some(3)),
            (". as {(- 1): $x} | $x", Some(3)),
            ("1 +", None),
        ];
        for (source, expected) in cases {
            assert_eq!(depth(source), expected, "{source}");
        }
    }

    type Compiled = jaq_core::compile::Filter<jaq_core::Native<jaq_core::data::JustLut<jaq_json::Val>>>;

    /// `source` compiled as `condition.rs` does, with `defs` for the library.
    fn compile(source: &str, defs: impl Iterator<Item = Def<Name>>) -> Result<Compiled, String> {
        use jaq_core::load::{Arena, File, Loader};
        let arena = Arena::default();
        let modules = Loader::new(defs).load(&arena, File { code: source, path: () }).map_err(|e| format!("{e:?}"))?;
        let funs =
            crate::rules::jq::natives::funs().chain(jaq_core::funs()).chain(jaq_std::funs()).chain(jaq_json::funs());
        jaq_core::Compiler::default().with_funs(funs).compile(modules).map_err(|e| format!("{e:?}"))
    }

    /// Up to five outputs of `filter` on `input`, errors included, as text.
    fn outputs(filter: &Compiled, input: &jaq_json::Val) -> Vec<String> {
        let ctx = jaq_core::Ctx::<jaq_core::data::JustLut<jaq_json::Val>>::new(&filter.lut, jaq_core::Vars::new([]));
        let out = filter.id.run((ctx, input.clone())).take(5);
        out.map(|r| r.map_or_else(|e| format!("error {:?}", e.get_err().map(|e| e.to_string())), |v| v.to_string()))
            .collect()
    }

    /// The input the library's definitions are tried on.
    fn tried_on() -> jaq_json::Val {
        use serde::Deserialize as _;
        let value: serde_json::Value = serde_json::from_str(r#"{"a":[1,"x",null],"status":"done"}"#).expect("JSON");
        jaq_json::Val::deserialize(&value).expect("a value")
    }

    /// Every definition of the library called by name with `.` for each argument, and filters
    /// that call no definition, an undefined one or a wrong arity.
    fn library_calls() -> Vec<String> {
        let mut sources: Vec<String> = all()
            .filter(|def| !def.name.starts_with('!'))
            .map(|def| match def.args.len() {
                0 => def.name.to_string(),
                n => format!("{}({})", def.name, vec!["."; n].join("; ")),
            })
            .collect();
        sources.extend(
            [".status == \"done\"", "nosuch", "map", "map(.; .)", "def f: 1; f", "@json \"\\(.a)\"", "1e5 | tostring"]
                .map(String::from),
        );
        use crate::rules::condition::{Subject, builtin_filter};
        sources.extend([builtin_filter(Subject::Operation), builtin_filter(Subject::Resource)]);
        sources
    }

    /// Every definition of the library compiles and runs with its part as with the whole library.
    #[test]
    fn the_part_compiles_and_runs_as_the_whole_library() {
        let input = tried_on();
        for source in &library_calls() {
            let part = compile(source, for_filter(source));
            let whole = compile(source, all());
            match (&part, &whole) {
                (Ok(part), Ok(whole)) => assert_eq!(outputs(part, &input), outputs(whole, &input), "{source}"),
                (Err(part), Err(whole)) => assert_eq!(part, whole, "{source}"),
                _ => panic!("{source}: the part gives {:?}, the whole {:?}", part.is_ok(), whole.is_ok()),
            }
        }
    }

    /// A filter means what it did with the recursion guard in it (`natives::guarded`), as a
    /// value, a path and an update.
    #[test]
    fn a_guarded_filter_answers_as_the_filter_as_written() {
        let input = tried_on();
        // Each library call also in the body of a definition that can call itself, and as the
        // argument of one: the two places the guard goes.
        let calls = library_calls();
        let mut sources: Vec<String> =
            calls.iter().map(|call| format!("def g: if false then g else {call} end; g")).collect();
        sources.extend(calls.iter().map(|call| format!("def g(f): if false then g(f) else f end; g({call})")));
        sources.extend(
            [
                "path(..)",
                "[paths]",
                "def g: .a; g |= 5",
                "def g: .a[0]; path(g)",
                "del(.a[1])",
                "to_entries",
                "getpath([\"a\", 0])",
                "[limit(2; .a[])]",
                "first(.a[])",
                "label $out | 1, break $out",
                "reduce .a[] as $x (0; . + 1)",
                ".a |= map(tostring)",
                "\"x\\(.a)\"",
                "@base64 \"\\(.status)\"",
                "try error(\"x\") catch .",
                "def f(g): [g]; f(.a[])",
                "def f($n): $n + 1; f(1, 2)",
                "def f: if . > 3 then . else (. + 1 | f) end; 0 | f",
                "[.a[] | select(. != null)] | length",
                "def f: if . > 3 then . else 1 + (. + 1 | f) end; 0 | f",
                "def f(n): if n > 3 then n else f(n + 1) end; f(0)",
                "with_entries(.value |= tostring)",
                "walk(if type == \"number\" then . + 1 else . end)",
                "[.a[] | strings | test(\"x\")]",
                "if (.a) then (1) else (2) end",
                "def g(f): if false then g(f) else f end; del(g(.a[1]))",
                "def g(f): if false then g(f) else path(f) end; [g(..)]",
                "def g(f): if false then g(f) else f |= 1 end; g(.a[0], .status)",
            ]
            .map(String::from),
        );
        let mut compared = 0;
        let guard = |source: &str| crate::rules::jq::natives::guarded(source).0;
        let changed = sources.iter().filter(|source| guard(source) != **source).count();
        assert!(changed > 2 * calls.len(), "the guard went into only {changed} of {}", sources.len());
        for source in &sources {
            let guarded = guard(source);
            let written = compile(source, all());
            let guarded = compile(&guarded, all());
            match (&written, &guarded) {
                (Ok(written), Ok(guarded)) => {
                    assert_eq!(outputs(guarded, &input), outputs(written, &input), "{source}");
                    compared += 1;
                }
                (Err(_), Err(_)) => {}
                _ => panic!("{source}: as written {:?}, guarded {:?}", written.is_ok(), guarded.is_ok()),
            }
        }
        assert!(compared > sources.len() * 9 / 10, "{compared} of {} compile", sources.len());
    }
}
