//! Bodies decoded by their `Content-Encoding` (gzip, deflate, br), with the
//! crates ureq's own `gzip` and `brotli` features use (flate2,
//! brotli-decompressor). The gap: ureq builds both of its decoders (tens of
//! KiB each) on the stack of every body read, encoded or not, and a stack page
//! once touched stays with its thread; with a thread per URL that was most
//! of the memory of a run over many URLs (docs/BENCHMARKS.md, "1,000 URLs").
//! Here each decoder is built in a function of its own, called only for its
//! coding.

use std::cell::Cell;
use std::fmt;
use std::io::{self, Read};
use std::rc::Rc;

/// Why a body could not be decoded.
#[derive(Debug)]
pub(crate) enum Undecodable {
    /// The coding's decoder failed (`name`: gzip, deflate, brotli).
    Broken { name: &'static str, error: io::Error },
    /// It decodes to more than the limit.
    TooLarge,
}

/// `raw`, decoded by `coding` (the `Content-Encoding`, if any) within `limit`
/// bytes; an unknown coding, or none, leaves it as it is. No body is no
/// body whatever the header says: a HEAD, a 204 or a 304 carries the
/// coding its GET would have had (nginx with `gzip on`), and nothing to decode.
pub(crate) fn decode(coding: Option<&str>, raw: Vec<u8>, limit: u64) -> Result<Vec<u8>, Undecodable> {
    let body = decoded_past(coding, raw, limit, false, false)?;
    if body.len() as u64 > limit {
        return Err(Undecodable::TooLarge);
    }
    Ok(body)
}

/// As [`decode`], for a body that may be cut rather than refused (a status
/// list's, whose body decides nothing): `raw`, read to at most `limit` + 1
/// bytes, and what it decodes to are cut at `limit` bytes, a coded stream cut
/// short decoding as far as it goes; and whether anything was cut.
pub(crate) fn decode_cut(coding: Option<&str>, raw: Vec<u8>, limit: u64) -> Result<(Vec<u8>, bool), Undecodable> {
    let raw_cut = raw.len() as u64 > limit;
    let mut body = decoded_past(coding, raw, limit, raw_cut, true)?;
    let cut = raw_cut || body.len() as u64 > limit;
    body.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok((body, cut))
}

/// `raw` decoded to at most `limit` + 1 bytes; `cut_short`: `raw` was cut, so
/// its coded stream ends early, and what decoded before that is the body.
/// Codings applied one over another (`gzip, gzip`: RFC 9110 8.4) are undone
/// last first; one this poll does not know leaves the rest as it is. A layer
/// past the limit is too large, or with `cuts` the next layer's stream cut short.
fn decoded_past(
    coding: Option<&str>,
    raw: Vec<u8>,
    limit: u64,
    mut cut_short: bool,
    cuts: bool,
) -> Result<Vec<u8>, Undecodable> {
    let codings = coding.unwrap_or_default().split(',').map(str::trim);
    let mut body = raw;
    for coding in codings.filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity")).rev() {
        match undone(coding, &body, limit, cut_short) {
            Some(decoded) => body = decoded?,
            None => break,
        }
        if body.len() as u64 > limit {
            match cuts {
                true => cut_short = true,
                false => return Err(Undecodable::TooLarge),
            }
        }
    }
    Ok(body)
}

/// `raw` with one coding undone; `None` for a coding this poll does not know.
fn undone(coding: &str, raw: &[u8], limit: u64, cut_short: bool) -> Option<Result<Vec<u8>, Undecodable>> {
    if raw.is_empty() {
        return Some(Ok(Vec::new()));
    }
    let is = |name: &str| coding.eq_ignore_ascii_case(name);
    let (name, body) = if is("gzip") || is("x-gzip") {
        ("gzip", gunzip(raw, limit, cut_short))
    } else if is("deflate") {
        ("deflate", inflate(raw, limit, cut_short))
    } else if is("br") {
        ("brotli", unbrotli(raw, limit, cut_short))
    } else {
        return None;
    };
    Some(body.map_err(|error| Undecodable::Broken { name, error }))
}

/// `--watch`: a body read as it arrives, decoded by `coding` as [`decode`]
/// decodes a whole one (deflate is taken zlib-wrapped, as the RFC says). An
/// error of the decoder's own (bytes that do not decode) carries [`Corrupt`];
/// the connection's errors pass through as they came.
pub(crate) fn reader<'a>(coding: Option<&str>, raw: impl Read + 'a) -> Box<dyn Read + 'a> {
    let is = |name: &str| coding.is_some_and(|coding| coding.trim().eq_ignore_ascii_case(name));
    let failed = Rc::new(Cell::new(false));
    let raw = Raw { inner: raw, failed: Rc::clone(&failed) };
    if is("gzip") || is("x-gzip") {
        Box::new(Coded { name: "gzip", decoder: flate2::read::MultiGzDecoder::new(raw), failed })
    } else if is("deflate") {
        Box::new(Coded { name: "deflate", decoder: flate2::read::ZlibDecoder::new(raw), failed })
    } else if is("br") {
        Box::new(Coded { name: "brotli", decoder: brotli_decompressor::Decompressor::new(raw, 4096), failed })
    } else {
        Box::new(raw.inner)
    }
}

/// Bytes of a coded stream that do not decode: the decoder's error, not the
/// connection's, known by its type (`http/request.rs` sorts it as a
/// malformed reply, where the decoder's own `io::ErrorKind` would read as a reset).
#[derive(Debug)]
pub(crate) struct Corrupt {
    name: &'static str,
    error: io::Error,
}

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the stream's {} is corrupt ({})", self.name, self.error)
    }
}

impl std::error::Error for Corrupt {}

/// The connection under a decoder, noting when a read of it failed: then
/// the decoder's error is the connection's.
struct Raw<R> {
    inner: R,
    failed: Rc<Cell<bool>>,
}

impl<R: Read> Read for Raw<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf);
        // For good: a decoder may read on after the connection's error, and blame the bytes.
        if read.is_err() {
            self.failed.set(true);
        }
        read
    }
}

/// A decoder over [`Raw`]: its errors that are not the connection's are [`Corrupt`].
struct Coded<D> {
    name: &'static str,
    decoder: D,
    failed: Rc<Cell<bool>>,
}

impl<D: Read> Read for Coded<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.decoder.read(buf).map_err(|error| match self.failed.get() {
            true => error,
            false => io::Error::new(io::ErrorKind::InvalidData, Corrupt { name: self.name, error }),
        })
    }
}

/// gzip, members one after another as ureq read them.
#[inline(never)]
fn gunzip(raw: &[u8], limit: u64, cut_short: bool) -> io::Result<Vec<u8>> {
    decoded(&mut flate2::read::MultiGzDecoder::new(raw), limit, cut_short)
}

/// deflate is zlib-wrapped by the RFC, raw deflate by some servers; try both.
#[inline(never)]
fn inflate(raw: &[u8], limit: u64, cut_short: bool) -> io::Result<Vec<u8>> {
    decoded(&mut flate2::read::ZlibDecoder::new(raw), limit, cut_short)
        .or_else(|_| decoded(&mut flate2::read::DeflateDecoder::new(raw), limit, cut_short))
}

#[inline(never)]
fn unbrotli(raw: &[u8], limit: u64, cut_short: bool) -> io::Result<Vec<u8>> {
    decoded(&mut brotli_decompressor::Decompressor::new(raw, 4096), limit, cut_short)
}

/// What `reader` decodes, one byte past `limit` at most; when its input was
/// `cut_short`, what it decoded before the error that ends it.
fn decoded(reader: &mut dyn Read, limit: u64, cut_short: bool) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    // read_to_end keeps what it read before an error.
    match reader.take(limit.saturating_add(1)).read_to_end(&mut out) {
        Err(_) if cut_short => Ok(out),
        read => read.map(|_| out),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let written = encoder.write_all(bytes).and_then(|()| encoder.finish());
        let Ok(encoded) = written else { panic!("gzip in memory") };
        encoded
    }

    #[test]
    fn each_coding_decodes_within_its_limit() {
        let body = br#"{"status":"done"}"#.to_vec();
        assert_eq!(decode(Some(" GZIP "), gzip(&body), 100).ok(), Some(body.clone()));
        assert_eq!(decode(None, body.clone(), 100).ok(), Some(body.clone()));
        assert_eq!(decode(Some("identity"), body.clone(), 100).ok(), Some(body.clone()));
        assert!(matches!(decode(Some("gzip"), gzip(&body), 5), Err(Undecodable::TooLarge)));
        let broken = decode(Some("br"), b"not brotli".to_vec(), 100);
        assert!(matches!(broken, Err(Undecodable::Broken { name: "brotli", .. })), "{broken:?}");
    }

    #[test]
    fn codings_applied_one_over_another_are_undone_last_first() {
        let body = br#"{"status":"done"}"#.to_vec();
        assert_eq!(decode(Some("gzip, gzip"), gzip(&gzip(&body)), 100).ok(), Some(body.clone()));
        assert_eq!(decode(Some("gzip,identity, x-gzip"), gzip(&gzip(&body)), 100).ok(), Some(body.clone()));
        // One this poll does not know stops there: what is under it stays coded.
        assert_eq!(decode(Some("zstd, gzip"), gzip(&body), 100).ok(), Some(body.clone()));
        assert_eq!(decode(Some("gzip, zstd"), gzip(&body), 100).ok(), Some(gzip(&body)));
        // Each layer is held to the limit.
        assert!(matches!(decode(Some("gzip, gzip"), gzip(&gzip(&body)), 5), Err(Undecodable::TooLarge)));
    }

    /// A coded stream's bytes that do not decode are [`Corrupt`], named by their coding; the
    /// connection's own error passes through as it came.
    #[test]
    fn a_stream_that_does_not_decode_is_corrupt_and_a_connection_error_is_its_own() {
        let mut coded = gzip(b"data: 1\n\n");
        coded.extend_from_slice(b"not gzip at all");
        let mut out = Vec::new();
        let error = reader(Some("gzip"), &coded[..]).read_to_end(&mut out).err();
        let inner = error.as_ref().and_then(|e| e.get_ref()).and_then(|e| e.downcast_ref::<Corrupt>());
        assert!(inner.is_some_and(|c| c.to_string().starts_with("the stream's gzip is corrupt (")), "{error:?}");
        assert_eq!(out, b"data: 1\n\n");
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        let failing = std::io::Read::chain(&coded[..5], Failing(Some(reset)));
        let error = reader(Some("gzip"), failing).read_to_end(&mut Vec::new()).err();
        let kind = error.as_ref().map(|e| (e.kind(), e.get_ref().is_none()));
        assert_eq!(kind, Some((io::ErrorKind::ConnectionReset, true)), "{error:?}");
    }

    /// A reader that fails once with its error.
    struct Failing(Option<io::Error>);

    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            self.0.take().map_or(Ok(0), Err)
        }
    }

    #[test]
    fn a_body_that_may_be_cut_is_cut_at_its_limit() {
        let body: Vec<u8> = (0..5000u32).map(|n| b'a' + (n % 26) as u8).collect();
        // Within the limit: as it came, not cut.
        assert_eq!(decode_cut(None, body.clone(), 5000).ok(), Some((body.clone(), false)));
        assert_eq!(decode_cut(Some("gzip"), gzip(&body), 5000).ok(), Some((body.clone(), false)));
        assert_eq!(decode_cut(Some("gzip"), Vec::new(), 10).ok(), Some((Vec::new(), false)));
        // Over it: the first `limit` bytes, plain, or decoded from a whole or a cut coded stream.
        let first = body[..1024].to_vec();
        assert_eq!(decode_cut(None, body[..1025].to_vec(), 1024).ok(), Some((first.clone(), true)));
        assert_eq!(decode_cut(Some("gzip"), gzip(&body), 1024).ok(), Some((first.clone(), true)));
        let coded = gzip(&body);
        let cut_raw = coded[..coded.len() / 2].to_vec();
        let limit = cut_raw.len() as u64 - 1;
        let (decoded, cut) = decode_cut(Some("gzip"), cut_raw, limit).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(cut && !decoded.is_empty() && body.starts_with(&decoded), "{} bytes", decoded.len());
        // A coded stream that is not cut and does not decode is still broken.
        assert!(matches!(decode_cut(Some("gzip"), b"not gzip".to_vec(), 100), Err(Undecodable::Broken { .. })));
    }
}
