//! Every relative link in every Markdown file of the repository resolves: to a
//! file that exists and, with `#anchor`, to a heading of that file. Every path
//! of the repository that a document or a comment names exists, and every
//! module of `src/` has its line in docs/DESIGN.md's map.

use std::collections::BTreeSet;
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
            } else if !within_repository(&target) {
                broken.push(format!("{shown}: outside the repository"));
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

/// Whether `path` (which exists) is inside the repository: a reader of it has nothing else.
fn within_repository(path: &Path) -> bool {
    let root = root().canonicalize().expect("the repository");
    path.canonicalize().is_ok_and(|path| path.starts_with(root))
}

/// The files outside the repository that `text`, in `folder`, cites: a path that climbs out of
/// it with `..` (from `folder`, or in a comment from the root, where its paths start), or a
/// repository document by a name none of its Markdown files has (an upper-case name such as
/// README.md). A clone has neither.
fn outside_citations(text: &str, folder: &Path, markdown_names: &[String]) -> Vec<String> {
    let words = text.split(|c: char| c.is_whitespace() || "`()[]'\",;:".contains(c));
    let words = words.map(|word| word.trim_end_matches(['.', '!', '?']));
    let climbs_out = |word: &str| {
        let mut depth = folder.components().count();
        for part in word.split('#').next().unwrap_or(word).split('/') {
            match part {
                ".." if depth == 0 => return true,
                ".." => depth -= 1,
                "." | "" => {}
                _ => depth += 1,
            }
        }
        false
    };
    let unknown_document = |word: &str| {
        let stem = word.strip_suffix(".md").unwrap_or_default();
        !word.contains('/')
            && !stem.is_empty()
            && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && !markdown_names.iter().any(|known| known == word)
    };
    words.filter(|word| climbs_out(word) || unknown_document(word)).map(str::to_string).collect()
}

#[test]
fn nothing_cites_a_file_outside_the_repository() {
    let root = root();
    let mut documents = Vec::new();
    markdown_files(&root, &mut documents);
    let names: Vec<String> =
        documents.iter().filter_map(|f| f.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    let mut sources = Vec::new();
    for folder in ["src", "tests", "benches", "examples", "fuzz"] {
        source_files(&root.join(folder), &mut sources);
    }
    let mut cited = Vec::new();
    for file in documents.iter().chain(&sources) {
        let text = std::fs::read_to_string(file).expect("a file");
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        let markdown = file.extension().is_some_and(|e| e == "md");
        let (lines, folder): (Vec<(usize, String)>, &Path) = if markdown {
            let lines = text.lines().enumerate().map(|(n, line)| (n + 1, line.to_string())).collect();
            (lines, file.parent().and_then(|f| f.strip_prefix(&root).ok()).unwrap_or(Path::new("")))
        } else {
            (comments(&text, file.extension().is_some_and(|e| e == "lua")), Path::new(""))
        };
        for (line, text) in lines {
            let found = outside_citations(&text, folder, &names);
            cited.extend(found.into_iter().map(|c| format!("{shown}:{line}: {c}")));
        }
    }
    assert!(cited.is_empty(), "citations of files a clone does not have:\n{}", cited.join("\n"));
}

#[test]
fn citations_outside_the_repository_are_found() {
    let names = ["README.md".to_string(), "DESIGN.md".to_string()];
    let text = "see `../shared/contract.md`, STYLE.md, [a](../../x.md), [b](../DESIGN.md#c) and README.md, \
                docs/DESIGN.md, summary.md or `*.md`.";
    let (top, guide) = (Path::new(""), Path::new("docs/guide"));
    assert_eq!(
        outside_citations(text, top, &names),
        ["../shared/contract.md", "STYLE.md", "../../x.md", "../DESIGN.md#c"]
    );
    assert_eq!(outside_citations(text, guide, &names), ["STYLE.md"]);
    assert_eq!(outside_citations("[a](../../../x.md)", guide, &names), ["../../../x.md"]);
    assert!(!within_repository(&root().join("..")));
    assert!(within_repository(&root().join("src/../README.md")));
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

/// Where a path of the repository, written from its root, starts: one of its folders, or it is
/// one of its top-level files by name.
const FOLDERS: &[&str] = &[
    "src/",
    "tests/",
    "docs/",
    "benches/",
    "examples/",
    "install/",
    "fuzz/",
    "man/",
    "completions/",
    ".ci/",
    ".github/",
    ".cargo/",
];
const TOP_FILES: &[&str] =
    &["Cargo.toml", "Cargo.lock", "README.md", "CONTRIBUTING.md", "LICENSE-MIT", "LICENSE-APACHE", "action.yml"];

/// The paths of the repository that `text` names, as written from its root: each word that
/// starts with one of `FOLDERS` or is one of `TOP_FILES`, without the punctuation around it, a
/// possessive `'s`, a `:line` or a `#anchor`. Not one path, so skipped: globs (`*`, `?`, `[`),
/// elisions (`...`, `…`), placeholders (`<name>`, `{name}`, `$VAR`, `%s`), URLs. Paths outside
/// the repository (which climb out of it with `..`) and paths relative to a file's own folder (`redis/node.rs`)
/// start with none of `FOLDERS`, so they are not checked either.
fn repo_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || c == '`') {
        let word = word.trim_start_matches(|c: char| "'\"([".contains(c));
        if ["*", "?", "[", "...", "…", "<", "{", "$", "%", "://"].iter().any(|p| word.contains(p)) {
            continue;
        }
        let word = word.trim_end_matches(|c: char| "'\")],;:.!".contains(c));
        let word = word.strip_suffix("'s").unwrap_or(word);
        let word = word.split([':', '#']).next().unwrap_or(word);
        if FOLDERS.iter().any(|folder| word.starts_with(folder)) || TOP_FILES.contains(&word) {
            found.push(word.to_string());
        }
    }
    found
}

/// What a Markdown file names in code: its code spans and fenced code blocks, by line number.
fn markdown_code(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            found.push((n + 1, line.to_string()));
        } else {
            found.extend(line.split('`').skip(1).step_by(2).map(|span| (n + 1, span.to_string())));
        }
    }
    found
}

/// The comments of a source file, by line number: after `//` in Rust (`//!` and `///` too; not
/// the `//` of a URL or of a string), after `--` in Lua.
fn comments(text: &str, lua: bool) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    // Inside a string when an odd number of quotes, not escaped, comes before.
    let in_string = |before: &str| before.replace("\\\\", "").replace("\\\"", "").matches('"').count() % 2 == 1;
    for (n, line) in text.lines().enumerate() {
        let start = if lua {
            line.find("--")
        } else {
            line.match_indices("//").map(|(i, _)| i).find(|i| !line[..*i].ends_with(':') && !in_string(&line[..*i]))
        };
        if let Some(i) = start {
            found.push((n + 1, line[i..].to_string()));
        }
    }
    found
}

/// The `.rs` and `.lua` files of `dir` and of the folders in it.
fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            source_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "lua") {
            found.push(path);
        }
    }
}

/// `file:line: `path`` for each path of `named` (line, text) that does not exist.
fn missing(root: &Path, file: &Path, named: &[(usize, String)]) -> Vec<String> {
    let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
    named
        .iter()
        .flat_map(|(line, text)| repo_paths(text).into_iter().map(move |path| (line, path)))
        .filter(|(_, path)| !root.join(path).exists())
        .map(|(line, path)| format!("{shown}:{line}: `{path}`"))
        .collect()
}

#[test]
fn every_path_a_document_or_a_comment_names_exists() {
    let root = root();
    let mut documents = Vec::new();
    markdown_files(&root, &mut documents);
    let mut sources = Vec::new();
    source_files(&root.join("src"), &mut sources);
    source_files(&root.join("tests"), &mut sources);
    assert!(sources.iter().any(|f| f.ends_with("src/state/redis/admit.lua")), "the Lua scripts are read");
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &documents {
        let named = markdown_code(&std::fs::read_to_string(file).expect("a Markdown file"));
        checked += named.iter().map(|(_, text)| repo_paths(text).len()).sum::<usize>();
        broken.extend(missing(&root, file, &named));
    }
    for file in &sources {
        let text = std::fs::read_to_string(file).expect("a source file");
        let named = comments(&text, file.extension().is_some_and(|e| e == "lua"));
        checked += named.iter().map(|(_, text)| repo_paths(text).len()).sum::<usize>();
        broken.extend(missing(&root, file, &named));
    }
    assert!(checked >= 100, "only {checked} paths were found");
    assert!(broken.is_empty(), "paths that do not exist:\n{}", broken.join("\n"));
}

#[test]
fn paths_are_read_as_written_and_patterns_are_skipped() {
    let text = "see `src/run/mod.rs:93-128`, (src/http/tls.rs's roots), `tests/it/`. And `Cargo.toml`, \
                but not `fuzz/seeds/state/hostile-*`, `src/...`, `docs/<topic>.md`, `../shared/contract.md`, \
                `https://example.com/src/x.rs` or `docs/DESIGN.md#choices`";
    assert_eq!(repo_paths(text), ["src/run/mod.rs", "src/http/tls.rs", "tests/it/", "Cargo.toml", "docs/DESIGN.md"]);
    let markdown = "a `src/lib.rs` b\n```\ntests/windows.sh musl\n```\nsrc/prose.rs\n";
    assert_eq!(markdown_code(markdown), [(1, "src/lib.rs".to_string()), (3, "tests/windows.sh musl".to_string())]);
    let rust = "let url = \"http://x/\"; // see src/lib.rs\n/// `src/main.rs`\nlet s = \"a \\\" // no comment\";\n";
    assert_eq!(comments(rust, false), [(1, "// see src/lib.rs".to_string()), (2, "/// `src/main.rs`".to_string())]);
    assert_eq!(
        comments("-- poll's step (src/c.rs)\nlocal x = 1\n", true),
        [(1, "-- poll's step (src/c.rs)".to_string())]
    );
    let named = [(7, "`src/lib.rs` and `src/no-such-file.rs`".to_string())];
    assert_eq!(missing(&root(), &root().join("src/x.rs"), &named), ["src/x.rs:7: `src/no-such-file.rs`"]);
}

/// docs/DESIGN.md's module map: the first fenced block of its "Architecture" section.
fn design_map() -> String {
    let design = std::fs::read_to_string(root().join("docs/DESIGN.md")).expect("docs/DESIGN.md");
    let architecture = design.split("\n## Architecture\n").nth(1).unwrap_or_default();
    architecture.split("```").nth(1).unwrap_or_default().to_string()
}

/// What a module map names, as paths from `src/`: its files and its folders. A line whose first
/// word ends in `/`, followed by two spaces, opens that folder for the lines indented deeper
/// than it; every word of a line that ends in `.rs` names a file of the folder the line is in
/// (`child.rs   ...   exec.rs` names two), and a word with a `/` in it (`rules/operation.rs`)
/// is a path from `src/`.
fn mapped(map: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut files, mut folders) = (BTreeSet::new(), BTreeSet::new());
    // The folders the line is in: each with the indent of the line that opened it.
    let mut open: Vec<(usize, String)> = Vec::new();
    for line in map.lines() {
        let text = line.trim_start();
        if text.is_empty() {
            continue;
        }
        let indent = line.len() - text.len();
        while open.last().is_some_and(|(at, _)| *at >= indent) {
            open.pop();
        }
        let folder = open.last().map(|(_, path)| path.clone()).unwrap_or_default();
        let first = text.split_whitespace().next().unwrap_or_default();
        if first.ends_with('/') && (text.len() == first.len() || text[first.len()..].starts_with("  ")) {
            let path = format!("{folder}{first}");
            folders.insert(path.trim_end_matches('/').to_string());
            open.push((indent, path));
        }
        let folder = open.last().map(|(_, path)| path.clone()).unwrap_or_default();
        for word in text.split(|c: char| c.is_whitespace() || "`()[],;:\"".contains(c)) {
            let word = word.strip_suffix("'s").unwrap_or(word);
            if word.ends_with(".rs") && word.len() > 3 {
                files.insert(if word.contains('/') { word.to_string() } else { format!("{folder}{word}") });
            }
        }
    }
    (files, folders)
}

/// The modules of `modules` (paths from `src/`) that the map's files and folders do not name: a
/// folder's `mod.rs` is named by the folder's line, or by a line of its own.
fn unmapped(modules: &[String], files: &BTreeSet<String>, folders: &BTreeSet<String>) -> Vec<String> {
    let named = |module: &String| {
        files.contains(module) || module.strip_suffix("/mod.rs").is_some_and(|folder| folders.contains(folder))
    };
    modules.iter().filter(|module| !named(module)).cloned().collect()
}

/// Every module of `src/` has a line in DESIGN.md's map, and every file the map names is there:
/// a module added without a line, or moved without its line, fails here.
#[test]
fn every_module_of_src_is_in_the_design_map() {
    let src = root().join("src");
    let mut sources = Vec::new();
    source_files(&src, &mut sources);
    let mut modules: Vec<String> = sources
        .iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.strip_prefix(&src).expect("under src").to_string_lossy().replace('\\', "/"))
        .collect();
    modules.sort();
    assert!(modules.len() >= 80 && modules.contains(&"run/target.rs".to_string()), "{modules:?}");
    let (files, folders) = mapped(&design_map());
    let missing = unmapped(&modules, &files, &folders);
    assert!(missing.is_empty(), "modules of src/ with no line in docs/DESIGN.md's map:\n{}", missing.join("\n"));
    let gone: Vec<&String> = files.iter().filter(|file| !src.join(file).is_file()).collect();
    let gone_folders: Vec<&String> = folders.iter().filter(|folder| !src.join(folder).is_dir()).collect();
    assert!(
        gone.is_empty() && gone_folders.is_empty(),
        "docs/DESIGN.md's map names what src/ does not have: {gone:?} {gone_folders:?}"
    );
}

#[test]
fn the_map_is_read_by_its_folders_and_a_module_without_a_line_is_found() {
    let map = "\
main.rs               the binary
run/                  the top floor
  mod.rs              the coordinator
  a.rs                a, asking rules/b.rs
                      more of a.rs's words; and c.rs too
rules/                plain values: not a folder/ here
  d.rs                d   e.rs  e
  jq/                 the runtime
    f.rs              f
  g.rs                g
lib.rs                the library
";
    let (files, folders) = mapped(map);
    let names = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&files),
        ["lib.rs", "main.rs", "rules/b.rs", "rules/d.rs", "rules/e.rs", "rules/g.rs", "rules/jq/f.rs", "run/a.rs"]
            .into_iter()
            .chain(["run/c.rs", "run/mod.rs"])
            .collect::<Vec<_>>()
    );
    assert_eq!(names(&folders), ["rules", "rules/jq", "run"]);
    let modules: Vec<String> = [
        "main.rs",
        "run/mod.rs",
        "run/a.rs",
        "run/new.rs",
        "rules/jq/mod.rs",
        "rules/mod.rs",
        "rules/jq/f.rs",
        "cli/mod.rs",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(unmapped(&modules, &files, &folders), ["run/new.rs", "cli/mod.rs"]);
}

/// The modules of `tests/it/` CONTRIBUTING.md says run their tests one at a time, in the paragraph
/// that names the lock, are those that take it (`support::process::serial()`), no more, no fewer.
#[test]
fn contributing_names_every_module_whose_tests_run_alone() {
    // Spelt in two halves, so that this file is not one that calls it.
    let call = concat!("serial", "()");
    let mut taking: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(root().join("tests/it")).expect("tests/it").flatten() {
        let path = entry.path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut code = text.lines().filter(|line| !line.trim_start().starts_with("//"));
        if path.extension().is_some_and(|e| e == "rs") && code.any(|line| line.contains(call)) {
            taking.push(path.file_stem().expect("a file name").to_string_lossy().into_owned());
        }
    }
    taking.sort();
    let contributing = std::fs::read_to_string(root().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    let lock = format!("support::process::{call}");
    let paragraph = contributing.split("\n\n").find(|p| p.contains(&lock)).expect("CONTRIBUTING.md names the lock");
    // Its code spans `name::`, each module once.
    let mut named: Vec<String> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| span.strip_suffix("::"))
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_string)
        .collect();
    named.sort();
    named.dedup();
    assert!(!taking.is_empty(), "no module of tests/it takes the lock: is {call} still the lock?");
    assert_eq!(named, taking, "CONTRIBUTING.md's modules that run alone (left), those that call {call} (right)");
}
