//! The release as users get it, tested against a release made here and served on 127.0.0.1:
//! dist's plan and workflow name every target (`[workspace.metadata.dist]` in Cargo.toml), binstall's templates name
//! the archives dist makes, dist's shell installer, hardened by release.yml's one step of ours,
//! installs from a loopback release (or refuses a wrong checksum, an archive whose `poll` is a
//! link, or an unreachable server, with a clear line, checking with `shasum` or `openssl`
//! where `sha256sum` is missing, and leaving nothing in its temporary folder), and the steps of `action.yml`
//! and of `.github/workflows/release-extras.yml` run here as the runner would run them. CI's
//! workflow (`ci.yml`) cannot run here: it is read, and so is the release's gate
//! (`ci-passed.yml`), whose step runs against a stand-in for `gh`.
//!
//! The release folder is the one the workflow publishes, for this machine's target: the archive
//! `poll-TARGET.tar.gz` packed from the debug build of `poll` with the files dist's plan puts in
//! it, in dist's layout (everything under `poll-TARGET/`), and the installer rendered by the
//! pinned dist (`dist build --artifacts=global`) from a manifest that gives that archive's
//! SHA-256, as the workflow's global job renders it from the local jobs' manifests, then hardened by
//! its step (`install/harden-installer.py`). Nothing
//! reaches GitHub: `POLL_DOWNLOAD_URL` points the installer and the action at the test server.
//!
//! Tools: `dist` (cargo-dist, the version Cargo.toml pins), Python's PyYAML (to read the
//! workflows), `curl`, `tar`, `sha256sum`, `git` and `jq`, and `shasum` and `openssl` for the
//! installer without `sha256sum`; `.ci/run` installs them.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};
use support::daemon::free_port;
use support::process::Folder;
use support::server::{Reply, Server};
use support::{have_python_module, have_tool};

/// The dist that Cargo.toml pins (`cargo-dist-version`); the installer must come from this one.
const DIST: &str = "0.34.0";
const INSTALL_DIST: &str = "cargo install cargo-dist --version 0.34.0 --locked";
/// Every target the release builds, as the issue and the contract list them.
const TARGETS: [&str; 7] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
    "x86_64-pc-windows-msvc",
];
/// What a clean environment for the scripts holds on PATH: the system's own programs.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Whether Python and its PyYAML are there.
fn have_pyyaml() -> bool {
    have_python_module("yaml", "pip install pyyaml (or apt-get install python3-yaml)")
}

/// Every tool the release tests run; false (after one `SKIPPED` line) when one is missing.
fn have_release_tools() -> bool {
    have_tool("dist", INSTALL_DIST)
        && have_tool("curl", "apt-get install curl")
        && have_tool("tar", "apt-get install tar")
        && have_tool("sha256sum", "apt-get install coreutils")
        && have_tool("git", "apt-get install git")
        && have_tool("jq", "apt-get install jq")
        && have_pyyaml()
}

/// A YAML file of the repository, read by PyYAML and handed over as JSON.
fn yaml(file: &str) -> Value {
    let out = Command::new("python3")
        .args(["-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)"])
        .arg(root().join(file))
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{file} is not valid YAML: {}", text(&out).1);
    serde_json::from_slice(&out.stdout).expect("PyYAML's JSON")
}

/// `dist` in the repository, with `args`; it must be the pinned version.
fn dist(args: &[&str], target_dir: Option<&Path>) -> Output {
    let mut cmd = Command::new("dist");
    cmd.args(args).current_dir(root()).stdin(Stdio::null());
    if let Some(dir) = target_dir {
        // dist writes its release folder in cargo's target directory: the test's own, not the repository's.
        cmd.env("CARGO_TARGET_DIR", dir);
    }
    let out = cmd.output().expect("run dist");
    assert!(out.status.success(), "dist {args:?} failed: {}", text(&out).1);
    out
}

/// dist's plan of the release (its `dist-manifest.json`), made once.
fn plan() -> &'static Value {
    static PLAN: OnceLock<Value> = OnceLock::new();
    PLAN.get_or_init(|| {
        let version = dist(&["--version"], None);
        assert_eq!(text(&version).0.trim(), format!("cargo-dist {DIST}"), "{INSTALL_DIST}");
        serde_json::from_slice(&dist(&["plan", "--output-format=json"], None).stdout).expect("dist's plan is JSON")
    })
}

/// The archive artifacts of the plan, with their targets.
fn archives() -> Vec<(String, &'static Value)> {
    let artifacts = plan()["artifacts"].as_object().expect("the plan's artifacts");
    let archives = artifacts.values().filter(|a| a["kind"] == "executable-zip");
    archives.map(|a| (a["target_triples"][0].as_str().expect("a target").to_string(), a)).collect()
}

/// This machine's Linux target, which the installer will pick.
fn host_target() -> String {
    format!("{}-unknown-linux-gnu", std::env::consts::ARCH)
}

#[test]
fn the_release_workflow_is_the_one_dist_generates_and_builds_every_target() {
    if !have_release_tools() {
        return;
    }
    // Valid YAML, and what `dist generate` makes of Cargo.toml's settings today, plus the step that hardens the installer.
    let workflow = yaml(".github/workflows/release.yml");
    release_yml_is_dists_plus_the_hardening();
    // PyYAML reads the bare key `on` as true, as YAML 1.1 does; GitHub reads it as `on`.
    let on = &workflow["true"];
    assert!(on["push"]["tags"].is_array(), "release.yml runs on a version tag: {on}");
    let jobs = workflow["jobs"].as_object().expect("release.yml's jobs");
    let dists = [
        "plan",
        "build-local-artifacts",
        "custom-release-extras",
        "custom-ci-passed",
        "build-global-artifacts",
        "host",
        "custom-publish-image",
    ];
    for job in dists.into_iter().chain(["announce"]) {
        assert!(jobs.contains_key(job), "release.yml lacks the job {job}");
    }
    assert_eq!(jobs["custom-release-extras"]["uses"], "$/.github/workflows/release-extras.yml");

    // The build matrix is dist's plan: one job a target, on a runner of its system.
    let matrix = plan()["ci"]["github"]["artifacts_matrix"]["include"].as_array().expect("the plan's matrix");
    let mut built = BTreeSet::new();
    for entry in matrix {
        let runner = entry["runner"].as_str().unwrap();
        for target in entry["targets"].as_array().unwrap() {
            let target = target.as_str().unwrap();
            let system = if target.contains("linux") {
                "ubuntu-"
            } else if target.contains("apple") {
                "macos-"
            } else {
                "windows-"
            };
            assert!(runner.starts_with(system), "{target} builds on {runner}");
            built.insert(target.to_string());
        }
    }
    assert_eq!(built, TARGETS.iter().map(|t| t.to_string()).collect::<BTreeSet<_>>());

    // Each archive holds poll, the man page, the completions, README and the licences, with a SHA-256 sum.
    let archives = archives();
    assert_eq!(archives.len(), TARGETS.len());
    for (target, archive) in &archives {
        let name = archive["name"].as_str().unwrap();
        let suffix = if target.contains("windows") { ".zip" } else { ".tar.gz" };
        assert_eq!(name, format!("poll-{target}{suffix}"));
        let assets: BTreeSet<&str> =
            archive["assets"].as_array().unwrap().iter().map(|a| a["path"].as_str().unwrap()).collect();
        let exe = if target.contains("windows") { "poll.exe" } else { "poll" };
        let want = BTreeSet::from([exe, "man", "completions", "README.md", "LICENSE-MIT", "LICENSE-APACHE"]);
        assert_eq!(assets, want, "{name}");
        assert_eq!(plan()["artifacts"][format!("{name}.sha256")]["kind"], "checksum", "{name} has no .sha256");
    }
    assert!(plan()["artifacts"]["poll-installer.sh"].is_object(), "the plan has no shell installer");

    // What dist does not make: a .deb a Linux architecture, from the musl builds, and the PowerShell installer.
    let extras = yaml(".github/workflows/release-extras.yml");
    assert!(extras["true"]["workflow_call"]["inputs"]["plan"].is_object());
    let debs: Vec<&str> = extras["jobs"]["deb"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    assert_eq!(debs, ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"]);
    assert!(extras["jobs"]["powershell-installer"].is_object());
}

/// The step of release.yml that is not dist's: the installer dist rendered is hardened before it is published.
const HARDENING_STEP: &str =
    "      # Not dist's: its shell installer, hardened before it is published (Cargo.toml, allow-dirty).
      - name: Harden the shell installer
        run: python3 install/harden-installer.py target/distrib/poll-installer.sh
";

/// release.yml is what `dist generate` makes of Cargo.toml today, plus [`HARDENING_STEP`] after
/// the global job's build (before its SBOM step, which does not touch the installer): Cargo.toml's `allow-dirty = ["ci"]` keeps dist from checking it (or
/// writing it), so this regenerates it without that line in a copy of the repository's files.
fn release_yml_is_dists_plus_the_hardening() {
    let copy = copy_repository("release-generate");
    let manifest = std::fs::read_to_string(copy.path("Cargo.toml")).unwrap();
    let allow = "allow-dirty = [\"ci\"]\n";
    assert_eq!(
        manifest.matches(allow).count(),
        1,
        "Cargo.toml's dist settings allow release.yml to differ from dist's"
    );
    std::fs::write(copy.path("Cargo.toml"), manifest.replace(allow, "")).unwrap();
    // A repository of its own: dist writes where git's top level is, and the copy may sit inside
    // this repository's target/ (CI's), whose release.yml it would overwrite.
    must("git", &["init", "-q"], &copy.path(""));
    let mut generate = Command::new("dist");
    generate.args(["generate", "--mode", "ci"]).current_dir(copy.path("")).env("CARGO_TARGET_DIR", copy.path("target"));
    let out = generate.stdin(Stdio::null()).output().expect("run dist");
    assert!(out.status.success(), "dist generate: {}", text(&out).1);
    let dists = std::fs::read_to_string(copy.path(".github/workflows/release.yml")).unwrap();
    let ours = std::fs::read_to_string(root().join(".github/workflows/release.yml")).unwrap();
    // Where the step goes: after the global job's build, before its SBOM and its upload (the
    // global job is the one job that runs `cargo cyclonedx`).
    let anchor = "          cp dist-manifest.json \"$BUILD_MANIFEST_NAME\"\n      - id: cargo-cyclonedx\n";
    assert_eq!(dists.matches(anchor).count(), 1, "dist's release.yml changed where the hardening step goes");
    let (before, after) = anchor.split_at(anchor.find("      - id: cargo-cyclonedx").unwrap());
    let want = dists.replace(anchor, &format!("{before}{HARDENING_STEP}{after}"));
    assert!(
        ours == want,
        "release.yml is not dist's workflow plus the hardening step: run `dist generate --mode ci` without \
         Cargo.toml's allow-dirty line, then put HARDENING_STEP (tests/it/release.rs) back after the \
         build-global-artifacts job's build step"
    );
}

/// A copy of the repository's files (those git knows, as they are in the work tree), as a
/// workflow's checkout has them.
fn copy_repository(name: &str) -> Folder {
    let copy = Folder::new(name);
    let files = must("git", &["ls-files", "-z"], &root());
    for file in files.stdout.split(|&b| b == 0).filter(|f| !f.is_empty()) {
        let file = String::from_utf8_lossy(file).into_owned();
        let (from, to) = (root().join(&file), copy.path(&file));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        // A file deleted in the work tree but still in the index is not copied.
        if from.is_file() {
            std::fs::copy(&from, &to).unwrap_or_else(|e| panic!("copy {file}: {e}"));
        }
    }
    copy
}

/// The repository's URL as Cargo.toml gives it, with the package's metadata.
fn package() -> &'static Value {
    static PACKAGE: OnceLock<Value> = OnceLock::new();
    PACKAGE.get_or_init(|| {
        let out = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
            .current_dir(root())
            .output()
            .expect("run cargo metadata");
        assert!(out.status.success(), "{}", text(&out).1);
        let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
        metadata["packages"].as_array().unwrap().iter().find(|p| p["name"] == "poll").unwrap().clone()
    })
}

fn repository() -> &'static str {
    package()["repository"].as_str().expect("Cargo.toml names the repository")
}

#[test]
fn binstall_fetches_the_archives_the_release_publishes() {
    if !have_release_tools() {
        return;
    }
    let meta = &package()["metadata"]["binstall"];
    let version = package()["version"].as_str().unwrap();
    for (target, archive) in archives() {
        // binstall's per-target overrides, then its template keys.
        let over = &meta["overrides"][&target];
        let pick = |key: &str| over[key].as_str().or(meta[key].as_str()).unwrap_or_else(|| panic!("no {key}"));
        let (suffix, exe) = match pick("pkg-fmt") {
            "tgz" => (".tar.gz", ""),
            "zip" => (".zip", ".exe"),
            other => panic!("{target}: unexpected pkg-fmt {other}"),
        };
        let fill = |template: &str| {
            template
                .replace("{ repo }", repository())
                .replace("{ version }", version)
                .replace("{ name }", "poll")
                .replace("{ bin }", "poll")
                .replace("{ target }", &target)
                .replace("{ archive-suffix }", suffix)
                .replace("{ binary-ext }", if target.contains("windows") { ".exe" } else { "" })
        };
        let name = archive["name"].as_str().unwrap();
        assert_eq!(fill(pick("pkg-url")), format!("{}/releases/download/v{version}/{name}", repository()));
        // dist's layout: a tarball holds one folder named after it, a zip holds its files at the top.
        let bin = if suffix == ".zip" { format!("poll{exe}") } else { format!("poll-{target}/poll") };
        assert_eq!(fill(pick("bin-dir")), bin, "{target}");
    }
}

#[test]
fn readme_states_the_minimum_rust_version_cargo_toml_declares() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let words = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let rust = package()["rust_version"].as_str().expect("Cargo.toml's rust-version");
    assert!(words.contains(&format!("(Rust {rust} or newer)")), "README does not say Rust {rust} or newer");
}

#[test]
fn the_action_and_the_powershell_installer_name_the_repository_cargo_toml_names() {
    if !have_release_tools() {
        return;
    }
    let action = std::fs::read_to_string(root().join("action.yml")).unwrap();
    let ps1 = std::fs::read_to_string(root().join("install/poll-installer.ps1")).unwrap();
    assert_eq!(action.matches("https://github.com/").count(), action.matches(repository()).count());
    assert_eq!(action.matches(repository()).count(), 2, "one for each step of action.yml");
    assert!(ps1.contains(&format!("$PollRepository = '{}'", repository())));
}

/// A release folder for this machine, and what the test server serves of it: made once, and
/// each test given its own folder beside it.
struct Release {
    folder: Folder,
    built: &'static Built,
}

/// The archive for this machine and dist's installer that names its SHA-256.
struct Built {
    /// `poll-TARGET.tar.gz`
    name: String,
    archive: Vec<u8>,
    sha256: String,
    installer: Vec<u8>,
}

/// Runs `program` with `args` and fails the test unless it succeeds.
fn must(program: &str, args: &[&str], cwd: &Path) -> Output {
    let out = Command::new(program).args(args).current_dir(cwd).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", text(&out).1);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}

/// Packs the archive for `target` in `folder`, as dist does: each asset of the plan (the debug
/// `poll` for the executable, the repository's file or folder for the rest) in `poll-TARGET/`.
/// `extra` adds a file, to make an archive whose SHA-256 differs.
fn pack(folder: &Folder, target: &str, extra: Option<&str>) -> (String, Vec<u8>) {
    pack_from(folder, target, extra, Path::new(env!("CARGO_BIN_EXE_poll")))
}

/// As [`pack`], with `exe` for `poll`: a small stand-in where the binary is never run (it is
/// 140 MB in a debug build, and packing it takes seconds).
fn pack_from(folder: &Folder, target: &str, extra: Option<&str>, exe: &Path) -> (String, Vec<u8>) {
    let (_, archive) = archives().into_iter().find(|(t, _)| t == target).expect("the plan builds this target");
    let name = archive["name"].as_str().unwrap().to_string();
    let top = name.trim_end_matches(".tar.gz");
    let stage = folder.path(&format!("stage-{}", extra.is_some()));
    let inside = stage.join(top);
    std::fs::create_dir_all(&inside).unwrap();
    for asset in archive["assets"].as_array().unwrap() {
        let path = asset["path"].as_str().unwrap();
        let source = if asset["kind"] == "executable" { exe.to_path_buf() } else { root().join(path) };
        copy_tree(&source, &inside.join(path));
    }
    if let Some(extra) = extra {
        std::fs::write(inside.join(extra), "not in the release\n").unwrap();
    }
    let file = folder.path(&format!("{}{name}", if extra.is_some() { "other-" } else { "" }));
    must("tar", &["-czf", file.to_str().unwrap(), "-C", stage.to_str().unwrap(), top], &root());
    (name, std::fs::read(file).unwrap())
}

/// The archive for `target` as [`pack`] makes it, but with `poll` a link to `to`.
#[cfg(unix)]
fn pack_linked(folder: &Folder, target: &str, to: &Path) -> (String, Vec<u8>) {
    // Its poll is replaced by the link: any file will do before.
    let (name, _) = pack_from(folder, target, None, &stand_in_exe(folder));
    let top = name.trim_end_matches(".tar.gz");
    let stage = folder.path("stage-false");
    let poll = stage.join(top).join("poll");
    std::fs::remove_file(&poll).unwrap();
    std::os::unix::fs::symlink(to, &poll).unwrap();
    let file = folder.path(&format!("linked-{name}"));
    must("tar", &["-czf", file.to_str().unwrap(), "-C", stage.to_str().unwrap(), top], &root());
    (name, std::fs::read(file).unwrap())
}

/// A small executable file in `folder`, for an archive whose `poll` is never run.
#[cfg(unix)] // Its callers make links, or run the image job's bash steps.
fn stand_in_exe(folder: &Folder) -> PathBuf {
    let exe = folder.path("stand-in-poll");
    std::fs::write(&exe, "#!/bin/sh\necho 'not poll'\n").unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    exe
}

fn sha256(bytes: &[u8], folder: &Folder) -> String {
    let file = folder.path("to-hash");
    std::fs::write(&file, bytes).unwrap();
    let out = must("sha256sum", &[file.to_str().unwrap()], &root());
    text(&out).0.split_whitespace().next().unwrap().to_string()
}

/// The installer the release publishes for the archive `name` of `target` whose SHA-256 is
/// `sha256`: rendered by dist from the local build's manifest, as the workflow's global job
/// renders it, then hardened by the workflow's own step.
fn render_installer(folder: &Folder, name: &str, target: &str, sha256: &str) -> Vec<u8> {
    global_build(folder, name, target, sha256);
    let distrib = folder.path("target").join("distrib");
    let sums = std::fs::read_to_string(distrib.join("sha256.sum")).expect("dist wrote sha256.sum");
    assert!(sums.lines().any(|l| l == format!("{sha256} *{name}")), "{sums}");
    // HARDENING_STEP's command, on the file dist rendered.
    let installer = distrib.join("poll-installer.sh");
    let script = root().join("install/harden-installer.py");
    must("python3", &[script.to_str().unwrap(), installer.to_str().unwrap()], &root());
    std::fs::read(installer).expect("dist rendered poll-installer.sh")
}

/// dist's global build, as the workflow's global job runs it, in `folder`'s `target/`, for the
/// archive `name` of `target` whose SHA-256 is `sha256`: its manifest (what it made and uploads).
fn global_build(folder: &Folder, name: &str, target: &str, sha256: &str) -> Value {
    // The local build's manifest, as each build job of the workflow leaves one for the global job.
    let target_dir = folder.path("target");
    let distrib = target_dir.join("distrib");
    let _ = std::fs::remove_dir_all(&distrib);
    std::fs::create_dir_all(&distrib).unwrap();
    let local = json!({ "artifacts": { name: {
        "name": name, "kind": "executable-zip", "target_triples": [target], "checksums": { "sha256": sha256 },
    }}});
    std::fs::write(distrib.join(format!("{target}-dist-manifest.json")), local.to_string()).unwrap();
    let out = dist(&["build", "--artifacts=global", "--output-format=json"], Some(&target_dir));
    serde_json::from_slice(&out.stdout).expect("dist's manifest is JSON")
}

impl Built {
    fn get() -> &'static Built {
        static BUILT: OnceLock<Built> = OnceLock::new();
        BUILT.get_or_init(|| {
            let folder = Folder::new("release");
            let target = host_target();
            let (name, archive) = pack(&folder, &target, None);
            let sha256 = sha256(&archive, &folder);
            let installer = render_installer(&folder, &name, &target, &sha256);
            Built { name, archive, sha256, installer }
        })
    }
}

impl Release {
    fn new(name: &str) -> Release {
        Release { built: Built::get(), folder: Folder::new(name) }
    }

    fn installer_path(&self) -> PathBuf {
        let path = self.folder.path("poll-installer.sh");
        std::fs::write(&path, &self.built.installer).unwrap();
        path
    }

    /// A folder of the test's, made empty.
    fn dir(&self, name: &str) -> PathBuf {
        let path = self.folder.path(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }
}

/// A command with nothing of this process's environment but what is given: a home folder of the
/// test's, the system's PATH, and `env`.
fn clean(program: &str, home: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().env("HOME", home).env("PATH", SYSTEM_PATH).stdin(Stdio::null());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd
}

fn run_installer(release: &Release, home: &Path, env: &[(&str, &str)]) -> Output {
    clean("sh", home, env).arg(release.installer_path()).output().expect("run sh")
}

/// The installed binary is the debug build, and runs.
fn assert_installed(bin: &Path) {
    assert_eq!(
        std::fs::read(bin).ok(),
        std::fs::read(env!("CARGO_BIN_EXE_poll")).ok(),
        "{} is not poll",
        bin.display()
    );
    let out = Command::new(bin).arg("--version").output().expect("run the installed poll");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out).0, format!("poll {}\n", env!("CARGO_PKG_VERSION")));
}

fn archive_route(release: &Release) -> String {
    format!("/{}", release.built.name)
}

#[test]
fn the_shell_installer_installs_to_poll_install_dir_and_appends_it_to_github_path() {
    if !have_release_tools() {
        return;
    }
    let release = Release::new("install-dir");
    let server =
        Server::routes(vec![(&archive_route(&release), vec![Reply::status(200).body(release.built.archive.clone())])])
            .expect_hits(1);
    let home = release.dir("home");
    let bin = release.folder.path("tools/bin");
    let github_path = release.folder.path("github_path");
    std::fs::write(&github_path, "").unwrap();
    let out = run_installer(
        &release,
        &home,
        &[
            ("POLL_DOWNLOAD_URL", &server.origin()),
            ("POLL_INSTALL_DIR", bin.to_str().unwrap()),
            ("GITHUB_PATH", github_path.to_str().unwrap()),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("installing to {}", bin.display())), "{stdout}");
    assert_installed(&bin.join("poll"));
    assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 1, "only poll goes to the install folder");
    assert_eq!(std::fs::read_to_string(&github_path).unwrap(), format!("{}\n", bin.display()));
    let requests = server.requests();
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, archive_route(&release));
}

#[test]
fn the_shell_installer_installs_to_local_bin_by_default() {
    if !have_release_tools() {
        return;
    }
    let release = Release::new("install-default");
    let server =
        Server::routes(vec![(&archive_route(&release), vec![Reply::status(200).body(release.built.archive.clone())])])
            .expect_hits(1);
    let home = release.dir("home");
    let out = run_installer(&release, &home, &[("POLL_DOWNLOAD_URL", &server.origin())]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_installed(&home.join(".local/bin/poll"));
}

#[test]
fn the_shell_installer_refuses_an_archive_whose_sha256_is_not_the_release_s() {
    if !have_release_tools() {
        return;
    }
    let release = Release::new("install-checksum");
    let (_, other) = pack(&release.folder, &host_target(), Some("EXTRA"));
    let got = sha256(&other, &release.folder);
    assert_ne!(got, release.built.sha256);
    let server = Server::routes(vec![(&archive_route(&release), vec![Reply::status(200).body(other)])]).expect_hits(1);
    let home = release.dir("home");
    let bin = release.dir("bin");
    let github_path = release.folder.path("github_path");
    std::fs::write(&github_path, "").unwrap();
    let out = run_installer(
        &release,
        &home,
        &[
            ("POLL_DOWNLOAD_URL", &server.origin()),
            ("POLL_INSTALL_DIR", bin.to_str().unwrap()),
            ("GITHUB_PATH", github_path.to_str().unwrap()),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("ERROR: checksum mismatch\n"), "{stderr}");
    assert!(stderr.contains(&format!("want: {}\n", release.built.sha256)), "{stderr}");
    assert!(stderr.contains(&format!("got:  {got}")), "{stderr}");
    assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 0, "nothing is installed");
    assert_eq!(std::fs::read_to_string(&github_path).unwrap(), "");
}

/// A folder of links to the programs of the system's PATH but `hidden`: a machine without them.
#[cfg(unix)]
fn path_without(release: &Release, name: &str, hidden: &[&str]) -> PathBuf {
    let bin = release.dir(name);
    for dir in SYSTEM_PATH.split(':') {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let (program, link) = (entry.file_name(), bin.join(entry.file_name()));
            if hidden.iter().any(|h| program == *h) || link.symlink_metadata().is_ok() {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), link).unwrap();
        }
    }
    bin
}

/// Whether `dir` is empty: nothing installed, or no temporary file left.
#[cfg(unix)]
fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

/// Without sha256sum, the installer checks the SHA-256 with shasum (macOS has it) or openssl:
/// the release's archive is installed and another is refused, nothing installed and nothing
/// left in its temporary folder; with none of the three, nothing is installed at all.
#[cfg(unix)]
#[test]
fn without_sha256sum_the_installer_checks_with_shasum_or_openssl_and_else_refuses() {
    if !have_release_tools()
        || !have_tool("shasum", "apt-get install perl")
        || !have_tool("openssl", "apt-get install openssl")
    {
        return;
    }
    let release = Release::new("install-no-sha256sum");
    let (_, other) = pack(&release.folder, &host_target(), Some("EXTRA"));
    let home = release.dir("home");
    // Each with the tool it leaves: shasum, openssl.
    for (hidden, tool) in [(["sha256sum", "openssl"], "shasum"), (["sha256sum", "shasum"], "openssl")] {
        let path = path_without(&release, &format!("path-{tool}"), &hidden);
        for (archive, good) in [(release.built.archive.clone(), true), (other.clone(), false)] {
            let server =
                Server::routes(vec![(&archive_route(&release), vec![Reply::status(200).body(archive)])]).expect_hits(1);
            let bin = release.dir(&format!("bin-{tool}-{good}"));
            let tmp = release.dir(&format!("tmp-{tool}-{good}"));
            let env = [
                ("PATH", path.to_str().unwrap()),
                ("TMPDIR", tmp.to_str().unwrap()),
                ("POLL_DOWNLOAD_URL", &server.origin()),
                ("POLL_INSTALL_DIR", bin.to_str().unwrap()),
            ];
            let out = run_installer(&release, &home, &env);
            let (stdout, stderr) = text(&out);
            if good {
                assert_eq!(out.status.code(), Some(0), "{tool}: {stdout}{stderr}");
                assert_installed(&bin.join("poll"));
            } else {
                assert_eq!(out.status.code(), Some(1), "{tool}: {stdout}{stderr}");
                assert!(stderr.contains("ERROR: checksum mismatch\n"), "{tool}: {stderr}");
                assert!(stderr.contains(&format!("want: {}\n", release.built.sha256)), "{tool}: {stderr}");
                assert!(is_empty(&bin), "{tool}: nothing is installed");
            }
            assert!(is_empty(&tmp), "{tool}: the temporary folder is removed");
        }
    }

    // None of them: refused, before anything is unpacked.
    let path = path_without(&release, "path-none", &["sha256sum", "shasum", "openssl"]);
    let server =
        Server::routes(vec![(&archive_route(&release), vec![Reply::status(200).body(release.built.archive.clone())])])
            .expect_hits(1);
    let (bin, tmp) = (release.dir("bin-none"), release.dir("tmp-none"));
    let env = [
        ("PATH", path.to_str().unwrap()),
        ("TMPDIR", tmp.to_str().unwrap()),
        ("POLL_DOWNLOAD_URL", &server.origin()),
        ("POLL_INSTALL_DIR", bin.to_str().unwrap()),
    ];
    let out = run_installer(&release, &home, &env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let line = "ERROR: cannot check the archive's SHA-256: none of sha256sum, shasum and openssl is installed";
    assert!(stderr.lines().any(|l| l == line), "{stderr}");
    assert!(is_empty(&bin) && is_empty(&tmp), "nothing installed, nothing left");
}

/// An archive whose `poll` is a link is refused, even with the right SHA-256: `chmod +x` would
/// have followed it and the link would have been installed.
#[cfg(unix)]
#[test]
fn the_installer_refuses_an_archive_whose_poll_is_a_link() {
    if !have_release_tools() {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let release = Release::new("install-link");
    let victim = release.folder.path("victim");
    std::fs::write(&victim, "someone's file\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let target = host_target();
    let (name, archive) = pack_linked(&release.folder, &target, &victim);
    let installer = render_installer(&release.folder, &name, &target, &sha256(&archive, &release.folder));
    let server = Server::routes(vec![(&format!("/{name}"), vec![Reply::status(200).body(archive)])]).expect_hits(1);
    let (home, bin, tmp) = (release.dir("home"), release.dir("bin"), release.dir("tmp"));
    let script = release.folder.path("linked-installer.sh");
    std::fs::write(&script, installer).unwrap();
    let env = [
        ("TMPDIR", tmp.to_str().unwrap()),
        ("POLL_DOWNLOAD_URL", &server.origin()),
        ("POLL_INSTALL_DIR", bin.to_str().unwrap()),
    ];
    let out = clean("sh", &home, &env).arg(&script).output().expect("run sh");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let line = "ERROR: the archive's poll is not a regular file: refusing to install it";
    assert!(stderr.lines().any(|l| l == line), "{stderr}");
    assert!(is_empty(&bin) && is_empty(&tmp), "nothing installed, nothing left");
    assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o644, "chmod followed the link");
}

/// A download that fails part way (the server promised more than it sent) leaves nothing in the
/// installer's temporary folder.
#[cfg(unix)]
#[test]
fn a_failed_download_leaves_nothing_behind() {
    if !have_release_tools() {
        return;
    }
    let release = Release::new("install-partial");
    let server =
        Server::routes(vec![(&archive_route(&release), vec![Reply::truncated(200, "partial archive")])]).expect_hits(1);
    let (home, bin, tmp) = (release.dir("home"), release.dir("bin"), release.dir("tmp"));
    let env = [
        ("TMPDIR", tmp.to_str().unwrap()),
        ("POLL_DOWNLOAD_URL", &server.origin()),
        ("POLL_INSTALL_DIR", bin.to_str().unwrap()),
    ];
    let out = run_installer(&release, &home, &env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let line = format!("failed to download {}/{}", server.origin(), release.built.name);
    assert!(stderr.lines().any(|l| l == line), "{stderr}");
    assert!(is_empty(&bin), "nothing is installed");
    assert!(
        is_empty(&tmp),
        "the partial download is removed: {:?}",
        std::fs::read_dir(&tmp).unwrap().collect::<Vec<_>>()
    );
}

#[test]
fn the_shell_installer_says_which_url_it_could_not_download() {
    if !have_release_tools() {
        return;
    }
    let release = Release::new("install-unreachable");
    let home = release.dir("home");
    let bin = release.dir("bin");
    let mirror = format!("http://127.0.0.1:{}", free_port());
    let out =
        run_installer(&release, &home, &[("POLL_DOWNLOAD_URL", &mirror), ("POLL_INSTALL_DIR", bin.to_str().unwrap())]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    // dist's installer says it after curl's own line.
    let line = format!("failed to download {mirror}/{}", release.built.name);
    assert!(stderr.lines().any(|l| l == line), "{stderr}");
    assert!(stderr.contains(&format!("Failed to connect to 127.0.0.1 port {}", &mirror[17..])), "{stderr}");
    assert_eq!(std::fs::read_dir(&bin).unwrap().count(), 0, "nothing is installed");
}

/// The value of a step's `env` entry or `if`, for the expressions these files use: `inputs.NAME`,
/// given as `NAME`, and `github.token`, given as itself by a test that expects it; any other
/// makes the test fail, so that a new one is taught here before it is trusted.
fn expression(value: &str, inputs: &[(&str, &str)]) -> String {
    let Some(inner) = value.strip_prefix("${{").and_then(|v| v.strip_suffix("}}")) else {
        assert!(!value.contains("${{"), "an expression inside a value: {value}");
        return value.to_string();
    };
    let inner = inner.trim();
    let name = match inner.strip_prefix("inputs.") {
        Some(name) => name,
        None if inner == "github.token" => inner,
        None => panic!("unknown expression {value}"),
    };
    inputs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()).unwrap_or_else(|| panic!("no input {name}"))
}

/// Whether a step with this `if` runs on `os`.
fn runs_on(condition: Option<&str>, os: &str) -> bool {
    let Some(condition) = condition else { return true };
    let (op, other) = if let Some((_, v)) = condition.split_once("runner.os == ") {
        (true, v)
    } else if let Some((_, v)) = condition.split_once("runner.os != ") {
        (false, v)
    } else {
        panic!("unknown condition {condition}");
    };
    (other.trim().trim_matches('\'') == os) == op
}

/// Runs one `shell: bash` step as GitHub's runner does: its script in a file, run by
/// `bash --noprofile --norc -eo pipefail`, with the step's `env` over the runner's.
fn run_step(step: &Value, inputs: &[(&str, &str)], runner_env: &[(&str, &str)], home: &Path, cwd: &Path) -> Output {
    assert_eq!(step["shell"], "bash", "{step}");
    let script = step["run"].as_str().expect("a run step");
    assert!(!script.contains("${{"), "an expression pasted into a script: {script}");
    let file = home.join(format!("step-{}.sh", std::process::id()));
    std::fs::write(&file, script).unwrap();
    let mut cmd = clean("bash", home, runner_env);
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail"]).arg(&file).current_dir(cwd);
    for (key, value) in step["env"].as_object().into_iter().flatten() {
        cmd.env(key, expression(value.as_str().unwrap(), inputs));
    }
    cmd.output().expect("run bash")
}

/// The steps of action.yml that run on `os`.
fn action_steps(os: &str) -> Vec<Value> {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_array().expect("steps").clone();
    steps.into_iter().filter(|s| runs_on(s["if"].as_str(), os)).collect()
}

/// The environment a Linux runner gives a step, with the folders of a test's.
fn runner_env<'a>(home: &'a Path, github_path: &'a Path, mirror: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("CI", "true"),
        ("GITHUB_ACTIONS", "true"),
        ("RUNNER_OS", "Linux"),
        ("RUNNER_TEMP", home.to_str().unwrap()),
        ("GITHUB_PATH", github_path.to_str().unwrap()),
        ("POLL_DOWNLOAD_URL", mirror),
    ]
}

#[test]
fn the_action_installs_poll_on_path_for_the_next_steps() {
    if !have_release_tools() {
        return;
    }
    let action = yaml("action.yml");
    assert_eq!(action["inputs"]["version"]["default"], "latest");
    let release = Release::new("action");
    let server = Server::routes(vec![
        ("/poll-installer.sh", vec![Reply::status(200).body(release.built.installer.clone())]),
        (&archive_route(&release), vec![Reply::status(200).body(release.built.archive.clone())]),
    ])
    .expect_hits(2);
    let home = release.dir("home");
    let github_path = release.folder.path("github_path");
    std::fs::write(&github_path, "").unwrap();
    let origin = server.origin();
    let env = runner_env(&home, &github_path, &origin);
    let steps = action_steps("Linux");
    assert_eq!(steps.len(), 1, "one step on Linux");
    let out = run_step(&steps[0], &[("version", "latest")], &env, &home, &home);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/poll-installer.sh".to_string(), archive_route(&release)]);

    // The next step finds it on PATH: the runner puts GITHUB_PATH's lines in front.
    let added = std::fs::read_to_string(&github_path).unwrap();
    let bin = home.join(".local/bin");
    assert_eq!(added, format!("{}\n", bin.display()));
    let out = clean("sh", &home, &[("PATH", &format!("{}:{SYSTEM_PATH}", added.trim()))])
        .args(["-c", "command -v poll && poll --version"])
        .output()
        .unwrap();
    assert_eq!(text(&out).0, format!("{}\npoll {}\n", bin.join("poll").display(), env!("CARGO_PKG_VERSION")));
}

#[test]
fn the_action_refuses_a_version_that_is_none_before_any_download() {
    if !have_release_tools() {
        return;
    }
    let server = Server::start(vec![Reply::status(404)]).expect_hits(0);
    let folder = Folder::new("action-version");
    let home = folder.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let github_path = folder.path("github_path");
    std::fs::write(&github_path, "").unwrap();
    let origin = server.origin();
    let env = runner_env(&home, &github_path, &origin);
    let step = &action_steps("Linux")[0];
    for version in ["1.2", "v1.2.3; echo no", "newest"] {
        let out = run_step(step, &[("version", version)], &env, &home, &home);
        assert_eq!(out.status.code(), Some(1), "{version}");
        let want = format!("::error title=poll::version must be latest or a version such as 0.1.0, not '{version}'\n");
        assert_eq!(text(&out).0, want);
    }
    for version in ["0.1.0", "v0.1.0", "1.2.3-rc.1"] {
        // A version it takes goes on to the download (here, to a mirror that has nothing).
        let unreachable = format!("http://127.0.0.1:{}", free_port());
        let env = runner_env(&home, &github_path, &unreachable);
        let out = run_step(step, &[("version", version)], &env, &home, &home);
        assert_eq!(out.status.code(), Some(1), "{version}");
        assert!(
            text(&out).0.contains(&format!("::error title=poll::could not download {unreachable}/poll-installer.sh"))
        );
    }
    assert_eq!(std::fs::read_to_string(&github_path).unwrap(), "");
}

#[test]
fn on_windows_the_action_runs_the_powershell_installer_instead() {
    if !have_release_tools() {
        return;
    }
    // Not run here (no PowerShell): the step that would run, and what it runs.
    let steps = action_steps("Windows");
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["shell"], "pwsh");
    assert!(steps[0]["run"].as_str().unwrap().contains("/poll-installer.ps1\" | Invoke-Expression"));
    assert_eq!(action_steps("macOS")[0]["shell"], "bash");
}

#[test]
fn the_powershell_installer_published_installs_the_release_it_comes_with() {
    if !have_release_tools() {
        return;
    }
    // The step of release-extras.yml, run in a checkout of the one file it reads.
    let extras = yaml(".github/workflows/release-extras.yml");
    let steps = extras["jobs"]["powershell-installer"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["run"].is_string()).expect("the stamping step");
    let folder = Folder::new("extras-ps1");
    let checkout = folder.path("checkout");
    copy_tree(&root().join("install"), &checkout.join("install"));
    let plan = plan().to_string();
    let step = json!({ "shell": "bash", "run": step["run"], "env": step["env"] });
    let out = run_step(&step, &[("plan", &plan)], &[], &folder.path(""), &checkout);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));

    let original = std::fs::read_to_string(root().join("install/poll-installer.ps1")).unwrap();
    let published = std::fs::read_to_string(checkout.join("target/distrib/poll-installer.ps1")).unwrap();
    let stamped = format!("$PollRelease = '{}'", env!("CARGO_PKG_VERSION"));
    assert_eq!(published, original.replacen("$PollRelease = 'latest'", &stamped, 1));
    assert_ne!(published, original);
    let sum = std::fs::read_to_string(checkout.join("target/distrib/poll-installer.ps1.sha256")).unwrap();
    assert_eq!(sum, format!("{} *poll-installer.ps1\n", sha256(published.as_bytes(), &folder)));
}

// CI, and the release's gate on it.

/// The jobs of a workflow file.
fn jobs(workflow: &Value) -> &serde_json::Map<String, Value> {
    workflow["jobs"].as_object().expect("the workflow's jobs")
}

/// The `run` lines of a job's steps.
fn runs(job: &Value) -> Vec<&str> {
    job["steps"].as_array().expect("the job's steps").iter().filter_map(|step| step["run"].as_str()).collect()
}

#[test]
fn ci_runs_ci_run_on_linux_and_the_suite_on_macos_and_windows_for_every_push_and_pull_request() {
    if !have_pyyaml() {
        return;
    }
    let ci = yaml(".github/workflows/ci.yml");
    // Both events, with no filter of branches, tags or paths.
    let on = ci["true"].as_object().expect("ci.yml's `on`");
    assert_eq!(on.keys().collect::<Vec<_>>(), ["push", "pull_request"]);
    assert!(on.values().all(Value::is_null), "every push and pull request: {on:?}");
    let jobs = jobs(&ci);
    assert!(jobs.values().all(|job| job.get("if").is_none()), "no job is skipped");

    let linux = jobs.values().filter(|job| runs(job).iter().any(|run| run.ends_with("bash .ci/run")));
    let linux: Vec<&Value> = linux.collect();
    assert_eq!(linux.len(), 1, "one job runs .ci/run");
    assert_eq!(linux[0]["runs-on"], "ubuntu-latest");

    let suite: Vec<&Value> = jobs.values().filter(|job| runs(job) == ["cargo test --locked"]).collect();
    assert_eq!(suite.len(), 1, "one job runs cargo test --locked");
    assert_eq!(suite[0]["runs-on"], "${{ matrix.os }}");
    assert_eq!(suite[0]["strategy"]["matrix"]["os"], json!(["macos-latest", "windows-latest"]));
    assert_eq!(suite[0]["strategy"]["fail-fast"], false, "each system's failures are seen");
}

#[test]
fn the_release_publishes_nothing_unless_its_gate_passed() {
    if !have_pyyaml() {
        return;
    }
    let release = yaml(".github/workflows/release.yml");
    let jobs = jobs(&release);
    let gate = &jobs["custom-ci-passed"];
    assert_eq!(gate["uses"], "$/.github/workflows/ci-passed.yml");
    assert_eq!(gate["permissions"], json!({ "actions": "read" }));
    let needs = |job: &str| jobs[job]["needs"].as_array().unwrap_or_else(|| panic!("{job} needs nothing")).clone();
    assert_eq!(needs("custom-ci-passed"), ["plan"]);
    // The checksums and the installer wait for the gate; `host`, which creates the GitHub
    // Release, and `announce` after it run only if it passed.
    assert!(needs("build-global-artifacts").contains(&json!("custom-ci-passed")));
    assert!(needs("host").contains(&json!("custom-ci-passed")));
    assert!(needs("announce").contains(&json!("host")));
    let host = jobs["host"]["if"].as_str().expect("host's if");
    let passed = "(needs.custom-ci-passed.result == 'skipped' || needs.custom-ci-passed.result == 'success')";
    assert!(host.contains(passed), "{host}");
    assert!(jobs["announce"]["if"].as_str().unwrap().contains("needs.host.result == 'success'"));
    // Skipped counts as passed to `host`, but the gate is skipped only where `host` does not run
    // (no publishing) or where plan failed, which `host` requires to have succeeded.
    let publishing = "needs.plan.outputs.publishing == 'true'";
    assert!(gate["if"].as_str().expect("the gate's if").contains(&format!("{publishing} ||")), "{}", gate["if"]);
    assert!(host.contains(&format!("needs.plan.result == 'success' && {publishing}")), "{host}");

    // The called workflow takes dist's `plan` and asks GitHub about ci.yml's runs for the commit.
    let called = yaml(".github/workflows/ci-passed.yml");
    assert!(called["true"]["workflow_call"]["inputs"]["plan"].is_object());
    let step = only_step(&called);
    assert_eq!(step["env"]["GH_TOKEN"], "${{ github.token }}");
    assert!(step["run"].as_str().unwrap().contains(r#"--workflow ci.yml --commit "$GITHUB_SHA" --event push"#));
}

/// The one step of ci-passed.yml.
fn only_step(called: &Value) -> Value {
    let jobs = jobs(called);
    assert_eq!(jobs.len(), 1, "one job");
    let steps = jobs.values().next().unwrap()["steps"].as_array().expect("steps").clone();
    assert_eq!(steps.len(), 1, "one step");
    steps[0].clone()
}

#[cfg(unix)] // The stand-in for gh is a shell script.
#[test]
fn the_gate_passes_a_commit_with_a_successful_ci_run_and_refuses_any_other() {
    if !have_pyyaml() || !have_tool("jq", "apt-get install jq") {
        return;
    }
    let step = only_step(&yaml(".github/workflows/ci-passed.yml"));
    // Its env holds only the token, an expression of the runner's; the stand-in needs none.
    let step = json!({ "shell": step["shell"], "run": step["run"] });
    let folder = Folder::new("ci-gate");
    let bin = folder.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // `gh`: each call's arguments in a file; `run list` prints the runs given, `run watch` ends as told.
    let gh = bin.join("gh");
    let script = r#"#!/bin/sh
echo "$*" >> "$GH_CALLS"
case "$1 $2" in
"run list") cat "$GH_RUNS" ;;
"run watch") exit "$GH_WATCH" ;;
*) exit 64 ;;
esac
"#;
    std::fs::write(&gh, script).unwrap();
    std::fs::set_permissions(&gh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // jq from where this machine has it, after the stand-in.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let list = format!(
        "run list --repo OWNER/poll --workflow ci.yml --commit {sha} --event push --limit 100 --json databaseId,status,conclusion"
    );
    let watch = "run watch 7 --repo OWNER/poll --exit-status".to_string();
    let run = |id: u32, status, conclusion| json!({ "databaseId": id, "status": status, "conclusion": conclusion });
    let cases = [
        ("no run", json!([]), 0, 1, vec![list.clone()]),
        ("a failed run", json!([run(5, "completed", "failure")]), 0, 1, vec![list.clone()]),
        ("a cancelled run", json!([run(5, "completed", "cancelled")]), 0, 1, vec![list.clone()]),
        (
            "a run that passed",
            json!([run(5, "completed", "failure"), run(6, "completed", "success")]),
            1,
            0,
            vec![list.clone()],
        ),
        ("a run under way that passes", json!([run(7, "in_progress", "")]), 0, 0, vec![list.clone(), watch.clone()]),
        ("a run under way that fails", json!([run(7, "queued", "")]), 1, 1, vec![list.clone(), watch.clone()]),
    ];
    for (case, listed, watched, code, calls) in cases {
        let (runs, log) = (folder.path("runs.json"), folder.path("calls"));
        std::fs::write(&runs, listed.to_string()).unwrap();
        let _ = std::fs::remove_file(&log);
        let (runs, log, watched) = (runs.to_str().unwrap(), log.to_str().unwrap(), watched.to_string());
        let env = [
            ("PATH", path.as_str()),
            ("GITHUB_REPOSITORY", "OWNER/poll"),
            ("GITHUB_SHA", sha),
            ("GH_RUNS", runs),
            ("GH_CALLS", log),
            ("GH_WATCH", &watched),
        ];
        let out = run_step(&step, &[], &env, &folder.path(""), &folder.path(""));
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(code), "{case}: {stdout}{stderr}");
        assert_eq!(std::fs::read_to_string(log).unwrap().lines().collect::<Vec<_>>(), calls, "{case}");
        let refused = format!("::error title=release::ci.yml has not passed for {sha}, so nothing is published");
        assert_eq!(stdout.contains(&refused), code == 1, "{case}: {stdout}");
    }
}

// The container image, and what scanners read.

/// The platforms of the image, each with the musl target whose archive it is made of.
const IMAGE_PLATFORMS: [(&str, &str); 2] =
    [("amd64", "x86_64-unknown-linux-musl"), ("arm64", "aarch64-unknown-linux-musl")];

/// The steps of publish-image.yml's one job.
fn image_steps() -> Vec<Value> {
    let called = yaml(".github/workflows/publish-image.yml");
    let jobs = jobs(&called);
    assert_eq!(jobs.len(), 1, "one job");
    jobs.values().next().unwrap()["steps"].as_array().expect("steps").clone()
}

/// The step of publish-image.yml named `name`.
#[cfg(unix)] // Run by the tests that run its bash steps.
fn image_step(name: &str) -> Value {
    let steps = image_steps();
    steps.into_iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("publish-image.yml has no step {name:?}"))
}

#[test]
fn the_image_is_published_after_the_release_from_its_musl_archives_only_when_its_checks_passed() {
    if !have_release_tools() {
        return;
    }
    let release = yaml(".github/workflows/release.yml");
    let jobs = jobs(&release);
    let image = &jobs["custom-publish-image"];
    assert_eq!(image["uses"], "$/.github/workflows/publish-image.yml");
    assert_eq!(image["with"]["plan"], "${{ needs.plan.outputs.val }}");
    // After `host`, which published the archives and runs only when the gate and every build
    // passed (the_release_publishes_nothing_unless_its_gate_passed checks its `if`). With no
    // status function in its `if`, GitHub runs it only when all it needs succeeded; a
    // prerelease is skipped, as by dist's own publish jobs, so :MAJOR and :latest never name one.
    assert_eq!(image["needs"], json!(["plan", "host"]));
    let host: Vec<Value> = jobs["host"]["needs"].as_array().expect("host's needs").clone();
    for job in ["build-local-artifacts", "custom-ci-passed", "build-global-artifacts"] {
        assert!(host.contains(&json!(job)), "host does not wait for {job}");
    }
    let condition = image["if"].as_str().expect("the image job's if");
    assert_eq!(
        condition,
        "${{ !fromJson(needs.plan.outputs.val).announcement_is_prerelease || fromJson(needs.plan.outputs.val).publish_prereleases }}"
    );
    assert_eq!(plan()["publish_prereleases"], false);
    assert_eq!(image["permissions"], json!({ "contents": "read", "packages": "write" }));
    assert!(jobs["announce"]["needs"].as_array().unwrap().contains(&json!("custom-publish-image")));

    let called = yaml(".github/workflows/publish-image.yml");
    assert!(called["true"]["workflow_call"]["inputs"]["plan"].is_object());
    assert_eq!(called["permissions"], json!({ "contents": "read", "packages": "write" }));

    // It fetches this run's artifacts of the musl builds, and no other: the local build job
    // uploads each target's archive as `artifacts-build-local-TARGET`.
    let uploads =
        jobs["build-local-artifacts"]["steps"].as_array().unwrap().iter().find(|s| s["name"] == "Upload artifacts");
    assert_eq!(
        uploads.expect("the local job's upload")["with"]["name"],
        "artifacts-build-local-${{ join(matrix.targets, '_') }}"
    );
    let steps = image_steps();
    let download =
        steps.iter().find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/download-artifact@")));
    let download = &download.expect("a download of the run's artifacts")["with"];
    assert_eq!(download["path"], "target/distrib/");
    assert_eq!(download["merge-multiple"], true);
    let pattern = download["pattern"].as_str().expect("a pattern");
    let (prefix, suffix) = pattern.split_once('*').expect("one *");
    assert!(!suffix.contains(['*', '?', '[']), "{pattern}");
    let matrix = plan()["ci"]["github"]["artifacts_matrix"]["include"].as_array().unwrap();
    let mut fetched = Vec::new();
    for entry in matrix {
        let targets: Vec<&str> = entry["targets"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        let name = format!("artifacts-build-local-{}", targets.join("_"));
        if name.starts_with(prefix) && name.ends_with(suffix) && name.len() > prefix.len() + suffix.len() {
            fetched.extend(targets);
        }
    }
    fetched.sort_unstable();
    let mut want: Vec<&str> = IMAGE_PLATFORMS.iter().map(|(_, t)| *t).collect();
    want.sort_unstable();
    assert_eq!(fetched, want, "the artifacts {pattern} fetches");
}

/// The Dockerfile's instructions, a line each (continuations joined, comments dropped).
fn dockerfile() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("Dockerfile")).expect("the Dockerfile");
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                instructions.push(std::mem::take(&mut current));
            }
        }
    }
    instructions
}

#[test]
fn the_dockerfile_holds_poll_and_its_licences_and_nothing_else() {
    let license = package()["license"].as_str().expect("Cargo.toml's license");
    let labels = format!(
        "LABEL org.opencontainers.image.source=\"${{SOURCE}}\" org.opencontainers.image.version=\"${{VERSION}}\" org.opencontainers.image.licenses=\"{license}\""
    );
    assert_eq!(
        dockerfile(),
        [
            "FROM scratch",
            "ARG VERSION",
            "ARG SOURCE",
            &labels,
            "COPY LICENSE-MIT LICENSE-APACHE /licenses/",
            "COPY poll /poll",
            "USER 65534:65534",
            "ENTRYPOINT [\"/poll\"]",
        ]
    );
}

/// Packs the musl archives of the release as dist does (with a stand-in for `poll`: the job
/// never runs it), each with its `.sha256`, in `distrib`; `link` makes the amd64 archive's `poll`
/// a link to that file.
#[cfg(unix)]
fn musl_archives(folder: &Folder, distrib: &Path, link: Option<&Path>) {
    std::fs::create_dir_all(distrib).unwrap();
    for (platform, target) in IMAGE_PLATFORMS {
        let (name, archive) = match link {
            Some(to) if platform == "amd64" => pack_linked(folder, target, to),
            _ => pack_from(folder, target, None, &stand_in_exe(folder)),
        };
        std::fs::write(distrib.join(&name), &archive).unwrap();
        // dist's form of the file: the sum, a space and a star, the name.
        std::fs::write(distrib.join(format!("{name}.sha256")), format!("{} *{name}\n", sha256(&archive, folder)))
            .unwrap();
    }
}

#[cfg(unix)] // The stand-in for buildah is a shell script.
#[test]
fn the_image_job_builds_both_platforms_from_the_archives_and_pushes_three_tags() {
    if !have_release_tools() {
        return;
    }
    let folder = Folder::new("image-job");
    let checkout = folder.path("checkout");
    let distrib = checkout.join("target/distrib");
    musl_archives(&folder, &distrib, None);
    let unpack = image_step("Unpack each platform's archive, once its SHA-256 is the release's");
    let env = [("PATH", SYSTEM_PATH)];
    let out = run_step(&unpack, &[], &env, &folder.path(""), &checkout);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    // Each build context holds the archive's poll and licences, and nothing else.
    let poll = std::fs::read(stand_in_exe(&folder)).unwrap();
    for (platform, _) in IMAGE_PLATFORMS {
        let context = checkout.join("target/image").join(platform);
        let mut names: Vec<String> = std::fs::read_dir(&context)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["LICENSE-APACHE", "LICENSE-MIT", "poll"], "{platform}");
        assert!(std::fs::read(context.join("poll")).unwrap() == poll, "{platform}: poll is not the archive's");
        for licence in ["LICENSE-APACHE", "LICENSE-MIT"] {
            assert_eq!(std::fs::read(context.join(licence)).unwrap(), std::fs::read(root().join(licence)).unwrap());
        }
        // What the Dockerfile copies is there.
        for copy in dockerfile().iter().filter_map(|i| i.strip_prefix("COPY ")) {
            let sources: Vec<&str> = copy.split_whitespace().collect();
            for source in &sources[..sources.len() - 1] {
                assert!(context.join(source).is_file(), "{platform}: the Dockerfile copies {source}");
            }
        }
    }

    // buildah: each call's arguments in a file, and what it read on stdin.
    let bin = folder.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let buildah = bin.join("buildah");
    let script =
        "#!/bin/sh\necho \"$*\" >> \"$BUILDAH_CALLS\"\nif [ \"$1\" = login ]; then cat > \"$BUILDAH_STDIN\"; fi\n";
    std::fs::write(&buildah, script).unwrap();
    std::fs::set_permissions(&buildah, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (calls, stdin) = (folder.path("calls"), folder.path("stdin"));
    let path = format!("{}:{SYSTEM_PATH}", bin.display());
    // The runner's names for the repository that runs the workflow: here, the one Cargo.toml names.
    let repository = repository().strip_prefix("https://github.com/").expect("Cargo.toml's repository is on GitHub");
    let env = [
        ("PATH", path.as_str()),
        ("GITHUB_SERVER_URL", "https://github.com"),
        ("GITHUB_REPOSITORY", repository),
        ("GITHUB_ACTOR", "release-bot"),
        ("BUILDAH_CALLS", calls.to_str().unwrap()),
        ("BUILDAH_STDIN", stdin.to_str().unwrap()),
    ];
    let plan = plan().to_string();
    let token = "ghs_not-a-real-token";
    let inputs = [("plan", plan.as_str()), ("github.token", token)];
    for name in ["Build the image for linux/amd64 and linux/arm64", "Push VERSION, MAJOR and latest"] {
        let out = run_step(&image_step(name), &inputs, &env, &folder.path(""), &checkout);
        assert_eq!(out.status.code(), Some(0), "{name}: {:?}", text(&out));
    }
    let version = env!("CARGO_PKG_VERSION");
    let major = version.split('.').next().unwrap();
    let image = format!("ghcr.io/{}", repository.to_lowercase());
    let build = |platform: &str| {
        format!(
            "build --platform linux/{platform} --manifest poll --identity-label=false --build-arg VERSION={version} --build-arg SOURCE=https://github.com/{repository} --file Dockerfile target/image/{platform}"
        )
    };
    let push = |tag: &str| format!("manifest push --all --format oci poll docker://{image}:{tag}");
    let want = [
        build("amd64"),
        build("arm64"),
        "login --username release-bot --password-stdin ghcr.io".to_string(),
        push(version),
        push(major),
        push("latest"),
    ];
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().collect::<Vec<_>>(), want);
    // The token reaches buildah on stdin, never in its arguments.
    assert_eq!(std::fs::read_to_string(&stdin).unwrap(), format!("{token}\n"));
}

#[cfg(unix)] // pack_linked makes a symbolic link.
#[test]
fn the_image_job_refuses_an_archive_of_another_sha256_or_whose_poll_is_a_link() {
    if !have_release_tools() {
        return;
    }
    let unpack = image_step("Unpack each platform's archive, once its SHA-256 is the release's");
    let env = [("PATH", SYSTEM_PATH)];
    let folder = Folder::new("image-refusals");

    // The arm64 archive changed after its sum was made.
    let checkout = folder.path("sum");
    let distrib = checkout.join("target/distrib");
    musl_archives(&folder, &distrib, None);
    let name = "poll-aarch64-unknown-linux-musl.tar.gz";
    let mut other = std::fs::read(distrib.join(name)).unwrap();
    other.push(b'\n');
    std::fs::write(distrib.join(name), other).unwrap();
    let out = run_step(&unpack, &[], &env, &folder.path(""), &checkout);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.lines().any(|l| l == format!("{name}: FAILED")), "{stdout}");
    assert!(!checkout.join("target/image/arm64").exists(), "nothing unpacked for arm64");

    // A poll that is a link, in an archive whose sum is right.
    let checkout = folder.path("link");
    let distrib = checkout.join("target/distrib");
    musl_archives(&folder, &distrib, Some(Path::new("/bin/sh")));
    let out = run_step(&unpack, &[], &env, &folder.path(""), &checkout);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let line = "::error title=image::the archive's poll for x86_64-unknown-linux-musl is not a regular file";
    assert!(stdout.lines().any(|l| l == line), "{stdout}");
}

/// The cargo-cyclonedx that release.yml installs (dist chooses it), which the SBOM test runs.
const CYCLONEDX: &str = "0.5.5";
const INSTALL_CYCLONEDX: &str = "cargo install cargo-cyclonedx --version 0.5.5 --locked";

/// Each package of Cargo.lock: its name and version.
fn locked() -> Vec<(String, String)> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    let field = |block: &str, key: &str| {
        let prefix = format!("{key} = \"");
        block.lines().find_map(|l| l.strip_prefix(&prefix)?.strip_suffix('"').map(str::to_string))
    };
    let blocks = lock.split("[[package]]").skip(1);
    blocks.map(|b| (field(b, "name").expect("a name"), field(b, "version").expect("a version"))).collect()
}

#[test]
fn the_release_s_sbom_names_the_crates_of_cargo_lock_with_their_versions() {
    if !have_release_tools() || !have_tool("cargo-cyclonedx", INSTALL_CYCLONEDX) {
        return;
    }
    assert_eq!(plan()["artifacts"]["poll.cdx.xml"]["kind"], "sbom", "the release carries the SBOM");
    let release = yaml(".github/workflows/release.yml");
    let steps = jobs(&release)["build-global-artifacts"]["steps"].as_array().expect("the global job's steps").clone();
    let install =
        steps.iter().find(|s| s["name"] == "Install cargo-cyclonedx").expect("the global job installs cargo-cyclonedx");
    let install = install["run"].as_str().unwrap();
    assert!(install.contains(&format!("/cargo-cyclonedx-{CYCLONEDX}/")), "release.yml installs another: {install}");

    // The global job's step, in a checkout: it writes poll.cdx.xml and moves it to target/distrib/.
    let step = steps.iter().find(|s| s["id"] == "cargo-cyclonedx").expect("the SBOM step").clone();
    let copy = copy_repository("release-sbom");
    std::fs::create_dir_all(copy.path("target/distrib")).unwrap();
    let output = copy.path("github_output");
    std::fs::write(&output, "").unwrap();
    let home = std::env::var("HOME").unwrap_or_default();
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or(format!("{home}/.cargo"));
    let rustup_home = std::env::var("RUSTUP_HOME").unwrap_or(format!("{home}/.rustup"));
    let path = std::env::var("PATH").unwrap_or_default();
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_default();
    let mut env = vec![
        ("PATH", path.as_str()),
        ("CARGO_HOME", cargo_home.as_str()),
        ("RUSTUP_HOME", rustup_home.as_str()),
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
    ];
    if !toolchain.is_empty() {
        env.push(("RUSTUP_TOOLCHAIN", &toolchain));
    }
    let out = run_step(&step, &[], &env, &copy.path(""), &copy.path(""));
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let sbom = copy.path("target/distrib/poll.cdx.xml");
    assert!(sbom.is_file(), "the step left no target/distrib/poll.cdx.xml: {:?}", text(&out));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "paths<<EOF\n./target/distrib/poll.cdx.xml\nEOF\n");
    // The upload takes it from dist's list of the global job's files (the step's own list is
    // read as `steps.cargo-cyclonedx.output.paths`, dist's typo for `outputs`: always empty).
    let archive = format!("poll-{}.tar.gz", host_target());
    let manifest = global_build(&Folder::new("release-sbom-global"), &archive, &host_target(), &"0".repeat(64));
    let uploads = manifest["upload_files"].as_array().expect("dist's upload list");
    assert!(uploads.contains(&json!("target/distrib/poll.cdx.xml")), "{uploads:?}");

    // Read back with Python's own XML parser: the application, then each crate.
    let read = r#"
import json, sys, xml.etree.ElementTree as ET
bom = ET.parse(sys.argv[1]).getroot()
ns = bom.tag[: bom.tag.index("}") + 1]
app = bom.find(f"{ns}metadata/{ns}component")
crates = [[c.findtext(f"{ns}name"), c.findtext(f"{ns}version"), c.findtext(f"{ns}purl")] for c in bom.find(f"{ns}components")]
tools = [t.findtext(f"{ns}version") for t in bom.iter(f"{ns}tool")]
json.dump({"app": [app.findtext(f"{ns}name"), app.findtext(f"{ns}version")], "crates": crates, "tools": tools}, sys.stdout)
"#;
    let out = must("python3", &["-c", read, sbom.to_str().unwrap()], &root());
    let bom: Value = serde_json::from_slice(&out.stdout).expect("the SBOM read as JSON");
    assert_eq!(bom["app"], json!(["poll", env!("CARGO_PKG_VERSION")]));
    assert_eq!(bom["tools"], json!([CYCLONEDX]));
    let lock = locked();
    let crates = bom["crates"].as_array().expect("the SBOM's components");
    for entry in crates {
        let (name, version) = (entry[0].as_str().unwrap(), entry[1].as_str().unwrap());
        assert!(lock.iter().any(|(n, v)| n == name && v == version), "{name} {version} is not in Cargo.lock");
        assert_eq!(entry[2], format!("pkg:cargo/{name}@{version}"), "{name}'s purl");
    }
    for name in ["ureq", "rustls", "jaq-core"] {
        let want: Vec<&String> = lock.iter().filter(|(n, _)| n == name).map(|(_, v)| v).collect();
        let got: Vec<&str> = crates.iter().filter(|c| c[0] == name).map(|c| c[1].as_str().unwrap()).collect();
        assert_eq!(want.len(), 1, "one {name} in Cargo.lock");
        assert_eq!(got, [want[0].as_str()], "{name} in the SBOM");
    }
}

/// The `sh` block of CONTRIBUTING.md that begins with `crate=`: which release holds which version.
#[cfg(unix)] // Run by bash.
fn crate_versions_block() -> String {
    let text = std::fs::read_to_string(root().join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    let blocks: Vec<&str> =
        text.split("```sh\n").skip(1).filter_map(|b| b.split_once("```").map(|(code, _)| code)).collect();
    let found: Vec<&&str> = blocks.iter().filter(|b| b.starts_with("crate=")).collect();
    assert_eq!(found.len(), 1, "one block of CONTRIBUTING.md begins with crate=");
    found[0].to_string()
}

#[cfg(unix)] // The block is a shell's.
#[test]
fn contributing_names_the_version_of_a_crate_that_each_release_holds() {
    if !have_tool("git", "apt-get install git") {
        return;
    }
    let folder = Folder::new("crate-versions");
    let repo = folder.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "user.name=poll tests", "-c", "user.email=tests@localhost"];
        all.extend_from_slice(args);
        must("git", &all, &repo)
    };
    git(&["init", "-q"]);
    // Three releases (the last with two versions of the crate in its tree), a tag that is no
    // release, and a crate whose name starts with the one asked for.
    let releases = [("v0.1.0", vec!["3.5.1"]), ("v0.1.1", vec!["3.5.2"]), ("v0.10.0", vec!["3.5.2", "3.6.0"])];
    for (tag, versions) in &releases {
        let mut lock = String::from("version = 4\n\n[[package]]\nname = \"ureq-proto\"\nversion = \"0.7.1\"\n");
        for version in versions {
            lock.push_str(&format!("\n[[package]]\nname = \"ureq\"\nversion = \"{version}\"\n"));
        }
        std::fs::write(repo.join("Cargo.lock"), lock).unwrap();
        git(&["add", "Cargo.lock"]);
        git(&["commit", "-q", "-m", tag]);
        git(&["tag", tag]);
    }
    git(&["tag", "nightly"]);
    let out = Command::new("bash").args(["-c", &crate_versions_block()]).current_dir(&repo).output().expect("run bash");
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    // In version order, v0.10.0 after v0.1.1.
    assert_eq!(text(&out).0, "v0.1.0 3.5.1\nv0.1.1 3.5.2\nv0.10.0 3.5.2 3.6.0\n");
}
