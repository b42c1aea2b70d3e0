//! jq filters (`--until`, `--fail-when`, `--show`, `--print`, `--status-url`,
//! and the built-in conditions of `--submit`): compiled once with jaq, then
//! evaluated on each JSON body. Pure: a filter and a value in, a verdict out.

use jaq_core::load::{self, Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Native, Vars, data::JustLut};
use jaq_json::Val;
use serde::Deserialize as _;

use crate::policy::{Phase, Verdict};
use crate::text::shorten;

/// `--submit`'s built-in done test, as the jq users can copy and adapt: a
/// Google AIP-151 operation that is `done` without an `error`, or a status
/// word (the first string of `.status`, `.properties.provisioningState`,
/// `.state`, in any letter case) that says it succeeded, unless a GitHub
/// `.conclusion` says otherwise.
pub const BUILTIN_DONE: &str = r#"if (.done? | type) == "boolean" then .done and .error? == null else first((.status?, .properties?.provisioningState?, .state?) | strings | ascii_downcase) as $w | ($w == "succeeded" or $w == "success" or $w == "completed" or $w == "complete" or $w == "done") and all(.conclusion? | strings; . == "success" or . == "neutral" or . == "skipped") end"#;

/// `--submit`'s built-in failure test (exit 4): an AIP-151 operation `done`
/// with an `error`, a status word that says it failed or was cancelled, or a
/// done word whose GitHub `.conclusion` is not `success`, `neutral` or `skipped`.
pub const BUILTIN_FAILED: &str = r#"if (.done? | type) == "boolean" then .done and .error? != null else first((.status?, .properties?.provisioningState?, .state?) | strings | ascii_downcase) as $w | ($w == "failed" or $w == "failure" or $w == "canceled" or $w == "cancelled" or $w == "error" or $w == "errored" or $w == "timed_out" or $w == "timedout" or $w == "aborted" or $w == "rejected" or $w == "expired" or $w == "terminated") or (($w == "succeeded" or $w == "success" or $w == "completed" or $w == "complete" or $w == "done") and any(.conclusion? | strings; . != "success" and . != "neutral" and . != "skipped")) end"#;

/// Whether a resource (ARM's Location mode) says it is still in progress:
/// its word read `.properties.provisioningState` first, since its `.status`
/// may mean something else (a machine's power state). Such a body is never
/// done, in any mode.
pub const BUILTIN_IN_PROGRESS: &str = r#".done? == false or ((.done? | type) != "boolean" and (first((.properties?.provisioningState?, .status?, .state?) | strings | ascii_downcase) as $w | ["running", "inprogress", "in_progress", "in-progress", "pending", "queued", "notstarted", "not_started", "new", "created", "submitted", "started", "starting", "accepted", "initializing", "preparing", "processing", "provisioning", "building", "deploying", "creating", "updating", "deleting", "retrying", "waiting", "scheduled"] | index($w) != null))"#;

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
    /// `source` can call: see [`crate::prelude`]). The error names the
    /// position of the first mistake.
    pub fn compile(source: &str) -> Result<Filter, String> {
        check_shape(source)?;
        let defs = crate::prelude::for_filter(source);
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

/// The run's filters: `--until`, `--fail-when` and `--show`.
#[derive(Debug, Default)]
pub struct Conditions {
    pub until: Option<Filter>,
    pub fail_when: Option<Filter>,
    pub show: Option<Filter>,
    /// `--until` is `--submit`'s built-in done test, which also holds for a
    /// status URL's non-202 2xx without a JSON body (ARM's Location mode).
    pub builtin_until: bool,
    /// `--fail-when` is `--submit`'s built-in failure test.
    pub builtin_fail_when: bool,
    /// With the built-in done test: [`BUILTIN_IN_PROGRESS`], which keeps a
    /// resource in Location mode from being done while it says it runs.
    pub in_progress: Option<Filter>,
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
    /// Judges the 2xx reply `status` to a request of `phase`: as [`Conditions::judge`],
    /// but a status URL's 202 is never done (the operation is still running),
    /// and with the built-in done test a status URL's non-202 2xx that is not
    /// JSON is done. In `location` mode (the status URL came from `Location`,
    /// ARM's way: 202 until the operation ends, then the resource itself) any
    /// non-202 2xx is done by the built-in test, JSON or not: the resource's
    /// own `status` may mean something else, such as a machine's power state.
    pub(crate) fn judge_reply(&self, phase: Phase, status: u16, body: &[u8], location: bool) -> Judgement {
        let mut judgement = self.judge(body);
        if phase == Phase::Wait {
            judgement.verdict = match judgement.verdict {
                // Before the Location rule below: a 202 is "still running" in every mode.
                Verdict::Met | Verdict::NotJson | Verdict::NotMet if status == 202 => Verdict::NotMet,
                Verdict::NotJson if self.builtin_until => Verdict::Met,
                Verdict::NotMet if self.builtin_until && location && !self.in_progress(body) => Verdict::Met,
                verdict => verdict,
            };
        }
        judgement
    }

    /// Whether a resource's body says it is still in progress.
    fn in_progress(&self, body: &[u8]) -> bool {
        let input = Input::parse(body);
        matches!((&self.in_progress, input), (Some(filter), Some(input)) if filter.holds(&input) == Ok(true))
    }

    /// Judges a 2xx body: `--fail-when` first, then `--until`. Without either,
    /// any 2xx is done and the body need not be JSON.
    pub fn judge(&self, body: &[u8]) -> Judgement {
        let mut errors = Vec::new();
        let input = Input::parse(body);
        let shown = match (&self.show, &input) {
            (Some(show), Some(input)) => show.show(input).unwrap_or_else(|e| {
                errors.push(e);
                None
            }),
            _ => None,
        };
        if self.until.is_none() && self.fail_when.is_none() {
            return Judgement { verdict: Verdict::Met, errors, shown };
        }
        let Some(input) = input else {
            return Judgement { verdict: Verdict::NotJson, errors, shown };
        };
        let mut holds = |filter: &Option<Filter>| match filter.as_ref().map(|f| f.holds(&input)) {
            None => None,
            Some(Ok(holds)) => Some(holds),
            Some(Err(e)) => {
                errors.push(e);
                Some(false)
            }
        };
        let verdict = if holds(&self.fail_when) == Some(true) {
            Verdict::FailWhen
        } else {
            match holds(&self.until) {
                None | Some(true) => Verdict::Met,
                Some(false) => Verdict::NotMet,
            }
        };
        Judgement { verdict, errors, shown }
    }
}
