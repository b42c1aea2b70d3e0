//! `POLL_<FLAG>`: which variables one command line reads, and which it
//! ignores and why. clap reads an option's variable only where the model
//! lets it (`flags::Tags`); this module decides where. Not an empty variable
//! (unset, as CI systems unset one), nor one whose option the command line
//! gives, nor one that clashes with an option the command line gives (the
//! command line wins), nor one that only means something beside an option
//! that is not there. It learns the relations from clap's own errors
//! (`conflicts_with`, `requires`) and from `config::clash` (those that turn
//! on a value or on the URLs), drops the variable's side and parses again:
//! no list of variables lives here. Two variables that clash with each other
//! are a usage error naming both; a bad value is one naming its variable.
//! One variable is narrowed rather than dropped: `POLL_DONE_ON`'s `refused`
//! stands beside ports alone, where its statuses cannot.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::config::{self, Clash, Meets};
use crate::cli::flags::{self, Cli, DoneOn, Environment, Given, Invocation, Setting};
use crate::error::Error;

/// Why a command line starts no run.
#[derive(Debug)]
pub(crate) enum Refused {
    /// `--help`, `-h` or `--version`: the text for stdout.
    Shown(clap::builder::StyledStr),
    /// A usage error.
    Usage(Error),
}

/// Parses the command line with the variables it may read.
pub(crate) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, Refused> {
    let args: Vec<OsString> = args.into_iter().collect();
    let generating = flags::generating(&args).map_err(|e| Refused::Usage(Error::usage(flags::one_line(&e, None))))?;
    if let Some(kind) = generating {
        return Ok(Invocation::Generate(kind));
    }
    let given = flags::given(&args);
    let mut variables = Variables::new(&given);
    // Each turn reads one variable fewer, or ends.
    loop {
        let matches = match flags::matches(&args, &variables.ids()) {
            Ok(matches) => matches,
            Err(e) if e.kind() == ErrorKind::DisplayHelp => return Err(Refused::Shown(flags::help(given.short_help))),
            Err(e) if e.kind() == ErrorKind::DisplayVersion => return Err(Refused::Shown(e.render())),
            Err(e) => {
                variables.settle(&e, &args)?;
                continue;
            }
        };
        let mut cli = flags::cli(matches, variables.environment()).map_err(|e| variables.refuse(&e))?;
        let clash = loop {
            match config::clash(&cli) {
                Err(clash) if variables.narrows(&clash, &mut cli) => continue,
                checked => break checked,
            }
        };
        // A clash that is the command line's own is Config's usage error, in its words.
        if let Err(clash) = clash
            && variables.drops(clash)?
        {
            continue;
        }
        return Ok(Invocation::Run(Box::new(cli)));
    }
}

/// A variable set for an option the command line does not give.
#[derive(Debug, Clone)]
struct Candidate {
    /// The option's id in the model.
    id: String,
    variable: String,
    /// The option as messages name it: `--timeout`.
    flag: String,
    /// The option as clap's errors name it: `--timeout <DURATION>`, `--verbose...`.
    shown: String,
    /// What of its value may be a secret (`flags::secret_in`): the whole
    /// value, or `--cert`'s passphrase alone (its file is named in messages).
    secret: Option<String>,
    value: OsString,
    /// A switch whose variable says off: read, but it sets nothing, so it clashes with nothing.
    off: bool,
}

/// Where a side of a clash comes from.
enum Source {
    CommandLine,
    Variable(Candidate),
    /// Neither: the option's default.
    Default,
}

/// The variables of one command line: those clap reads, and those set aside.
struct Variables {
    read: Vec<Candidate>,
    /// `POLL_QUIET (the command line gives --verbose)`.
    ignored: Vec<String>,
    /// Every option's name in clap's errors and in messages: (`--state <FILE|URL>`, `--state`).
    names: Vec<(String, String)>,
    /// The options the command line gives, as messages name them.
    on_the_line: Vec<String>,
}

/// The installers' own variables (install/): no option's, and no stray.
const INSTALLERS: [&str; 2] = ["POLL_INSTALL_DIR", "POLL_DOWNLOAD_URL"];

/// The `POLL_` variables set that no option reads, for `-v` to name: a typo,
/// or a name from an older poll (`POLL_METHOD` before `POLL_REQUEST`).
/// `named` is every option's variable name, with the flag when it is never read.
fn strays(named: &[(String, Option<String>)]) -> Vec<String> {
    let mut strays: Vec<String> = std::env::vars_os()
        .filter_map(|(name, value)| name.into_string().ok().filter(|_| !value.is_empty()))
        .filter(|name| name.starts_with("POLL_") && !INSTALLERS.contains(&name.as_str()))
        .filter_map(|name| match named.iter().find(|(known, _)| *known == name) {
            Some((_, None)) => None,
            Some((_, Some(flag))) => Some(format!("{name} ({flag} is not read from the environment)")),
            None => Some(format!("{name} (no option has that name)")),
        })
        .collect();
    strays.sort();
    strays
}

impl Variables {
    /// Every variable set for an option: empty ones and those of options the
    /// command line gives are ignored at once.
    fn new(given: &Given) -> Variables {
        let mut command = flags::command();
        command.build();
        let mut variables =
            Variables { read: Vec::new(), ignored: Vec::new(), names: Vec::new(), on_the_line: Vec::new() };
        // Every option's variable name, read or not (`POLL_HEADER`: `-H` repeats), for the strays below.
        let mut named = Vec::new();
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            let flag = arg.get_long().map_or_else(|| arg.to_string(), |long| format!("--{long}"));
            variables.names.push((arg.to_string(), flag.clone()));
            if given.ids.iter().any(|given| given == id) {
                variables.on_the_line.push(flag.clone());
            }
            let read = flags::variable(arg);
            if let Some(long) = arg.get_long() {
                let name = format!("POLL_{}", long.replace('-', "_").to_ascii_uppercase());
                named.push((name, if read.is_some() { None } else { Some(flag.clone()) }));
            }
            let Some(variable) = read else { continue };
            let Some(value) = std::env::var_os(&variable) else { continue };
            if value.is_empty() {
                variables.ignored.push(format!("{variable} (empty: unset)"));
            } else if given.ids.iter().any(|given| given == id) {
                variables.ignored.push(format!("{variable} (the command line gives {flag})"));
            } else {
                let (shown, secret, off) = (arg.to_string(), flags::secret_in(arg, &value), flags::is_off(arg, &value));
                variables.read.push(Candidate { id: id.to_string(), variable, flag, shown, secret, value, off });
            }
        }
        variables.ignored.extend(strays(&named));
        variables
    }

    /// The options whose variables clap reads.
    fn ids(&self) -> Vec<String> {
        self.read.iter().filter(|c| !c.off).map(|c| c.id.clone()).collect()
    }

    /// What `-v` and messages are told.
    fn environment(&self) -> Environment {
        let used = self.read.iter().map(|c| Setting {
            variable: c.variable.clone(),
            flag: c.flag.clone(),
            secret: c.secret.clone(),
        });
        Environment { used: used.collect(), ignored: self.ignored.clone() }
    }

    /// The variable clap read for the option it names `shown` (`--timeout <DURATION>`).
    fn variable_of(&self, shown: &str) -> Option<&Candidate> {
        self.read.iter().find(|c| !c.off && c.shown == shown)
    }

    /// The option clap names `shown`, as messages name it.
    fn flag_of(&self, shown: &str) -> String {
        let found = self.names.iter().find(|(name, _)| name == shown);
        found.map_or_else(|| shown.to_string(), |(_, flag)| flag.clone())
    }

    /// Where the option `flag` (`--interval`) comes from.
    fn source(&self, flag: &str) -> Source {
        if self.on_the_line.iter().any(|given| given == flag) {
            return Source::CommandLine;
        }
        match self.read.iter().find(|c| !c.off && c.flag == flag) {
            Some(candidate) => Source::Variable(candidate.clone()),
            None => Source::Default,
        }
    }

    /// `variable` is not read, for `why`.
    fn ignore(&mut self, variable: &str, why: &str) {
        self.read.retain(|c| c.variable != variable);
        self.ignored.push(format!("{variable} ({why})"));
    }

    /// clap refused the parse: a variable that clashes with the command line
    /// or needs an option that is not there is set aside (parse again), or
    /// the refusal is a usage error.
    fn settle(&mut self, error: &clap::Error, args: &[OsString]) -> Result<(), Refused> {
        match error.kind() {
            ErrorKind::ArgumentConflict => self.settle_conflict(error),
            ErrorKind::MissingRequiredArgument => self.settle_missing(error, args),
            _ => Err(self.refuse(error)),
        }
    }

    /// clap's `conflicts_with`: an option and those it cannot stand beside.
    fn settle_conflict(&mut self, error: &clap::Error) -> Result<(), Refused> {
        let Some(first) = strings(error, ContextKind::InvalidArg).into_iter().next() else {
            return Err(self.refuse(error));
        };
        let prior = strings(error, ContextKind::PriorArg);
        match self.variable_of(&first).cloned() {
            Some(variable) => match prior.iter().find(|p| self.variable_of(p).is_none()) {
                Some(on_the_line) => {
                    let why = format!("the command line gives {}", self.flag_of(on_the_line));
                    self.ignore(&variable.variable, &why);
                    Ok(())
                }
                None => match prior.first().and_then(|p| self.variable_of(p)) {
                    Some(other) => Err(Refused::Usage(Error::usage(format!(
                        "{} and {} cannot be used together ({} and {}); unset one of them",
                        variable.variable, other.variable, variable.flag, other.flag
                    )))),
                    None => Err(self.refuse(error)),
                },
            },
            None => {
                let variables: Vec<String> =
                    prior.iter().filter_map(|p| self.variable_of(p)).map(|c| c.variable.clone()).collect();
                if variables.is_empty() {
                    return Err(self.refuse(error));
                }
                let why = format!("the command line gives {}", self.flag_of(&first));
                variables.iter().for_each(|variable| self.ignore(variable, &why));
                Ok(())
            }
        }
    }

    /// clap's `requires`: options that are not there. clap does not say
    /// which option needs them, so each variable is tried alone: one that
    /// alone leaves an option missing only means something beside it. When
    /// the command line alone leaves it missing, the error is the command
    /// line's own.
    fn settle_missing(&mut self, error: &clap::Error, args: &[OsString]) -> Result<(), Refused> {
        let missing = strings(error, ContextKind::InvalidArg);
        let missing_with = |ids: &[String]| match flags::matches(args, ids) {
            Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => {
                strings(&e, ContextKind::InvalidArg).into_iter().filter(|m| missing.contains(m)).collect()
            }
            _ => Vec::new(),
        };
        if !missing_with(&[]).is_empty() {
            return Err(self.refuse(error));
        }
        let mut needing = Vec::new();
        for candidate in self.read.iter().filter(|c| !c.off) {
            if let Some(needed) = missing_with(std::slice::from_ref(&candidate.id)).first() {
                needing.push((candidate.variable.clone(), self.flag_of(needed)));
            }
        }
        if needing.is_empty() {
            return Err(self.refuse(error));
        }
        for (variable, needed) in needing {
            self.ignore(&variable, &format!("only means something with {needed}"));
        }
        Ok(())
    }

    /// `config::clash` over a `POLL_DONE_ON` of statuses and `refused` beside
    /// ports alone: its statuses need an http(s):// target, but its `refused`
    /// means something there, so it stands alone (dropping the whole variable
    /// would wait for the port to open instead of to close).
    fn narrows(&self, clash: &Clash, cli: &mut Cli) -> bool {
        let (Source::Variable(variable), Meets::CommandLine(what)) = (self.source(clash.flag), clash.meets) else {
            return false;
        };
        if clash.flag != "--done-on" || !cli.done_on.contains(&DoneOn::Refused) {
            return false;
        }
        cli.done_on.retain(|done| *done == DoneOn::Refused);
        let why = format!("{} (its statuses: the command line gives {what}; `refused` is read)", variable.variable);
        // Told in this parse's `Cli` alone: each parse narrows it again.
        cli.environment.ignored.push(why);
        true
    }

    /// `config::clash`: whether a variable was set aside (parse again). A
    /// clash of the command line's own options, or of a variable with a
    /// default, is left to `Config`, which names the variable; two
    /// variables that clash are a usage error naming both.
    fn drops(&mut self, clash: Clash) -> Result<bool, Refused> {
        let at_fault = self.source(clash.flag);
        let ignore = |variables: &mut Variables, variable: &Candidate, why: String| {
            variables.ignore(&variable.variable, &why);
            Ok(true)
        };
        match (at_fault, clash.meets) {
            (Source::Variable(variable), Meets::Missing(other)) => {
                ignore(self, &variable, format!("only means something with {other}"))
            }
            (Source::Variable(variable), Meets::CommandLine(what)) => {
                ignore(self, &variable, format!("the command line gives {what}"))
            }
            (at_fault, Meets::Flag(other)) => match (at_fault, self.source(other)) {
                (Source::Variable(variable), Source::CommandLine) => {
                    ignore(self, &variable, format!("the command line gives {other}"))
                }
                (Source::CommandLine, Source::Variable(variable)) => {
                    ignore(self, &variable, format!("the command line gives {}", clash.flag))
                }
                (Source::Variable(first), Source::Variable(second)) => {
                    let both = format!("{} and {}", first.variable, second.variable);
                    let error = clash.error.redacted(secret(&second));
                    Err(Refused::Usage(error.set_by(clash.flag, &both, secret(&first))))
                }
                // The variable meets the other option's default: its value is what is wrong.
                (Source::Default, Source::Variable(variable)) => {
                    Err(Refused::Usage(clash.error.set_by(clash.flag, &variable.variable, secret(&variable))))
                }
                _ => Ok(false),
            },
            _ => Ok(false),
        }
    }

    /// clap's error as a usage error, naming the variable a bad value came from.
    fn refuse(&self, error: &clap::Error) -> Refused {
        let named = strings(error, ContextKind::InvalidArg).first().and_then(|shown| self.variable_of(shown));
        // A value that is not UTF-8 is named by no option in clap's error; the command line's is read first.
        let not_utf8 = || self.read.iter().find(|c| !c.off && c.value.to_str().is_none());
        let named = named.or_else(|| (error.kind() == ErrorKind::InvalidUtf8).then(not_utf8).flatten());
        let from = named.map(|c| (c.variable.as_str(), c.secret.is_some()));
        Refused::Usage(Error::usage(flags::one_line(error, from)))
    }
}

/// What of a variable's value may carry a secret.
fn secret(candidate: &Candidate) -> Option<&str> {
    candidate.secret.as_deref()
}

/// The options a clap error names under `kind`, as it names them (`--state <FILE|URL>`).
fn strings(error: &clap::Error, kind: ContextKind) -> Vec<String> {
    match error.get(kind) {
        Some(ContextValue::String(one)) => vec![one.clone()],
        Some(ContextValue::Strings(many)) => many.clone(),
        _ => Vec::new(),
    }
}
