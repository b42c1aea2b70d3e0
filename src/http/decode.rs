//! Bodies decoded by their `Content-Encoding` (gzip, deflate, br), with the
//! crates ureq's own `gzip` and `brotli` features use (flate2,
//! brotli-decompressor). The gap: ureq builds both of its decoders (tens of
//! KiB each) on the stack of every body read, encoded or not, and a stack page
//! once touched stays with its thread; with a thread per URL that was most
//! of the memory of a run over many URLs (docs/BENCHMARKS.md, "1,000 URLs").
//! Here each decoder is built in a function of its own, called only for its
//! coding.

use std::io::{self, Read};

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
    let body = decoded_past(coding, raw, limit, false)?;
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
    let mut body = decoded_past(coding, raw, limit, raw_cut)?;
    let cut = raw_cut || body.len() as u64 > limit;
    body.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok((body, cut))
}

/// `raw` decoded to at most `limit` + 1 bytes; `cut_short`: `raw` was cut, so
/// its coded stream ends early, and what decoded before that is the body.
fn decoded_past(coding: Option<&str>, raw: Vec<u8>, limit: u64, cut_short: bool) -> Result<Vec<u8>, Undecodable> {
    if raw.is_empty() {
        return Ok(raw);
    }
    let is = |name: &str| coding.is_some_and(|coding| coding.trim().eq_ignore_ascii_case(name));
    let (name, body) = if is("gzip") || is("x-gzip") {
        ("gzip", gunzip(&raw, limit, cut_short))
    } else if is("deflate") {
        ("deflate", inflate(&raw, limit, cut_short))
    } else if is("br") {
        ("brotli", unbrotli(&raw, limit, cut_short))
    } else {
        return Ok(raw);
    };
    body.map_err(|error| Undecodable::Broken { name, error })
}

/// `--watch`: a body read as it arrives, decoded by `coding` as [`decode`]
/// decodes a whole one (deflate is taken zlib-wrapped, as the RFC says).
pub(crate) fn reader<'a>(coding: Option<&str>, raw: impl Read + 'a) -> Box<dyn Read + 'a> {
    let is = |name: &str| coding.is_some_and(|coding| coding.trim().eq_ignore_ascii_case(name));
    if is("gzip") || is("x-gzip") {
        Box::new(flate2::read::MultiGzDecoder::new(raw))
    } else if is("deflate") {
        Box::new(flate2::read::ZlibDecoder::new(raw))
    } else if is("br") {
        Box::new(brotli_decompressor::Decompressor::new(raw, 4096))
    } else {
        Box::new(raw)
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
