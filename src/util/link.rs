//! The `Link` header (RFC 8288, section 3): the targets of the links of one
//! relation type, as `--paginate` reads `rel="next"`. Several links in one
//! field and in several fields, quoted and unquoted parameters, a `rel` of
//! several types; a link-value that does not parse is skipped, not the field.
//!
//! Owned here rather than taken from a crate: the grammar is a page long,
//! and the small crates that parse it split the field at every comma, which
//! cuts a target or a quoted parameter that holds one.

/// The targets (URI references, as written between `<` and `>`) of the
/// links in `fields` (each a `Link` field's value, in order) whose `rel`
/// names `relation` (relation types compare in any case), in order.
pub(crate) fn targets<'a>(fields: impl IntoIterator<Item = &'a str>, relation: &str) -> Vec<String> {
    let mut found = Vec::new();
    for field in fields {
        let mut cursor = Cursor { text: field.as_bytes(), at: 0 };
        while let Some(link) = cursor.link_value() {
            if let Some(link) = link
                && link.rel.is_some_and(|rel| rel.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case(relation)))
            {
                found.push(link.target);
            }
        }
    }
    found
}

/// The first link-value of `fields` that does not parse, as written (cut to
/// 200 characters): a walk that found no next link says it may have missed one.
pub(crate) fn unread<'a>(fields: impl IntoIterator<Item = &'a str>) -> Option<String> {
    for field in fields {
        let mut cursor = Cursor { text: field.as_bytes(), at: 0 };
        loop {
            while matches!(cursor.peek(), Some(b' ' | b'\t' | b',')) {
                cursor.at += 1;
            }
            let start = cursor.at;
            match cursor.link_value() {
                None => break,
                Some(Some(_)) => {}
                Some(None) => {
                    let text = String::from_utf8_lossy(&cursor.text[start..cursor.at]);
                    return Some(crate::util::text::cut(text.trim_end_matches([',', ' ', '\t'])));
                }
            }
        }
    }
    None
}

/// One link-value: its target and its first `rel` (RFC 8288 3.3: later ones are ignored).
struct LinkValue {
    target: String,
    rel: Option<String>,
}

/// A position in one field's value.
struct Cursor<'a> {
    text: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// Skips optional whitespace (OWS, BWS: spaces and tabs).
    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// The next link-value of the list: `None` at the field's end, `Some(None)`
    /// for one that does not parse (skipped up to the next comma outside a
    /// target or a quoted string).
    fn link_value(&mut self) -> Option<Option<LinkValue>> {
        // A list may have empty elements (RFC 9110 5.6.1): `, , <a>; rel=next`.
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.at += 1;
        }
        self.peek()?;
        let parsed = self.parse_link();
        if parsed.is_none() {
            self.skip_element();
        }
        Some(parsed)
    }

    fn parse_link(&mut self) -> Option<LinkValue> {
        if self.peek() != Some(b'<') {
            return None;
        }
        let start = self.at + 1;
        let end = start + self.text[start..].iter().position(|&b| b == b'>')?;
        let target = String::from_utf8_lossy(&self.text[start..end]).trim().to_string();
        self.at = end + 1;
        let mut rel = None;
        loop {
            self.skip_space();
            match self.peek() {
                None | Some(b',') => return Some(LinkValue { target, rel }),
                Some(b';') => self.at += 1,
                Some(_) => return None,
            }
            self.skip_space();
            let name = self.token();
            // `;` with nothing after it, as some servers end a link-value.
            if name.is_empty() {
                continue;
            }
            self.skip_space();
            let value = match self.peek() {
                Some(b'=') => {
                    self.at += 1;
                    self.skip_space();
                    match self.peek() {
                        Some(b'"') => self.quoted()?,
                        _ => self.token(),
                    }
                }
                _ => String::new(),
            };
            if rel.is_none() && name.eq_ignore_ascii_case("rel") {
                rel = Some(value);
            }
        }
    }

    /// A token (RFC 9110 5.6.2), leniently: up to whitespace or a delimiter of the grammar.
    fn token(&mut self) -> String {
        let start = self.at;
        while self.peek().is_some_and(|b| !matches!(b, b' ' | b'\t' | b';' | b',' | b'=' | b'"' | b'<' | b'>')) {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.at]).into_owned()
    }

    /// A quoted-string at the cursor, unescaped; `None` when it never ends.
    fn quoted(&mut self) -> Option<String> {
        self.at += 1;
        let mut value = Vec::new();
        loop {
            let b = self.peek()?;
            self.at += 1;
            match b {
                b'"' => return Some(String::from_utf8_lossy(&value).into_owned()),
                b'\\' => {
                    value.push(self.peek()?);
                    self.at += 1;
                }
                b => value.push(b),
            }
        }
    }

    /// Past the rest of a link-value that does not parse: to the next comma
    /// outside a target and a quoted string, or the field's end.
    fn skip_element(&mut self) {
        let (mut quoted, mut target) = (false, false);
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'\\' if quoted => self.at += 1,
                b'"' if !target => quoted = !quoted,
                b'<' if !quoted => target = true,
                b'>' if !quoted => target = false,
                b',' if !quoted && !target => return,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{targets, unread};

    #[test]
    fn the_next_links_of_fields_as_servers_write_them() {
        let rows: &[(&[&str], &[&str])] = &[
            // GitHub's: several links in one field, quoted rel.
            (
                &[
                    r#"<https://api.github.com/repositories/1/check-runs?page=2>; rel="next", <https://api.github.com/repositories/1/check-runs?page=3>; rel="last""#,
                ],
                &["https://api.github.com/repositories/1/check-runs?page=2"],
            ),
            // GitLab's order, first and last around it; an unquoted rel.
            (&["<http://h/a?page=1>; rel=first, <http://h/a?page=3>; rel=next"], &["http://h/a?page=3"]),
            // Several fields; the next in the second.
            (&["<http://h/p1>; rel=prev", "<http://h/p3>; rel=next"], &["http://h/p3"]),
            // A rel of several types, in any case, and other parameters around it.
            (&[r#"<p2>; title="page, two"; REL="last Next"; type=application/json"#], &["p2"]),
            // A comma and a semicolon inside the target, and inside a quoted parameter with an escape.
            (&[r#"<http://h/a?ids=1,2;x>; title="a \"b\", c; d"; rel="next""#], &["http://h/a?ids=1,2;x"]),
            // A relative reference stays as written: the walk resolves it against the page.
            (&["</check-runs?page=2>;rel=next"], &["/check-runs?page=2"]),
            // Spaces (and tabs) anywhere the grammar lets them be; empty list elements.
            (&[" , <http://h/2> ;\trel = \"next\" ,, "], &["http://h/2"]),
            // rel is read once: a second one is ignored (RFC 8288 3.3).
            (&[r#"<http://h/x>; rel=prev; rel=next"#], &[]),
            // rel* (RFC 8187) is another parameter; no rel, no relation.
            (&[r#"<http://h/x>; rel*=UTF-8''next"#, "<http://h/y>"], &[]),
            // "next" is a whole type, not a part of one.
            (&[r#"<http://h/x>; rel="nextpage prev-next""#], &[]),
            // A link-value that does not parse is skipped, not its field: the one after it counts.
            (&[r#"garbage; rel=next, <http://h/ok>; rel=next"#], &["http://h/ok"]),
            (&[r#"<http://h/a>; rel=next junk, <http://h/b>; rel="next""#], &["http://h/b"]),
            (&[r#"<http://h/a>; title="never ends, <http://h/b>; rel=next"#], &[]),
            (&["<http://h/unclosed; rel=next"], &[]),
            // Two next links: both, in order (the walk takes the first).
            (&["<http://h/2>; rel=next", "<http://h/3>; rel=next"], &["http://h/2", "http://h/3"]),
            (&[""], &[]),
            (&[], &[]),
        ];
        for (fields, expected) in rows {
            assert_eq!(targets(fields.iter().copied(), "next"), *expected, "{fields:?}");
        }
    }

    #[test]
    fn the_first_link_value_that_does_not_parse_is_named_as_written() {
        let rows: &[(&[&str], Option<&str>)] = &[
            (&["<http://h/2>; rel=next, <http://h/9>; rel=last"], None),
            (&["<http://h/1>; rel=prev", "<http://h/unclosed; rel=next"], Some("<http://h/unclosed; rel=next")),
            (&[r#"garbage; rel=next, <http://h/ok>; rel=next"#], Some("garbage; rel=next")),
            (&[r#"<http://h/a>; rel=next junk, <http://h/b>"#], Some("<http://h/a>; rel=next junk")),
            (&[""], None),
        ];
        for (fields, expected) in rows {
            assert_eq!(unread(fields.iter().copied()).as_deref(), *expected, "{fields:?}");
        }
    }

    #[test]
    fn a_trailing_semicolon_and_a_parameter_without_a_value_are_taken() {
        assert_eq!(targets(["<http://h/2>; rel=next;"], "next"), ["http://h/2"]);
        assert_eq!(targets(["<http://h/2>; crossorigin; rel=next"], "next"), ["http://h/2"]);
        assert_eq!(targets(["<http://h/2>; rel"], "next"), Vec::<String>::new());
    }
}
