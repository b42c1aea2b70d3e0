//! jq filters (`--until`, `--fail-when`, `--show`, `--print`, `--status-url`,
//! and the built-in conditions of `--submit`): compiled once with jaq, then
//! evaluated on each JSON body. Pure: a filter and a value in, a verdict out.
//!
//! Every filter reads, besides its input, the variables jq's users write:
//! `$ENV`, `$ARGS` and each `--arg`/`--argjson` as `$NAME` ([`Args`]), and
//! the reply's `$status` and `$headers` ([`Message`]).

use std::sync::{Arc, OnceLock};

use jaq_core::load::{self, Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Native, Vars};
use jaq_json::Val;
use serde::Deserialize as _;

use crate::rules::attempt::{Phase, Verdict};
use crate::rules::jq::natives::{self, Data};
use crate::util::headers::Headers;
use crate::util::text::{cut, shorten};

/// The status word of an operation's status (`Operation-Location`,
/// `Azure-AsyncOperation`, `--status-url`): `.status` first.
pub const OPERATION_WORD: &str =
    r#"first((.status?, .properties?.provisioningState?, .state?) | strings | ascii_downcase)"#;

/// The status word of a resource (Location mode, body polling, the submit's
/// own reply): `.properties.provisioningState` first, since a resource's
/// `.status` may mean something else (a machine's power state).
pub const RESOURCE_WORD: &str =
    r#"first((.properties?.provisioningState?, .status?, .state?) | strings | ascii_downcase)"#;

/// What `--submit`'s built-ins read in a JSON body, as jq, with `word` one of
/// [`OPERATION_WORD`] and [`RESOURCE_WORD`]: `"done"`, `"failed"`,
/// `"running"` or `"other"` (no status word, or one not listed). A Google
/// AIP-151 `.done` comes first; a done word whose GitHub `.conclusion` is
/// not `success`, `neutral` or `skipped` failed.
pub const BUILTIN_VERDICT: &str = r#"if (.done? | type) == "boolean" then
  (if .done | not then "running" elif .error? == null then "done" else "failed" end)
else (word // "") as $w |
  if ["failed", "failure", "canceled", "cancelled", "error", "errored", "timed_out",
      "timedout", "aborted", "rejected", "expired", "terminated"] | index($w) then "failed"
  elif ["succeeded", "success", "completed", "complete", "done"] | index($w) then
    (if all(.conclusion? | strings; . == "success" or . == "neutral" or . == "skipped")
     then "done" else "failed" end)
  elif ["running", "inprogress", "in_progress", "in-progress", "pending", "queued",
        "notstarted", "not_started", "new", "created", "submitted", "started", "starting",
        "accepted", "initializing", "preparing", "processing", "provisioning", "building",
        "deploying", "creating", "updating", "deleting", "retrying", "waiting", "scheduled"]
       | index($w) then "running"
  else "other" end
end"#;

/// The whole built-in filter for `subject`, as a user can copy it into `--until`
/// (`... == "done"`) or `--fail-when` (`... == "failed"`).
pub fn builtin_filter(subject: Subject) -> String {
    let word = match subject {
        Subject::Operation => OPERATION_WORD,
        Subject::Resource => RESOURCE_WORD,
    };
    format!("def word: {word}; {BUILTIN_VERDICT}")
}

/// What a `--submit` status reply is about, which decides where its status
/// word is read first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// An operation's status: `Operation-Location`, `Azure-AsyncOperation`, `--status-url`.
    Operation,
    /// A resource: Location mode, body polling, the submit's own reply.
    Resource,
}

/// What the built-ins read in a body: [`BUILTIN_VERDICT`]'s four answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    Done,
    Failed,
    Running,
    /// No status word, or one the built-ins do not know.
    Other,
}

/// `--submit`'s built-in tests, compiled once for each subject.
#[derive(Debug)]
pub struct Builtin {
    operation: Filter,
    resource: Filter,
}

impl Builtin {
    /// The built-ins, both subjects.
    pub fn new() -> Result<Builtin, String> {
        let operation = Filter::compile(&builtin_filter(Subject::Operation))?;
        let resource = Filter::compile(&builtin_filter(Subject::Resource))?;
        Ok(Builtin { operation, resource })
    }

    /// What a JSON body says of its operation, read as `subject`.
    pub fn word(&self, subject: Subject, input: &Input) -> Word {
        let filter = match subject {
            Subject::Operation => &self.operation,
            Subject::Resource => &self.resource,
        };
        match filter.first_string(input) {
            Ok(Some(word)) if word == "done" => Word::Done,
            Ok(Some(word)) if word == "failed" => Word::Failed,
            Ok(Some(word)) if word == "running" => Word::Running,
            _ => Word::Other,
        }
    }
}

/// Filters longer or deeper than this are refused before jaq sees them: jaq's
/// parser and evaluator recurse, and a filter nested thousands deep (brackets,
/// or a chain like `- - - 1`) would overflow the stack and abort the process,
/// which no error handling can catch. Filters are compiled on a thread with a
/// 256 MiB stack, which parses the longest one with room to spare, and each
/// URL's loop evaluates them on a stack sized by [`Filter::depth`].
const MAX_FILTER_LEN: usize = 4 * 1024;
const MAX_FILTER_DEPTH: usize = 128;

/// The variables every filter can read, in the order jaq is given them;
/// `--arg`s and `--argjson`s follow.
const GLOBALS: [&str; 5] = ["$ENV", "$ARGS", "$status", "$headers", "$event"];

/// `--arg NAME VALUE` and `--argjson NAME JSON`, as jq has them: each bound
/// as `$NAME` in every filter, and all of them in `$ARGS.named`.
#[derive(Debug, Clone, Default)]
pub struct Args {
    /// `$NAME` and its value, in the order given.
    named: Vec<(String, Val)>,
}

impl Args {
    /// `--arg NAME VALUE`: the value as a string.
    pub fn text(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.bind(name, Val::from(value.to_string()))
    }

    /// `--argjson NAME JSON`: the value parsed as JSON.
    pub fn json(&mut self, name: &str, json: &str) -> Result<(), String> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| format!("`{name}`: the value is not valid JSON: {e}"))?;
        let value = Val::deserialize(&value).map_err(|e| format!("`{name}`: {e}"))?;
        self.bind(name, value)
    }

    fn bind(&mut self, name: &str, value: Val) -> Result<(), String> {
        let mut chars = name.chars();
        let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier {
            return Err(format!("`{}` is not a jq variable name (letters, digits and _)", name.escape_debug()));
        }
        let var = format!("${name}");
        if GLOBALS.contains(&var.as_str()) || self.named.iter().any(|(known, _)| *known == var) {
            return Err(format!(
                "`{name}` is already bound (a name can be given once; $ENV, $ARGS, $status, $headers and $event are poll's)"
            ));
        }
        self.named.push((var, value));
        Ok(())
    }

    /// `$ARGS`: `{"positional": [], "named": {NAME: value, ...}}`, as jq makes it.
    fn as_value(&self) -> Val {
        let named: jaq_json::Map =
            self.named.iter().map(|(var, value)| (Val::from(var[1..].to_string()), value.clone())).collect();
        let whole: jaq_json::Map = [
            (Val::from("positional".to_string()), Val::Arr(Vec::new().into())),
            (Val::from("named".to_string()), Val::obj(named)),
        ]
        .into_iter()
        .collect();
        Val::obj(whole)
    }
}

/// The values bound to a filter's variables that do not change from reply to reply.
#[derive(Debug)]
struct Bound {
    args: Val,
    named: Vec<Val>,
}

/// `$ENV`, read once: the environment does not change during a run.
fn environment() -> Val {
    static ENV: OnceLock<Val> = OnceLock::new();
    ENV.get_or_init(|| {
        let vars: jaq_json::Map = std::env::vars_os()
            .map(|(name, value)| {
                let text = |s: std::ffi::OsString| Val::from(s.to_string_lossy().into_owned());
                (text(name), text(value))
            })
            .collect();
        Val::obj(vars)
    })
    .clone()
}

/// One compiled jq filter and its source, for messages.
pub struct Filter {
    source: String,
    /// The flag it came from (`--until`), for the line that says why a run ended.
    flag: &'static str,
    /// Whether it names `$headers`: only then is the reply's header object made.
    reads_headers: bool,
    /// How deeply its terms nest: what its evaluation needs of the stack.
    depth: usize,
    /// Whether it defines something that can call itself: only then can its evaluation recurse.
    recurses: bool,
    bound: Arc<Bound>,
    compiled: jaq_core::compile::Filter<Native<Data>>,
}

/// A jq runtime error: the filter's flag and jaq's words. It reads as the
/// warning line (`jq error in `.a.b`: cannot index 1 with "b"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JqError {
    line: String,
    flag: &'static str,
    what: String,
}

impl JqError {
    /// The flag of the filter that failed.
    pub fn flag(&self) -> &'static str {
        self.flag
    }

    /// The error as a run's last outcome: `--until failed on the body: cannot use 25 as string`.
    pub fn as_cause(&self) -> String {
        format!("{} failed on the body: {}", self.flag, self.what)
    }
}

impl std::ops::Deref for JqError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.line
    }
}

impl std::fmt::Display for JqError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

/// A reply as the filters read it: `$status`, `$headers` and the body;
/// under `--watch`, one event of it as the body, and `$event` its type
/// (`None`, `null`, for a JSON stream's value and for a whole reply).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Message<'a> {
    pub status: u16,
    pub headers: &'a Headers,
    pub body: &'a [u8],
    pub event: Option<&'a str>,
}

impl<'a> Message<'a> {
    /// A whole reply's message: no event.
    pub(crate) fn reply(status: u16, headers: &'a Headers, body: &'a [u8]) -> Message<'a> {
        Message { status, headers, body, event: None }
    }
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Filter").field(&self.source).finish()
    }
}

/// A parsed JSON body, ready for any number of filters, with the reply's
/// `$status` and `$headers` (`null` and `{}` for a body of no reply).
pub struct Input {
    body: Val,
    status: Val,
    headers: Val,
    event: Val,
    /// The values of `$headers` that are secrets (`Set-Cookie`, ...): never quoted by an error.
    secrets: Vec<String>,
}

impl Input {
    /// Parses a body as JSON; why not when it is not JSON (an empty body included).
    pub fn parse(body: &[u8]) -> Result<Input, NotJson> {
        // serde_json limits nesting to 128 levels, so a hostile body cannot overflow the stack here.
        // Straight into jaq's value, with no serde_json::Value between: one tree built per poll, not two.
        let mut json = serde_json::Deserializer::from_slice(body);
        let body = Val::deserialize(&mut json).map_err(|e| NotJson::of(&e))?;
        json.end().map_err(|_| NotJson::Invalid)?;
        let headers = Val::obj(jaq_json::Map::default());
        Ok(Input { body, status: Val::Null, headers, event: Val::Null, secrets: Vec::new() })
    }

    /// A reply for the user's filters: its JSON body, or `null` for an empty
    /// one (HEAD, 204, most 404s); why not when the body is not JSON. The
    /// header object is made only when a filter reads it (`headers`): names
    /// in lower case, repeated fields joined with `, `.
    pub(crate) fn of(message: Message<'_>, headers: bool) -> Result<Input, NotJson> {
        let mut input = match is_empty(message.body) {
            true => {
                Input { body: Val::Null, status: Val::Null, headers: Val::Null, event: Val::Null, secrets: Vec::new() }
            }
            false => Input::parse(message.body)?,
        };
        input.status = Val::from(usize::from(message.status));
        input.event = message.event.map_or(Val::Null, |event| Val::from(event.to_string()));
        input.headers = if headers { header_object(message.headers) } else { Val::obj(jaq_json::Map::default()) };
        if headers {
            let secret = message.headers.iter().filter(|(name, _)| crate::util::url::is_secret(name));
            input.secrets = secret.map(|(_, value)| value.to_string()).filter(|value| !value.is_empty()).collect();
        }
        Ok(input)
    }
}

/// Why a body is no input for the filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotJson {
    /// It is not one JSON value.
    Invalid,
    /// It is JSON nested deeper than serde_json reads ([`natives::MAX_JSON_DEPTH`] levels), a
    /// bound that keeps the stack safe: said in its own words, not taken for a body that is not JSON.
    TooDeep,
}

impl NotJson {
    /// serde_json's error in this vocabulary.
    fn of(error: &serde_json::Error) -> NotJson {
        match natives::nested_too_deep(error) {
            true => NotJson::TooDeep,
            false => NotJson::Invalid,
        }
    }
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotJson::Invalid => f.write_str("not JSON"),
            NotJson::TooDeep => f.write_str(&natives::too_deep_words()),
        }
    }
}

/// `$headers`: each field once, lower case, repeated values joined with `, ` (RFC 9110 section 5.3).
fn header_object(headers: &Headers) -> Val {
    let mut joined: Vec<(String, String)> = Vec::new();
    for (name, value) in headers.iter() {
        let name = name.to_ascii_lowercase();
        match joined.iter_mut().find(|(known, _)| *known == name) {
            Some((_, all)) => {
                all.push_str(", ");
                all.push_str(value);
            }
            None => joined.push((name, value.to_string())),
        }
    }
    Val::obj(joined.into_iter().map(|(name, value)| (Val::from(name), Val::from(value))).collect())
}

impl Filter {
    /// Compiles `source` with the jq standard library (the part of it that
    /// `source` can call: see [`crate::rules::jq::prelude`]). The error names the
    /// position of the first mistake.
    pub fn compile(source: &str) -> Result<Filter, String> {
        Filter::compile_for("the filter", source, &Args::default())
    }

    /// Compiles the filter of `flag` (`--until`), with the `--arg`s and `--argjson`s bound.
    pub fn compile_for(flag: &'static str, source: &str, args: &Args) -> Result<Filter, String> {
        check_shape(source)?;
        // Compiled with the recursion guard in place; a mistake is found again in the source as
        // written, whose positions the message names. Were the guard ever what fails, the filter
        // as written is compiled instead.
        let (guarded, recurses) = natives::guarded(source);
        let (compiled, text, recurses) = match compile_text(&guarded, args) {
            Ok(compiled) => (compiled, guarded.as_str(), recurses),
            Err(_) => (compile_text(source, args)?, source, false),
        };
        let bound = Bound { args: args.as_value(), named: args.named.iter().map(|(_, value)| value.clone()).collect() };
        let reads_headers = source.contains("$headers");
        let depth = crate::rules::jq::prelude::depth(text).unwrap_or(0);
        let source = source.to_string();
        Ok(Filter { source, flag, reads_headers, depth, recurses, bound: Arc::new(bound), compiled })
    }

    /// Whether it defines something that can call itself: only then can its evaluation recurse.
    pub(crate) fn recurses(&self) -> bool {
        self.recurses
    }

    /// How deeply its terms nest (`.` is 1, `- - 1` is 3): jaq evaluates
    /// recursively, so the stack its evaluation needs grows with this.
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// Whether the filter reads `$headers`, so that the reply's must be made.
    pub(crate) fn reads_headers(&self) -> bool {
        self.reads_headers
    }

    /// The filter as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The source for messages: a long filter by its first 60 characters.
    fn short_source(&self) -> String {
        shorten(&self.source)
    }

    /// jq truthiness of the first output: anything but `false` and `null`.
    /// No output at all is "not met". A runtime error is returned as its message.
    pub fn holds(&self, input: &Input) -> Result<bool, JqError> {
        Ok(self.first(input)?.is_some_and(|v| !matches!(v, Val::Null | Val::Bool(false))))
    }

    /// Whether the filter holds on a reply of any status: a body that is not
    /// JSON (an HTML error page) reads as null, `$status` and `$headers` as they came.
    pub(crate) fn holds_on(&self, message: Message<'_>) -> Result<bool, JqError> {
        let input = Input::of(message, self.reads_headers).or_else(|_| {
            let empty = Message { body: &[], ..message };
            Input::of(empty, self.reads_headers)
        });
        input.map_or(Ok(false), |input| self.holds(&input))
    }

    /// The first output rendered for a person, labelled by a simple path
    /// (`.progress` -> `progress 42`): strings without quotes, other values as
    /// compact JSON. `None` when the filter has no output.
    pub fn show(&self, input: &Input) -> Result<Option<String>, JqError> {
        let label =
            self.source.trim().strip_prefix('.').filter(|path| {
                !path.is_empty() && path.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            });
        let value = self.first(input)?.map(raw);
        Ok(value.map(|value| match label {
            Some(label) => format!("{label} {value}"),
            None => value,
        }))
    }

    /// `--print` on a final reply: every output, as JSON values. A body that
    /// is not JSON (an empty one is `null`), or a runtime error anywhere, fails the whole.
    pub(crate) fn print(&self, message: Message<'_>) -> Result<Vec<serde_json::Value>, String> {
        let input = Input::of(message, self.reads_headers).map_err(|why| format!("the final body is {why}"))?;
        self.values(&input).map_err(|e| e.line)
    }

    /// Every output as a JSON value. A runtime error anywhere fails the whole.
    fn values(&self, input: &Input) -> Result<Vec<serde_json::Value>, JqError> {
        self.outputs(input)?
            .into_iter()
            .map(|v| serde_json::from_str(&v.to_string()).map_err(|e| self.error(&e.to_string())))
            .collect()
    }

    /// The first output as a string, for `--status-url`; `None` when there is
    /// no output or it is not a string.
    pub(crate) fn first_string(&self, input: &Input) -> Result<Option<String>, JqError> {
        Ok(self.first(input)?.and_then(|v| match v {
            Val::TStr(bytes) | Val::BStr(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            _ => None,
        }))
    }

    /// `--next` on a page (its `$status` and `$headers` too): the first output,
    /// a URL or a reference; `None` when the walk ends there (no output,
    /// `null`, `""`). A page that is not JSON (an empty one is `null`), a
    /// runtime error or another value is why not.
    pub(crate) fn next_page(&self, message: Message<'_>) -> Result<Option<String>, String> {
        let input = Input::of(message, self.reads_headers).map_err(|why| format!("the page is {why}"))?;
        match self.first(&input).map_err(|e| e.line)? {
            None | Some(Val::Null) => Ok(None),
            Some(Val::TStr(bytes) | Val::BStr(bytes)) if bytes.is_empty() => Ok(None),
            Some(Val::TStr(bytes) | Val::BStr(bytes)) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
            Some(other) => {
                let value = hidden(&cut(&other.to_string()), &input.secrets);
                Err(format!("`{}` gave {value}, not a URL", self.short_source()))
            }
        }
    }

    fn first(&self, input: &Input) -> Result<Option<Val>, JqError> {
        self.run(input).next().transpose()
    }

    fn outputs(&self, input: &Input) -> Result<Vec<Val>, JqError> {
        self.run(input).collect()
    }

    fn run<'a>(&'a self, input: &Input) -> impl Iterator<Item = Result<Val, JqError>> + 'a {
        let (bound, headers, secrets) = (&self.bound, input.headers.clone(), input.secrets.clone());
        let globals = [environment(), bound.args.clone(), input.status.clone(), headers, input.event.clone()];
        let vars = Vars::new(globals.into_iter().chain(bound.named.iter().cloned()));
        let ctx = Ctx::<Data>::new(&self.compiled.lut, vars);
        self.compiled.id.run((ctx, input.body.clone())).map(move |output| {
            output.map_err(|exception| match exception.get_err() {
                // A string's words as jq writes them, without JSON's quotes: `error("not yet")` says not yet.
                Ok(error) => self.error(&hidden(&raw(error.into_val()), &secrets)),
                // Not `jaq_core::unwrap_valr`: it exits the process on `halt`.
                Err(_) => self.error("halt and break are not supported here"),
            })
        })
    }

    /// A runtime error; jaq's words quote the value at fault, which may be a whole 10 MB body: cut.
    fn error(&self, what: &str) -> JqError {
        let what = cut(what);
        let line = format!("jq error in `{}`: {what}", self.short_source());
        JqError { line, flag: self.flag, what }
    }
}

/// `text` with each of `secrets` replaced, as written and as JSON escapes it:
/// a jq error quotes the values it failed on, `$headers` included.
fn hidden(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        for form in [secret.as_str(), escaped] {
            if !form.is_empty() {
                text = text.replace(form, crate::util::url::REDACTED);
            }
        }
    }
    text
}

/// A value as `jq -r` prints it: a string raw, anything else as compact JSON.
fn raw(value: Val) -> String {
    match value {
        Val::TStr(bytes) | Val::BStr(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        other => other.to_string(),
    }
}

/// `text` compiled with the standard library and poll's natives, the `--arg`s and
/// `--argjson`s bound; a mistake by its position in `text`.
fn compile_text(text: &str, args: &Args) -> Result<jaq_core::compile::Filter<Native<Data>>, String> {
    let defs = crate::rules::jq::prelude::for_filter(text);
    // poll's natives first: a call resolves to the first native of its name.
    let funs = natives::funs().chain(jaq_core::funs()).chain(jaq_std::funs()).chain(jaq_json::funs());
    let arena = Arena::default();
    let loader = Loader::new(defs);
    let modules = loader.load(&arena, File { code: text, path: () }).map_err(|errors| {
        let mut messages = Vec::new();
        for (_file, error) in errors {
            match error {
                load::Error::Io(v) => messages.extend(v.into_iter().map(|(path, m)| format!("{path}: {m}"))),
                load::Error::Lex(v) => messages.extend(
                    v.into_iter()
                        .map(|(expected, found)| format!("{}: expected {}", at(text, found), expected.as_str())),
                ),
                load::Error::Parse(v) => messages.extend(v.into_iter().map(|(expected, found)| {
                    let shown = if found.is_empty() { "end of input".to_string() } else { format!("`{found}`") };
                    format!("{}: expected {}, found {shown}", at(text, found), expected.as_str())
                })),
            }
        }
        messages.join("; ")
    })?;
    let names = GLOBALS.into_iter().chain(args.named.iter().map(|(var, _)| var.as_str()));
    Compiler::default().with_funs(funs).with_global_vars(names).compile(modules).map_err(|errors| {
        errors
            .into_iter()
            .flat_map(|(_file, v)| v)
            .map(|(name, undefined)| format!("{}: undefined {} `{name}`", at(text, name), undefined.as_str()))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// Refuses filters that are too long or too deeply nested to parse safely.
fn check_shape(source: &str) -> Result<(), String> {
    if source.len() > MAX_FILTER_LEN {
        return Err(format!("filter is {} bytes long; the limit is {MAX_FILTER_LEN}", source.len()));
    }
    let mut depth = 0usize;
    for (i, c) in source.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_FILTER_DEPTH {
            return Err(format!("at col {}: brackets nested deeper than {MAX_FILTER_DEPTH}", i + 1));
        }
    }
    Ok(())
}

/// "at col N" / "at end of input (col N)" for a slice of `source`.
fn at(source: &str, part: &str) -> String {
    let (whole, piece) = (source.as_ptr() as usize, part.as_ptr() as usize);
    let inside = piece >= whole && piece + part.len() <= whole + source.len();
    match inside.then(|| load::span(source, part).start) {
        Some(offset) if offset >= source.len() => format!("at end of input (col {})", source.chars().count() + 1),
        Some(offset) => format!("at col {}", source[..offset].chars().count() + 1),
        None => "at an unknown position".to_string(),
    }
}

/// The run's filters: `--until`, `--fail-when` and `--show`, and with
/// `--submit` the built-in tests of whichever of the first two was not given.
#[derive(Debug, Default)]
pub struct Conditions {
    pub until: Option<Filter>,
    pub fail_when: Option<Filter>,
    pub show: Option<Filter>,
    /// `--submit`'s built-ins, which stand for whichever of `until` and `fail_when` is `None`.
    pub builtin: Option<Builtin>,
}

/// What the filters said of one 2xx body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub verdict: Verdict,
    /// jq runtime errors, each counted as "not met".
    pub errors: Vec<JqError>,
    /// What `--show` printed, if anything.
    pub shown: Option<String>,
    /// `--show`'s jq error: warned of, but no reason the condition is not met.
    pub show_error: Option<JqError>,
}

impl Conditions {
    /// Judges the 2xx reply `status` to a `--submit` request of `phase` about
    /// `subject`, by the contract's order: the failure test first (a user's
    /// `--fail-when`, else the built-in one), then the done test. Under the
    /// built-in done test a status reply is done when it is not JSON, and a
    /// resource also when it has no status word the built-ins know (ARM's
    /// Location mode: 202 until the operation ends, then the resource). A
    /// status reply 202 is never done. Also the built-ins' word on the body, when
    /// they are in use and it is JSON. Without `--submit`, as [`Conditions::judge`]
    /// on the whole reply: its `$status` and `$headers` too, an empty body read as `null`.
    pub(crate) fn judge_reply(
        &self,
        phase: Phase,
        subject: Subject,
        message: Message<'_>,
    ) -> (Judgement, Option<Word>) {
        let Some(builtin) = &self.builtin else { return (self.judge_input(self.input(message)), None) };
        let status = message.status;
        let mut errors = Vec::new();
        let read = self.input(message);
        let input = read.as_ref().ok();
        let (shown, show_error) = self.shown(input);
        let in_use = self.builtin_done() || self.builtin_fails();
        // The built-ins read JSON bodies only: an empty one is "not JSON" to them (done on a status reply).
        let json = input.filter(|_| in_use && !is_empty(message.body));
        let word = json.map(|input| builtin.word(subject, input));
        let waiting = phase == Phase::Wait;
        let failed = match (&self.fail_when, input) {
            (Some(filter), Some(input)) => holds(filter, input, &mut errors),
            (Some(_), None) => false,
            (None, _) => word == Some(Word::Failed),
        };
        let done = match (&self.until, input) {
            (Some(filter), Some(input)) => Some(holds(filter, input, &mut errors)),
            (Some(filter), None) => {
                unread(filter, &read, &mut errors);
                None
            }
            (None, _) => Some(match word {
                None => waiting,
                Some(Word::Done) => true,
                Some(Word::Other) => waiting && subject == Subject::Resource,
                Some(Word::Failed | Word::Running) => false,
            }),
        };
        let verdict = match done {
            _ if failed => Verdict::FailWhen,
            _ if waiting && status == 202 => Verdict::NotMet,
            Some(true) => Verdict::Met,
            Some(false) => Verdict::NotMet,
            None => Verdict::NotJson,
        };
        (Judgement { verdict, errors, shown, show_error }, word)
    }

    /// The built-in done test is in use: `--submit` without `--until`.
    pub(crate) fn builtin_done(&self) -> bool {
        self.builtin.is_some() && self.until.is_none()
    }

    /// The built-in failure test is in use: `--submit` without `--fail-when`.
    pub(crate) fn builtin_fails(&self) -> bool {
        self.builtin.is_some() && self.fail_when.is_none()
    }

    /// `--show`'s line on a body, or its jq error.
    fn shown(&self, input: Option<&Input>) -> (Option<String>, Option<JqError>) {
        let (Some(show), Some(input)) = (self.show.as_ref(), input) else { return (None, None) };
        match show.show(input) {
            Ok(shown) => (shown, None),
            Err(e) => (None, Some(e)),
        }
    }

    /// Judges a 2xx body: `--fail-when` first, then `--until`. Without either,
    /// any 2xx is done and the body need not be JSON.
    pub fn judge(&self, body: &[u8]) -> Judgement {
        self.judge_input(Input::parse(body))
    }

    /// The reply as the filters read it, its header object made only when one of them reads it.
    fn input(&self, message: Message<'_>) -> Result<Input, NotJson> {
        let filters = [&self.until, &self.fail_when, &self.show];
        Input::of(message, filters.into_iter().flatten().any(Filter::reads_headers))
    }

    fn judge_input(&self, read: Result<Input, NotJson>) -> Judgement {
        let mut errors = Vec::new();
        let (shown, show_error) = self.shown(read.as_ref().ok());
        // Without --until nothing objects to any 2xx: whether that is done is the policy's to say (--done-on).
        let Some(first) = self.fail_when.as_ref().or(self.until.as_ref()) else {
            return Judgement { verdict: Verdict::Met, errors, shown, show_error };
        };
        let input = match read {
            Ok(input) => input,
            Err(_) => {
                unread(first, &read, &mut errors);
                return Judgement { verdict: Verdict::NotJson, errors, shown, show_error };
            }
        };
        let mut test = |filter: &Option<Filter>| filter.as_ref().map(|filter| holds(filter, &input, &mut errors));
        let verdict = if test(&self.fail_when) == Some(true) {
            Verdict::FailWhen
        } else {
            match test(&self.until) {
                None => Verdict::Met,
                Some(true) => Verdict::Met,
                Some(false) => Verdict::NotMet,
            }
        };
        Judgement { verdict, errors, shown, show_error }
    }
}

/// Whether a body is empty (HEAD, 204, most 404s): no JSON, and `null` to the user's filters.
fn is_empty(body: &[u8]) -> bool {
    body.iter().all(u8::is_ascii_whitespace)
}

/// A body `filter` could not read because it nests too deep, said as the filter's error (the
/// warning, and the run's last words), though the verdict stays "not JSON".
fn unread(filter: &Filter, read: &Result<Input, NotJson>, errors: &mut Vec<JqError>) {
    if let Err(why @ NotJson::TooDeep) = read {
        errors.push(filter.error(&why.to_string()));
    }
}

/// Whether `filter` holds on `input`; a runtime error is "not met", its message kept in `errors`.
fn holds(filter: &Filter, input: &Input, errors: &mut Vec<JqError>) -> bool {
    filter.holds(input).unwrap_or_else(|e| {
        errors.push(e);
        false
    })
}
