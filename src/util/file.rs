//! Files `poll` writes (`-o`, `--state`) and reads (`-d @FILE`, `--json @FILE`,
//! `-H @FILE`, `--cacert`, `--cert`, `--key`, `--fallback @FILE`, the state
//! file), made safe on a shared machine: a regular file is replaced atomically
//! through a temporary file created new under a name no one can guess (a link
//! planted in the folder is never written through; `-o`'s keeps the owner,
//! group and mode of the file it replaces, and one with other hard links is
//! written in place, as curl's `-o` writes), a device or FIFO is
//! written as it is (`/dev/null`, and Windows' `NUL`, known by its name), and
//! every read is bounded in size and, for what is not a regular file (a FIFO
//! that never writes), in time; which file a path names now, to see one
//! replaced (`-H @FILE`); whether a write's reader went away (a closed
//! stdout); and whether others may read a key's file.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest file read: a header file, a body, a CA bundle, a state file.
pub(crate) const MAX_READ: u64 = 16 << 20;

/// Links followed to find where a path leads, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// Who may read a file `poll` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// What a new file gets from the umask, as curl's `-o`; a file replaced keeps its owner, group
    /// and permissions (as far as this user may give them), and its hard links.
    Umask,
    /// Its owner only (0600): the state file keeps last good bodies.
    Owner,
}

/// The folder `path` is in; `.` for a bare file name.
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A file `poll` will write, checked before anything is sent: not a folder.
/// A device, a FIFO or stdout is written as it is; a regular file, or a new
/// one where `path` (or its dangling links) leads, is replaced through a
/// temporary file beside it, so that folder must exist and `poll` must be
/// allowed to make files in it.
pub(crate) fn check_writable(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("`{}` is a folder; name a file in it", path.display()));
    }
    let target = match destination(path) {
        Ok(Destination::InPlace { .. }) => return Ok(()),
        _ if names_stdout(path) => return Ok(()),
        Ok(Destination::File(target)) => target,
        // A file on the way (`out.json/x`), a loop of links: said of the folder below.
        Err(_) => path.to_path_buf(),
    };
    let folder = folder_of(&target);
    let leads = match target.as_path() == path {
        true => String::new(),
        false => format!(" (where `{}` leads)", path.display()),
    };
    match fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(format!("`{}` is not a folder{leads}", folder.display())),
        Err(_) => return Err(format!("folder `{}` does not exist{leads}", folder.display())),
    }
    imp::may_make_files_in(folder).map_err(|e| {
        let folder = folder.display();
        format!("cannot make files in folder `{folder}`{leads} ({e}), where the file is written and renamed into place")
    })
}

/// Where a write to a path goes.
enum Destination {
    /// A regular file (or a new one) at this path, links resolved: replaced atomically.
    File(PathBuf),
    /// A device, a FIFO or a socket, or a link to one (`/dev/null`, Windows' `NUL`): written as it is.
    InPlace { fifo: bool },
}

fn destination(path: &Path) -> io::Result<Destination> {
    // Windows' metadata calls a device (`NUL`) a file, which no rename may replace: it is known by its name.
    if imp::names_device(path) {
        return Ok(Destination::InPlace { fifo: false });
    }
    match fs::metadata(path) {
        // The link's target is what is replaced; the link stays.
        Ok(meta) if meta.is_file() => fs::canonicalize(path).map(Destination::File),
        Ok(meta) if meta.is_dir() => Err(io::Error::other("it is a folder")),
        Ok(meta) => Ok(Destination::InPlace { fifo: imp::is_fifo(&meta) }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => dangling(path).map(Destination::File),
        Err(e) => Err(e),
    }
}

/// Where a path that does not exist yet leads: itself, or where its (dangling) links point.
fn dangling(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::read_link(&path) {
            Ok(target) => path = folder_of(&path).join(target),
            Err(_) => return Ok(path),
        }
    }
    Err(io::Error::other("too many levels of links"))
}

/// Writes `bytes` to `path`: a regular file is replaced through a temporary
/// file in its folder, then a rename, so a process killed at any moment leaves
/// the old file or the new one. `durable` adds an fsync before the rename
/// (for `-o`, which a pipeline reads next); the state file does without, to
/// keep its lock short. Under [`Access::Umask`] (`-o`) a file with other hard
/// links is written in place instead ([`rewrite`]). A device or a FIFO is
/// written as it is, by `until`.
pub(crate) fn replace(
    path: &Path,
    bytes: &[u8],
    durable: bool,
    access: Access,
    until: Option<Instant>,
) -> io::Result<()> {
    let target = match destination(path)? {
        Destination::InPlace { fifo } => return write_in_place(path, bytes, fifo, until),
        Destination::File(target) => target,
    };
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // -o's file keeps what the one it replaces had: its owner, group and permissions, as curl's -o.
    let keeps = fs::metadata(&target).ok().filter(|_| access == Access::Umask);
    // One with other names (hard links) is written in place, as curl writes every file: a new
    // file renamed over one name would leave the others with the old body.
    if keeps.as_ref().is_some_and(|was| imp::links(was) > 1) {
        return rewrite(&target, bytes, durable);
    }
    // Created with O_EXCL under a random name: no link can be planted where it goes.
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".poll.tmp");
    if let Some(mode) = imp::new_file_mode(access) {
        builder.permissions(mode);
    }
    let mut temp = builder.tempfile_in(folder_of(&target))?;
    if let Some(was) = keeps {
        // The owner first: a change of owner clears the set-id bits that the permissions then give back.
        imp::keep_owner(temp.as_file(), &was);
        temp.as_file().set_permissions(was.permissions())?;
    }
    temp.write_all(bytes)?;
    if durable {
        temp.as_file().sync_all()?;
    }
    imp::persist(temp, &target, until)
}

/// Writes `bytes` over the regular file at `target` (its links resolved) in
/// place: its owner, group, mode and every hard link stay, but a process
/// killed meanwhile leaves it cut short, which [`replace`]'s rename never does.
fn rewrite(target: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let mut file = imp::open_to_rewrite(target)?;
    file.write_all(bytes)?;
    if durable {
        file.sync_all()?;
    }
    Ok(())
}

/// Appends `bytes` to `path` in one write, for a file others append to as
/// well (GitHub's step summary): a regular file, or a new one, is opened to
/// append; a device or a FIFO is written as it is, never blocking past
/// `until` ([`replace`] writes one so).
pub(crate) fn append(path: &Path, bytes: &[u8], until: Option<Instant>) -> io::Result<()> {
    if let Destination::InPlace { fifo } = destination(path)? {
        return write_in_place(path, bytes, fifo, until);
    }
    // Without blocking all the same: a name swapped for a FIFO since fails at once instead of hanging.
    let mut file = imp::open_to_append_without_blocking(path)?;
    file.write_all(bytes)
}

/// How often a FIFO with no reader yet, or a full one, is tried again.
const IN_PLACE_RETRY: Duration = Duration::from_millis(10);

/// Writes `bytes` to a device or a FIFO as it is, never blocking past
/// `until`: it is opened and written without blocking, and a FIFO that no
/// one reads yet (or whose reader is slow) is tried again until `until`.
/// Without a deadline a FIFO is waited for as `cat > FIFO` would.
fn write_in_place(path: &Path, mut bytes: &[u8], fifo: bool, until: Option<Instant>) -> io::Result<()> {
    let time_left = || until.is_none_or(|until| Instant::now() < until);
    let mut file = loop {
        match imp::open_without_blocking(path) {
            Ok(file) => break file,
            Err(e) if fifo && imp::no_reader(&e) && time_left() => std::thread::sleep(IN_PLACE_RETRY),
            Err(e) if fifo && imp::no_reader(&e) => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no reader opened it before the deadline"));
            }
            Err(e) => return Err(e),
        }
    };
    while !bytes.is_empty() {
        match file.write(bytes) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && time_left() => std::thread::sleep(IN_PLACE_RETRY),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "its reader took no more before the deadline"));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads at most [`MAX_READ`] bytes of `path`. A regular file is read at
/// once; anything else (a FIFO, `-d @<(cmd)`, a device) on a thread of its
/// own that is given up at `until`, so that a writer that never comes cannot
/// outlast the run's deadline.
pub(crate) fn read_bounded(path: &Path, until: Option<Instant>) -> io::Result<Vec<u8>> {
    if fs::metadata(path)?.is_file() {
        return read_at_most(File::open(path)?);
    }
    let (send, receive) = std::sync::mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::Builder::new().name("read".into()).spawn(move || {
        let _ = send.send(File::open(&owned).and_then(read_at_most));
    })?;
    let waited = match until {
        Some(until) => receive.recv_timeout(until.saturating_duration_since(Instant::now())).ok(),
        None => receive.recv().ok(),
    };
    waited.unwrap_or_else(|| Err(io::Error::new(io::ErrorKind::TimedOut, "nothing came before the deadline")))
}

/// All of `reader`, refused when it holds more than [`MAX_READ`] bytes.
pub(crate) fn read_at_most(reader: impl Read) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    AtMost::new(reader).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `reader` bounded to [`MAX_READ`] bytes: the one bounded reader of every
/// local input, files ([`read_at_most`]) and `--auth-cmd`'s output alike
/// (`process/child.rs`, which reads it as it comes). A read past the bound is
/// an error of kind `FileTooLarge` ("it is larger than 16 MiB"), never a
/// silent cut.
pub(crate) struct AtMost<R> {
    inner: R,
    left: u64,
}

impl<R: Read> AtMost<R> {
    pub(crate) fn new(inner: R) -> AtMost<R> {
        AtMost { inner, left: MAX_READ }
    }
}

impl<R: Read> Read for AtMost<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte more than is left, to see whether there is more.
        let room = usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..room])?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            io::Error::new(io::ErrorKind::FileTooLarge, format!("it is larger than {} MiB", MAX_READ >> 20))
        })?;
        Ok(n)
    }
}

/// Whether `path` names this process's own stdout (`/dev/stdout`,
/// `/dev/fd/1`, `/proc/self/fd/1`, or a link to one): such a path is
/// stdout itself, written through the stdout handle (appending where the
/// shell's `>>` made it append), never opened again nor replaced, which
/// would wipe a log that `poll -o /dev/stdout URL >> log` appends to.
pub(crate) fn names_stdout(path: &Path) -> bool {
    imp::names_stdout(path)
}

/// Whether a write failed because its reader went away (`poll URL | head
/// -c1`): Unix says EPIPE, Windows one of three errors (std maps only some
/// of them to `BrokenPipe`).
pub(crate) fn reader_closed(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe || imp::reader_closed(e)
}

/// Whether `path` (the state file, or its lock) is one only this user can
/// change, so that what it keeps is this user's and writing it harms no one
/// else's file: the name and every link on the way belong to this user (or
/// root), and what they lead to, if it exists, is this user's and group and
/// others may not write it. The one check of a private file, made before the
/// first request (a failure is a usage error, exit 2) and again at every
/// read and before every replace of the state file (a failure is the step's,
/// as for a store that cannot be written): a neighbour in a shared,
/// non-sticky folder may swap the name for a link or a FIFO mid-run. Ok for
/// a path that does not exist yet.
pub(crate) fn check_private(path: &Path) -> Result<(), String> {
    let shown = path.display();
    let mut at = path.to_path_buf();
    for links in 0..MAX_LINKS {
        let meta = match fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("cannot look at `{shown}`: {e}")),
        };
        if !meta.file_type().is_symlink() {
            return owned(path, &meta, links > 0);
        }
        // A link another user planted is refused whatever it points to.
        if let Some(uid) = imp::owner_not_me(&meta).filter(|uid| *uid != 0) {
            return Err(match links {
                0 => format!(
                    "`{shown}` belongs to user {uid}, not to you: ask them to remove it, or use a file of your own"
                ),
                _ => format!("`{shown}` leads through a link of user {uid}; use a file of your own"),
            });
        }
        let target = fs::read_link(&at).map_err(|e| format!("cannot read the link `{shown}`: {e}"))?;
        at = folder_of(&at).join(target);
    }
    Err(format!("`{shown}`: too many levels of links"))
}

/// The end of [`check_private`]: the file `path` leads to (`via_link`), as
/// its `meta` (from the name, or from the open file) says.
fn owned(path: &Path, meta: &fs::Metadata, via_link: bool) -> Result<(), String> {
    let shown = path.display();
    match (imp::owner_not_me(meta), via_link) {
        (Some(uid), false) => Err(format!(
            "`{shown}` belongs to user {uid}, not to you: ask them to remove it, or use a file of your own"
        )),
        (Some(uid), true) => Err(format!("`{shown}` leads to a file of user {uid}, not yours; use a file of your own")),
        (None, _) => match imp::others_may_write(meta) {
            Some(mode) => Err(format!(
                "`{shown}` may be written by others (mode {mode:o}); make it yours alone: chmod 600 {shown}"
            )),
            None => Ok(()),
        },
    }
}

/// The mode of the file `path` leads to, when group or others may read it
/// (a private key's file: ssh warns of it); `None` when they may not, where
/// there are no modes (Windows), or when it cannot be looked at.
pub(crate) fn others_may_read(path: &Path) -> Option<u32> {
    fs::metadata(path).ok().and_then(|meta| imp::others_may_read(&meta))
}

/// What is said of a state file that is a device, a FIFO or a socket.
pub(crate) fn not_regular(path: &Path) -> String {
    format!("`{}` is not a regular file (a device, a FIFO?); name a file", path.display())
}

/// Why the state file was not read.
#[derive(Debug)]
pub(crate) enum Unread {
    /// It is not private ([`check_private`]): nothing is read, written or moved.
    Refused(String),
    /// It could not be read, or is over [`MAX_READ`]: no state file poll wrote.
    Failed(io::Error),
}

/// The state file `path`, checked as [`check_private`] says and read whole
/// (at most [`MAX_READ`]); `None` when there is none. It is opened without
/// blocking (a FIFO planted at its name has no writer to wait for) and read
/// only when the open file itself is a regular file and private, so that what
/// is read is what was checked, whatever is swapped in between.
pub(crate) fn read_private(path: &Path) -> Result<Option<Vec<u8>>, Unread> {
    check_private(path).map_err(Unread::Refused)?;
    let file = match imp::open_to_read_without_blocking(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unread::Failed(e)),
    };
    let meta = file.metadata().map_err(Unread::Failed)?;
    if !meta.is_file() {
        return Err(Unread::Refused(not_regular(path)));
    }
    let via_link = fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    owned(path, &meta, via_link).map_err(Unread::Refused)?;
    read_at_most(file).map(Some).map_err(Unread::Failed)
}

/// Opens (creating it, owner-only) the lock file beside a state file, never
/// through a link, and only when the open file is private ([`check_private`]).
pub(crate) fn open_lock(path: &Path) -> Result<File, String> {
    let mut options = File::options();
    options.read(true).write(true).create(true).truncate(false);
    imp::no_link_owner_only(&mut options);
    let file = options.open(path).map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    let meta = file.metadata().map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    owned(path, &meta, false)?;
    Ok(file)
}

#[cfg(unix)]
mod imp {
    use std::ffi::OsStr;
    use std::fs::{OpenOptions, Permissions};
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use nix::fcntl::OFlag;

    pub(super) fn new_file_mode(access: super::Access) -> Option<Permissions> {
        Some(Permissions::from_mode(match access {
            // The umask takes its bits off, as for any file a program creates.
            super::Access::Umask => 0o666,
            super::Access::Owner => 0o600,
        }))
    }

    pub(super) fn no_link_owner_only(options: &mut OpenOptions) {
        options.mode(0o600).custom_flags(OFlag::O_NOFOLLOW.bits());
    }

    /// A rename replaces the name whoever has the old file open.
    pub(super) fn persist(temp: tempfile::NamedTempFile, target: &Path, _: Option<Instant>) -> std::io::Result<()> {
        temp.persist(target).map(drop).map_err(|e| e.error)
    }

    pub(super) fn is_fifo(metadata: &std::fs::Metadata) -> bool {
        std::os::unix::fs::FileTypeExt::is_fifo(&metadata.file_type())
    }

    /// For writing, with O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of waiting for one.
    pub(super) fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().write(true).custom_flags(OFlag::O_NONBLOCK.bits()).open(path)
    }

    /// For appending, made if new, with O_NONBLOCK: a FIFO with no reader fails at once (ENXIO).
    pub(super) fn open_to_append_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().append(true).create(true).custom_flags(OFlag::O_NONBLOCK.bits()).open(path)
    }

    /// Whether this user may make files in `folder` (write and search it), as the kernel says
    /// (modes, ACLs, a read-only mount); root may anywhere but on a read-only mount.
    pub(super) fn may_make_files_in(folder: &Path) -> std::io::Result<()> {
        use nix::unistd::{AccessFlags, access};
        access(folder, AccessFlags::W_OK | AccessFlags::X_OK).map_err(std::io::Error::from)
    }

    /// What opening a FIFO without blocking says while no one reads it.
    pub(super) fn no_reader(e: &std::io::Error) -> bool {
        e.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32)
    }

    /// How many names (hard links) the file has.
    pub(super) fn links(metadata: &std::fs::Metadata) -> u64 {
        metadata.nlink()
    }

    /// An existing file, emptied, for writing: never through a link swapped in at its name.
    pub(super) fn open_to_rewrite(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().write(true).truncate(true).custom_flags(OFlag::O_NOFOLLOW.bits()).open(path)
    }

    /// Gives `file` the owner and group `was` had, as far as this user may:
    /// root any, another user only a group they are in (their own file stays
    /// theirs). What cannot be kept stays as made, the user's own: the body
    /// is written all the same.
    pub(super) fn keep_owner(file: &std::fs::File, was: &std::fs::Metadata) {
        use std::os::unix::fs::fchown;
        if fchown(file, Some(was.uid()), Some(was.gid())).is_err() {
            let _ = fchown(file, None, Some(was.gid()));
        }
    }

    pub(super) fn identity(metadata: &std::fs::Metadata) -> (u64, u64) {
        (metadata.dev(), metadata.ino())
    }

    /// `PATH` is `1` in the folder of this process's descriptors (`/dev/fd`,
    /// `/proc/self/fd`, wherever they lead: `/proc/PID/fd` on Linux), or a
    /// link that leads there (`/dev/stdout` -> `/proc/self/fd/1`).
    pub(super) fn names_stdout(path: &Path) -> bool {
        let own: Vec<PathBuf> =
            ["/dev/fd", "/proc/self/fd"].iter().filter_map(|f| std::fs::canonicalize(f).ok()).collect();
        let mut path = path.to_path_buf();
        for _ in 0..super::MAX_LINKS {
            let folder = super::folder_of(&path);
            if path.file_name() == Some(OsStr::new("1"))
                && std::fs::canonicalize(folder).is_ok_and(|folder| own.contains(&folder))
            {
                return true;
            }
            // The descriptor's own link (`/proc/PID/fd/1` -> the log) is never read: it was matched above.
            match std::fs::read_link(&path) {
                Ok(target) => path = folder.join(target),
                Err(_) => return false,
            }
        }
        false
    }

    /// The owner of a file or link, when it is not the user `poll` runs as.
    pub(super) fn owner_not_me(meta: &std::fs::Metadata) -> Option<u32> {
        let me = nix::unistd::geteuid().as_raw();
        (meta.uid() != me).then_some(meta.uid())
    }

    /// A file's mode, when group or others may write it.
    pub(super) fn others_may_write(meta: &std::fs::Metadata) -> Option<u32> {
        (meta.mode() & 0o022 != 0).then_some(meta.mode() & 0o777)
    }

    /// A file's mode, when group or others may read it.
    pub(super) fn others_may_read(meta: &std::fs::Metadata) -> Option<u32> {
        (meta.mode() & 0o044 != 0).then_some(meta.mode() & 0o777)
    }

    /// For reading, with O_NONBLOCK: a FIFO opens at once, with no writer to wait for.
    pub(super) fn open_to_read_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().read(true).custom_flags(OFlag::O_NONBLOCK.bits()).open(path)
    }

    /// A device's name means nothing here: its metadata says what it is (`/dev/null`).
    pub(super) fn names_device(_: &Path) -> bool {
        false
    }

    /// EPIPE, std's `BrokenPipe`, is all there is.
    pub(super) fn reader_closed(_: &std::io::Error) -> bool {
        false
    }
}

#[cfg(not(unix))]
mod imp {
    //! Windows: files take the folder's access lists; no owner or mode check.
    use std::fs::{OpenOptions, Permissions};
    use std::path::Path;
    use std::time::{Duration, Instant};

    pub(super) fn new_file_mode(_: super::Access) -> Option<Permissions> {
        None
    }

    pub(super) fn no_link_owner_only(_: &mut OpenOptions) {}

    /// How long a rename refused by another handle on the target is tried again.
    const RENAME_PATIENCE: Duration = Duration::from_secs(1);

    /// Windows refuses to rename over a file another process has open (access
    /// denied, or a sharing violation): another poll looking at the state file
    /// before its first request, a virus scanner, an indexer. Such handles are
    /// held for moments, so the rename is tried again every few milliseconds,
    /// for up to [`RENAME_PATIENCE`] and never past `until`.
    pub(super) fn persist(
        mut temp: tempfile::NamedTempFile,
        target: &Path,
        until: Option<Instant>,
    ) -> std::io::Result<()> {
        let patience = Instant::now() + RENAME_PATIENCE;
        let give_up = until.map_or(patience, |until| until.min(patience));
        loop {
            match temp.persist(target) {
                Ok(_) => return Ok(()),
                Err(e) if held_open(&e.error) && Instant::now() < give_up => {
                    temp = e.file;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e.error),
            }
        }
    }

    /// ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION.
    fn held_open(e: &std::io::Error) -> bool {
        matches!(e.raw_os_error(), Some(5 | 32 | 33))
    }

    /// Windows has no FIFOs in its file system (named pipes live under `\\.\pipe\`).
    pub(super) fn is_fifo(_: &std::fs::Metadata) -> bool {
        false
    }

    pub(super) fn open_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().write(true).open(path)
    }

    pub(super) fn open_to_append_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().append(true).create(true).open(path)
    }

    /// A folder's access list is not read here: a folder the user may not write fails at the write.
    pub(super) fn may_make_files_in(_: &Path) -> std::io::Result<()> {
        Ok(())
    }

    pub(super) fn no_reader(_: &std::io::Error) -> bool {
        false
    }

    /// Windows has no owner to give: a new file takes the folder's access lists.
    pub(super) fn keep_owner(_: &std::fs::File, _: &std::fs::Metadata) {}

    /// std has no stable count of a file's links on Windows: taken as one, so it is replaced.
    pub(super) fn links(_: &std::fs::Metadata) -> u64 {
        1
    }

    pub(super) fn open_to_rewrite(path: &Path) -> std::io::Result<std::fs::File> {
        OpenOptions::new().write(true).truncate(true).open(path)
    }

    pub(super) fn owner_not_me(_: &std::fs::Metadata) -> Option<u32> {
        None
    }

    pub(super) fn others_may_write(_: &std::fs::Metadata) -> Option<u32> {
        None
    }

    pub(super) fn others_may_read(_: &std::fs::Metadata) -> Option<u32> {
        None
    }

    pub(super) fn open_to_read_without_blocking(path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::File::open(path)
    }

    pub(super) fn identity(_: &std::fs::Metadata) -> (u64, u64) {
        (0, 0)
    }

    /// Windows has no path for a process's own stdout (`CON` is the console, not stdout).
    pub(super) fn names_stdout(_: &Path) -> bool {
        false
    }

    /// Whether `path` is a device: a path in the device namespace
    /// (`\\.\NUL`, `\\.\pipe\NAME`), or a name Windows keeps for one in
    /// any folder and any case (`NUL`, `con`, `C:\out\COM1`), trailing dots
    /// and spaces ignored as Windows ignores them. Not with an extension
    /// (`nul.txt`): Windows 11 makes that a file.
    pub(super) fn names_device(path: &Path) -> bool {
        use std::path::{Component, Prefix};
        if let Some(Component::Prefix(prefix)) = path.components().next()
            && matches!(prefix.kind(), Prefix::DeviceNS(_))
        {
            return true;
        }
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else { return false };
        let name = name.trim_end_matches(['.', ' ']).to_ascii_uppercase();
        let numbered =
            |stem: &str| name.strip_prefix(stem).is_some_and(|n| n.chars().count() == 1 && "123456789¹²³".contains(n));
        ["NUL", "CON", "PRN", "AUX", "CONIN$", "CONOUT$"].contains(&name.as_str()) || numbered("COM") || numbered("LPT")
    }

    /// ERROR_BROKEN_PIPE (109), ERROR_NO_DATA (232: the pipe is being closed) and
    /// ERROR_PIPE_NOT_CONNECTED (233): the pipe's reader is gone.
    pub(super) fn reader_closed(e: &std::io::Error) -> bool {
        matches!(e.raw_os_error(), Some(109 | 232 | 233))
    }
}

/// The device and inode of a file on Unix, which change when the file is
/// replaced (a rename over it) even within its timestamp's granularity. On
/// Windows std has no stable file index, so `(0, 0)`: there a replaced file
/// is seen by its modification time and size alone.
pub(crate) fn identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    imp::identity(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let folder = std::env::temp_dir().join(format!("poll-file-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&folder);
        fs::create_dir_all(&folder).expect("temp folder");
        folder
    }

    #[test]
    fn the_folder_of_a_bare_name_is_here() {
        assert_eq!(folder_of(Path::new("a.json")), Path::new("."));
        assert_eq!(folder_of(Path::new("/tmp/a.json")), Path::new("/tmp"));
        assert!(check_writable(Path::new("/no/such/folder/x")).is_err());
        assert!(check_writable(&std::env::temp_dir()).is_err(), "a folder is not a file");
        let folder = folder("writable");
        fs::write(folder.join("file"), b"").expect("a file");
        assert_eq!(check_writable(&folder.join("new.json")), Ok(()));
        let through = check_writable(&folder.join("file/x.json"));
        assert_eq!(through, Err(format!("`{}` is not a folder", folder.join("file").display())));
        let _ = fs::remove_dir_all(&folder);
    }

    #[test]
    fn replacing_leaves_no_temp_file() {
        let folder = folder("replace");
        let path = folder.join("out.json");
        replace(&path, b"one", true, Access::Umask, None).expect("first write");
        replace(&path, b"two", false, Access::Owner, None).expect("second write");
        assert_eq!(fs::read(&path).ok(), Some(b"two".to_vec()));
        assert_eq!(fs::read_dir(&folder).map(|d| d.count()).ok(), Some(1));
        let _ = fs::remove_dir_all(&folder);
    }

    /// Windows refuses a rename over a file another process has open (another poll looking at the
    /// state file): the rename is tried again until the handle goes, and gives up after a second.
    #[test]
    fn a_file_held_open_for_a_moment_is_replaced_once_let_go() {
        let folder = folder("held");
        let path = folder.join("state.json");
        fs::write(&path, b"old").expect("old file");
        let held = File::open(&path).expect("open");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(held);
        });
        replace(&path, b"new", false, Access::Owner, None).expect("replaced once the handle is closed");
        let _ = release.join();
        assert_eq!(fs::read(&path).ok(), Some(b"new".to_vec()));
        let held = File::open(&path).expect("open");
        let started = Instant::now();
        let replaced = replace(&path, b"newer", false, Access::Owner, None);
        assert_eq!(replaced.is_err(), cfg!(windows), "{replaced:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "gave up in {:?}", started.elapsed());
        drop(held);
        assert_eq!(fs::read_dir(&folder).map(|d| d.count()).ok(), Some(1), "no temp file is left behind");
        let _ = fs::remove_dir_all(&folder);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_stays_a_link_and_its_target_gets_the_content() {
        let folder = folder("link");
        let (target, link) = (folder.join("target.json"), folder.join("link.json"));
        fs::write(&target, b"old").expect("target");
        std::os::unix::fs::symlink("target.json", &link).expect("link");
        replace(&link, b"new", false, Access::Umask, None).expect("write through the link");
        assert!(fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()));
        assert_eq!(fs::read(&target).ok(), Some(b"new".to_vec()));
        // A dangling link gets its target made.
        std::os::unix::fs::symlink("made.json", folder.join("dangling.json")).expect("link");
        replace(&folder.join("dangling.json"), b"made", false, Access::Owner, None).expect("write");
        assert_eq!(fs::read(folder.join("made.json")).ok(), Some(b"made".to_vec()));
        let _ = fs::remove_dir_all(&folder);
    }

    #[test]
    fn a_reader_gone_is_a_closed_pipe() {
        assert!(reader_closed(&io::Error::from(io::ErrorKind::BrokenPipe)));
        assert!(!reader_closed(&io::Error::from(io::ErrorKind::PermissionDenied)));
        // Windows' three words for it (on Unix these numbers are other errors).
        for code in [109, 232, 233] {
            assert_eq!(reader_closed(&io::Error::from_raw_os_error(code)), cfg!(windows), "{code}");
        }
    }

    #[cfg(windows)]
    #[test]
    fn windows_device_names_are_written_as_they_are() {
        let devices = ["NUL", "nul", "Con", "COM1", "lpt9", "COM\u{b9}", "CONOUT$", "NUL. ", r"C:\out\NUL", r"\\.\NUL"];
        for device in devices {
            assert!(imp::names_device(Path::new(device)), "{device}");
        }
        for file in ["nul.txt", "NULL", "COM0", "COM10", "console", r"C:\NUL\out.json", "out.json"] {
            assert!(!imp::names_device(Path::new(file)), "{file}");
        }
        replace(Path::new("NUL"), b"gone", true, Access::Umask, None).expect("NUL takes anything");
        replace(Path::new(r"\\.\nul"), b"gone", true, Access::Umask, None).expect("the device namespace too");
    }

    #[test]
    fn reads_are_bounded() {
        let folder = folder("read");
        let path = folder.join("big");
        fs::write(&path, vec![b'x'; (MAX_READ + 1) as usize]).expect("big file");
        let error = read_bounded(&path, None).err().map(|e| e.to_string());
        assert_eq!(error.as_deref(), Some("it is larger than 16 MiB"));
        fs::write(&path, vec![b'x'; MAX_READ as usize]).expect("a file of 16 MiB");
        assert_eq!(read_bounded(&path, None).map(|bytes| bytes.len()).ok(), Some(MAX_READ as usize));
        fs::write(&path, b"small").expect("small file");
        assert_eq!(read_bounded(&path, None).ok(), Some(b"small".to_vec()));
        let _ = fs::remove_dir_all(&folder);
    }
}
