//! `file__read` and `file__write`, confined to the working directory.
//!
//! Checking a path and then opening it by name races: a directory flipped to a symlink between
//! the check and the open sends the write outside, and a dangling symlink passes a check that
//! can only resolve what exists. So nothing here opens a path by name from the process's point
//! of view: every open starts from a descriptor of the working directory and never follows a
//! symlink (openat2 with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the kernel has it, else
//! one `openat(.., O_NOFOLLOW)` per component). Symlinks are refused outright, even ones that
//! stay inside: telling the two apart is exactly the check that races.
//!
//! Only regular files are read or written: a FIFO or a device is opened non-blocking and
//! refused after `fstat`, so it can never hang a step. A write refuses a file with more than one
//! name (a hard link may be the other name of a file outside). Both directions are limited to
//! [`MAX_FILE_BYTES`].

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The largest file `file__read` returns and `file__write` writes (16 MiB, the same bound as a
/// child process's captured output).
pub const MAX_FILE_BYTES: u64 = super::process::MAX_OUTPUT;

/// Why a file tool refused or failed, naming the path as the step gave it. `verb` is what was
/// being done (`read`, `write`, `open`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("the path is empty")]
    EmptyPath,
    #[error("path `{0}` is absolute; file tools only reach files under the working directory")]
    Absolute(String),
    #[error("path `{0}` contains a NUL byte")]
    Nul(String),
    /// A `..` above the working directory, or a resolution the kernel stopped at its edge.
    #[error("path `{0}` escapes the working directory")]
    Escapes(String),
    #[error("path `{0}` is not a plain relative path")]
    NotPlain(String),
    #[error("path `{0}` names the working directory itself, not a file in it")]
    NamesRoot(String),
    #[error(
        "the content for `{path}` is larger than {max} bytes ({len} bytes)",
        max = MAX_FILE_BYTES
    )]
    ContentTooLarge { path: String, len: usize },
    #[error("`{0}` is larger than {max} bytes", max = MAX_FILE_BYTES)]
    TooLarge(String),
    /// The working directory itself cannot be opened.
    #[error("working directory {}: {reason}", root.display())]
    WorkDir { root: PathBuf, reason: String },
    /// Refused even when the link stays inside: telling the two apart is the check that races.
    #[error(
        "cannot {verb} `{path}`: it goes through a symlink; file tools do not follow symlinks"
    )]
    Symlink { verb: &'static str, path: String },
    /// A FIFO or a device could hang the step; a directory is not content.
    #[cfg_attr(
        unix,
        error("`{0}` is not a regular file (a FIFO, device, socket or directory); file tools read and write regular files only")
    )]
    #[cfg_attr(not(unix), error("`{0}` is not a regular file"))]
    NotRegular(String),
    /// Another name of the file may be outside the working directory.
    #[error("`{path}` has {names} names (hard links); file__write does not write a file that other paths also reach")]
    HardLinked { path: String, names: u64 },
    #[error("cannot read `{0}`: stream did not contain valid UTF-8")]
    NotUtf8(String),
    #[error("cannot create the directory of `{0}`: a component is a symlink or not a directory; file tools do not follow symlinks")]
    DirThroughSymlink(String),
    #[error("cannot create the directory of `{path}`: {reason}")]
    CreateDir { path: String, reason: String },
    /// Any other failure of the system call, in the system's words.
    #[error("cannot {verb} `{path}`: {reason}")]
    Io {
        verb: &'static str,
        path: String,
        reason: String,
    },
    /// The blocking task doing the work panicked or was cancelled.
    #[error("{tool} stopped: {reason}")]
    Stopped { tool: &'static str, reason: String },
}

impl From<FileError> for String {
    fn from(e: FileError) -> String {
        e.to_string()
    }
}

/// The components of `path` once `.` and `..` are resolved lexically, refusing absolute paths,
/// a `..` that climbs out of the root, and a path that names the root itself. Lexical
/// resolution is exact here because no component is ever a followed symlink.
pub fn components(path: &str) -> Result<Vec<OsString>, FileError> {
    let p = Path::new(path);
    if path.is_empty() {
        return Err(FileError::EmptyPath);
    }
    if p.is_absolute() {
        return Err(FileError::Absolute(path.to_string()));
    }
    if path.contains('\0') {
        return Err(FileError::Nul(path.to_string()));
    }
    let mut out: Vec<OsString> = Vec::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if out.pop().is_none() {
                    return Err(FileError::Escapes(path.to_string()));
                }
            }
            Component::Normal(n) => out.push(n.to_os_string()),
            Component::CurDir => {}
            _ => return Err(FileError::NotPlain(path.to_string())),
        }
    }
    if out.is_empty() {
        return Err(FileError::NamesRoot(path.to_string()));
    }
    Ok(out)
}

pub async fn read(root: &Path, path: &str) -> Result<String, FileError> {
    let comps = components(path)?;
    let (root, path) = (root.to_path_buf(), path.to_string());
    tokio::task::spawn_blocking(move || imp::read(&root, &path, &comps))
        .await
        .map_err(|e| FileError::Stopped {
            tool: "file__read",
            reason: e.to_string(),
        })?
}

pub async fn write(root: &Path, path: &str, content: &str) -> Result<usize, FileError> {
    let comps = components(path)?;
    if content.len() as u64 > MAX_FILE_BYTES {
        return Err(FileError::ContentTooLarge {
            path: path.to_string(),
            len: content.len(),
        });
    }
    let (root, path, content) = (root.to_path_buf(), path.to_string(), content.to_string());
    tokio::task::spawn_blocking(move || imp::write(&root, &path, &comps, content.as_bytes()))
        .await
        .map_err(|e| FileError::Stopped {
            tool: "file__write",
            reason: e.to_string(),
        })?
}

#[cfg(unix)]
mod imp {
    use super::{FileError, MAX_FILE_BYTES};
    use std::ffi::{CString, OsString};
    use std::fs::File;
    use std::io::{self, Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    fn cstring(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    }

    fn check(fd: libc::c_int) -> io::Result<OwnedFd> {
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a non-negative return of open/openat/openat2 is a descriptor we now own.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn open_at(dir: &OwnedFd, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
        loop {
            // SAFETY: `dir` is an open descriptor, `name` a NUL-terminated string.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    flags | libc::O_CLOEXEC,
                    0o666 as libc::c_uint,
                )
            };
            match check(fd) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }

    fn open_root(root: &Path) -> Result<OwnedFd, FileError> {
        cstring(root.as_os_str().as_bytes())
            .and_then(|c| {
                // SAFETY: `c` is NUL-terminated.
                check(unsafe {
                    libc::open(
                        c.as_ptr(),
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    )
                })
            })
            .map_err(|e| FileError::WorkDir {
                root: root.to_path_buf(),
                reason: e.to_string(),
            })
    }

    fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
        // SAFETY: an all-zero `stat` is a valid value to be overwritten by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open and `st` is a valid out-pointer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }

    fn is_symlink(dir: &OwnedFd, name: &CString) -> bool {
        // SAFETY: an all-zero `stat` is a valid value to be overwritten by fstatat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `dir` is open, `name` NUL-terminated, `st` a valid out-pointer.
        let rc = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
    }

    /// Opens the directories `dirs` one below the other from `root`, never following a
    /// symlink; `create` makes the missing ones (mkdirat is relative to the parent's
    /// descriptor too, so a flip cannot redirect it).
    fn walk(root: OwnedFd, dirs: &[OsString], create: bool) -> io::Result<OwnedFd> {
        let mut cur = root;
        for d in dirs {
            let name = cstring(d.as_bytes())?;
            if create {
                // SAFETY: `cur` is open and `name` NUL-terminated.
                let rc = unsafe { libc::mkdirat(cur.as_raw_fd(), name.as_ptr(), 0o777) };
                if rc < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
            }
            cur = match open_at(
                &cur,
                &name,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            ) {
                Ok(fd) => fd,
                // O_DIRECTORY reports a symlink as "not a directory"; say what it is.
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) && is_symlink(&cur, &name) => {
                    return Err(io::Error::from_raw_os_error(libc::ELOOP))
                }
                Err(e) => return Err(e),
            };
        }
        Ok(cur)
    }

    /// openat2 resolving `comps` strictly beneath `root` with no symlink anywhere; `None` when
    /// the kernel (or a seccomp filter) does not offer openat2.
    #[cfg(target_os = "linux")]
    fn openat2(
        root: &OwnedFd,
        comps: &[OsString],
        flags: libc::c_int,
    ) -> Option<io::Result<OwnedFd>> {
        #[repr(C)]
        struct OpenHow {
            flags: u64,
            mode: u64,
            resolve: u64,
        }
        let joined = comps
            .iter()
            .map(|c| c.as_bytes())
            .collect::<Vec<_>>()
            .join(&b'/');
        let path = match cstring(&joined) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        };
        let how = OpenHow {
            flags: (flags | libc::O_CLOEXEC) as u64,
            mode: 0,
            resolve: libc::RESOLVE_BENEATH
                | libc::RESOLVE_NO_SYMLINKS
                | libc::RESOLVE_NO_MAGICLINKS,
        };
        loop {
            // SAFETY: the arguments follow openat2(2): an open directory descriptor, a
            // NUL-terminated path, a pointer to an `open_how` and its size.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    root.as_raw_fd(),
                    path.as_ptr(),
                    &how as *const OpenHow,
                    std::mem::size_of::<OpenHow>(),
                )
            };
            match check(fd as libc::c_int) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
                    return None
                }
                r => return Some(r),
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn openat2(_: &OwnedFd, _: &[OsString], _: libc::c_int) -> Option<io::Result<OwnedFd>> {
        None
    }

    /// Why an open failed, in the words a pipeline author needs.
    fn describe(verb: &'static str, path: &str, e: &io::Error) -> FileError {
        let path = path.to_string();
        match e.raw_os_error() {
            Some(libc::ELOOP) => FileError::Symlink { verb, path },
            Some(libc::EXDEV) => FileError::Escapes(path),
            Some(libc::ENXIO) => FileError::NotRegular(path),
            _ => FileError::Io {
                verb,
                path,
                reason: e.to_string(),
            },
        }
    }

    fn not_regular(path: &str) -> FileError {
        FileError::NotRegular(path.to_string())
    }

    fn is_regular(st: &libc::stat) -> bool {
        st.st_mode & libc::S_IFMT == libc::S_IFREG
    }

    pub(super) fn read(root: &Path, path: &str, comps: &[OsString]) -> Result<String, FileError> {
        read_via(root, path, comps, true)
    }

    /// `use_openat2: false` forces the component walk (tests; kernels before 5.6 take it anyway).
    pub(super) fn read_via(
        root: &Path,
        path: &str,
        comps: &[OsString],
        use_openat2: bool,
    ) -> Result<String, FileError> {
        // Non-blocking so that opening a FIFO returns at once; fstat then refuses it.
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW;
        let root_fd = open_root(root)?;
        let fast = if use_openat2 {
            openat2(&root_fd, comps, flags)
        } else {
            None
        };
        let opened = match fast {
            Some(r) => r,
            None => {
                let (last, dirs) = comps.split_last().ok_or_else(|| not_regular(path))?;
                cstring(last.as_bytes()).and_then(|name| {
                    walk(root_fd, dirs, false).and_then(|dir| open_at(&dir, &name, flags))
                })
            }
        };
        let fd = opened.map_err(|e| describe("read", path, &e))?;
        let st = fstat(&fd).map_err(|e| describe("read", path, &e))?;
        if !is_regular(&st) {
            return Err(not_regular(path));
        }
        if st.st_size as u64 > MAX_FILE_BYTES {
            return Err(FileError::TooLarge(path.to_string()));
        }
        let mut buf = Vec::with_capacity(st.st_size as usize);
        File::from(fd)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut buf)
            .map_err(|e| describe("read", path, &e))?;
        if buf.len() as u64 > MAX_FILE_BYTES {
            return Err(FileError::TooLarge(path.to_string()));
        }
        String::from_utf8(buf).map_err(|_| FileError::NotUtf8(path.to_string()))
    }

    pub(super) fn write(
        root: &Path,
        path: &str,
        comps: &[OsString],
        content: &[u8],
    ) -> Result<usize, FileError> {
        let (last, dirs) = comps.split_last().ok_or_else(|| not_regular(path))?;
        let root_fd = open_root(root)?;
        let dir = walk(root_fd, dirs, true).map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => FileError::DirThroughSymlink(path.to_string()),
            _ => FileError::CreateDir {
                path: path.to_string(),
                reason: e.to_string(),
            },
        })?;
        let name = cstring(last.as_bytes()).map_err(|e| describe("write", path, &e))?;
        // No O_TRUNC: the file is inspected before anything in it changes. O_NONBLOCK makes a
        // FIFO without a reader fail (ENXIO) instead of waiting for one.
        let fd = open_at(
            &dir,
            &name,
            libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        )
        .map_err(|e| describe("write", path, &e))?;
        let st = fstat(&fd).map_err(|e| describe("write", path, &e))?;
        if !is_regular(&st) {
            return Err(not_regular(path));
        }
        if st.st_nlink > 1 {
            return Err(FileError::HardLinked {
                path: path.to_string(),
                names: st.st_nlink as u64,
            });
        }
        let mut f = File::from(fd);
        f.set_len(0)
            .and_then(|()| f.write_all(content))
            .map_err(|e| describe("write", path, &e))?;
        Ok(content.len())
    }
}

/// Without descriptor-relative opens the paths are only checked lexically and symlinks are
/// refused by a look before the open (racy; pipewright's supported platforms are unix).
#[cfg(not(unix))]
mod imp {
    use super::FileError;
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    fn io(verb: &'static str, path: &str, e: std::io::Error) -> FileError {
        FileError::Io {
            verb,
            path: path.to_string(),
            reason: e.to_string(),
        }
    }

    fn resolve(root: &Path, path: &str, comps: &[OsString]) -> Result<PathBuf, FileError> {
        let mut p = root.to_path_buf();
        for c in comps {
            p.push(c);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(FileError::Symlink {
                    verb: "open",
                    path: path.to_string(),
                });
            }
        }
        Ok(p)
    }

    pub fn read(root: &Path, path: &str, comps: &[OsString]) -> Result<String, FileError> {
        let p = resolve(root, path, comps)?;
        let meta = std::fs::metadata(&p).map_err(|e| io("read", path, e))?;
        if !meta.is_file() {
            return Err(FileError::NotRegular(path.to_string()));
        }
        if meta.len() > super::MAX_FILE_BYTES {
            return Err(FileError::TooLarge(path.to_string()));
        }
        std::fs::read_to_string(&p).map_err(|e| io("read", path, e))
    }

    pub fn write(
        root: &Path,
        path: &str,
        comps: &[OsString],
        content: &[u8],
    ) -> Result<usize, FileError> {
        let p = resolve(root, path, comps)?;
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| FileError::CreateDir {
                path: path.to_string(),
                reason: e.to_string(),
            })?;
        }
        std::fs::write(&p, content).map_err(|e| io("write", path, e))?;
        Ok(content.len())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The component walk that kernels without openat2 take refuses what openat2 refuses.
    #[test]
    fn the_fallback_walk_refuses_symlinks_and_fifos() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (work, outside) = (t.path().join("w"), t.path().join("o"));
        for d in [&work, &outside] {
            std::fs::create_dir(d).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(outside.join("secret"), "s").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(work.join("sub")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(work.join("sub/ok.txt"), "fine").unwrap_or_else(|e| panic!("{e}"));
        symlink(&outside, work.join("d")).unwrap_or_else(|e| panic!("{e}"));
        symlink(outside.join("secret"), work.join("sub/s")).unwrap_or_else(|e| panic!("{e}"));
        let c = std::ffi::CString::new(work.join("fifo").as_os_str().as_encoded_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let read = |p: &str| {
            let comps = components(p).unwrap_or_else(|e| panic!("{e}"));
            imp::read_via(&work, p, &comps, false)
        };
        assert_eq!(read("sub/ok.txt").as_deref(), Ok("fine"));
        assert_eq!(read("./sub/../sub/ok.txt").as_deref(), Ok("fine"));
        for p in ["d/secret", "sub/s"] {
            let e = read(p).expect_err(p);
            assert!(e.to_string().contains("symlink"), "{p}: {e}");
        }
        let e = read("fifo").expect_err("fifo");
        assert!(e.to_string().contains("regular file"), "{e}");
        let e = read("sub").expect_err("a directory");
        assert!(e.to_string().contains("regular file"), "{e}");
    }

    /// What the step's author reads names the path as written; the variant says which refusal.
    #[test]
    fn refusals_say_which_and_name_the_path() {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let work = t.path();
        let read = |p: &str| {
            let comps = components(p)?;
            imp::read_via(work, p, &comps, true)
        };
        let write = |p: &str| {
            let comps = components(p)?;
            imp::write(work, p, &comps, b"x")
        };
        assert_eq!(read("../x"), Err(FileError::Escapes("../x".into())));
        assert_eq!(write("/etc/x"), Err(FileError::Absolute("/etc/x".into())));
        assert_eq!(read("."), Err(FileError::NamesRoot(".".into())));
        assert_eq!(read(""), Err(FileError::EmptyPath));
        std::fs::write(work.join("f"), "x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::hard_link(work.join("f"), work.join("g")).unwrap_or_else(|e| panic!("{e}"));
        let e = write("g");
        assert_eq!(
            e,
            Err(FileError::HardLinked {
                path: "g".into(),
                names: 2
            })
        );
        assert_eq!(
            e.map_err(String::from),
            Err("`g` has 2 names (hard links); file__write does not write a file that other paths also reach".into())
        );
        symlink(work.join("f"), work.join("s")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read("s"),
            Err(FileError::Symlink {
                verb: "read",
                path: "s".into()
            })
        );
        assert_eq!(
            write("s/x"),
            Err(FileError::DirThroughSymlink("s/x".into()))
        );
        assert!(matches!(
            read("missing"),
            Err(FileError::Io { verb: "read", .. })
        ));
    }

    #[test]
    fn paths_are_resolved_lexically_and_kept_inside() {
        assert_eq!(
            components("a/./b/../c").ok(),
            Some(vec![OsString::from("a"), OsString::from("c")])
        );
        for bad in ["", "/etc/passwd", "..", "a/../../x", ".", "a/..", "a\0b"] {
            assert!(components(bad).is_err(), "{bad:?}");
        }
    }
}
