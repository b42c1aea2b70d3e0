//! `http://` URLs through an HTTP proxy in absolute form (`GET
//! http://host/path HTTP/1.1`), as curl sends them and as Squid's stock
//! config and tinyproxy with `ConnectPort` lines require: the gap is that
//! ureq 3 writes only origin form and opens a `CONNECT` tunnel instead
//! (ureq 2 wrote absolute form). [`AbsoluteForm`] wraps the connection to
//! the proxy and rewrites each request line ureq writes; `connect.rs`
//! chooses it for such a request. ureq's pool keys connections by target
//! and proxy, so a wrapped connection only ever carries requests for the
//! target it was made for.
//!
//! It implements `ureq::unversioned::transport::Transport`, which ureq may
//! change in any minor release: CONTRIBUTING.md's "Upgrading ureq or jaq".

use std::fmt;

use base64::Engine as _;
use ureq::Proxy;
use ureq::http::Uri;
use ureq::unversioned::transport::{Buffers, NextTimeout, Transport};

/// A connection to an HTTP proxy on which ureq's origin-form request heads
/// (`GET /path HTTP/1.1`) go out in absolute form (`GET http://host/path
/// HTTP/1.1`), followed by `Proxy-Authorization` when the proxy URL has
/// credentials. Bodies and everything read pass through untouched.
pub(crate) struct AbsoluteForm {
    inner: Box<dyn Transport>,
    /// `http://host[:port]` of the target, put before each origin-form target.
    origin: String,
    /// The whole `Proxy-Authorization: Basic ...\r\n` line; never in `Debug`.
    credentials: Option<String>,
    /// The next bytes ureq transmits start a request head: true on a new
    /// connection, and again once the response to the last request began.
    at_head: bool,
}

impl AbsoluteForm {
    pub(crate) fn new(inner: Box<dyn Transport>, target: &Uri, proxy: &Proxy) -> AbsoluteForm {
        // The target's userinfo became `Authorization` (ureq-proto); it is not part of the URL sent.
        let authority = target.authority().map_or("", |a| a.as_str());
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let credentials = (proxy.username().is_some() || proxy.password().is_some()).then(|| {
            let pair = format!("{}:{}", proxy.username().unwrap_or(""), proxy.password().unwrap_or(""));
            format!("Proxy-Authorization: Basic {}\r\n", base64::engine::general_purpose::STANDARD.encode(pair))
        });
        AbsoluteForm { inner, origin: format!("http://{host}"), credentials, at_head: true }
    }
}

impl Transport for AbsoluteForm {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        if !self.at_head {
            return self.inner.transmit_output(amount, timeout);
        }
        self.at_head = false;
        let chunk = &self.inner.buffers().output()[..amount];
        let head = absolute_form(chunk, &self.origin, self.credentials.as_deref()).ok_or_else(|| {
            ureq::Error::Io(std::io::Error::other("request head without a request line for the proxy"))
        })?;
        // The rewritten head can be longer than ureq's output buffer: it goes
        // through that buffer in pieces, each with the timeout ureq gave.
        for piece in head.chunks(self.inner.buffers().output().len().max(1)) {
            self.inner.buffers().output()[..piece.len()].copy_from_slice(piece);
            self.inner.transmit_output(piece.len(), timeout)?;
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let progress = self.inner.await_input(timeout)?;
        // Once a final response begins, ureq sends nothing more for this
        // request (it reads only after sending the body, or instead of it),
        // so what it sends next is the next request on this connection.
        if final_response_began(self.inner.buffers().input()) {
            self.at_head = true;
        }
        Ok(progress)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    /// No TLS to the target: it is an `http://` URL (a TLS connection to an
    /// `https://` proxy is a hop, as in ureq's CONNECT tunnel).
    fn is_tls(&self) -> bool {
        false
    }
}

impl fmt::Debug for AbsoluteForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbsoluteForm").field("origin", &self.origin).field("at_head", &self.at_head).finish()
    }
}

/// The first bytes of a request head with its request line in absolute form
/// and `credentials` (the whole header line) after it. ureq-proto writes the
/// request line first and whole (`METHOD /target HTTP/1.1\r\n`), so `chunk` holds it.
fn absolute_form(chunk: &[u8], origin: &str, credentials: Option<&str>) -> Option<Vec<u8>> {
    let line_end = chunk.windows(2).position(|w| w == b"\r\n")? + 2;
    let target = chunk[..line_end].iter().position(|&b| b == b' ')? + 1;
    let (line, headers) = chunk.split_at(line_end);
    // A `-H 'Proxy-Authorization: ...'` of the user's wins, as in curl (sought in this chunk only).
    let credentials = credentials.filter(|_| !has_header(headers, b"proxy-authorization")).unwrap_or("");
    let mut head = Vec::with_capacity(chunk.len() + origin.len() + credentials.len());
    head.extend_from_slice(&line[..target]);
    head.extend_from_slice(origin.as_bytes());
    head.extend_from_slice(&line[target..]);
    head.extend_from_slice(credentials.as_bytes());
    head.extend_from_slice(headers);
    Some(head)
}

/// Whether `input`, the unread bytes, starts with the status line of a final
/// response, after any complete interim ones: a `100 Continue` comes between
/// a head and its body (`Expect: 100-continue`), so it does not end a request.
fn final_response_began(mut input: &[u8]) -> bool {
    loop {
        // `HTTP/1.1 200` is the shortest status line that tells.
        if input.len() < 12 || !input.starts_with(b"HTTP/") {
            return false;
        }
        if input[9] != b'1' {
            return true;
        }
        match input.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(end) => input = &input[end + 4..],
            None => return false,
        }
    }
}

/// Whether the header lines in `headers` (up to the blank line) include `name`, any case.
fn has_header(headers: &[u8], name: &[u8]) -> bool {
    headers.split(|&b| b == b'\n').take_while(|line| *line != b"\r" && !line.is_empty()).any(|line| {
        line.len() > name.len() && line[..name.len()].eq_ignore_ascii_case(name) && line[name.len()] == b':'
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use ureq::unversioned::transport::LazyBuffers;

    use super::*;

    #[test]
    fn interim_responses_do_not_end_a_request() {
        let rows: [(&[u8], bool); 7] = [
            (b"HTTP/1.1 200 OK\r\n", true),
            (b"HTTP/1.0 407 Proxy Authentication Required\r\n", true),
            (b"HTTP/1.1 100 Continue\r\n\r\n", false),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", true),
            (b"HTTP/1.1 2", false),
            (b"HTTP/1.1 103 Early", false),
            (b"{\"body\":1}", false),
        ];
        for (input, want) in rows {
            assert_eq!(final_response_began(input), want, "{}", String::from_utf8_lossy(input));
        }
    }

    /// A transport that records what is sent and plays scripted input, with small buffers.
    #[derive(Debug)]
    struct Fake {
        buffers: LazyBuffers,
        sent: Arc<Mutex<Vec<u8>>>,
        replies: Vec<&'static [u8]>,
    }

    impl Transport for Fake {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }

        fn transmit_output(&mut self, amount: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            let bytes = self.buffers.output()[..amount].to_vec();
            crate::util::sync::lock(&self.sent).extend(bytes);
            Ok(())
        }

        fn await_input(&mut self, _: NextTimeout) -> Result<bool, ureq::Error> {
            let reply = self.replies.remove(0);
            self.buffers.input_append_buf()[..reply.len()].copy_from_slice(reply);
            self.buffers.input_appended(reply.len());
            Ok(true)
        }

        fn is_open(&mut self) -> bool {
            true
        }
    }

    /// Sends `chunks` as ureq would (each written into the output buffer, then
    /// transmitted), after reading one scripted reply where a chunk is `None`.
    fn wire(proxy: &str, chunks: &[Option<&[u8]>], replies: Vec<&'static [u8]>) -> String {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let fake = Fake { buffers: LazyBuffers::new(64, 48), sent: Arc::clone(&sent), replies };
        let Ok(target) = "http://user:pw@example.test:8080/".parse::<Uri>() else { panic!("valid target") };
        let Ok(proxy) = Proxy::new(proxy) else { panic!("valid proxy") };
        let mut transport = AbsoluteForm::new(Box::new(fake), &target, &proxy);
        for chunk in chunks {
            match chunk {
                Some(bytes) => {
                    transport.buffers().output()[..bytes.len()].copy_from_slice(bytes);
                    assert!(transport.transmit_output(bytes.len(), NextTimeout::default()).is_ok());
                }
                None => {
                    assert!(transport.await_input(NextTimeout::default()).is_ok());
                    let unread = transport.buffers().input().len();
                    transport.buffers().input_consume(unread);
                }
            }
        }
        String::from_utf8_lossy(&crate::util::sync::lock(&sent)).into_owned()
    }

    #[test]
    fn heads_go_in_absolute_form_and_bodies_untouched() {
        const GET: &[u8] = b"GET /a?b HTTP/1.1\r\nHost: x\r\n\r\n";
        const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        // The second head comes after a response, on the same connection: rewritten too.
        let sent = wire("http://p:1", &[Some(GET), None, Some(GET)], vec![OK]);
        let want = "GET http://example.test:8080/a?b HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(sent, want.repeat(2));

        // A body after `100 Continue` is not a head, even when it looks like one.
        let post = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n".as_slice();
        let sent = wire("http://p:1", &[Some(post), None, Some(GET)], vec![b"HTTP/1.1 100 Continue\r\n\r\n"]);
        let head = "POST http://example.test:8080/ HTTP/1.1\r\nExpect: 100-continue\r\n\r\n";
        assert_eq!(sent, format!("{head}{}", String::from_utf8_lossy(GET)));

        // A head in two chunks: only the first holds the request line.
        let sent = wire("http://p:1", &[Some(b"GET / HTTP/1.1\r\n"), Some(b"Host: x\r\n\r\n")], vec![]);
        assert_eq!(sent, "GET http://example.test:8080/ HTTP/1.1\r\nHost: x\r\n\r\n");
    }

    #[test]
    fn proxy_credentials_follow_the_request_line_in_pieces() {
        // Longer than the 48-byte output buffer once rewritten.
        const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        let sent = wire("http://us%40r:p%3Ass@p:1", &[Some(GET)], vec![]);
        let basic = base64::engine::general_purpose::STANDARD.encode("us@r:p:ss");
        assert_eq!(
            sent,
            format!("GET http://example.test:8080/ HTTP/1.1\r\nProxy-Authorization: Basic {basic}\r\nHost: x\r\n\r\n")
        );

        // The user's own header wins.
        let own = b"GET / HTTP/1.1\r\nproxy-authorization: X\r\n\r\n".as_slice();
        let sent = wire("http://u:p@p:1", &[Some(own)], vec![]);
        assert_eq!(sent, "GET http://example.test:8080/ HTTP/1.1\r\nproxy-authorization: X\r\n\r\n");
    }

    #[test]
    fn debug_hides_the_proxy_credentials() {
        let Ok(target) = "http://t/".parse::<Uri>() else { panic!("valid target") };
        let Ok(proxy) = Proxy::new("http://user:secret@p:1") else { panic!("valid proxy") };
        let fake = Fake { buffers: LazyBuffers::new(8, 8), sent: Arc::default(), replies: vec![] };
        let shown = format!("{:?}", AbsoluteForm::new(Box::new(fake), &target, &proxy));
        assert!(
            !shown.contains("secret")
                && !shown.contains(&base64::engine::general_purpose::STANDARD.encode("user:secret"))
        );
    }
}
