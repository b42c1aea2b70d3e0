//! The crate's modules in layers that only point down: every `crate::x` a
//! module names must sit in a lower layer than the module itself. Unit tests
//! (`#[cfg(test)] mod tests`) may reach anywhere.

use std::path::Path;

/// The folders of `src/` that group modules by floor (each file is a module
/// of its own); any other folder (`state/`) is one module.
const ROOMS: &[&str] = &["cli", "http", "report", "rules", "run", "util"];

/// From the bottom up; a module may use only modules of earlier layers.
const LAYERS: &[&[&str]] = &[
    &["clock", "text", "file", "parse", "prelude", "sync"],
    &["wait", "url", "advice"],
    &["error", "policy", "tls"],
    &["exec", "signals", "summary", "condition", "bucket", "breaker", "proxy", "unix", "cookies"],
    &["request", "child", "operation"],
    &["record", "state", "conditional", "credentials"],
    &["progress"],
    &["reporter"],
    &["flags"],
    &["docs"],
    &["config"],
    &["target"],
    &["ending"],
    &["run"],
    &["fuzz"],
    &["lib"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The modules `text` (one file) names as `crate::x` or `crate::room::x`,
/// before its own unit tests.
fn imports(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + 7..];
        // `crate::{a, b::c}` and `crate::room::{a, b}` count each of their paths.
        let (room, rest) = match ROOMS.iter().find(|room| rest.starts_with(&format!("{room}::{{"))) {
            Some(room) => (format!("{room}::"), &rest[room.len() + 2..]),
            None => (String::new(), rest),
        };
        if let Some(group) = rest.strip_prefix('{') {
            let group: String = group.chars().take_while(|c| *c != '}').collect();
            found.extend(group.split(',').map(|path| module_of(&format!("{room}{}", path.trim()))));
        } else {
            found.push(module_of(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

/// The module a path below `crate::` names: `policy` of `rules::policy::Verdict`,
/// `run` of `run::Ending`, `lib` of a type (a re-export of lib.rs).
fn module_of(path: &str) -> String {
    let word = |text: &str| -> String { text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let first = word(path);
    if first.starts_with(|c: char| c.is_ascii_uppercase()) {
        return "lib".to_string();
    }
    let second = path.strip_prefix(&format!("{first}::")).map(word).unwrap_or_default();
    match ROOMS.contains(&first.as_str()) && layer_of(&second).is_some() {
        true => second,
        false => first,
    }
}

/// Every Rust file of `src/` but `main.rs`, each with the module it belongs
/// to: a file of a room is its own module (a room's `mod.rs` is the room's,
/// checked when the room is a module of LAYERS); a file of another folder
/// belongs to the folder's module.
fn files(src: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(src).expect("src").flatten() {
        let path = entry.path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if path.is_dir() && ROOMS.contains(&name.as_str()) {
            for file in std::fs::read_dir(&path).expect("a room").flatten() {
                let path = file.path();
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
                let module = if stem == "mod" { name.clone() } else { stem };
                if path.is_dir() {
                    in_folder(&module, &path, &mut files);
                } else if path.extension().is_some_and(|e| e == "rs") && layer_of(&module).is_some() {
                    files.push((module, path));
                } else if path.extension().is_some_and(|e| e == "rs") {
                    // A room's own mod.rs that is no module of LAYERS only declares its modules.
                    let text = std::fs::read_to_string(&path).expect("a source file");
                    assert!(!text.contains("crate::"), "{}: a room's mod.rs holds no code", path.display());
                }
            }
        } else if path.is_dir() {
            in_folder(&name, &path, &mut files);
        } else if name != "main" && path.extension().is_some_and(|e| e == "rs") {
            files.push((name, path));
        }
    }
    files.sort();
    files
}

/// The Rust files of `folder` and of the folders in it, all of `module`.
fn in_folder(module: &str, folder: &Path, files: &mut Vec<(String, std::path::PathBuf)>) {
    for file in std::fs::read_dir(folder).expect("module folder").flatten() {
        let path = file.path();
        if path.is_dir() {
            in_folder(module, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push((module.to_string(), path));
        }
    }
}

/// What is wrong with the imports of `module`'s file `text`.
fn wrong_imports(module: &str, text: &str) -> Vec<String> {
    let Some(own) = layer_of(module) else {
        return vec![format!("{module} is in no layer: add it to LAYERS")];
    };
    imports(text)
        .into_iter()
        .filter(|import| import != module && import != "self" && import != "super")
        .filter(|import| layer_of(import).is_none_or(|layer| layer >= own))
        .map(|import| format!("{module} (layer {own}) uses {import}, which is not below it"))
        .collect()
}

#[test]
fn modules_only_import_modules_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = files(&src);
    assert!(files.iter().any(|(m, p)| m == "state" && p.ends_with("redis/cluster.rs")), "the folders' files are read");
    let mut wrong = Vec::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).expect("a source file");
        wrong.extend(wrong_imports(module, &text).into_iter().map(|w| format!("{}: {w}", path.display())));
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each file is cut at its own tests: an upward import in a folder's second
/// file is found, and one inside a file's unit tests is allowed.
#[test]
fn every_file_is_checked_up_to_its_own_tests() {
    let upward = "use crate::state::FileStore;\nuse crate::target::Common;\n";
    assert_eq!(wrong_imports("state", upward), ["state (layer 5) uses target, which is not below it"]);
    let in_tests = "use crate::clock;\n#[cfg(test)]\nmod tests {\n    use crate::target::Common;\n}\n";
    assert!(wrong_imports("state", in_tests).is_empty());
}

/// A room's modules are named by their own names, one by one or in a group.
#[test]
fn paths_through_a_room_name_its_modules() {
    let text = "use crate::rules::policy::Verdict;\nuse crate::util::{file, url::redact};\nuse crate::run::Ending;\nuse crate::{state::Shared, Config};\n";
    assert_eq!(imports(text), ["policy", "file", "url", "run", "state", "lib"]);
}

#[test]
fn main_goes_through_the_library_only() {
    let main = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs")).expect("main.rs");
    assert!(!main.contains("crate::"), "main.rs is a client of the library");
    assert!(main.lines().count() <= 45, "main.rs stays short: {} lines", main.lines().count());
}

/// The modules that own a platform's differences (STYLE.md, habit 11): each
/// keeps its Unix and Windows halves; the rest of the code calls them and
/// names no platform.
const SEAMS: &[&str] = &[
    "util/signals.rs", // SIGINT, SIGTERM, SIGHUP; Ctrl-C and Ctrl-Break
    "util/child.rs",   // --auth-cmd: sh -c or cmd /C, and its end
    "util/exec.rs",    // -- CMD: exec, or run and wait
    "util/file.rs",    // a file's identity, modes and owners
    "http/unix.rs",    // Unix sockets: --unix-socket and redis+unix://
    "http/tls.rs",     // where the system's roots are
    "util/error.rs",   // Signal's variants that a platform never sends
];

/// The platform conditions a source text names, before its own unit tests.
fn platform_cfgs(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    code.lines()
        .filter(|line| {
            ["cfg(", "cfg!(", "cfg_attr("].iter().any(|c| line.contains(c))
                && ["unix", "windows", "target_os", "target_family"].iter().any(|p| line.contains(p))
        })
        .map(|line| line.trim().to_string())
        .collect()
}

#[test]
fn platform_conditions_live_in_the_seams_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut scattered = Vec::new();
    for (_, path) in files(&src) {
        let relative = path.strip_prefix(&src).expect("under src").to_string_lossy().replace('\\', "/");
        if SEAMS.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        scattered.extend(platform_cfgs(&text).into_iter().map(|line| format!("{relative}: {line}")));
    }
    assert!(scattered.is_empty(), "platform cfg outside the seams {SEAMS:?}:\n{}", scattered.join("\n"));
    let sprinkled =
        "#[cfg(unix)]\nuse std::os::unix::net::UnixStream;\n#[cfg(test)]\nmod tests {\n    #[cfg(windows)]\n}\n";
    assert_eq!(platform_cfgs(sprinkled), ["#[cfg(unix)]"]);
}
