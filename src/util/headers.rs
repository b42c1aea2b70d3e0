//! [`Headers`]: the fields of a request or of a reply, in the order given,
//! each name as written (`-v` shows the user's own spelling), looked up in
//! any letter case as HTTP's field names are. The one place that compares
//! header names.

/// Header fields in order; a name may repeat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Headers(Vec<(String, String)>);

impl Headers {
    /// The first value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether `name` is among them.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Adds a field at the end, beside any of the same name.
    pub(crate) fn push(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.0.push((name.into(), value.into()));
    }

    /// `name: value` in place of every field of that name, at the end.
    pub(crate) fn set(&mut self, name: &str, value: impl Into<String>) {
        self.remove(name);
        self.push(name, value);
    }

    /// `name: value` at the end, unless a field of that name is there already.
    pub(crate) fn set_default(&mut self, name: &str, value: &str) {
        if !self.contains(name) {
            self.push(name, value);
        }
    }

    /// Every field of `name` taken out.
    pub(crate) fn remove(&mut self, name: &str) {
        self.retain(|n, _| !n.eq_ignore_ascii_case(name));
    }

    /// `others` in place of every field of the same names, at the end.
    pub(crate) fn replace_with(&mut self, others: &Headers) {
        self.retain(|name, _| !others.contains(name));
        self.0.extend(others.0.iter().cloned());
    }

    /// Keeps the fields for which `keep(name, value)` holds.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        self.0.retain(|(name, value)| keep(name, value));
    }

    /// Each field as `(name, value)`, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

impl<N: Into<String>, V: Into<String>> FromIterator<(N, V)> for Headers {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(fields: I) -> Headers {
        Headers(fields.into_iter().map(|(name, value)| (name.into(), value.into())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_in_any_case_and_keep_their_spelling_and_order() {
        let mut headers: Headers = [("X-A", "1"), ("accept", "a"), ("x-a", "2")].into_iter().collect();
        assert_eq!(headers.get("X-a"), Some("1"));
        assert!(headers.contains("ACCEPT") && !headers.contains("Accept-Encoding"));
        headers.set_default("Accept", "b");
        headers.set_default("Content-Type", "c");
        assert_eq!(headers.iter().last(), Some(("Content-Type", "c")));
        headers.set("X-A", "3");
        let replacing: Headers = [("ACCEPT", "z")].into_iter().collect();
        headers.replace_with(&replacing);
        let fields: Vec<_> = headers.iter().collect();
        assert_eq!(fields, [("Content-Type", "c"), ("X-A", "3"), ("ACCEPT", "z")]);
        headers.remove("x-a");
        assert_eq!(headers.iter().count(), 2);
    }
}
