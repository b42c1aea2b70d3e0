//! The `--state` file reader: any bytes either parse to a state that writes
//! back to bytes that parse to the same state, or are refused; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use poll::state::State;

fuzz_target!(|data: &[u8]| {
    if let Ok(state) = State::from_json(data) {
        let written = state.to_json();
        let again = State::from_json(&written).expect("a state poll wrote must read back");
        assert_eq!(again.to_json(), written, "round trip changed the state");
    }
});
