//! End-to-end tests of files on a shared runner and of hostile or odd input:
//! planted links, the state file's owner and mode, devices and FIFOs, values
//! out of bounds in `--state`, secrets in usage errors, huge jq errors,
//! invisible characters, the step summary's Markdown, secret headers across
//! origins. Files, modes, owners and devices as Unix has them.

use crate::support;

use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::poll;
use support::server::{Reply, Server};

const DONE: &str = r#"{"status":"done"}"#;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A folder of its own for one test, writable by everyone and not sticky (a
/// shared, careless folder on a self-hosted runner), removed at the end.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str) -> Folder {
        let path = std::env::temp_dir().join(format!("poll-hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        Folder(path)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn text(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Links at every name a temporary file named by a pid would take (the
/// names `poll` used before, `.NAME.poll-PID.tmp`), all to `victim`.
fn plant_links(folder: &Folder, name: &str, victim: &Path) {
    let first = std::process::id();
    for pid in first..first + 3000 {
        let _ = std::os::unix::fs::symlink(victim, folder.path(&format!(".{name}.poll-{pid}.tmp")));
    }
}

// Files safe on a shared runner.

#[test]
fn links_planted_where_a_temporary_file_would_go_are_never_written_through() {
    let folder = Folder::new("planted");
    let victim = folder.path("victim");
    std::fs::write(&victim, b"precious").unwrap();
    plant_links(&folder, "state.json", &victim);
    plant_links(&folder, "out.json", &victim);
    let server = Server::start(vec![Reply::json(200, DONE)]);
    for _ in 0..3 {
        let out = poll()
            .args(["--state", &folder.text("state.json"), "-o", &folder.text("out.json"), &server.url("/")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(std::fs::read(folder.path("out.json")).unwrap(), DONE.as_bytes());
    assert!(std::fs::read_to_string(folder.path("state.json")).unwrap().contains("\"version\": 1"));
}

#[test]
fn a_new_state_file_and_its_lock_are_the_owners_alone_and_o_keeps_the_umask() {
    let folder = Folder::new("modes");
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let poll_bin = env!("CARGO_BIN_EXE_poll");
    let script = format!(
        "umask 022; exec '{poll_bin}' --state '{}' -o '{}' '{}'",
        folder.text("state.json"),
        folder.text("out.json"),
        server.url("/")
    );
    let out = support::hermetic(&mut Command::new("sh")).args(["-c", &script]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mode(&folder.path("state.json")), 0o600);
    assert_eq!(mode(&folder.path("state.json.lock")), 0o600);
    assert_eq!(mode(&folder.path("out.json")), 0o644, "-o: what the umask gives, as curl");
    // A state file poll made keeps working, run after run.
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mode(&folder.path("state.json")), 0o600);
}

#[test]
fn a_state_file_others_may_write_is_refused_before_any_request() {
    let folder = Folder::new("writable");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let state = folder.path("state.json");
    std::fs::write(&state, br#"{"version":1,"origins":{}}"#).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let shown = state.display();
    assert_eq!(
        stderr(&out),
        format!(
            "poll: error: --state: `{shown}` may be written by others (mode 666); make it yours alone: chmod 600 {shown}\n"
        )
    );
    // The lock too.
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(folder.path("state.json.lock"), b"").unwrap();
    std::fs::set_permissions(folder.path("state.json.lock"), std::fs::Permissions::from_mode(0o620)).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("state.json.lock` may be written by others (mode 620)"), "{}", stderr(&out));
}

#[test]
fn a_state_file_or_link_of_another_user_is_refused_before_any_request() {
    if !support::have_root("chown to another user") {
        return;
    }
    let folder = Folder::new("owner");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let state = folder.path("state.json");
    std::fs::write(&state, br#"{"version":1,"origins":{}}"#).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), None).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("belongs to user 65534, not to you: ask them to remove it"), "{}", stderr(&out));
    // A link another user planted, to a file of ours: refused whatever it points to.
    let ours = folder.path("ours.json");
    std::fs::write(&ours, b"mine").unwrap();
    let link = folder.path("planted.json");
    std::os::unix::fs::symlink(&ours, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
    let out = poll().args(["--state", &folder.text("planted.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(&ours).unwrap(), b"mine");
}

/// A run that polls every 500 ms with `--state-fail closed`, and the folder
/// `change` swaps something in, between its first attempt and its second,
/// as a neighbour in a shared folder could. What the run printed on stderr,
/// its exit code and how long it took.
fn swapped_mid_run(folder: &Folder, change: impl FnOnce()) -> (Option<i32>, String, Duration) {
    let server = Server::start(vec![Reply::json(200, r#"{"status":"pending"}"#)]).expect_hits(1);
    let started = Instant::now();
    let child = support::poll_std()
        .args(["--state", &folder.text("state.json"), "--state-fail", "closed", "--until", ".done", "-i", "500ms"])
        .args(["--timeout", "10s", &server.url("/")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_hits(1, Duration::from_secs(10)), "the first attempt");
    // Its outcome recorded, the one in the breaker's window (the file is written when a request is
    // admitted too, before it is sent), while the second attempt is 500 ms away.
    let recorded = || {
        let state = std::fs::read(folder.path("state.json")).unwrap_or_default();
        let state: serde_json::Value = serde_json::from_slice(&state).unwrap_or_default();
        state["origins"][server.origin()]["breaker"]["window"].as_array().is_some_and(|window| window.len() == 1)
    };
    assert!(support::eventually(Duration::from_secs(5), recorded), "the first attempt was recorded");
    change();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), stderr(&out), started.elapsed())
}

#[test]
fn a_link_another_user_plants_at_the_state_name_mid_run_is_never_written_through() {
    if !support::have_root("chown a link to another user") {
        return;
    }
    let folder = Folder::new("swap-link");
    // A state file of ours elsewhere (another tool's), which poll could read and would replace.
    let victim = folder.path("victim.json");
    let precious = br#"{"version":1,"origins":{}}"#;
    std::fs::write(&victim, precious).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let state = folder.path("state.json");
    let (code, err, _) = swapped_mid_run(&folder, || {
        std::fs::remove_file(&state).unwrap();
        std::os::unix::fs::symlink(&victim, &state).unwrap();
        std::os::unix::fs::lchown(&state, Some(65534), None).unwrap();
    });
    assert_eq!(code, Some(6), "{err}");
    assert!(err.contains(&format!("`{}` belongs to user 65534, not to you", state.display())), "{err}");
    assert!(err.contains("(--state-fail closed)"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), precious, "written through the link");
    assert!(std::fs::symlink_metadata(&state).unwrap().file_type().is_symlink(), "the link was replaced");
}

#[test]
fn a_fifo_planted_at_the_state_name_mid_run_fails_the_step_at_once() {
    let folder = Folder::new("swap-fifo");
    let state = folder.path("state.json");
    let (code, err, took) = swapped_mid_run(&folder, || {
        std::fs::remove_file(&state).unwrap();
        assert!(Command::new("mkfifo").arg(&state).status().unwrap().success());
    });
    assert_eq!(code, Some(6), "{err}");
    assert!(err.contains(&format!("`{}` is not a regular file", state.display())), "{err}");
    // Read with no bound while the lock was held, it hung the run to its 10 s deadline.
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(std::fs::metadata(&state).unwrap().file_type().is_fifo(), "the FIFO stays");
}

#[test]
fn a_link_planted_at_the_locks_name_mid_run_is_never_followed() {
    let folder = Folder::new("swap-lock");
    let lock = folder.path("state.json.lock");
    let victim = folder.path("made-through-the-link");
    let (code, err, _) = swapped_mid_run(&folder, || {
        std::fs::remove_file(&lock).unwrap();
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
    });
    assert_eq!(code, Some(6), "{err}");
    assert!(err.contains(&format!("cannot open `{}`", lock.display())), "{err}");
    assert!(!victim.exists(), "the lock was opened (and made) through the link");
}

#[test]
fn a_state_file_named_through_a_link_of_ours_stays_a_link_and_its_target_gets_the_state() {
    let folder = Folder::new("state-link");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(2);
    std::fs::create_dir(folder.path("real")).unwrap();
    std::os::unix::fs::symlink("real/state.json", folder.path("state.json")).unwrap();
    for _ in 0..2 {
        let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stderr(&out), "");
    }
    assert!(std::fs::symlink_metadata(folder.path("state.json")).unwrap().file_type().is_symlink());
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.path("real/state.json")).unwrap()).unwrap();
    let window = kept["origins"][&server.origin()]["breaker"]["window"].as_array().unwrap();
    assert_eq!(window.len(), 2, "both runs' outcomes, read and written through the link");
    assert_eq!(mode(&folder.path("real/state.json")), 0o600);
}

// Devices, FIFOs and links as -o and --state.

#[test]
fn o_writes_a_device_or_a_link_to_one_in_place_and_a_link_to_a_file_stays_a_link() {
    let folder = Folder::new("devices");
    let server = Server::start(vec![Reply::json(200, DONE)]);
    // -o /dev/stdout: the body reaches stdout, the link stays.
    let out = poll().args(["-o", "/dev/stdout", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    let out = poll().args(["-o", "/dev/null", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    // A link to a regular file: its target gets the body, the link stays a link.
    std::fs::write(folder.path("target.json"), b"old").unwrap();
    std::os::unix::fs::symlink("target.json", folder.path("link.json")).unwrap();
    let out = poll().args(["-o", &folder.text("link.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(folder.path("link.json")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(folder.path("target.json")).unwrap(), DONE.as_bytes());
}

/// The user `nobody`, whom root can run `poll` as (by `setpriv`) where a test needs a user
/// without root's power over every file.
const NOBODY: &str = "65534";

/// `bin` run as [`NOBODY`], with `args`.
fn as_nobody(bin: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.args([&format!("--reuid={NOBODY}"), &format!("--regid={NOBODY}"), "--clear-groups"]);
    cmd.arg(bin).args(args).stdin(std::process::Stdio::null());
    support::hermetic(&mut cmd).output().unwrap()
}

/// This build's `poll` where [`NOBODY`] may run it: a hard link to it (or a copy) in `folder`,
/// since the target folder may be one only its owner enters (a clone in `/root`). `None`, after
/// one `SKIPPED` line (a failure with `POLL_TEST_REQUIRE_TOOLS=1`), unless the tests run as root
/// with setpriv.
fn poll_for_nobody(folder: &Folder) -> Option<PathBuf> {
    let setpriv = "apt-get install util-linux";
    if !support::have_root("running poll as another user") || !support::have_tool("setpriv", setpriv) {
        return None;
    }
    let bin = folder.path("poll");
    let built = Path::new(env!("CARGO_BIN_EXE_poll"));
    if std::fs::hard_link(built, &bin).is_err() {
        std::fs::copy(built, &bin).unwrap();
    }
    let ran = as_nobody(&bin, &["--version"]);
    assert!(ran.status.success(), "nobody cannot run {}: {}", bin.display(), stderr(&ran));
    Some(bin)
}

/// `-o` to a file the user owns in a folder they may not write (`/var/log/app/x.json`): `poll`
/// replaces a file through a new one beside it, which it could not make, so that is said before
/// the first request, exit 2, as for a missing folder; the file stays as it was (issue 39, row 9).
#[test]
fn o_into_a_folder_the_user_may_not_write_is_refused_before_the_first_request() {
    let folder = Folder::new("o-locked");
    let Some(poll_bin) = poll_for_nobody(&folder) else { return };
    let locked = folder.path("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = locked.join("x.json");
    std::fs::write(&file, b"old").unwrap();
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    assert!(Command::new("chown").arg(NOBODY).arg(&file).status().unwrap().success());
    let out = as_nobody(&poll_bin, &["-o", file.to_str().unwrap(), &server.url("/")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = format!("poll: error: --output: cannot make files in folder `{}`", locked.display());
    assert!(stderr(&out).starts_with(&said), "{}", stderr(&out));
    assert_eq!(std::fs::read(&file).unwrap(), b"old");
}

/// `-o` through a link that leads where no folder is, or through a file as if it were a folder:
/// said before the first request, exit 2, naming the folder and the link; a dangling link into
/// a folder that exists still makes its file (issue 39, row 9).
#[test]
fn o_through_a_dangling_link_or_a_file_is_refused_before_the_first_request() {
    let folder = Folder::new("o-dangling");
    std::os::unix::fs::symlink("gone/x.json", folder.path("link.json")).unwrap();
    std::fs::write(folder.path("file"), b"a file").unwrap();
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
    let out = poll().args(["-o", &folder.text("link.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let (gone, link) = (folder.path("gone"), folder.path("link.json"));
    let said = format!("--output: folder `{}` does not exist (where `{}` leads)", gone.display(), link.display());
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let out = poll().args(["-o", &folder.text("file/x.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = format!("--output: `{}` is not a folder", folder.path("file").display());
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    // Into a folder that exists, the link's file is made (the one request of this test).
    std::fs::create_dir(&gone).unwrap();
    let out = poll().args(["-o", &folder.text("link.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(gone.join("x.json")).unwrap(), DONE.as_bytes());
}

/// `-o` over a file of another owner and group, as root, keeps both, and its mode, as curl's `-o`
/// (which writes in place) does: the group's readers keep it. A file with other hard links is
/// written in place, so that every link has the body. A user who may not give the new file that
/// owner or group gets it as their own, without a word: that fails no run (issue 39, row 8).
#[test]
fn o_over_a_file_keeps_its_owner_group_mode_and_hard_links() {
    use std::os::unix::fs::{MetadataExt as _, chown};
    let folder = Folder::new("o-owner");
    let Some(poll_bin) = poll_for_nobody(&folder) else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(3);
    let owned = |path: &Path| {
        let meta = std::fs::metadata(path).unwrap();
        (meta.uid(), meta.gid(), meta.mode() & 0o7777, meta.nlink())
    };
    let file = folder.path("x.json");
    std::fs::write(&file, b"old").unwrap();
    chown(&file, Some(65534), Some(1)).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = poll().args(["-o", &folder.text("x.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(owned(&file), (65534, 1, 0o640, 1));
    assert_eq!(std::fs::read(&file).unwrap(), DONE.as_bytes());

    // A second name for it: both see the new body, still one file.
    let linked = folder.path("linked.json");
    std::fs::hard_link(&file, &linked).unwrap();
    std::fs::write(&file, b"old, and longer than the body").unwrap();
    let inode = std::fs::metadata(&file).unwrap().ino();
    let out = poll().args(["-o", &folder.text("x.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&linked).unwrap(), DONE.as_bytes());
    assert_eq!((std::fs::metadata(&file).unwrap().ino(), owned(&file)), (inode, (65534, 1, 0o640, 2)));

    // nobody's file in group root, which nobody is not in: theirs, in their own group, mode kept.
    let theirs = folder.path("theirs.json");
    std::fs::write(&theirs, b"old").unwrap();
    chown(&theirs, Some(65534), Some(0)).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = as_nobody(&poll_bin, &["-o", theirs.to_str().unwrap(), &server.url("/")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(owned(&theirs), (65534, 65534, 0o640, 1));
    assert_eq!(std::fs::read(&theirs).unwrap(), DONE.as_bytes());
}

/// A socket the user may not open (`docker.sock` outside the docker group), or may not reach (a
/// folder on its way closed to them): waiting cannot fix a permission, so it is exit 3 at once,
/// naming the permission and the socket, where it was "not up yet" until the deadline (issue 39,
/// row 7). A socket with no permission bits at all is one its daemon has just made and not opened
/// yet (dockerd binds it under umask 0777, then chmods it): that one is still waited for.
#[test]
fn a_socket_the_user_may_not_open_is_exit_3_at_once_naming_the_permission() {
    let folder = Folder::new("socket-denied");
    let Some(poll_bin) = poll_for_nobody(&folder) else { return };
    let socket = folder.path("root.sock");
    let server = Server::start_unix(&socket, vec![Reply::json(200, DONE)]).expect_hits(1);
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
    let args = |socket: &Path| {
        ["--unix-socket", socket.to_str().unwrap(), "-i", "100ms", "--timeout", "20s", "http://localhost/x"]
            .map(String::from)
    };
    let started = Instant::now();
    let out = as_nobody(&poll_bin, &args(&socket).each_ref().map(String::as_str));
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "{took:?}");
    let said = format!("poll: error: permission denied (the socket `{}` (owner root, group ", socket.display());
    assert!(stderr(&out).starts_with(&said), "{}", stderr(&out));
    let said = "mode 0600) does not let user nobody in): not retryable [http://localhost/x]; waiting cannot fix a \
                permission: run poll as a user who may open the socket\n";
    assert!(stderr(&out).ends_with(said), "{}", stderr(&out));

    // A folder on the way that nobody may not enter.
    let closed = folder.path("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let hidden = closed.join("root.sock");
    let unreached = Server::start_unix(&hidden, vec![Reply::json(200, DONE)]).expect_hits(0);
    let out = as_nobody(&poll_bin, &args(&hidden).each_ref().map(String::as_str));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = format!(
        "poll: error: permission denied (user nobody may not reach the socket `{}`: a folder on its way is closed to \
         it): not retryable [http://localhost/x]",
        hidden.display()
    );
    assert!(stderr(&out).starts_with(&said), "{}", stderr(&out));
    drop(unreached);

    // Mode 0000, opened 600 ms later, as dockerd does: waited for, then the one request.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o000)).unwrap();
    let opened = socket.clone();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        std::fs::set_permissions(&opened, std::fs::Permissions::from_mode(0o666)).unwrap();
    });
    let started = Instant::now();
    let out = as_nobody(&poll_bin, &args(&socket).each_ref().map(String::as_str));
    let took = started.elapsed();
    opener.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(10), "{took:?}");
    drop(server);
}

/// `-o` naming poll's own stdout while stdout is a file the shell appends to
/// (`poll -o /dev/stdout URL >> log`): the body is appended, as stdout
/// appends, and the log is never replaced.
#[test]
fn o_naming_its_own_stdout_writes_to_stdout_and_never_replaces_the_file_behind_it() {
    let folder = Folder::new("own-stdout");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(3);
    let log = folder.path("log");
    std::fs::write(&log, b"earlier\n").unwrap();
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let appended = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let out = support::poll_std().args(["-o", name, &server.url("/")]).stdout(appended).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        assert!(!std::fs::symlink_metadata(&log).unwrap().file_type().is_symlink());
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("earlier\n{DONE}{DONE}{DONE}"));
}

/// `GITHUB_STEP_SUMMARY` naming a FIFO no one reads: the summary is given up at the deadline, with
/// one warning, and the run ends as it would have, its `-- CMD` started (issue 39, row 10).
#[test]
fn a_step_summary_fifo_without_a_reader_is_given_up_at_the_deadline() {
    let folder = Folder::new("summary-fifo");
    let fifo = folder.path("summary");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let started = Instant::now();
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &fifo)
        .args(["--timeout", "1s", &server.url("/"), "--", "echo", "started"])
        .timeout(Duration::from_secs(15))
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"started\n");
    let said =
        format!("::warning title=poll::cannot write the step summary `{}` (GITHUB_STEP_SUMMARY): ", fifo.display());
    assert!(stderr(&out).starts_with(&said), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO stays");
}

#[test]
fn o_to_a_fifo_without_a_reader_ends_at_the_deadline_with_exit_3() {
    let folder = Folder::new("o-fifo");
    let fifo = folder.path("out");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(2);
    let started = Instant::now();
    let out = poll()
        .args(["-o", &folder.text("out"), "--timeout", "1s", &server.url("/")])
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let shown = fifo.display();
    assert_eq!(stderr(&out), format!("poll: error: cannot write `{shown}`: no reader opened it before the deadline\n"));
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{took:?}");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO stays");
    // A reader that comes within the deadline gets the body.
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            assert!(server.wait_hits(2, Duration::from_secs(10)), "the second run's request");
            // Time passes on purpose: the reader comes late, once poll, the body in hand, has found
            // no reader a few times (it tries every 10 ms).
            std::thread::sleep(Duration::from_millis(50));
            std::fs::read(&fifo).unwrap()
        });
        let out = poll().args(["-o", &folder.text("out"), "--timeout", "5s", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(reader.join().unwrap(), DONE.as_bytes());
    });
}

#[test]
fn a_device_made_with_mknod_stays_a_device() {
    if !support::have_root("mknod") {
        return;
    }
    let folder = Folder::new("mknod");
    let device = folder.path("null");
    let made = Command::new("mknod").arg(&device).args(["c", "1", "3"]).status().unwrap();
    assert!(made.success());
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let out = poll().args(["-o", &folder.text("null"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::metadata(&device).unwrap().file_type().is_char_device(), "replaced by a regular file");
}

#[test]
fn a_state_path_that_is_no_regular_file_is_a_usage_error_at_once() {
    let folder = Folder::new("state-device");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let fifo = folder.path("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for path in ["/dev/zero".to_string(), folder.text("fifo")] {
        let started = Instant::now();
        let out = poll().args(["--state", &path, &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{path}: {}", stderr(&out));
        assert!(stderr(&out).contains("is not a regular file"), "{}", stderr(&out));
        assert!(started.elapsed() < Duration::from_secs(5), "{path}: {:?}", started.elapsed());
    }
}

#[test]
fn a_fifo_that_never_writes_cannot_outlast_the_timeout() {
    let folder = Folder::new("fifo");
    let fifo = folder.path("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    for flag in [["-d", "@"], ["--json", "@"], ["--fallback", "@"]] {
        let started = Instant::now();
        let value = format!("{}{}", flag[1], fifo.display());
        let out = poll().args([flag[0], &value, "--timeout", "1s", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("nothing came before the deadline"), "{}", stderr(&out));
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{flag:?}: {took:?}");
    }
    let started = Instant::now();
    let out = poll().args(["--cacert", &folder.text("fifo"), "--timeout", "1s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing came before the deadline"), "{}", stderr(&out));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "--cacert: {took:?}");
}

#[test]
fn a_body_file_over_16_mib_is_refused() {
    let folder = Folder::new("big-body");
    let big = folder.path("big");
    std::fs::File::create(&big).unwrap().set_len((16 << 20) + 1).unwrap();
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let out = poll().args(["-d", &format!("@{}", big.display()), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("it is larger than 16 MiB"), "{}", stderr(&out));
}

// Values out of bounds in --state.

#[test]
fn a_state_file_with_times_past_the_cap_is_treated_as_absent_once_and_never_crashes() {
    let folder = Folder::new("times");
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let state = folder.path("state.json");
    let key = server.origin();
    let hostile = format!(
        r#"{{"version":1,"origins":{{"{key}":{{"not_before_ms":253402300800000,"next_slot_ms":18446744073709551615,
        "breaker":{{"state":"half_open","probe_pid":1,"lease_until_ms":18446744073709551615,"window":[]}}}}}}}}"#
    );
    std::fs::write(&state, hostile).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    let started = Instant::now();
    let out =
        poll().args(["--state", &folder.text("state.json"), "--rate", "10/s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(out.stdout, DONE.as_bytes());
    let warnings: Vec<String> = stderr(&out).lines().map(str::to_string).collect();
    assert_eq!(warnings.len(), 1, "said once: {warnings:?}");
    assert!(warnings[0].contains("more than 24 h away; treated as absent"), "{warnings:?}");
    // The open breaker of year 9999: absent too, and the breaker's words never need a date past 9999.
    let open = format!(
        r#"{{"version":1,"origins":{{"{key}":{{"breaker":{{"state":"open","until_ms":253402300800000,"cooldown_ms":30000,"window":[]}}}}}}}}"#
    );
    std::fs::write(&state, open).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A negative time is absent, as the contract says, and only that value:
/// the file is not set aside, and what else it keeps stays.
#[test]
fn a_negative_time_in_a_state_file_is_absent_and_the_rest_of_the_file_is_kept() {
    let folder = Folder::new("negative");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
    let state = folder.path("state.json");
    let key = server.origin();
    let text = format!(
        r#"{{"version":1,"origins":{{"{key}":{{"not_before_ms":-5,"next_slot_ms":-1,
        "breaker":{{"state":"open","until_ms":-1000,"cooldown_ms":-3,"window":[]}}}},
        "other":{{"last_good":{{"http://other/x":{{"at_ms":-7,"text":"kept"}}}}}}}}}}"#
    );
    std::fs::write(&state, text).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    let started = Instant::now();
    let out = poll().args(["--state", &folder.text("state.json"), "--rate", "1/s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "said once: {err}");
    assert!(err.contains("that is negative or more than 24 h away; treated as absent"), "{err}");
    assert!(!folder.path("state.json.corrupt").exists(), "the whole file was set aside: {err}");
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(kept["origins"]["other"]["last_good"]["http://other/x"]["text"], "kept");
    assert_eq!(kept["origins"][&key]["breaker"]["state"], "closed");
}

/// Row 8: server advice kept in `--state` for the last day of year 9999 is
/// past the 24 h cap a live `Retry-After` is held to: absent, said once, and
/// the run sends at once instead of sleeping (or giving up as too late).
#[test]
fn advice_kept_for_year_9999_is_absent_and_never_slept_on() {
    let last_day_of_9999 = "253402214400000";
    let folder = Folder::new("advice-9999");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(2);
    let state = folder.path("state.json");
    let text = format!(r#"{{"version":1,"origins":{{"{}":{{"not_before_ms":{last_day_of_9999}}}}}}}"#, server.origin());
    std::fs::write(&state, text).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    let started = Instant::now();
    let out =
        poll().args(["--state", &folder.text("state.json"), "--timeout", "5s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(
        stderr(&out),
        format!(
            "poll: warning: --state: `{}` holds a wait that is negative or more than 24 h away; treated as absent \
             (is something else writing it?)\n",
            state.display()
        )
    );
    // The same advice in Redis.
    let Some(redis) = support::redis::Redis::start() else { return };
    let _: () = redis.query(&["SET", &support::redis::state_key("far", "advice"), last_day_of_9999]);
    let started = Instant::now();
    let out = poll()
        .args(["--state", &redis.url(), "--state-key", "far", "--timeout", "5s", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(stderr(&out).contains("`poll:{far}:advice` holds a value poll did not write"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn a_huge_window_is_cut_and_a_state_file_of_too_many_keys_or_bytes_is_set_aside() {
    let folder = Folder::new("huge");
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let state = folder.path("state.json");
    let key = server.origin();
    let window: Vec<String> = (0..100_000).map(|n| format!(r#"{{"ok":true,"ms":{n}}}"#)).collect();
    let text = format!(
        r#"{{"version":1,"origins":{{"{key}":{{"breaker":{{"state":"closed","window":[{}]}}}}}}}}"#,
        window.join(",")
    );
    std::fs::write(&state, text).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let window = kept["origins"][&key]["breaker"]["window"].as_array().unwrap();
    assert!(window.len() <= 1000, "{}", window.len());
    // Cut when read (the breaker would trim it to --breaker-window later anyway), and said so, once.
    assert_eq!(
        stderr(&out),
        format!(
            "poll: warning: --state: `{}` holds a breaker window of more than 1000 outcomes; cut to its newest 1000 \
             (is something else writing it?)\n",
            state.display()
        )
    );

    // 200,000 keys: set aside at once, not read and written on every attempt.
    let keys: Vec<String> = (0..200_000).map(|n| format!(r#""k{n}":{{}}"#)).collect();
    std::fs::write(&state, format!(r#"{{"version":1,"origins":{{{}}}}}"#, keys.join(","))).unwrap();
    let started = Instant::now();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("it holds 200000 keys; a state file holds at most 10000"), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    // Over 16 MiB: set aside without reading it whole.
    std::fs::write(&state, b"").unwrap();
    std::fs::OpenOptions::new().write(true).open(&state).unwrap().set_len(1 << 30).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("it is larger than 16 MiB"), "{}", stderr(&out));
    assert!(folder.path("state.json.corrupt.1").exists());

    // A value of 100,000 bytes the origin cannot take (where a kept body goes): quoted in 200 characters.
    let long = "y".repeat(100_000);
    std::fs::write(&state, format!(r#"{{"version":1,"origins":{{"{key}":{{"last_good":"{long}"}}}}}}"#)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = poll().args(["--state", &folder.text("state.json"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("is not a usable state file") && err.contains(" bytes more"), "{err}");
    assert!(err.len() < 1_000, "{} bytes of stderr", err.len());
}

// Secrets, huge values and invisible characters in messages.

#[test]
fn a_url_that_answers_with_a_redirect_was_reached_whatever_its_location_does() {
    // The redirect's Location refuses: a failure of a URL that answered, spending --retries (exit 5),
    // not "not up yet" until the deadline, and -v says where it was sent.
    let nowhere = format!("http://127.0.0.1:{}/x", support::daemon::free_port());
    let server = Server::start(vec![Reply::redirect(302, &nowhere)]).expect_hits(2);
    let out = poll().args(["-v", "--retries", "1", "--backoff", "10ms", "--timeout", "20s", &server.url("/")]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("attempt 1: connection refused in "), "{err}");
    assert!(
        err.contains(&format!("last: connection refused (after a redirect to {nowhere}) (raise --retries")),
        "{err}"
    );
    assert!(!err.contains("not up yet") && !err.contains("never reached"), "{err}");
}

#[test]
fn a_credential_header_that_is_not_ascii_is_never_sent_nor_retried() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let out = poll().args(["--retries", "3", "-H", "Authorization: Bearer s3crÉt", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "poll: error: a credential that cannot be sent (the `Authorization` header holds a character that is not \
             ASCII, which no credential can carry): not retryable [{}]\n",
            server.url("/")
        )
    );
    assert_eq!(server.connections(), 0);
}

#[test]
fn usage_errors_never_quote_a_secret() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .args(["-H", "Authorization: Bearer s3cr3t-tok\r", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("::error title=poll::"), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
    assert!(err.contains("Authorization: <redacted>"), "{err}");
    let out = poll().args(["http://exa mple.test/?api_key=s3cr3t&page=2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("s3cr3t") && stderr(&out).contains("api_key=<redacted>&page=2"), "{}", stderr(&out));
    // A credential header typed without its colon, judged by its first word.
    for header in ["Authorization Bearer s3cr3t", "X-Api-Key s3cr3t", "Authorization; s3cr3t"] {
        let out = poll().args(["-H", header, &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{header}");
        assert!(
            !stderr(&out).contains("s3cr3t")
                && stderr(&out).contains("<redacted>' for '--header <HEADER>': not a header"),
            "{}",
            stderr(&out)
        );
    }
    // A Redis password in the state URL's query (redis-rs reads `pass` and `password` there).
    for state in ["redis+unix:///tmp/none.sock?pass=s3cr3t", "redis://127.0.0.1:1/?password=s3cr3t"] {
        let out = poll().args(["--state", state, &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{state}");
        assert!(!stderr(&out).contains("s3cr3t") && stderr(&out).contains("=<redacted>`"), "{}", stderr(&out));
    }
}

#[test]
fn a_jq_error_on_a_huge_body_is_one_short_line() {
    let big: Vec<String> = (0..100_000).map(|n| n.to_string()).collect();
    let server = Server::start(vec![Reply::json(200, &format!("[{}]", big.join(",")))]).expect_hits_between(1, 50);
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .args(["--until", r#".status=="done""#, "--timeout", "2s", "-i", "100ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out).len());
    let err = stderr(&out);
    assert!(err.len() < 2_000, "{} bytes of stderr", err.len());
    assert_eq!(err.matches("::warning").count(), 1, "{err}");
    assert!(err.contains(" bytes more"), "{err}");
}

#[test]
fn invisible_characters_from_a_server_are_escaped_and_the_step_summary_escapes_markdown() {
    let folder = Folder::new("summary");
    let summary = folder.path("summary.md");
    // Within --show's 60 characters.
    let body = r#"{"status":"pending","note":"\u202eev\u200b $x$ $$y$$ @oc :warning: https://e.t www.e.t me@e.t"}"#;
    // Its Retry-After, past the deadline, ends the run on its first reply (the run ended on a
    // 500 ms deadline, which under load fell inside an attempt: the row named the request it cut).
    let reply = Reply::json(200, body).header("Retry-After", "60");
    let server = Server::start(vec![reply]).expect_hits_between(1, 20);
    let out = poll()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["-v", "--until", ".done", "--show", ".note", "--timeout", "10s", "-i", "100ms", &server.url("/")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains('\u{202e}') && !err.contains('\u{200b}'), "{err:?}");
    assert!(err.contains(r"\u{202e}ev\u{200b}"), "{err}");
    let table = std::fs::read_to_string(&summary).unwrap();
    let row = table.lines().find(|line| line.starts_with("| `")).unwrap();
    assert!(row.contains(r"\$x\$ \$\$y\$\$ \@oc \:warning\: https\://e.t www\.e.t me\@e.t"), "{row}");
    assert!(!row.contains('\u{202e}') && row.contains(r"\\u{202e}"), "{row}");
}

/// The five invisible characters that change how a line reads, from a
/// server's body (through `--show`, a jq warning and the final error line)
/// and a header (`-vv`): escaped on stderr in text mode, with `-vv`, and in
/// the JSON log, where they are written `\uXXXX` (still JSON, the same text
/// once decoded).
#[test]
fn invisible_characters_are_escaped_in_text_with_vv_and_in_the_json_log() {
    const FIVE: [(char, &str); 5] =
        [('\u{202e}', "202e"), ('\u{2066}', "2066"), ('\u{200b}', "200b"), ('\u{feff}', "feff"), ('\u{2028}', "2028")];
    let note: String = FIVE.iter().map(|(c, _)| format!("<{c}>")).collect();
    let body = serde_json::json!({ "status": "pending", "note": note }).to_string();
    // Its Retry-After, past the deadline, ends each run on its first reply (the run ended on a
    // 400 ms deadline, which under load fell inside an attempt and named the request it cut).
    let reply = Reply::json(200, &body).header("X-Note", &note).header("Retry-After", "60");
    let server = Server::start(vec![reply]);
    // `.note + 1` fails on every body, quoting the note: a warning, then the final error line.
    let flags = ["--show", ".note", "--until", "(.note + 1) > 0", "--timeout", "10s", "-i", "100ms"];
    for mode in [&[][..], &["-vv"][..], &["--log-format", "json"][..]] {
        let out = poll().args(mode).args(flags).arg(server.url("/")).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{mode:?}: {}", stderr(&out));
        let err = stderr(&out);
        for (c, hex) in FIVE {
            assert!(!err.contains(c), "{mode:?}: U+{hex} reached stderr raw: {err:?}");
            let escaped = if mode.contains(&"json") { format!("\\u{hex}") } else { format!("\\u{{{hex}}}") };
            assert!(err.contains(&escaped), "{mode:?}: {escaped} is not in {err}");
        }
        if mode == ["-vv"] {
            let header = err.lines().find(|line| line.starts_with("< x-note: ")).unwrap_or_default();
            assert!(header.contains("<\\u{202e}>"), "-vv shows the header escaped: {err}");
        }
        if mode.contains(&"json") {
            // Every line is JSON, and decodes to the server's own text.
            let events: Vec<serde_json::Value> = err.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
            assert!(events.iter().any(|event| event["show"].as_str().is_some_and(|s| s.contains(&note))), "{err}");
            let warned = events.iter().filter_map(|event| event["warnings"].as_array()).flatten();
            assert!(warned.filter_map(|w| w.as_str()).any(|w| w.contains(&note)), "{err}");
            let done = events.last().unwrap();
            assert!(done["message"].as_str().unwrap().contains(&note), "{err}");
        }
    }
}

// Secret headers across origins.

#[test]
fn every_header_poll_redacts_is_dropped_by_a_redirect_to_another_origin() {
    let elsewhere = Server::start(vec![Reply::json(200, DONE)]);
    let server = Server::start(vec![Reply::redirect(302, &elsewhere.url("/there"))]);
    let headers =
        ["PRIVATE-TOKEN: a", "X-Api-Key: b", "Api-Key: c", "X-Auth-Token: d", "X-Vault-Token: e", "X-Tenant: 7"];
    let mut command = poll();
    for header in headers {
        command.args(["-H", header]);
    }
    let out = command.arg(server.url("/here")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let there = &elsewhere.requests()[0];
    for name in ["private-token", "x-api-key", "api-key", "x-auth-token", "x-vault-token"] {
        assert_eq!(there.header(name), None, "{name} crossed to another origin");
        assert!(server.requests()[0].header(name).is_some(), "{name} went to its own origin");
    }
    assert_eq!(there.header("x-tenant"), Some("7"));

    // A --submit status URL on another origin gets none of them either, unless --location-trusted.
    let status = Server::start(vec![Reply::json(200, r#"{"status":"succeeded"}"#)]);
    let submit = Server::start(vec![Reply::status(202).header("Operation-Location", &status.url("/ops/1"))]);
    let out = poll()
        .args(["--submit", "-d", "{}", "-H", "X-Api-Key: b", "-i", "10ms", &submit.url("/jobs")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status.requests()[0].header("x-api-key"), None);
}

// A hostile or broken Redis.

/// A script's answer as the admit and record scripts give it: kind, ms, why, prober, reason.
fn script_answer(kind: &str, ms: u64) -> Vec<u8> {
    format!("*5\r\n${}\r\n{kind}\r\n:{ms}\r\n:0\r\n$0\r\n\r\n$11\r\nrate:5:5:60\r\n", kind.len()).into_bytes()
}

/// Not a cluster node; every script answers `answer`.
fn single_node(answer: impl Fn() -> support::resp::Answer + Send + Sync + 'static) -> support::resp::FakeRedis {
    support::resp::FakeRedis::start(move |words| match words.first().map(|w| w.to_ascii_uppercase()).as_deref() {
        Some("CLUSTER") => support::resp::Answer::Now(b"-ERR This instance has cluster support disabled\r\n".to_vec()),
        _ => answer(),
    })
}

#[test]
fn a_breaker_of_year_9999_from_redis_is_absent_not_a_crash() {
    let year_9999 = 253_402_300_800_000;
    let fake = single_node(move || support::resp::Answer::Now(script_answer("open", year_9999)));
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let out = poll().args(["--state", &fake.url(), "--state-key", "k1", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, DONE.as_bytes());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "said once: {err}");
    assert!(err.contains("past the 24 h cap; treated as absent"), "{err}");
    assert!(fake.commands().contains(&"EVALSHA".to_string()), "{:?}", fake.commands());

    // The same through a real Redis's own scripts: one SET on a shared key.
    let Some(redis) = support::redis::Redis::start() else { return };
    let breaker = format!(
        r#"{{"state":"open","cooldown_ms":30000,"until_ms":{year_9999},"window":[2,2,2,2,2],"reason":"rate:5:5:60"}}"#
    );
    let _: () = redis.query(&["SET", &support::redis::state_key("k1", "breaker"), &breaker]);
    let out = poll().args(["--state", &redis.url(), "--state-key", "k1", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("treated as absent"), "{}", stderr(&out));
}

/// One SET on a shared Redis key must not fail every step of the fleet:
/// what poll's scripts did not write (not JSON, a field of the wrong type, a
/// number no Redis integer holds, a time negative or more than a day away,
/// a probe lease without an expiry) is treated as absent, said once, and the
/// run goes on as with a fresh state, even under `--state-fail closed`.
#[test]
fn odd_values_in_redis_are_absent_said_once_and_never_fail_a_step() {
    let Some(redis) = support::redis::Redis::start() else { return };
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let cases: &[&[(&str, &str)]] = &[
        &[("breaker", "not json at all")],
        &[("breaker", r#"{"state":"closed","window":"x"}"#)],
        &[("breaker", r#"{"state":"open","until_ms":0,"cooldown_ms":9300000000000000000,"window":[],"reason":"x"}"#)],
        &[("breaker", r#"{"state":"open","until_ms":-5,"cooldown_ms":1000,"window":[1,"x",null]}"#)],
        &[("breaker", r#"{"state":"half_open","until_ms":1,"prober":{"a":1},"reason":["x"],"window":{"a":1}}"#)],
        &[("breaker", r#"{"state":"ajar"}"#)],
        &[("breaker", "[1,2,3]")],
        &[("rate", "1e400")],
        &[("rate", "-7")],
        &[("advice", "nan")],
        // A breaker whose cool-down is over, and a probe "lease" that never expires: the fleet would be turned away forever.
        &[("breaker", r#"{"state":"open","until_ms":1,"cooldown_ms":1000,"window":[]}"#), ("probe", "forever")],
        // Hashes where poll keeps the last good bodies (--fallback last), as strings.
        &[("last_at", "not a hash")],
    ];
    for (i, sets) in cases.iter().enumerate() {
        let key = format!("odd{i}");
        for (part, value) in *sets {
            let _: () = redis.query(&["SET", &support::redis::state_key(&key, part), value]);
        }
        let out = poll()
            .args(["--state", &redis.url(), "--state-key", &key, "--state-fail", "closed", "--rate", "10/s"])
            .args(["--fallback", "last", &server.url("/")])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{sets:?}: {err}");
        assert_eq!(out.stdout, DONE.as_bytes());
        assert_eq!(err.lines().count(), 1, "{sets:?}: said once: {err}");
        let odd = support::redis::state_key(&key, sets[sets.len() - 1].0);
        assert!(
            err.contains(&format!("`{odd}` holds a value poll did not write")) && err.contains("; treated as absent"),
            "{sets:?}: {err}"
        );
    }
    assert_eq!(server.hits(), cases.len());
}

/// A script's answer of `total` bytes in all: a `go` whose reason fills the rest.
fn answer_of(total: usize) -> Vec<u8> {
    let head = "*5\r\n$2\r\ngo\r\n:0\r\n:0\r\n$0\r\n\r\n";
    // `$N\r\n`, N bytes, `\r\n`: the length's own digits count too.
    let reason = (0..total).rev().find(|n| head.len() + n.to_string().len() + 5 + n == total).unwrap();
    let mut bytes = format!("{head}${reason}\r\n").into_bytes();
    bytes.extend(std::iter::repeat_n(b'x', reason));
    bytes.extend_from_slice(b"\r\n");
    assert_eq!(bytes.len(), total);
    bytes
}

#[test]
fn a_redis_reply_of_1_mib_is_read_and_one_byte_more_fails_the_step() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
    for (total, code) in [(1 << 20, 0), ((1 << 20) + 1, 6)] {
        let fake = single_node(move || support::resp::Answer::Now(answer_of(total)));
        let out = poll().args(["--state", &fake.url(), "--state-fail", "closed", &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{total} bytes: {}", stderr(&out));
        match code {
            0 => assert_eq!(stderr(&out), ""),
            _ => assert!(stderr(&out).contains("a reply larger than 1 MiB"), "{}", stderr(&out)),
        }
    }
}

#[test]
fn a_redis_reply_that_trickles_costs_one_bound_not_one_per_byte() {
    let trickle =
        || support::resp::Answer::Trickle { bytes: script_answer("go", 0), every: Duration::from_millis(200) };
    let fake = support::resp::FakeRedis::start(move |_| trickle());
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let started = Instant::now();
    let out = poll().args(["--state", &fake.url(), &server.url("/")]).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // One step of 1 s, then the store is left alone: before, each read had its second and a reply took 10 s.
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{took:?}");
    assert!(stderr(&out).contains("did not answer within 1.0s"), "{}", stderr(&out));
}

#[test]
fn an_endless_redis_error_line_fails_the_step_after_a_mebibyte() {
    let fake = support::resp::FakeRedis::start(|_| support::resp::Answer::Endless);
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let out = poll().args(["--state", &fake.url(), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    // The count is final once the fake's writes to the closed connection have failed.
    assert!(support::eventually(Duration::from_secs(5), || fake.all_ended()), "the fake went on answering");
    assert!(fake.written() < 16 << 20, "{} bytes were read before poll gave up", fake.written());
}

// --auth-cmd's processes, credentials that cannot be sent, headers from a FIFO.

/// Processes whose command line is `marker` (`sleep 31234`; not poll itself, whose arguments hold it).
fn running(marker: &str) -> usize {
    support::process::command_lines().iter().filter(|line| *line == marker).count()
}

#[test]
fn a_signal_ends_auth_cmds_whole_process_group() {
    for (signal, code, digit) in [("-TERM", 143, 3), ("-HUP", 129, 5), ("-INT", 130, 6)] {
        let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
        let marker = format!("sleep {digit}{}", std::process::id() % 1000 + 1000);
        let mut child = support::poll_std()
            .args(["--auth-cmd", &marker, &server.url("/")])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let runs = support::eventually(Duration::from_secs(10), || running(&marker) == 1);
        assert!(runs, "{signal}: the command runs ({} of it)", running(&marker));
        let killed = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        assert!(killed.success());
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "{signal}");
        // A process being killed can be seen for a moment after poll ended; one not killed, for hours.
        let gone = support::eventually(Duration::from_secs(5), || running(&marker) == 0);
        assert!(gone, "{signal}: `{marker}` outlived poll");
    }
}

#[test]
fn a_background_child_holding_stdout_is_not_waited_for() {
    let server = Server::start(vec![Reply::json(200, DONE)]);
    let marker = format!("sleep 4{}", std::process::id() % 1000 + 1000);
    let started = Instant::now();
    let out = poll().args(["--auth-cmd", &format!("echo TOK3N; {marker} &"), &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer TOK3N"));
    let gone = support::eventually(Duration::from_secs(5), || running(&marker) == 0);
    assert!(gone, "`{marker}` outlived poll");
}

/// `--auth-cmd`'s output is bounded as local reads are (16 MiB, one reader
/// for both): 2 MiB of it is read whole, more than 16 MiB is the command's
/// failure, named in one line that never quotes what it printed.
#[test]
fn auth_cmds_output_is_read_whole_up_to_16_mib_and_more_is_its_failure() {
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(1);
    // An ExecCredential after 2 MiB of spaces: cut at 1 MiB, it was no token at all.
    let padded = r#"head -c 2097152 /dev/zero | tr '\0' ' '; printf '{"status":{"token":"TOK3N"}}'"#;
    let out = poll().args(["--auth-cmd", padded, &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer TOK3N"));
    for (stream, command) in [
        ("stdout", "head -c 17000000 /dev/zero | tr '\\0' x"),
        ("stderr", "head -c 17000000 /dev/zero | tr '\\0' x >&2; echo TOK3N"),
    ] {
        let started = Instant::now();
        let out = poll().args(["--auth-cmd", command, &server.url("/")]).output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{stream}: {}", stderr(&out));
        assert_eq!(
            stderr(&out),
            format!(
                "poll: error: --auth-cmd printed more than 16 MiB on {stream}; it was ended [{}]\n",
                server.url("/")
            ),
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{stream}: {:?}", started.elapsed());
    }
}

#[test]
fn a_token_no_header_can_carry_is_a_failure_of_the_command_and_nothing_is_sent() {
    let folder = Folder::new("token");
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    // Five runs with a shared state: none reaches the server, so no breaker opens for it.
    for _ in 0..5 {
        let out = poll()
            .args([
                "--auth-cmd",
                "echo tökén",
                "--retries",
                "0",
                "--state",
                &folder.text("state.json"),
                &server.url("/"),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("--auth-cmd printed a token with a character that is not ASCII"), "{err}");
        assert!(!err.contains("tökén"), "{err}");
    }
}

#[test]
fn a_cookie_too_large_to_send_back_is_exit_3_never_sent_nor_counted_by_the_breaker() {
    let folder = Folder::new("cookie");
    let big = format!("session={}; Path=/", "x".repeat(20_000));
    let server = Server::start(vec![Reply::json(200, r#"{"status":"pending"}"#).header("Set-Cookie", &big)]);
    for _ in 0..6 {
        let out = poll()
            .args(["--until", ".done", "-i", "10ms", "--retries", "0", "--state", &folder.text("state.json")])
            .arg(server.url("/"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("too large to send back (`session` alone is 20008 bytes)"), "{err}");
    }
    // One request a run: the cookie never went, and the breaker never opened (a sixth run still asked).
    assert_eq!(server.hits(), 6);
}

#[test]
fn headers_from_a_fifo_that_never_writes_cannot_outlast_the_timeout() {
    let folder = Folder::new("header-fifo");
    let fifo = folder.path("headers");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let server = Server::start(vec![Reply::json(200, DONE)]).expect_hits(0);
    let started = Instant::now();
    let out =
        poll().args(["-H", &format!("@{}", fifo.display()), "--timeout", "1s", &server.url("/")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nothing came before the deadline"), "{}", stderr(&out));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5), "{took:?}");
}

/// `-o FIFO` with no reader and no `--timeout` waits as `cat > FIFO` would, but a
/// signal then ends the process at once, with its code and one line.
#[test]
fn a_signal_ends_a_wait_for_an_output_fifo_reader() {
    let folder = std::env::temp_dir().join(format!("poll-fifo-signal-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("folder");
    let fifo = folder.join("out");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let server = Server::start(vec![Reply::json(200, "{}")]).expect_hits(1);
    let mut child = support::poll_std()
        .args(["--timeout", "0", "-o"])
        .arg(&fifo)
        .arg(server.url("/"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run poll");
    assert!(server.wait_hits(1, Duration::from_secs(10)));
    // A sleep, not a wait for an event: poll gives no sign when it begins to wait for a reader (it
    // tries the FIFO every 10 ms, silently), and the signal must come then, not while the reply is
    // still on its way. 300 ms is ample; poll is still waiting after it, as `cat > FIFO` would.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().expect("poll's status").is_none(), "poll waits for a reader");
    let sent = Instant::now();
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let output = child.wait_with_output().expect("poll ends");
    assert!(sent.elapsed() < Duration::from_secs(5), "{:?}", sent.elapsed());
    assert_eq!(output.status.code(), Some(130));
    assert_eq!(stderr(&output), "poll: error: interrupted while the run's output was written\n");
    let _ = std::fs::remove_dir_all(&folder);
}
