//! The crate's modules in layers that only point down: every `crate::x` a
//! module names must sit in a lower layer than the module itself. Unit tests
//! (`#[cfg(test)] mod tests`) may reach anywhere.

use std::path::Path;

/// The folders of `src/` that group modules by floor (each file is a module
/// of its own); any other folder (`state/`) is one module.
const ROOMS: &[&str] = &["cli", "http", "net", "process", "report", "rules", "run", "util"];

/// From the bottom up; a module may use only modules of earlier layers.
const LAYERS: &[&[&str]] = &[
    &["clock", "text", "file", "headers", "parse", "stack", "sync", "decode", "events", "timeout", "shell"],
    &["wait", "url", "link", "advice", "unix", "roots", "resume", "stall", "trace", "budget", "cubic"],
    &["error", "attempt", "tls", "jq", "probe", "pages"],
    &["exec", "signals", "start", "policy", "condition", "bucket", "breaker", "proxy", "cookies", "transport"],
    &["request", "child", "operation"],
    &["record", "state", "conditional", "credentials"],
    &["progress", "term"],
    &["result"],
    &["live", "voice", "log", "summary", "junit"],
    &["reporter"],
    &["flags"],
    &["docs"],
    &["config"],
    &["environment"],
    &["explain"],
    &["target"],
    &["watch", "port", "walk"],
    &["serve"],
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

/// The modules that own a platform's differences, one per concern: each
/// keeps its Unix and Windows halves; the rest of the code calls them and
/// names no platform.
const SEAMS: &[&str] = &[
    "process/signals.rs",        // SIGINT, SIGTERM, SIGHUP; Ctrl-C and Ctrl-Break
    "process/child.rs",          // --auth-cmd: sh -c or cmd /C, and its end
    "process/exec.rs",           // -- CMD: exec, or run and wait
    "process/start.rs",          // --start: a process group, or a job object
    "process/shell.rs",          // sh -c, or cmd /D /S /C, for --auth-cmd and --start
    "util/file.rs",              // a file's identity, modes and owners; device names; a reader gone
    "util/timeout.rs",           // a socket timeout's unit: milliseconds or microseconds
    "net/unix.rs",               // Unix sockets: --unix-socket and redis+unix://
    "http/transport/wire.rs",    // a pooled connection's liveness probe
    "http/transport/connect.rs", // Windows' WSAEACCES on a connect
    "net/roots.rs",              // where the system's roots are
    "error.rs",                  // Signal's variants that a platform never sends
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

/// What a line of rustfmt'd Rust begins, after its visibility and `unsafe`: the keyword and the
/// name after it (`("struct", "Breaker")`, `("impl", "")`).
fn item(line: &str) -> (&str, &str) {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scope) => scope.split_once(')').map_or(after, |(_, rest)| rest),
            None => after,
        }
        .trim_start();
    }
    rest = rest.strip_prefix("unsafe ").unwrap_or(rest);
    let keyword: &str = rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap_or_default();
    let name = rest[keyword.len()..].trim_start();
    let name = &name[..name.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(name.len())];
    (keyword, name)
}

/// The type names one file of `src/` defines, with their lines: its structs, enums, unions,
/// traits and type aliases, wherever they stand (a platform's `mod imp`, a function). Not an
/// impl's or a trait's associated types (`type Out = ...` for a ureq `Connector`, `type Error`
/// of a `TryFrom`, `type Target` of a `Deref`), nor anything in a `#[cfg(test)]` module. Read by
/// rustfmt's layout: a block ends at a `}` as indented as the line that opened it.
fn type_definitions(text: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    // The line that will close the impl, trait or unit-test module the lines are in; whether it is tests.
    let mut inside: Option<(String, bool)> = None;
    let mut cfg_test = false;
    for (n, line) in text.lines().enumerate() {
        if let Some((close, test)) = &inside {
            if line == close {
                inside = None;
            } else if !test && item(line).0 != "type" {
                // Structs of a method's body are definitions; its associated types are not.
                found.extend(definition(line).map(|name| (name, n + 1)));
            }
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let opens = line.trim_end().ends_with('{') || !line.trim_end().ends_with([';', '}', ',']);
        match item(line).0 {
            "mod" if cfg_test && opens => inside = Some((format!("{indent}}}"), true)),
            "impl" | "trait" if opens => inside = Some((format!("{indent}}}"), false)),
            _ => {}
        }
        found.extend(definition(line).map(|name| (name, n + 1)));
        cfg_test = line.trim() == "#[cfg(test)]";
    }
    found
}

/// The name a line defines as a struct, enum, union, trait or type alias, if it does.
fn definition(line: &str) -> Option<String> {
    match item(line) {
        ("struct" | "enum" | "union" | "trait" | "type", name) if !name.is_empty() => Some(name.to_string()),
        _ => None,
    }
}

/// The Rust files of `src/` that build the crate, `main.rs` too; not those only its unit tests
/// compile (`#[cfg(test)] mod test_support;`).
fn crate_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    let mut test_only = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            let lines: Vec<&str> = text.lines().collect();
            for pair in lines.windows(2) {
                if pair[0].trim() == "#[cfg(test)]" && item(pair[1]).0 == "mod" && pair[1].trim_end().ends_with(';') {
                    test_only.push(format!("{}.rs", item(pair[1]).1));
                }
            }
        }
    }
    for entry in std::fs::read_dir(dir).expect("a folder").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            crate_files(&path, found);
        } else if name.ends_with(".rs") && !test_only.contains(&name) {
            found.push(path);
        }
    }
}

/// One name, one thing: a grep for a type finds its one definition.
#[test]
fn each_type_name_is_defined_in_one_file_of_src() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    crate_files(&src, &mut files);
    files.sort();
    let mut defined: std::collections::BTreeMap<String, Vec<(String, usize)>> = std::collections::BTreeMap::new();
    for path in &files {
        let relative = path.strip_prefix(&src).expect("under src").to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(path).expect("a source file");
        for (name, line) in type_definitions(&text) {
            defined.entry(name).or_default().push((relative.clone(), line));
        }
    }
    assert!(defined.contains_key("Breaker") && defined.len() >= 50, "too few types found: {defined:?}");
    let mut twice = Vec::new();
    for (name, places) in &defined {
        let mut files: Vec<&str> = places.iter().map(|(file, _)| file.as_str()).collect();
        files.dedup();
        if files.len() > 1 {
            let at: Vec<String> = places.iter().map(|(file, line)| format!("src/{file}:{line}")).collect();
            twice.push(format!("{name}: {}", at.join(", ")));
        }
    }
    assert!(twice.is_empty(), "type names defined in more than one file of src/:\n{}", twice.join("\n"));
}

#[test]
fn associated_types_and_unit_tests_define_no_type_name() {
    let text = "\
pub struct A;
pub(crate) enum B {
    X,
}
type C = u8;
impl std::ops::Deref for A {
    type Target = str;
    fn deref(&self) -> &str {
        struct Local;
        \"\"
    }
}
impl<T> TryFrom<T> for B
where
    T: Into<u8>,
{
    type Error = String;
}
#[cfg(unix)]
mod imp {
    pub(super) unsafe trait D {
        type Out;
    }
    pub(in crate::x) type E = u16;
}
#[cfg(test)]
mod tests {
    struct F;
}
pub struct G {}
";
    let names: Vec<String> = type_definitions(text).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["A", "B", "C", "Local", "D", "E", "G"]);
}
