//! jq filters (`--until`, `--fail-when`, `--show`, `--print`, `--status-url`,
//! and the built-in conditions of `--submit`): compiled once with jaq, then
//! evaluated on each JSON body. Pure: a filter and a value in, a verdict out.

use jaq_core::load::{self, Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Native, Vars, data::JustLut};
use jaq_json::Val;
use serde::Deserialize as _;

use crate::rules::policy::{Phase, Verdict};
use crate::util::text::shorten;

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

type Data = JustLut<Val>;

/// Filters longer or deeper than this are refused before jaq sees them: jaq's
/// parser and evaluator recurse, and a filter nested thousands deep (brackets,
/// or a chain like `- - - 1`) would overflow the stack and abort the process,
/// which no error handling can catch. `main` runs on a 256 MiB stack, which
/// holds the deepest 4 KiB filter with room to spare.
const MAX_FILTER_LEN: usize = 4 * 1024;
const MAX_FILTER_DEPTH: usize = 128;

/// One compiled jq filter and its source, for messages.
pub struct Filter {
    source: String,
    compiled: jaq_core::compile::Filter<Native<Data>>,
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Filter").field(&self.source).finish()
    }
}

/// A parsed JSON body, ready for any number of filters.
pub struct Input(Val);

impl Input {
    /// Parses a body as JSON; `None` when it is not JSON (an empty body included).
    pub fn parse(body: &[u8]) -> Option<Input> {
        // serde_json limits nesting to 128 levels, so a hostile body cannot overflow the stack here.
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        Val::deserialize(&value).ok().map(Input)
    }
}

impl Filter {
    /// Compiles `source` with the jq standard library (the part of it that
    /// `source` can call: see [`crate::rules::prelude`]). The error names the
    /// position of the first mistake.
    pub fn compile(source: &str) -> Result<Filter, String> {
        check_shape(source)?;
        let defs = crate::rules::prelude::for_filter(source);
        let funs = jaq_core::funs().chain(jaq_std::funs()).chain(jaq_json::funs());
        let arena = Arena::default();
        let loader = Loader::new(defs);
        let modules = loader.load(&arena, File { code: source, path: () }).map_err(|errors| {
            let mut messages = Vec::new();
            for (_file, error) in errors {
                match error {
                    load::Error::Io(v) => messages.extend(v.into_iter().map(|(path, m)| format!("{path}: {m}"))),
                    load::Error::Lex(v) => messages.extend(
                        v.into_iter()
                            .map(|(expected, found)| format!("{}: expected {}", at(source, found), expected.as_str())),
                    ),
                    load::Error::Parse(v) => messages.extend(v.into_iter().map(|(expected, found)| {
                        let shown = if found.is_empty() { "end of input".to_string() } else { format!("`{found}`") };
                        format!("{}: expected {}, found {shown}", at(source, found), expected.as_str())
                    })),
                }
            }
            messages.join("; ")
        })?;
        let compiled = Compiler::default().with_funs(funs).compile(modules).map_err(|errors| {
            errors
                .into_iter()
                .flat_map(|(_file, v)| v)
                .map(|(name, undefined)| format!("{}: undefined {} `{name}`", at(source, name), undefined.as_str()))
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        Ok(Filter { source: source.to_string(), compiled })
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
    pub fn holds(&self, input: &Input) -> Result<bool, String> {
        Ok(self.first(input)?.is_some_and(|v| !matches!(v, Val::Null | Val::Bool(false))))
    }

    /// The first output rendered for a person, labelled by a simple path
    /// (`.progress` -> `progress 42`): strings without quotes, other values as
    /// compact JSON. `None` when the filter has no output.
    pub fn show(&self, input: &Input) -> Result<Option<String>, String> {
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

    /// `--print` on a final body: every output, as JSON values. A body that
    /// is not JSON, or a runtime error anywhere, fails the whole.
    pub(crate) fn print(&self, body: &[u8]) -> Result<Vec<serde_json::Value>, String> {
        let input = Input::parse(body).ok_or_else(|| "the final body is not JSON".to_string())?;
        self.values(&input)
    }

    /// Every output as a JSON value. A runtime error anywhere fails the whole.
    fn values(&self, input: &Input) -> Result<Vec<serde_json::Value>, String> {
        self.outputs(input)?
            .into_iter()
            .map(|v| serde_json::from_str(&v.to_string()).map_err(|e| self.error(&e.to_string())))
            .collect()
    }

    /// The first output as a string, for `--status-url`; `None` when there is
    /// no output or it is not a string.
    pub(crate) fn first_string(&self, input: &Input) -> Result<Option<String>, String> {
        Ok(self.first(input)?.and_then(|v| match v {
            Val::TStr(bytes) | Val::BStr(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            _ => None,
        }))
    }

    fn first(&self, input: &Input) -> Result<Option<Val>, String> {
        self.run(input).next().transpose()
    }

    fn outputs(&self, input: &Input) -> Result<Vec<Val>, String> {
        self.run(input).collect()
    }

    fn run<'a>(&'a self, input: &Input) -> impl Iterator<Item = Result<Val, String>> + 'a {
        let ctx = Ctx::<Data>::new(&self.compiled.lut, Vars::new([]));
        self.compiled.id.run((ctx, input.0.clone())).map(|output| {
            output.map_err(|exception| match exception.get_err() {
                Ok(error) => self.error(&error.to_string()),
                // Not `jaq_core::unwrap_valr`: it exits the process on `halt`.
                Err(_) => self.error("halt and break are not supported here"),
            })
        })
    }

    fn error(&self, what: &str) -> String {
        format!("jq error in `{}`: {what}", self.short_source())
    }
}

/// A value as `jq -r` prints it: a string raw, anything else as compact JSON.
fn raw(value: Val) -> String {
    match value {
        Val::TStr(bytes) | Val::BStr(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        other => other.to_string(),
    }
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
    pub errors: Vec<String>,
    /// What `--show` printed, if anything.
    pub shown: Option<String>,
}

impl Conditions {
    /// Judges the 2xx reply `status` to a `--submit` request of `phase` about
    /// `subject`, by the contract's order: the failure test first (a user's
    /// `--fail-when`, else the built-in one), then the done test. Under the
    /// built-in done test a status reply is done when it is not JSON, and a
    /// resource also when it has no status word the built-ins know (ARM's
    /// Location mode: 202 until the operation ends, then the resource). A
    /// status reply 202 is never done. Also the built-ins' word on the body, when
    /// they are in use and it is JSON. Without `--submit`, as [`Conditions::judge`].
    pub(crate) fn judge_reply(
        &self,
        phase: Phase,
        subject: Subject,
        status: u16,
        body: &[u8],
    ) -> (Judgement, Option<Word>) {
        let Some(builtin) = &self.builtin else { return (self.judge(body), None) };
        let mut errors = Vec::new();
        let input = Input::parse(body);
        let shown = self.shown(input.as_ref(), &mut errors);
        let in_use = self.builtin_done() || self.builtin_fails();
        let word = input.as_ref().filter(|_| in_use).map(|input| builtin.word(subject, input));
        let waiting = phase == Phase::Wait;
        let failed = match (&self.fail_when, &input) {
            (Some(filter), Some(input)) => holds(filter, input, &mut errors),
            (Some(_), None) => false,
            (None, _) => word == Some(Word::Failed),
        };
        let done = match (&self.until, &input) {
            (Some(filter), Some(input)) => Some(holds(filter, input, &mut errors)),
            (Some(_), None) => None,
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
        (Judgement { verdict, errors, shown }, word)
    }

    /// The built-in done test is in use: `--submit` without `--until`.
    pub(crate) fn builtin_done(&self) -> bool {
        self.builtin.is_some() && self.until.is_none()
    }

    /// The built-in failure test is in use: `--submit` without `--fail-when`.
    pub(crate) fn builtin_fails(&self) -> bool {
        self.builtin.is_some() && self.fail_when.is_none()
    }

    /// `--show`'s line on a body, its jq error kept in `errors`.
    fn shown(&self, input: Option<&Input>, errors: &mut Vec<String>) -> Option<String> {
        let (show, input) = (self.show.as_ref()?, input?);
        show.show(input).unwrap_or_else(|e| {
            errors.push(e);
            None
        })
    }

    /// Judges a 2xx body: `--fail-when` first, then `--until`. Without either,
    /// any 2xx is done and the body need not be JSON.
    pub fn judge(&self, body: &[u8]) -> Judgement {
        let mut errors = Vec::new();
        let input = Input::parse(body);
        let shown = self.shown(input.as_ref(), &mut errors);
        if self.until.is_none() && self.fail_when.is_none() {
            return Judgement { verdict: Verdict::Met, errors, shown };
        }
        let Some(input) = input else {
            return Judgement { verdict: Verdict::NotJson, errors, shown };
        };
        let mut test = |filter: &Option<Filter>| filter.as_ref().map(|filter| holds(filter, &input, &mut errors));
        let verdict = if test(&self.fail_when) == Some(true) {
            Verdict::FailWhen
        } else {
            match test(&self.until) {
                None | Some(true) => Verdict::Met,
                Some(false) => Verdict::NotMet,
            }
        };
        Judgement { verdict, errors, shown }
    }
}

/// Whether `filter` holds on `input`; a runtime error is "not met", its message kept in `errors`.
fn holds(filter: &Filter, input: &Input, errors: &mut Vec<String>) -> bool {
    filter.holds(input).unwrap_or_else(|e| {
        errors.push(e);
        false
    })
}
