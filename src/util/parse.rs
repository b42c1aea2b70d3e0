//! Pure parsers for flag values: durations, sizes, rates, percentages,
//! methods, headers, status codes and `--cert FILE:PASSPHRASE`.
//!
//! Each returns a message that names what is wrong with the value; the caller
//! adds the flag's name. They never panic, whatever the input (see `fuzz/`).

use std::time::Duration;

/// The longest duration any flag accepts: a century is "forever" for a poller,
/// and the cap keeps every later addition to an `Instant` from overflowing.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A humantime duration (`250ms`, `1m30s`), or a bare number of seconds (`5`, `0.5`).
pub fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration; use e.g. 5s, 250ms or 1m30s".into());
    }
    let parsed = if text.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = text.parse().map_err(|_| format!("`{text}` is not a number of seconds"))?;
        Duration::try_from_secs_f64(secs).map_err(|_| format!("`{text}` is out of range"))?
    } else {
        humantime::parse_duration(text)
            .map_err(|e| format!("`{text}` is not a duration ({e}); use e.g. 5s, 250ms or 1m30s"))?
    };
    if parsed > MAX_DURATION {
        return Err(format!("`{text}` is longer than 100 years"));
    }
    Ok(parsed)
}

/// A byte size: `1024`, `64KiB`, `16MiB`, `1.5MB`, `2G`. SI prefixes are powers
/// of 1000, `Ki`/`Mi`/`Gi` powers of 1024, as in curl and most tools.
pub fn size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 =
        number.parse().map_err(|_| format!("`{text}` is not a size; use e.g. 16MiB, 512KiB or 1000000"))?;
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => return Err(format!("unknown size unit `{other}` in `{text}`; use B, KiB, MiB, GiB, KB, MB or GB")),
    };
    let bytes = number * multiplier as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 / 2.0 {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(bytes as u64)
}

/// `N/DUR`: at most N requests per DUR (`10/s`, `100/m`, `5/10s`).
/// Returns the spacing between two requests.
pub fn rate(text: &str) -> Result<Duration, String> {
    let usage = || format!("`{text}` is not a rate; use N/DURATION, e.g. 10/s, 100/m or 5/10s");
    let (count, per) = text.trim().split_once('/').ok_or_else(usage)?;
    let count: u32 = count.trim().parse().map_err(|_| usage())?;
    if count == 0 {
        return Err(format!("`{text}` allows no request at all; use at least 1/DURATION"));
    }
    let per = per.trim();
    // `10/s` means "per one second": humantime needs the 1 spelled out (and `10/` is no rate).
    let per =
        if per.starts_with(|c: char| c.is_ascii_alphabetic()) { duration(&format!("1{per}")) } else { duration(per) }
            .map_err(|_| usage())?;
    if per.is_zero() {
        return Err(usage());
    }
    Ok(per / count)
}

/// A whole percentage, 0 to 100, with or without `%`: `60`, `60%`.
pub(crate) fn percent(text: &str) -> Result<u8, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    match number.parse::<u8>() {
        Ok(n) if n <= 100 => Ok(n),
        _ => Err(format!("`{}` is not a percentage; use a whole number from 0 to 100, e.g. 60 or 60%", text.trim())),
    }
}

/// `Name: value`, as curl's `-H`. The name must be an HTTP token and neither
/// part may hold CR, LF or NUL, so nothing a user types can split a header.
pub fn header(text: &str) -> Result<(String, String), String> {
    // The line is not quoted: it may hold a credential, which the caller shows redacted.
    let (name, value) = text.split_once(':').ok_or("not a header; use 'Name: value'")?;
    let name = name.trim();
    if name.is_empty() {
        return Err("the header name is empty; use 'Name: value'".to_string());
    }
    if let Some(bad) = name.chars().find(|c| !is_token_char(*c)) {
        return Err(format!("header name `{}` contains {}", name.escape_debug(), describe(bad)));
    }
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    check_header_value(name, value)?;
    Ok((name.to_string(), value.to_string()))
}

/// Rejects a header value that could break the request apart or is not
/// representable on the wire.
pub(crate) fn check_header_value(name: &str, value: &str) -> Result<(), String> {
    match value.chars().find(|c| matches!(c, '\r' | '\n' | '\0') || (c.is_control() && *c != '\t')) {
        Some(bad) => Err(format!("value of header `{name}` contains {}", describe(bad))),
        None => Ok(()),
    }
}

/// One HTTP status code, 100 to 599.
pub fn status(text: &str) -> Result<u16, String> {
    match text.trim().parse::<u16>() {
        Ok(n) if (100..=599).contains(&n) => Ok(n),
        _ => Err(format!("`{}` is not an HTTP status code (100-599)", text.trim())),
    }
}

/// An HTTP method (`-X`): any HTTP token, so `PURGE` or `PROPFIND` pass as curl lets them.
pub(crate) fn method(text: &str) -> Result<String, String> {
    if text.is_empty() || !text.chars().all(is_token_char) {
        return Err(format!("`{}` is not an HTTP method", text.escape_debug()));
    }
    Ok(text.to_string())
}

/// `--cert`'s value as curl reads it: `FILE`, or `FILE:PASSPHRASE` split at
/// the first `:` that is not escaped (`\:` is a colon of the file's name,
/// `\\` a backslash) and not a drive letter's (`C:\certs\me.pem`, `c:/x.pem`:
/// curl sees those on Windows only, `poll` everywhere, so that a command
/// means the same on every runner). A value with neither `:` nor `\`, or a
/// `pkcs11:` URI, is the file as it is. An empty passphrase is none.
pub(crate) fn cert(value: &str) -> (String, Option<String>) {
    if value.starts_with("pkcs11:") || !value.contains([':', '\\']) {
        return (value.to_string(), None);
    }
    let bytes = value.as_bytes();
    let drive = |at: usize| at == 1 && bytes[0].is_ascii_alphabetic() && matches!(bytes.get(2), Some(b'\\' | b'/'));
    let mut file = String::with_capacity(value.len());
    let mut chars = value.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some((_, escaped @ ('\\' | ':'))) => {
                    file.push(*escaped);
                    chars.next();
                }
                _ => file.push('\\'),
            },
            ':' if drive(at) => file.push(':'),
            ':' => {
                let passphrase = &value[at + 1..];
                return (file, (!passphrase.is_empty()).then(|| passphrase.to_string()));
            }
            other => file.push(other),
        }
    }
    (file, None)
}

/// The characters of an HTTP token (RFC 9110): header names and methods.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn describe(c: char) -> String {
    match c {
        '\r' => "a carriage return (CR)".into(),
        '\n' => "a line feed (LF)".into(),
        '\0' => "a NUL byte".into(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        c => format!("`{c}`, which is not allowed there"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("5", Duration::from_secs(5)),
            ("0", Duration::ZERO),
            ("0.25", Duration::from_millis(250)),
            ("250ms", Duration::from_millis(250)),
            ("1m30s", Duration::from_secs(90)),
            ("2h", Duration::from_secs(7200)),
            (" 3s ", Duration::from_secs(3)),
        ];
        for (text, want) in ok {
            assert_eq!(duration(text), Ok(want), "{text}");
        }
        for bad in ["", "-1", "5 parsecs", "1.2.3", "abc", "1e9999", "200y", "."] {
            assert!(duration(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn sizes() {
        let ok = [
            ("1", 1),
            ("1024", 1024),
            ("16MiB", 16 << 20),
            ("64kib", 64 << 10),
            ("1.5MB", 1_500_000),
            ("2G", 2_000_000_000),
            ("10 KB", 10_000),
        ];
        for (text, want) in ok {
            assert_eq!(size(text), Ok(want), "{text}");
        }
        for bad in ["", "0", "MiB", "-5", "1 parsec", "1e3", "99999999999999999999GiB"] {
            assert!(size(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(rate("10/s"), Ok(Duration::from_millis(100)));
        assert_eq!(rate("100/m"), Ok(Duration::from_millis(600)));
        assert_eq!(rate("5/10s"), Ok(Duration::from_secs(2)));
        assert_eq!(rate("1/h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "10", "0/s", "x/s", "10/", "10/0s", "10/parsec", "-1/s"] {
            assert!(rate(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn percents() {
        for (text, want) in [("60", 60), ("60%", 60), (" 0 ", 0), ("100%", 100), ("7 %", 7)] {
            assert_eq!(percent(text), Ok(want), "{text}");
        }
        for bad in ["", "%", "101", "60.5", "-1", "sixty", "60%%", "1e2"] {
            assert!(percent(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn headers() {
        assert_eq!(header("Accept: text/plain"), Ok(("Accept".into(), "text/plain".into())));
        assert_eq!(header("X-Empty:"), Ok(("X-Empty".into(), String::new())));
        assert_eq!(header("X-A:b:c"), Ok(("X-A".into(), "b:c".into())));
        for bad in
            ["NoColon", ": value", "Bad Name: x", "X-Inject: a\r\nEvil: b", "X-Lf: a\nb", "X-Nul: a\0b", "X\r\nY: z"]
        {
            assert!(header(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(status("404"), Ok(404));
        assert_eq!(status(" 418 "), Ok(418));
        for bad in ["abc", "99", "600", "x", ""] {
            assert!(status(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn methods() {
        for ok in ["GET", "post", "PURGE", "M-SEARCH"] {
            assert_eq!(method(ok), Ok(ok.to_string()));
        }
        for bad in ["", "GET /", "PO\rST", "G\u{e9}T"] {
            assert!(method(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn cert_splits_its_passphrase_as_curl_does() {
        let rows: [(&str, &str, Option<&str>); 14] = [
            ("client.pem", "client.pem", None),
            ("client.pem:s3cret-pass", "client.pem", Some("s3cret-pass")),
            ("client.pem:pass:with:colons", "client.pem", Some("pass:with:colons")),
            ("client.pem:", "client.pem", None),
            ("/etc/tls/my\\:cert.pem:pw", "/etc/tls/my:cert.pem", Some("pw")),
            ("back\\\\slash.pem:pw", "back\\slash.pem", Some("pw")),
            ("end\\", "end\\", None),
            ("C:\\certs\\me.pem", "C:\\certs\\me.pem", None),
            ("C:\\certs\\me.pem:pw", "C:\\certs\\me.pem", Some("pw")),
            ("c:/certs/me.pem:pw", "c:/certs/me.pem", Some("pw")),
            // Not a drive letter: a one-letter file and its passphrase.
            ("c:pw", "c", Some("pw")),
            ("pkcs11:token=a;object=b", "pkcs11:token=a;object=b", None),
            ("ünï:cödé", "ünï", Some("cödé")),
            (":pw", "", Some("pw")),
        ];
        for (value, file, passphrase) in rows {
            assert_eq!(cert(value), (file.to_string(), passphrase.map(str::to_string)), "{value}");
        }
    }
}
