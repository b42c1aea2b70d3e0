//! jq filters: the first line is compiled as a filter (anything may be typed
//! there), the rest is judged as a response body.
//!
//! A filter that compiles is evaluated only when it cannot loop or recurse
//! forever: `def f: f; f` overflows any stack and `last(repeat(1))` never ends,
//! in jq as in poll, and the fuzzer would only rediscover that.
#![no_main]

use libfuzzer_sys::fuzz_target;
use poll::condition::{Conditions, Filter, Input};

/// Like poll's own main thread (see src/main.rs): jaq recurses.
const STACK_SIZE: usize = 256 << 20;

const UNBOUNDED: &[&str] =
    &["def", "repeat", "range", "recurse", "while", "until", "limit", "walk", "..", "env", "input"];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let (source, body) = text.split_once('\n').unwrap_or((&text, "{}"));
    let (source, body) = (source.to_string(), body.as_bytes().to_vec());
    let work = move || {
        let Ok(filter) = Filter::compile(&source) else { return };
        if UNBOUNDED.iter().any(|word| source.contains(word)) {
            return;
        }
        if let Some(input) = Input::parse(&body) {
            let _ = filter.holds(&input);
            let _ = filter.show(&input);
        }
        let conditions = Conditions { until: Some(filter), fail_when: None, show: None };
        let _ = conditions.judge(&body);
    };
    let joined = std::thread::Builder::new().stack_size(STACK_SIZE).spawn(work).map(|t| t.join());
    if let Ok(Err(panic)) = joined {
        std::panic::resume_unwind(panic);
    }
});
