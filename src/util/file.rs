//! Files `poll` writes (`-o`, `--state`): the folder a path is in, and
//! replacing a file atomically, so that a reader never sees half of one;
//! and which file a path names now, to see one replaced (`-H @FILE`).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The folder `path` is in; `.` for a bare file name.
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A file `poll` will write: its folder must exist and it must not be a folder.
pub(crate) fn check_writable(path: &Path) -> Result<(), String> {
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(format!("folder `{}` does not exist", folder.display()));
    }
    if path.is_dir() {
        return Err(format!("`{}` is a folder; name a file in it", path.display()));
    }
    Ok(())
}

/// Replaces `path` with `bytes`: a temp file in the same folder, then a
/// rename over `path`, so a process killed at any moment leaves the old file
/// or the new one. `durable` adds an fsync before the rename (for `-o`, which
/// a pipeline reads next); the state file does without, to keep its lock short.
pub(crate) fn replace(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = folder_of(path).join(format!(".{name}.poll-{}.tmp", std::process::id()));
    let written = File::create(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        if durable { file.sync_all() } else { Ok(()) }
    });
    let renamed = written.and_then(|()| std::fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}

/// The device and inode of a file on Unix, which change when the file is
/// replaced (a rename over it) even within its timestamp's granularity. On
/// Windows std has no stable file index, so `(0, 0)`: there a replaced file
/// is seen by its modification time and size alone.
pub(crate) fn identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        (metadata.dev(), metadata.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_of_a_bare_name_is_here() {
        assert_eq!(folder_of(Path::new("a.json")), Path::new("."));
        assert_eq!(folder_of(Path::new("/tmp/a.json")), Path::new("/tmp"));
        assert!(check_writable(Path::new("/no/such/folder/x")).is_err());
        assert!(check_writable(&std::env::temp_dir()).is_err(), "a folder is not a file");
    }

    #[test]
    fn replacing_leaves_no_temp_file() {
        let folder = std::env::temp_dir().join(format!("poll-file-test-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("temp folder");
        let path = folder.join("out.json");
        replace(&path, b"one", true).expect("first write");
        replace(&path, b"two", false).expect("second write");
        assert_eq!(std::fs::read(&path).ok(), Some(b"two".to_vec()));
        assert_eq!(std::fs::read_dir(&folder).map(|d| d.count()).ok(), Some(1));
        let _ = std::fs::remove_dir_all(&folder);
    }
}
