//! A streaming reply's body as a sequence of events, for `poll --watch`:
//! Server-Sent Events by the WHATWG rules ("Interpreting an event stream"), or
//! JSON values as they complete (one document, NDJSON, RFC 7464 json-seq,
//! values back to back). Pure: it reads a `BufRead`, returns each event as
//! soon as its last byte is read, and holds at most one line and one event.

use std::fmt;
use std::io::{self, BufRead};
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;

/// The longest event-stream line read, comments included.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// The line buffer's capacity kept between lines: a longer line's is given back.
const KEPT: usize = 4 << 10;

/// What a UTF-8 stream may start with, and an event stream skips.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// RFC 7464's record separator, which a json-seq stream puts before each value.
const RS: u8 = 0x1E;

/// How a reply's body is framed: by its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Sse,
    Json,
}

impl Framing {
    /// `text/event-stream` (in any case, with or without parameters) is Server-Sent Events; anything else is
    /// read as JSON, which fails loudly on a body that is not.
    pub(crate) fn of(content_type: Option<&str>) -> Framing {
        let essence = content_type.and_then(|t| t.split(';').next()).unwrap_or_default().trim();
        match essence.eq_ignore_ascii_case("text/event-stream") {
            true => Framing::Sse,
            false => Framing::Json,
        }
    }
}

/// One event of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// SSE: the event's type, "message" when it has none; a JSON stream: None.
    pub kind: Option<String>,
    /// SSE: the `id:` this event carried, if it carried one (None otherwise); JSON: None.
    pub id: Option<String>,
    /// The event as JSON text: a JSON stream's value as its bytes; SSE data that parses as JSON as it is,
    /// other SSE data as a JSON string (serde_json's encoding of the text).
    pub data: Vec<u8>,
}

/// Why a stream can be read no further.
#[derive(Debug)]
pub(crate) enum Broken {
    /// An event (an SSE event's data lines, or one JSON value) over `limit` bytes.
    TooLarge { limit: u64 },
    /// An SSE line over MAX_LINE (1 MiB), comments included.
    LineTooLong,
    /// Bytes that are no JSON value in a JSON stream, or a stream that ends inside a value; the String says
    /// what, for people (short, one line).
    Malformed(String),
    /// The reader's own error (a reset, a timeout), untouched, so the caller can classify it.
    Io(io::Error),
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::TooLarge { limit } => write!(f, "an event over --max-body ({limit} bytes)"),
            Broken::LineTooLong => write!(f, "an event-stream line over 1 MiB"),
            Broken::Malformed(what) => write!(f, "malformed JSON in the stream: {what}"),
            Broken::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Broken {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Broken::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// The events of one reply's body.
pub(crate) struct Events<R> {
    reader: R,
    /// The most bytes one event may hold.
    limit: u64,
    reading: Reading,
    /// An error was returned: the stream is read no further.
    broken: bool,
}

/// The framing, with what it keeps between events.
enum Reading {
    Sse(Sse),
    Json,
}

impl<R: BufRead> Events<R> {
    pub(crate) fn new(reader: R, framing: Framing, max_event: u64) -> Events<R> {
        let reading = match framing {
            Framing::Sse => Reading::Sse(Sse::default()),
            Framing::Json => Reading::Json,
        };
        Events { reader, limit: max_event, reading, broken: false }
    }

    /// The next complete event; None when the stream ended cleanly (at EOF between events; an SSE event cut
    /// off by EOF is discarded, as the WHATWG rules say). After an error, None.
    pub(crate) fn next_event(&mut self) -> Option<Result<Event, Broken>> {
        if self.broken {
            return None;
        }
        let next = match &mut self.reading {
            Reading::Sse(sse) => sse.next_event(&mut self.reader, self.limit),
            Reading::Json => next_value(&mut self.reader, self.limit),
        };
        self.broken = matches!(next, Some(Err(_)));
        next
    }

    /// SSE: the last event ID string (the `id:` buffer as of the last dispatch; Some("") means "reset").
    /// None until an id was seen, and for JSON.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        match &self.reading {
            Reading::Sse(sse) => sse.last_id.as_deref(),
            Reading::Json => None,
        }
    }

    /// SSE: the last valid `retry:` value. None otherwise.
    pub(crate) fn retry(&self) -> Option<Duration> {
        match &self.reading {
            Reading::Sse(sse) => sse.retry,
            Reading::Json => None,
        }
    }

    /// The bytes the buffers hold between events (their capacity), for the test that they stay flat.
    #[cfg(test)]
    fn held(&self) -> usize {
        match &self.reading {
            Reading::Sse(sse) => sse.line.capacity() + sse.data.capacity() + sse.kind.capacity(),
            Reading::Json => 0,
        }
    }
}

/// The WHATWG parser's buffers between reads.
#[derive(Default)]
struct Sse {
    /// The line read so far, without its end.
    line: Vec<u8>,
    /// The last line ended with CR: an LF next belongs to it, and is no empty line.
    after_cr: bool,
    /// A line has been read: a BOM is skipped at the start of the first only.
    started: bool,
    /// The data buffer: each `data` line's value and an LF.
    data: String,
    /// The event type buffer.
    kind: String,
    /// The `id` this event carried.
    id: Option<String>,
    /// The last event ID string.
    last_id: Option<String>,
    /// The reconnection time.
    retry: Option<Duration>,
}

impl Sse {
    fn next_event<R: BufRead>(&mut self, reader: &mut R, limit: u64) -> Option<Result<Event, Broken>> {
        loop {
            match self.read_line(reader) {
                Ok(true) => {}
                // Pending data is discarded at the end, as is a line with no end.
                Ok(false) => return None,
                Err(broken) => return Some(Err(broken)),
            }
            let line = std::mem::take(&mut self.line);
            let first = !std::mem::replace(&mut self.started, true);
            let bare = match first {
                true => line.strip_prefix(BOM).unwrap_or(&line),
                false => &line,
            };
            let event = self.interpret(bare, limit);
            self.line = line;
            match event {
                Ok(None) => {}
                Ok(Some(event)) => return Some(Ok(event)),
                Err(broken) => return Some(Err(broken)),
            }
        }
    }

    /// Reads the next line into `line`, up to its end and no further, so that an event is returned without a
    /// read past the blank line that ends it: false at the end of the stream.
    fn read_line<R: BufRead>(&mut self, reader: &mut R) -> Result<bool, Broken> {
        if self.line.capacity() > KEPT {
            self.line = Vec::new();
        }
        self.line.clear();
        loop {
            let bytes = match reader.fill_buf() {
                Ok(bytes) => bytes,
                // Tried again, as `read_until` does.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Broken::Io(e)),
            };
            if bytes.is_empty() {
                return Ok(false);
            }
            // A CR ends its line at once; an LF that follows is the rest of that line's end.
            let skip = usize::from(std::mem::take(&mut self.after_cr) && bytes[0] == b'\n');
            let rest = &bytes[skip..];
            let end = rest.iter().position(|&b| b == b'\n' || b == b'\r');
            let taken = end.unwrap_or(rest.len());
            if self.line.len() + taken > MAX_LINE {
                return Err(Broken::LineTooLong);
            }
            self.line.extend_from_slice(&rest[..taken]);
            if let Some(end) = end {
                self.after_cr = rest[end] == b'\r';
                reader.consume(skip + end + 1);
                return Ok(true);
            }
            reader.consume(skip + taken);
        }
    }

    /// One line's meaning: the event a blank line dispatches, if any.
    fn interpret(&mut self, line: &[u8], limit: u64) -> Result<Option<Event>, Broken> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return Ok(None),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                let value = String::from_utf8_lossy(value);
                // Counted as dispatched: without the LF that ends the last line.
                if over(self.data.len() + value.len(), limit) {
                    return Err(Broken::TooLarge { limit });
                }
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"event" => self.kind = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => self.id = Some(String::from_utf8_lossy(value).into_owned()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so UTF-8; a number past u64 is ignored as the spec's other invalid values are.
                if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// A blank line: the event of the buffers, if they have data; the buffers are emptied either way.
    fn dispatch(&mut self) -> Option<Event> {
        let id = self.id.take();
        if id.is_some() {
            self.last_id.clone_from(&id);
        }
        let kind = std::mem::take(&mut self.kind);
        // Taken, not cleared: no buffer keeps the bytes of an event returned.
        let mut data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return None;
        }
        if data.ends_with('\n') {
            data.pop();
        }
        let kind = match kind.is_empty() {
            true => "message".to_string(),
            false => kind,
        };
        Some(Event { kind: Some(kind), id, data: as_json(data) })
    }
}

/// SSE data as JSON text: as it is when it is one JSON value, else as a JSON string.
fn as_json(data: String) -> Vec<u8> {
    match serde_json::from_str::<IgnoredAny>(&data) {
        Ok(_) => data.into_bytes(),
        Err(_) => serde_json::Value::String(data).to_string().into_bytes(),
    }
}

/// Whether `len` bytes are over `limit`.
fn over(len: usize, limit: u64) -> bool {
    u64::try_from(len).map_or(true, |len| len > limit)
}

/// Whitespace between JSON values, and json-seq's separator before them.
fn separates(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | RS)
}

/// The next JSON value of the stream, past the separators before it.
fn next_value<R: BufRead>(reader: &mut R, limit: u64) -> Option<Result<Event, Broken>> {
    let first = loop {
        let bytes = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(Broken::Io(e))),
        };
        if bytes.is_empty() {
            return None;
        }
        match bytes.iter().position(|&b| !separates(b)) {
            Some(start) => {
                let first = bytes[start];
                reader.consume(start);
                break first;
            }
            None => {
                let all = bytes.len();
                reader.consume(all);
            }
        }
    };
    let value = match first {
        b'{' | b'[' | b'"' => delimited(reader, limit),
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => bare(reader, limit),
        _ => Err(Broken::Malformed(format!("`{}` where a value starts", first.escape_ascii()))),
    };
    Some(value.map(|data| Event { kind: None, id: None, data }))
}

/// An object, array or string: serde_json reads it one byte at a time up to its closing byte, and no further.
fn delimited<R: BufRead>(reader: &mut R, limit: u64) -> Result<Vec<u8>, Broken> {
    let mut value = Recorder { reader, bytes: Vec::new(), left: limit, refused: false };
    // IgnoredAny: serde_json checks the value without building it, with no depth limit (no recursion).
    let read = IgnoredAny::deserialize(&mut serde_json::Deserializer::from_reader(&mut value));
    match read {
        _ if value.refused => Err(Broken::TooLarge { limit }),
        Ok(_) => utf8(value.bytes),
        Err(e) if e.is_io() => Err(Broken::Io(io::Error::from(e))),
        Err(e) => Err(Broken::Malformed(described(&e))),
    }
}

/// A number, `true`, `false` or `null`: its end shows only at the byte after it (a separator, or the start
/// of a delimited value), or at the end of the stream.
fn bare<R: BufRead>(reader: &mut R, limit: u64) -> Result<Vec<u8>, Broken> {
    let mut token = Vec::new();
    loop {
        let bytes = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Broken::Io(e)),
        };
        let end = bytes.iter().position(|&b| separates(b) || matches!(b, b'{' | b'[' | b'"'));
        let taken = end.unwrap_or(bytes.len());
        let last = end.is_some() || bytes.is_empty();
        if over(token.len() + taken, limit) {
            return Err(Broken::TooLarge { limit });
        }
        token.extend_from_slice(&bytes[..taken]);
        reader.consume(taken);
        if last {
            break;
        }
    }
    match serde_json::from_slice::<IgnoredAny>(&token) {
        Ok(_) => Ok(token),
        Err(_) => {
            let shown: String = String::from_utf8_lossy(&token).chars().take(32).collect();
            Err(Broken::Malformed(format!("`{}` is no JSON value", shown.escape_debug())))
        }
    }
}

/// A value's bytes, which JSON text holds as UTF-8 (serde_json checks no string it skips).
fn utf8(bytes: Vec<u8>) -> Result<Vec<u8>, Broken> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => Ok(bytes),
        Err(_) => Err(Broken::Malformed("a value that is not UTF-8".to_string())),
    }
}

/// serde_json's words without their place, which counts from the value's start, not the stream's.
fn described(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&place).unwrap_or(&text).to_string()
}

/// The reader as serde_json reads one value: the bytes it hands over, kept, up to `left` of them.
struct Recorder<'a, R> {
    reader: &'a mut R,
    bytes: Vec<u8>,
    left: u64,
    /// serde_json asked for a byte past the limit.
    refused: bool,
}

impl<R: BufRead> io::Read for Recorder<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let bytes = self.reader.fill_buf()?;
        if bytes.is_empty() || out.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            self.refused = true;
            return Err(io::Error::other("an event over the limit"));
        }
        let n = out.len().min(bytes.len()).min(usize::try_from(self.left).unwrap_or(usize::MAX));
        out[..n].copy_from_slice(&bytes[..n]);
        self.bytes.extend_from_slice(&bytes[..n]);
        self.reader.consume(n);
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::io::{BufReader, Read};

    /// How a scripted reader ends after its chunks.
    #[derive(Clone, Copy)]
    enum Then {
        Eof,
        TimedOut,
    }

    /// A reader that hands out its chunks one read each, then ends as told.
    struct Chunks {
        chunks: VecDeque<Vec<u8>>,
        then: Then,
    }

    impl Read for Chunks {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let Some(chunk) = self.chunks.front_mut() else {
                return match self.then {
                    Then::Eof => Ok(0),
                    Then::TimedOut => Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")),
                };
            };
            let n = out.len().min(chunk.len());
            out[..n].copy_from_slice(&chunk[..n]);
            chunk.drain(..n);
            if chunk.is_empty() {
                self.chunks.pop_front();
            }
            Ok(n)
        }
    }

    fn chunked(chunks: &[&[u8]], then: Then) -> BufReader<Chunks> {
        // An empty read is the end: no chunk is empty.
        let chunks = chunks.iter().filter(|c| !c.is_empty()).map(|c| c.to_vec()).collect();
        BufReader::new(Chunks { chunks, then })
    }

    /// Every event until the end, and the error that ended the stream, if one did.
    fn all<R: BufRead>(mut events: Events<R>) -> (Vec<Event>, Option<Broken>) {
        let mut found = Vec::new();
        while let Some(next) = events.next_event() {
            match next {
                Ok(event) => found.push(event),
                Err(broken) => {
                    assert!(events.next_event().is_none(), "nothing after an error");
                    return (found, Some(broken));
                }
            }
        }
        (found, None)
    }

    fn read(framing: Framing, stream: &[u8], limit: u64) -> (Vec<Event>, Option<Broken>) {
        all(Events::new(stream, framing, limit))
    }

    /// The (kind, id, data) of an event-stream's events; the stream must end cleanly.
    fn sse(stream: &str) -> Vec<(String, Option<String>, String)> {
        sse_bytes(stream.as_bytes())
    }

    fn sse_bytes(stream: &[u8]) -> Vec<(String, Option<String>, String)> {
        let (events, broken) = read(Framing::Sse, stream, 1 << 20);
        assert!(broken.is_none(), "{stream:?}: {broken:?}");
        events.into_iter().map(shown).collect()
    }

    fn shown(event: Event) -> (String, Option<String>, String) {
        let data = String::from_utf8(event.data).expect("UTF-8");
        (event.kind.expect("an SSE event has a type"), event.id, data)
    }

    /// The data of a JSON stream's values; the stream must end cleanly.
    fn json(stream: &[u8]) -> Vec<String> {
        let (events, broken) = read(Framing::Json, stream, 1 << 20);
        assert!(broken.is_none(), "{stream:?}: {broken:?}");
        events.into_iter().map(|e| String::from_utf8(e.data).expect("UTF-8")).collect()
    }

    fn message(data: &str) -> (String, Option<String>, String) {
        ("message".to_string(), None, data.to_string())
    }

    fn with_id(data: &str, id: &str) -> (String, Option<String>, String) {
        ("message".to_string(), Some(id.to_string()), data.to_string())
    }

    #[test]
    fn framing_is_the_content_types() {
        let table = [
            (Some("text/event-stream"), Framing::Sse),
            (Some("Text/Event-Stream"), Framing::Sse),
            (Some("text/event-stream; charset=utf-8"), Framing::Sse),
            (Some("  text/event-stream ;charset=utf-8"), Framing::Sse),
            (Some("text/event-stream;"), Framing::Sse),
            (Some("application/json"), Framing::Json),
            (Some("application/x-ndjson"), Framing::Json),
            (Some("text/event-streams"), Framing::Json),
            (Some("text/plain; x=text/event-stream"), Framing::Json),
            (Some(""), Framing::Json),
            (None, Framing::Json),
        ];
        for (content_type, framing) in table {
            assert_eq!(Framing::of(content_type), framing, "{content_type:?}");
        }
    }

    #[test]
    fn the_specs_examples() {
        // The stock ticker: one event of three lines.
        assert_eq!(sse("data: YHOO\ndata: +2\ndata: 10\n\n"), [message("\"YHOO\\n+2\\n10\"")]);
        // A comment, ids, an id reset and one leading space removed of two.
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n";
        assert_eq!(
            sse(stream),
            [with_id("\"first event\"", "1"), with_id("\"second event\"", ""), message("\" third event\"")]
        );
        let mut events = Events::new(stream.as_bytes(), Framing::Sse, 1 << 20);
        let mut last_ids = Vec::new();
        while let Some(Ok(_)) = events.next_event() {
            last_ids.push(events.last_event_id().map(str::to_string));
        }
        assert_eq!(last_ids, [Some("1".to_string()), Some(String::new()), Some(String::new())]);
        // Two events, "" and "\n"; the last block has no blank line after it and is discarded.
        assert_eq!(sse("data\n\ndata\ndata\n\ndata:"), [message("\"\""), message("\"\\n\"")]);
        // The space after the colon is ignored if present: two identical events.
        assert_eq!(sse("data:test\n\ndata: test\n\n"), [message("\"test\""), message("\"test\"")]);
        // Two event types.
        let typed = "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n";
        let kinds: Vec<(String, String)> = sse(typed).into_iter().map(|(kind, _, data)| (kind, data)).collect();
        let expected = [("add", "73857293"), ("remove", "2153"), ("add", "113411")];
        assert_eq!(kinds, expected.map(|(k, d)| (k.to_string(), d.to_string())));
    }

    #[test]
    fn event_streams() {
        type Expected = &'static [(&'static str, Option<&'static str>, &'static str)];
        let table: &[(&str, Expected)] = &[
            // Line ends: CRLF, CR alone, LF alone, mixed.
            ("data: a\r\n\r\ndata: b\r\n\r\n", &[("message", None, "\"a\""), ("message", None, "\"b\"")]),
            ("data: a\r\rdata: b\r\r", &[("message", None, "\"a\""), ("message", None, "\"b\"")]),
            ("event: e\r\nid: 1\rdata: one\ndata: two\r\n\r\n", &[("e", Some("1"), "\"one\\ntwo\"")]),
            // A CR then an LF is one line end; an LF then a CR is two.
            ("data: a\n\rdata: b\n\n", &[("message", None, "\"a\""), ("message", None, "\"b\"")]),
            // A BOM is skipped once, at the start only.
            ("\u{FEFF}data: a\n\n", &[("message", None, "\"a\"")]),
            ("\u{FEFF}\u{FEFF}data: a\n\n", &[]),
            ("data: a\n\n\u{FEFF}data: b\n\n", &[("message", None, "\"a\"")]),
            // Comments and heartbeats make no event.
            (":\n\n: ping\n\n\n\n\r\n:\r", &[]),
            (": ping\ndata: x\n: pong\n\n", &[("message", None, "\"x\"")]),
            // Unknown fields are ignored; a field name is the whole line without a colon.
            ("foo: bar\ndata: x\nDATA: y\ndata : z\n\n", &[("message", None, "\"x\"")]),
            ("data\ndata: x\n\n", &[("message", None, "\"\\nx\"")]),
            // The type defaults to "message", also when set empty, and lasts one event.
            ("event:\ndata: x\n\n", &[("message", None, "\"x\"")]),
            ("event: ignored\n\ndata: x\n\n", &[("message", None, "\"x\"")]),
            ("event: a\nevent: b\ndata: x\n\ndata: y\n\n", &[("b", None, "\"x\""), ("message", None, "\"y\"")]),
            // An id is this event's only; one with NUL is ignored.
            ("id: 7\ndata: a\n\ndata: b\n\n", &[("message", Some("7"), "\"a\""), ("message", None, "\"b\"")]),
            ("id: 5\ndata: a\n\nid: 6\0\ndata: b\n\n", &[("message", Some("5"), "\"a\""), ("message", None, "\"b\"")]),
            ("id: 1\nid: 2\0\ndata: a\n\n", &[("message", Some("1"), "\"a\"")]),
            // Data that is JSON stays as it is; other data becomes a JSON string.
            ("data: {\"a\": 1}\n\n", &[("message", None, "{\"a\": 1}")]),
            ("data: {\ndata: \"a\": [1,\ndata: 2]}\n\n", &[("message", None, "{\n\"a\": [1,\n2]}")]),
            (
                "data: 42\n\ndata: null\n\ndata: \"s\"\n\n",
                &[("message", None, "42"), ("message", None, "null"), ("message", None, "\"s\"")],
            ),
            ("data: hello\n\n", &[("message", None, "\"hello\"")]),
            ("data: {\"a\": 1\n\n", &[("message", None, "\"{\\\"a\\\": 1\"")]),
            ("data: 1 2\n\n", &[("message", None, "\"1 2\"")]),
            ("data: \"tab\there\"\n\n", &[("message", None, "\"\\\"tab\\there\\\"\"")]),
            ("data: ünï\n\n", &[("message", None, "\"ünï\"")]),
            // An event cut off by the end is discarded, as is a line with no end.
            ("data: a\n", &[]),
            ("data: a\n\ndata: b", &[("message", None, "\"a\"")]),
            ("", &[]),
        ];
        for (stream, expected) in table {
            let expected: Vec<_> =
                expected.iter().map(|(k, id, d)| (k.to_string(), id.map(str::to_string), d.to_string())).collect();
            assert_eq!(sse(stream), expected, "{stream:?}");
        }
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            sse_bytes(b"data: a\xFFb\nevent: \xC3\n\n"),
            [("\u{FFFD}".to_string(), None, "\"a\u{FFFD}b\"".to_string())]
        );
        // A BOM cut short is no BOM: its bytes are part of the field name.
        assert_eq!(sse_bytes(b"\xEF\xBBdata: a\n\n"), []);
    }

    #[test]
    fn the_last_event_id_is_set_at_dispatch() {
        let mut events = Events::new(&b"id: 7\n\nid: 8\ndata: a\n\nid\n\ndata: b\nid: 9"[..], Framing::Sse, 100);
        assert_eq!(events.last_event_id(), None);
        let a = events.next_event().expect("an event").expect("no error");
        // `id: 7` with no data dispatched no event, but set the last event ID string; `id: 8` replaced it.
        assert_eq!((a.id.as_deref(), events.last_event_id()), (Some("8"), Some("8")));
        // `id` alone, then the end inside an event: the reset stands, the 9 was never dispatched.
        assert!(events.next_event().is_none());
        assert_eq!(events.last_event_id(), Some(""));
        assert_eq!(Events::new(&b"id: 1"[..], Framing::Json, 100).last_event_id(), None);
    }

    #[test]
    fn retry_takes_ascii_digits_only() {
        let table: &[(&str, Option<u64>)] = &[
            ("retry: 5000\n", Some(5000)),
            ("retry:250\n", Some(250)),
            ("retry: 0\n", Some(0)),
            ("retry: 5000\nretry: 1a\n", Some(5000)),
            ("retry: -1\n", None),
            ("retry: +1\n", None),
            ("retry: 1.5\n", None),
            ("retry: 10 \n", None),
            ("retry:  10\n", None),
            ("retry:\n", None),
            ("retry\n", None),
            ("retry: 99999999999999999999999\n", None),
            ("retry: 1000\nretry: 99999999999999999999999\n", Some(1000)),
            ("retry: 18446744073709551615\n", Some(u64::MAX)),
            ("retry: ٣\n", None),
            ("Retry: 10\n", None),
        ];
        for (stream, ms) in table {
            let mut events = Events::new(stream.as_bytes(), Framing::Sse, 100);
            assert!(events.next_event().is_none(), "{stream:?}");
            assert_eq!(events.retry(), ms.map(Duration::from_millis), "{stream:?}");
        }
    }

    #[test]
    fn json_streams() {
        let table: &[(&[u8], &[&str])] = &[
            // One document, pretty-printed: its bytes as they came.
            (b"{\n  \"a\": [1, 2],\n  \"b\": {\"c\": null}\n}\n", &["{\n  \"a\": [1, 2],\n  \"b\": {\"c\": null}\n}"]),
            (b"[]", &["[]"]),
            (b"\"just a string\"", &["\"just a string\""]),
            (b"42", &["42"]),
            (b" -1.5e3 ", &["-1.5e3"]),
            // NDJSON / JSON Lines, with CRLF and blank lines.
            (b"{\"a\":1}\n{\"a\":2}\n", &["{\"a\":1}", "{\"a\":2}"]),
            (b"{\"a\":1}\r\n\r\n{\"a\":2}\r\n", &["{\"a\":1}", "{\"a\":2}"]),
            (b"1\n2\ntrue\nnull\nfalse\n\"x\"\n", &["1", "2", "true", "null", "false", "\"x\""]),
            // RFC 7464 json-seq: RS before each value.
            (b"\x1e{\"a\":1}\n\x1e[2]\n\x1e3\n", &["{\"a\":1}", "[2]", "3"]),
            (b"\x1e\x1e{}\x1e", &["{}"]),
            // Back to back.
            (b"{\"a\":1}{\"b\":2}", &["{\"a\":1}", "{\"b\":2}"]),
            (b"[1][2]", &["[1]", "[2]"]),
            (b"\"a\"\"b\"", &["\"a\"", "\"b\""]),
            (b"1[2]3{}", &["1", "[2]", "3", "{}"]),
            (b"null\"x\"", &["null", "\"x\""]),
            // Whitespace anywhere between, none at all, or only whitespace.
            (b" \t\r\n{ \"a\" : [ 1 , 2 ] }\t \n[ ]\n", &["{ \"a\" : [ 1 , 2 ] }", "[ ]"]),
            (b"", &[]),
            (b" \n\x1e\t\r\n", &[]),
            // Strings with escapes, braces and brackets inside; deep nesting.
            (b"{\"a\":\"}]\\\"{[\\\\\"}", &["{\"a\":\"}]\\\"{[\\\\\"}"]),
            (b"\"\\u00e9\\n\" \"\xC3\xA9\"", &["\"\\u00e9\\n\"", "\"\u{e9}\""]),
        ];
        for (stream, expected) in table {
            assert_eq!(json(stream), *expected, "{:?}", String::from_utf8_lossy(stream));
        }
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        assert_eq!(json(deep.as_bytes()), [deep]);
    }

    #[test]
    fn json_events_have_no_type_nor_id() {
        let (events, _) = read(Framing::Json, b"{\"id\":1,\"event\":\"x\"}", 100);
        assert_eq!(events, [Event { kind: None, id: None, data: b"{\"id\":1,\"event\":\"x\"}".to_vec() }]);
    }

    #[test]
    fn malformed_json() {
        let table: &[(&[u8], usize, &str)] = &[
            // (stream, events before the error, what the error says)
            (b"{\"a\":}", 0, "expected value"),
            (b"<html>", 0, "`<` where a value starts"),
            (b"}", 0, "`}` where a value starts"),
            (b"\x00", 0, "`\\x00` where a value starts"),
            (b"{\"a\":1}x", 1, "`x` where a value starts"),
            (b"{\"a\":1},{\"a\":2}", 1, "`,` where a value starts"),
            (b"tru e", 0, "`tru` is no JSON value"),
            (b"nullx", 0, "`nullx` is no JSON value"),
            (b"1,2", 0, "`1,2` is no JSON value"),
            (b"01", 0, "`01` is no JSON value"),
            (b"{a:1}", 0, "key must be a string"),
            (b"[1,]", 0, "expected value"),
            (b"[1\x1e]", 0, "expected `,` or `]`"),
            (b"\"a\nb\"", 0, "control character (\\u0000-\\u001F) found while parsing a string"),
            (b"\"\xFF\"", 0, "a value that is not UTF-8"),
            // The end inside a value.
            (b"{\"a\":1}\n{\"a\":", 1, "EOF while parsing a value"),
            (b"{\"a\":1", 0, "EOF while parsing an object"),
            (b"\"abc", 0, "EOF while parsing a string"),
            (b"[1,", 0, "EOF while parsing a value"),
            (b"[[[", 0, "EOF while parsing a list"),
            (b"-", 0, "`-` is no JSON value"),
            (b"tr", 0, "`tr` is no JSON value"),
        ];
        for (stream, before, what) in table {
            let (events, broken) = read(Framing::Json, stream, 100);
            let shown = String::from_utf8_lossy(stream);
            assert_eq!(events.len(), *before, "{shown:?}");
            match broken {
                Some(Broken::Malformed(said)) => assert_eq!(said, *what, "{shown:?}"),
                other => panic!("{shown:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn an_event_over_the_limit() {
        // (framing, stream, limit, events before, too large)
        let table: &[(Framing, &[u8], u64, usize, bool)] = &[
            (Framing::Json, b"{\"a\":1}", 7, 1, false),
            (Framing::Json, b"{\"a\":1}", 6, 0, true),
            (Framing::Json, b"[1] [12] [123]", 4, 2, true),
            (Framing::Json, b"\"abcd\"", 5, 0, true),
            (Framing::Json, b"12345", 5, 1, false),
            (Framing::Json, b"123456", 5, 0, true),
            (Framing::Json, b"true", 3, 0, true),
            // Separators are no part of a value.
            (Framing::Json, b"\n\n\n\n\n\n\n\n\x1e\x1e\x1e{}\n\n\n\n\n\n\n[]", 2, 2, false),
            (Framing::Json, b"{}", 0, 0, true),
            // SSE: the data as dispatched, its lines joined by LF.
            (Framing::Sse, b"data: 12345\n\n", 5, 1, false),
            (Framing::Sse, b"data: 123456\n\n", 5, 0, true),
            (Framing::Sse, b"data: 12\ndata: 12\n\n", 5, 1, false),
            (Framing::Sse, b"data: 12\ndata: 12\n\n", 4, 0, true),
            (Framing::Sse, b"data: 1\n\ndata: 123\n\n", 2, 1, true),
            // Comments, ids and types are bounded by the line only.
            (Framing::Sse, b": a long comment\nevent: a long type\nid: a long id\ndata: 1\n\n", 1, 1, false),
        ];
        for (framing, stream, limit, before, too_large) in table {
            let (events, broken) = read(*framing, stream, *limit);
            let shown = String::from_utf8_lossy(stream);
            assert_eq!(events.len(), *before, "{shown:?}");
            match broken {
                Some(Broken::TooLarge { limit: said }) => assert!(*too_large && said == *limit, "{shown:?}"),
                None => assert!(!*too_large, "{shown:?}"),
                Some(other) => panic!("{shown:?}: {other}"),
            }
        }
    }

    #[test]
    fn an_event_stream_line_over_1_mib() {
        let limit = 4 << 20;
        let long = |prefix: &str, len: usize| [prefix.as_bytes(), &vec![b'x'; len - prefix.len()], b"\n\n"].concat();
        // A line of 1 MiB exactly is read.
        let (events, broken) = read(Framing::Sse, &long("data: ", MAX_LINE), limit);
        assert!(broken.is_none() && events.len() == 1);
        for line in [long("data: ", MAX_LINE + 1), long(": ", MAX_LINE + 1), long("", MAX_LINE + 1)] {
            let (events, broken) = read(Framing::Sse, &line, limit);
            assert!(events.is_empty() && matches!(broken, Some(Broken::LineTooLong)));
        }
        // Refused as it comes, before its end is read.
        let endless = Chunks { chunks: vec![vec![b'x'; 4 << 20]].into(), then: Then::TimedOut };
        let (_, broken) = all(Events::new(BufReader::new(endless), Framing::Sse, limit));
        assert!(matches!(broken, Some(Broken::LineTooLong)));
    }

    /// A stream with every kind of line and line end, and JSON and other data.
    const SAMPLE: &[u8] = b"\xEF\xBB\xBF: hello\r\nretry: 3000\r\nevent: add\r\nid: 1\r\ndata: {\"n\": 1}\r\n\r\n\
        data: two\rdata: lines\r\rid\n:\n\ndata\n\ndata: \xE2\x82\xAC\xFF\r\n\r\nevent: x\nid: 9\0\ndata: [1,\r\ndata: 2]\n\n\
        data: cut off";

    fn sample_events() -> Vec<(String, Option<String>, String)> {
        [
            ("add", Some("1"), "{\"n\": 1}"),
            ("message", None, "\"two\\nlines\""),
            ("message", None, "\"\""),
            ("message", None, "\"\u{20AC}\u{FFFD}\""),
            ("x", None, "[1,\n2]"),
        ]
        .iter()
        .map(|(k, id, d)| (k.to_string(), id.map(str::to_string), d.to_string()))
        .collect()
    }

    #[test]
    fn reads_split_anywhere_give_the_same_events() {
        let whole = sse_bytes(SAMPLE);
        assert_eq!(whole, sample_events());
        let check = |reader: BufReader<Chunks>, what: &str| {
            let mut events = Events::new(reader, Framing::Sse, 1 << 20);
            let mut found = Vec::new();
            while let Some(next) = events.next_event() {
                found.push(shown(next.expect("no error")));
            }
            assert_eq!(found, whole, "{what}");
            assert_eq!((events.last_event_id(), events.retry()), (Some(""), Some(Duration::from_secs(3))), "{what}");
        };
        let bytes: Vec<&[u8]> = SAMPLE.chunks(1).collect();
        check(chunked(&bytes, Then::Eof), "one byte a read");
        for at in 0..=SAMPLE.len() {
            check(chunked(&[&SAMPLE[..at], &SAMPLE[at..]], Then::Eof), &format!("split at {at}"));
        }

        let json_sample: &[u8] = b"\x1e{\"a\": [1, \"}\"]}\n[2]{\"b\":\"\\\"\"} 3\r\n\"s\" true\x1enull";
        let expected = ["{\"a\": [1, \"}\"]}", "[2]", "{\"b\":\"\\\"\"}", "3", "\"s\"", "true", "null"];
        assert_eq!(json(json_sample), expected);
        let bytes: Vec<&[u8]> = json_sample.chunks(1).collect();
        let mut splits = vec![bytes];
        for at in 0..=json_sample.len() {
            splits.push(vec![&json_sample[..at], &json_sample[at..]]);
        }
        for chunks in splits {
            let (events, broken) = all(Events::new(chunked(&chunks, Then::Eof), Framing::Json, 100));
            assert!(broken.is_none(), "{chunks:?}: {broken:?}");
            let data: Vec<String> = events.into_iter().map(|e| String::from_utf8(e.data).expect("UTF-8")).collect();
            assert_eq!(data, expected, "{chunks:?}");
        }
    }

    /// An event comes as soon as its last byte is read: the read after it times out, and that comes second.
    #[test]
    fn an_event_comes_before_the_next_read() {
        let table: &[(Framing, &[&[u8]], &str)] = &[
            (Framing::Sse, &[b"data: a\n\n"], "\"a\""),
            (Framing::Sse, &[b"data: a\r\n\r\n"], "\"a\""),
            // A CR at the end of what was read ends the line without waiting for a possible LF.
            (Framing::Sse, &[b"data: a\r\r"], "\"a\""),
            (Framing::Sse, &[b"data: a\r", b"\n", b"\r"], "\"a\""),
            (Framing::Sse, &[b"da", b"ta: {\"x\"", b":1}\n", b"\n"], "{\"x\":1}"),
            (Framing::Json, &[b"{\"a\":1}"], "{\"a\":1}"),
            (Framing::Json, &[b"{\"a\":", b"1}"], "{\"a\":1}"),
            (Framing::Json, &[b"\x1e[1,", b"2]"], "[1,2]"),
            (Framing::Json, &[b"\"x\""], "\"x\""),
            (Framing::Json, &[b"\n\n", b"\"x", b"\""], "\"x\""),
            // A bare number or literal needs the byte after it.
            (Framing::Json, &[b"42\n"], "42"),
            (Framing::Json, &[b"true", b"\x1e"], "true"),
        ];
        for (framing, chunks, data) in table {
            let mut events = Events::new(chunked(chunks, Then::TimedOut), *framing, 100);
            let event = events.next_event().expect("an event").expect("no error");
            assert_eq!(String::from_utf8(event.data).expect("UTF-8"), *data, "{chunks:?}");
            match events.next_event() {
                Some(Err(Broken::Io(e))) => assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{chunks:?}"),
                other => panic!("{chunks:?}: {other:?}"),
            }
            assert!(events.next_event().is_none());
        }
        // A bare value cut off by a timeout is the timeout's, not malformed.
        let mut events = Events::new(chunked(&[b"42"], Then::TimedOut), Framing::Json, 100);
        assert!(matches!(events.next_event(), Some(Err(Broken::Io(e))) if e.kind() == io::ErrorKind::TimedOut));
        let mut events = Events::new(chunked(&[b"{\"a\""], Then::TimedOut), Framing::Json, 100);
        assert!(matches!(events.next_event(), Some(Err(Broken::Io(e))) if e.kind() == io::ErrorKind::TimedOut));
    }

    /// Writes `count` small events as they are read, never the whole stream at once.
    struct Generated {
        framing: Framing,
        next: u64,
        count: u64,
        pending: Vec<u8>,
    }

    impl Read for Generated {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.pending.is_empty() && self.next < self.count {
                let n = self.next;
                self.pending = match self.framing {
                    Framing::Sse if n.is_multiple_of(10) => {
                        format!(": ping\nid: {n}\nevent: tick\ndata: {{\"n\":{n}}}\n\n")
                    }
                    Framing::Sse => format!("data: {{\"n\":{n}}}\r\n\r\n"),
                    Framing::Json => format!("{{\"n\":{n}}}\n"),
                }
                .into_bytes();
                self.next += 1;
            }
            let n = out.len().min(self.pending.len());
            out[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn many_events_stream_through_flat_buffers() {
        const COUNT: u64 = 200_000;
        for framing in [Framing::Sse, Framing::Json] {
            let reader = BufReader::new(Generated { framing, next: 0, count: COUNT, pending: Vec::new() });
            let mut events = Events::new(reader, framing, 1 << 20);
            let mut n = 0;
            while let Some(next) = events.next_event() {
                let event = next.expect("no error");
                assert_eq!(event.data, format!("{{\"n\":{n}}}").into_bytes());
                assert!(events.held() <= 4 << 10, "{} bytes held after {n} events", events.held());
                n += 1;
            }
            assert_eq!(n, COUNT);
        }
    }

    #[test]
    fn the_line_buffer_is_given_back_after_a_long_line() {
        let stream = [b"data: ".as_slice(), &vec![b'x'; 100_000], b"\n\ndata: a\n\n"].concat();
        let mut events = Events::new(&stream[..], Framing::Sse, 1 << 20);
        assert!(events.next_event().is_some_and(|e| e.is_ok()));
        assert!(events.next_event().is_some_and(|e| e.is_ok()));
        assert!(events.held() <= 4 << 10, "{}", events.held());
    }

    /// Bytes from a small alphabet of the parsers' special bytes, in any order and any reads: no panic, and
    /// every event that comes is JSON.
    #[test]
    fn no_bytes_panic() {
        let alphabet: &[&[u8]] = &[
            b"data",
            b"id",
            b"event",
            b"retry",
            b":",
            b" ",
            b"\r",
            b"\n",
            b"\x1e",
            b"{",
            b"}",
            b"[",
            b"]",
            b"\"",
            b"\\",
            b"1",
            b"-",
            b"e",
            b"true",
            b",",
            b"\0",
            b"\xFF",
            b"\xEF\xBB\xBF",
            b"\xC3",
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let len = random() % 40;
            let stream: Vec<u8> =
                (0..len).flat_map(|_| alphabet[(random() % alphabet.len() as u64) as usize].to_vec()).collect();
            let at = (random() as usize) % (stream.len() + 1);
            for framing in [Framing::Sse, Framing::Json] {
                let (events, _) = all(Events::new(chunked(&[&stream[..at], &stream[at..]], Then::Eof), framing, 64));
                for event in events {
                    assert!(serde_json::from_slice::<IgnoredAny>(&event.data).is_ok(), "{stream:?}");
                }
            }
        }
    }

    #[test]
    fn broken_says_one_short_line() {
        let table = [
            (Broken::TooLarge { limit: 1024 }, "an event over --max-body (1024 bytes)"),
            (Broken::LineTooLong, "an event-stream line over 1 MiB"),
            (Broken::Malformed("expected value".to_string()), "malformed JSON in the stream: expected value"),
            (
                Broken::Io(io::Error::new(io::ErrorKind::TimedOut, "timed out reading the body")),
                "timed out reading the body",
            ),
        ];
        for (broken, said) in table {
            assert_eq!(broken.to_string(), said);
        }
        let io = Broken::Io(io::Error::new(io::ErrorKind::ConnectionReset, "reset"));
        assert!(std::error::Error::source(&io).is_some());
    }
}
