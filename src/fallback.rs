//! `--fallback`: the body that stands in on stdout (or `-o`) when a run ends
//! with exit 1, 5 or 6, so a pipeline can carry on with a known answer. The
//! exit code stays what it was.

use std::path::PathBuf;

use crate::config::{Config, Fallback};
use crate::error::Error;
use crate::state::{self, Store};

/// What `--fallback` needs once the run is over, taken from the `Config`
/// before [`crate::run`] consumes it.
#[derive(Debug, Clone)]
pub struct Rescue {
    fallback: Option<Fallback>,
    state: Option<PathBuf>,
    url: String,
}

impl Rescue {
    pub fn new(config: &Config) -> Rescue {
        Rescue {
            fallback: config.limits.fallback.clone(),
            state: config.limits.state.clone(),
            url: config.request.url.clone(),
        }
    }

    /// The body to print for a run that ended with `result`: only for exit
    /// 1, 5 and 6, and for `last` only when a good body was kept.
    pub fn body(&self, result: &Result<Vec<u8>, Error>, warn: &mut dyn FnMut(&str)) -> Option<Vec<u8>> {
        let code = result.as_ref().err().map(Error::exit_code);
        if !matches!(code, Some(1 | 5 | 6)) {
            return None;
        }
        match (self.fallback.as_ref()?, &self.state) {
            (Fallback::Body(body), _) => Some(body.clone()),
            (Fallback::Last, Some(path)) => match state::last_good(&Store::new(path), &self.url, warn) {
                Ok(body) => body,
                Err(e) => {
                    warn(&format!("--fallback last: {e}"));
                    None
                }
            },
            // Config refuses `last` without `--state`.
            (Fallback::Last, None) => None,
        }
    }
}
