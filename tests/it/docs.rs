//! Every relative link in every Markdown file of the repository resolves: to a
//! file that exists and, with `#anchor`, to a heading of that file.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files of the repository, outside `target/` and hidden folders.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            markdown_files(&path, found);
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The targets of `[text](target)` links, outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans may hold `](` that is no link.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            found.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    found
}

/// GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_resolves() {
    let mut files = Vec::new();
    markdown_files(&root(), &mut files);
    assert!(files.len() >= 5, "{files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a Markdown file");
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() { file.clone() } else { file.parent().expect("a folder").join(path) };
            let shown = format!("{}: ({link})", file.strip_prefix(root()).unwrap_or(file).display());
            if !target.exists() {
                broken.push(format!("{shown}: no such file"));
            } else if !fragment.is_empty() {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap_or_default());
                if !headings.iter().any(|a| a == fragment) {
                    broken.push(format!("{shown}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn links_and_anchors_are_read_as_github_does() {
    assert_eq!(links("see [a](docs/a.md#x) and `[b](c)` but [d](e)"), ["docs/a.md#x", "e"]);
    assert_eq!(
        anchor(" One polite client across a CI fleet: `--state redis://`"),
        "one-polite-client-across-a-ci-fleet---state-redis"
    );
    assert_eq!(anchors("# A b\n```\n# not\n```\n## C, d"), ["a-b", "c-d"]);
}
