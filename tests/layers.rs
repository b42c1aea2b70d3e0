//! The crate's modules in layers that only point down: every `crate::x` a
//! module names must sit in a lower layer than the module itself. Unit tests
//! (`#[cfg(test)] mod tests`) may reach anywhere.

use std::collections::BTreeMap;
use std::path::Path;

/// From the bottom up; a module may use only modules of earlier layers.
const LAYERS: &[&[&str]] = &[
    &["clock", "text", "file", "parse"],
    &["advice", "error", "url"],
    &["policy"],
    &["condition", "bucket", "breaker", "proxy"],
    &["request", "wait"],
    &["record", "state", "credentials"],
    &["output"],
    &["cli"],
    &["docs"],
    &["config"],
    &["target"],
    &["run"],
    &["lib"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// The modules `text` names as `crate::x`, before its unit tests.
fn imports(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let name: String = code[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        // `crate::{a, b}` and `crate::Type` (a re-export of lib.rs) count too.
        if name.is_empty() {
            let group: String = code[i + 7..].chars().skip(1).take_while(|c| *c != '}').collect();
            found.extend(group.split(',').map(|m| m.trim().split("::").next().unwrap_or("").to_string()));
        } else if name.starts_with(|c: char| c.is_ascii_uppercase()) {
            found.push("lib".to_string());
        } else {
            found.push(name);
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

#[test]
fn modules_only_import_modules_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("src").flatten() {
        let path = entry.path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if path.is_dir() {
            for file in std::fs::read_dir(&path).expect("module folder").flatten() {
                let text = std::fs::read_to_string(file.path()).unwrap_or_default();
                modules.entry(name.clone()).or_default().push_str(&text);
            }
        } else if name != "main" {
            modules.insert(name, std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    let mut wrong = Vec::new();
    for (module, text) in &modules {
        let Some(own) = layer_of(module) else {
            wrong.push(format!("{module} is in no layer: add it to LAYERS"));
            continue;
        };
        for import in imports(text) {
            match layer_of(&import) {
                _ if import == *module || import == "self" || import == "super" => {}
                Some(layer) if layer < own => {}
                _ => wrong.push(format!("{module} (layer {own}) uses {import}, which is not below it")),
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn main_goes_through_the_library_only() {
    let main = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs")).expect("main.rs");
    assert!(!main.contains("crate::"), "main.rs is a client of the library");
    assert!(main.lines().count() <= 45, "main.rs stays short: {} lines", main.lines().count());
}
