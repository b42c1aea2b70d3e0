//! `completions/` and `man/poll.1` are generated from the clap model by the
//! hidden `poll --generate KIND` and committed; this test generates them again
//! and fails when a committed file differs. `UPDATE=1 cargo test --test it
//! generated::` rewrites them. The help and README's exit-code table are checked
//! against the one table in `src/error.rs`.

use crate::support;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What the hidden `poll --generate KIND` writes.
fn generated(kind: &str) -> Vec<u8> {
    let out = assert_cmd::cargo::cargo_bin_cmd!("poll").args(["--generate", kind]).output().expect("run poll");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!out.stdout.is_empty(), "--generate {kind} wrote nothing");
    out.stdout
}

#[test]
fn completions_and_man_page_are_current() {
    let files = [
        ("bash", "completions/poll.bash"),
        ("zsh", "completions/_poll"),
        ("fish", "completions/poll.fish"),
        ("powershell", "completions/_poll.ps1"),
        ("elvish", "completions/poll.elv"),
        ("man", "man/poll.1"),
    ];
    let update = std::env::var_os("UPDATE").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (kind, file) in files {
        let fresh = generated(kind);
        let path = root().join(file);
        if update {
            write(&path, &fresh);
        } else if std::fs::read(&path).ok().as_deref() != Some(&fresh[..]) {
            stale.push(file);
        }
    }
    assert!(stale.is_empty(), "stale generated files {stale:?}: run `UPDATE=1 cargo test --test it generated::`");
}

#[test]
fn no_completion_offers_the_hidden_generator() {
    for kind in ["bash", "zsh", "fish", "powershell", "elvish", "man"] {
        let text = String::from_utf8_lossy(&generated(kind)).into_owned();
        assert!(!text.contains("generate"), "{kind} mentions --generate");
        assert!(text.contains("--until") || text.contains("\\-\\-until"), "{kind} lacks --until");
    }
}

#[test]
fn the_help_and_readme_carry_the_exit_code_table() {
    let help = assert_cmd::cargo::cargo_bin_cmd!("poll").arg("--help").output().expect("run poll");
    // Wrapped at the terminal's width: compare with whitespace collapsed.
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = words(&String::from_utf8_lossy(&help.stdout));
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    // README's rows, with the code formatting (backticks) taken out.
    let rows: Vec<String> = readme.lines().filter(|l| l.starts_with("| ")).map(|l| l.replace('`', "")).collect();
    for (code, meaning) in poll::EXIT_CODES {
        assert!(help.contains(&words(&format!("{code} {meaning}"))), "--help lacks exit {code}: {help}");
        let row = format!("| {code} | {meaning} |");
        assert!(rows.contains(&row), "README's exit-code table lacks `{row}`");
    }
}

/// The exit codes `--fallback` stands in on, as `--help` says them (made from the table), are the
/// ones README and the guide name.
#[test]
fn readme_and_the_guide_name_the_fallbacks_codes_as_the_help_does() {
    let help = assert_cmd::cargo::cargo_bin_cmd!("poll").arg("--help").output().expect("run poll");
    let help = String::from_utf8_lossy(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(codes) =
        help.split("Body printed when the run ends with exit ").nth(1).and_then(|rest| rest.split(':').next())
    else {
        panic!("--help describes --fallback: {help}")
    };
    assert_eq!(codes, "1, 5 or 6");
    for (file, phrase) in
        [("README.md", format!("ends with {codes} prints")), ("docs/guide/state.md", format!("ends with exit {codes}"))]
    {
        let text = std::fs::read_to_string(root().join(file)).expect("a document");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains(&phrase), "{file} does not say `{phrase}`");
    }
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).expect("create folder for generated file");
    }
    std::fs::write(path, bytes).expect("write generated file");
}

#[test]
fn man_page_renders_without_warnings() {
    // groff is not on every machine; where it is, it must find nothing to complain about.
    if !support::have_tool("groff", "apt-get install groff-base") {
        return;
    }
    let out = std::process::Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(root().join("man").join("poll.1"))
        .output()
        .expect("run groff");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff warnings");
}
