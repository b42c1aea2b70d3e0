//! The bodies of the fuzz targets (`fuzz/fuzz_targets/*.rs` are one-line
//! calls), so that `cargo test` builds them and runs them on the seeds in
//! `fuzz/seeds/`: a target that no longer compiles fails the tests.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::rules::advice::{self, Advice};
use crate::rules::condition::{Conditions, Filter, Input};
use crate::state::State;
use crate::util::parse;

/// Words of filters that may loop or recurse forever (`def f: f; f`,
/// `last(repeat(1))`), in jq as in poll: such a filter is compiled, not run.
const UNBOUNDED: &[&str] =
    &["def", "repeat", "range", "recurse", "while", "until", "limit", "walk", "..", "env", "input"];

/// Inputs of the jq target this long or shorter run on the caller's thread.
/// jaq's parser, compiler and evaluator recurse at most about once per byte
/// of filter, and a body nests at most 128 deep; with AddressSanitizer a
/// 256-byte chain such as `- - - ... 1` or `not|not|...` runs in a 1 MiB
/// stack, and libFuzzer calls the target on the main thread (8 MiB here),
/// `cargo test` on a thread of 2 MiB. The same chain of 1 KiB overflows 1 MiB.
const ON_THE_CALLERS_STACK: usize = 256;

/// jq filters: the first line is compiled as a filter, the rest is judged as a
/// body. A short input runs on the caller's thread; a longer one (whose filter
/// may nest deeper) on one worker thread with poll's own stack, made once: a
/// thread per input would cost more than the filter, and handing every input
/// to the worker, waking it and being woken, cost about a quarter of the
/// target's time.
pub fn jq(data: &[u8]) {
    if data.len() <= ON_THE_CALLERS_STACK {
        return jq_on_this_thread(data);
    }
    type Job = (Vec<u8>, mpsc::Sender<()>);
    static WORKER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let worker = WORKER.get_or_init(|| {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let spawned = crate::run::spawn_on_a_large_stack("fuzz-jq", move || {
            for (data, done) in inbox {
                jq_on_this_thread(&data);
                let _ = done.send(());
            }
        });
        if let Err(e) = spawned {
            panic!("cannot start the fuzz worker: {e}");
        }
        Mutex::new(jobs)
    });
    let (done, finished) = mpsc::channel();
    let sent = crate::util::sync::lock(worker).send((data.to_vec(), done));
    // A worker that panicked drops its channel: the panic is the finding.
    if sent.is_err() || finished.recv().is_err() {
        panic!("the jq worker panicked");
    }
}

fn jq_on_this_thread(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (source, body) = text.split_once('\n').unwrap_or((&text, "{}"));
    let Ok(filter) = Filter::compile(source) else { return };
    if UNBOUNDED.iter().any(|word| source.contains(word)) {
        return;
    }
    // `judge` runs `holds`; `show` the same first output, labelled.
    if let Ok(input) = Input::parse(body.as_bytes()) {
        let _ = filter.show(&input);
    }
    let conditions = Conditions { until: Some(filter), ..Conditions::default() };
    let _ = conditions.judge(body.as_bytes());
}

/// Retry-After and every rate-limit header form: header lines parse to some
/// advice or none, never a panic.
pub fn advice(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let now = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let headers: Vec<(&str, &str)> = text.lines().filter_map(|line| line.split_once(':')).collect();
    let _ = Advice::from_headers(headers.iter().copied(), now);
    for now in [now, UNIX_EPOCH, SystemTime::UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX) * 4)] {
        let _ = advice::retry_after(&text, now);
        let _ = advice::reset(&text, now);
    }
}

/// The flag-value parsers: durations, sizes, rates, headers and status codes.
pub fn flags(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = parse::duration(&text);
    let _ = parse::size(&text);
    let _ = parse::rate(&text);
    for code in text.split(',') {
        let _ = parse::status(code);
    }
    if let Ok((name, value)) = parse::header(&text) {
        // Whatever is accepted can never split a request apart.
        assert!(!name.contains(['\r', '\n', '\0', ':']), "{name:?}");
        assert!(!value.contains(['\r', '\n', '\0']), "{value:?}");
    }
}

/// The `--state` file reader: any bytes parse to a state that writes back to
/// bytes that parse to the same state, or are refused; and the steps a store
/// takes on what it read never panic.
pub fn state(data: &[u8]) {
    if let Ok(state) = State::from_json(data) {
        let written = state.to_json();
        let again = State::from_json(&written);
        assert!(
            again.as_ref().is_ok_and(|again| again.to_json() == written),
            "a state poll wrote must read back the same"
        );
        // Whatever the values (times near u64::MAX, huge windows), the steps on them never panic.
        for now in [0, crate::util::clock::now_ms(), u64::MAX - 1] {
            state.clone().step_every_key(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every target on every seed of its folder in `fuzz/seeds/`.
    #[test]
    fn every_target_runs_on_its_seeds() {
        type Target = fn(&[u8]);
        let targets: [(&str, Target); 4] =
            [("jq", super::jq), ("advice", super::advice), ("flags", super::flags), ("state", super::state)];
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
        for (name, target) in targets {
            let mut count = 0;
            for seed in std::fs::read_dir(seeds.join(name)).expect("a seed folder").flatten() {
                target(&std::fs::read(seed.path()).expect("a seed"));
                count += 1;
            }
            assert!(count >= 3, "{name} has {count} seeds");
        }
    }

    /// The hostile state seeds (times near u64::MAX, negative ones, a window
    /// over 1,000 outcomes) parse, so that their values reach the checks and
    /// the steps rather than stopping at the parser.
    #[test]
    fn the_hostile_state_seeds_parse() {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/state");
        let mut count = 0;
        for seed in std::fs::read_dir(seeds).expect("a seed folder").flatten() {
            if seed.file_name().to_string_lossy().starts_with("hostile-") {
                let parsed = crate::state::State::from_json(&std::fs::read(seed.path()).expect("a seed"));
                assert!(parsed.is_ok(), "{:?}: {parsed:?}", seed.file_name());
                count += 1;
            }
        }
        assert!(count >= 4, "{count} hostile seeds");
    }

    /// The longest filter there is, nested as deep as one can be (a chain of
    /// 2,000 `-`), overflows a test thread's stack: it must go to the worker.
    /// (Not a seed: libFuzzer would then make inputs of 4 KiB from the start.)
    #[test]
    fn a_deep_jq_input_runs_on_the_worker() {
        let deep = format!("{}1\n{{}}", "- ".repeat(1999));
        assert!(deep.len() > super::ON_THE_CALLERS_STACK);
        super::jq(deep.as_bytes());
        super::jq(deep.as_bytes());
    }

    /// The deepest chains that run on the caller's thread do, on a test
    /// thread's 2 MiB, unoptimised.
    #[test]
    fn the_deepest_short_jq_inputs_run_on_the_callers_stack() {
        let most = super::ON_THE_CALLERS_STACK;
        for (unit, end) in [("- ", "1"), ("not|", "not"), ("[", ""), (".|", ".")] {
            let chain = unit.repeat((most - end.len()) / unit.len()) + end;
            assert!(chain.len() <= most && chain.len() > most - unit.len(), "{}", chain.len());
            super::jq(chain.as_bytes());
        }
    }
}
