//! The flag-value parsers: durations, sizes, rates, headers and status codes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use poll::parse;

fuzz_target!(|data: &[u8]| {
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
});
