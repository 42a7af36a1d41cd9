//! `file__read` / `file__write` confinement (issue 11): a symlink, a hard link, a FIFO or a
//! directory flipped mid-write must never let a step touch anything outside the working
//! directory, nor hang it.
#![cfg(unix)]

use pipewright_runtime::tools::files;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
        .block_on(f)
}

/// Runs `f` on a thread of its own and fails the test when it has not returned within `limit`
/// (a blocked open would otherwise hang the whole test binary).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still blocked after {limit:?}"))
}

/// A work directory and a sibling directory standing for "outside".
fn dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let t = tempdir();
    let work = t.path().join("work");
    let outside = t.path().join("outside");
    for d in [&work, &outside] {
        std::fs::create_dir(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    }
    (t, work, outside)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn plain_reads_and_writes_still_work() {
    let (_t, work, _) = dirs();
    block_on(async {
        assert_eq!(
            files::write(&work, "a/b/c.txt", "long content").await,
            Ok(12)
        );
        // Overwriting truncates.
        assert_eq!(
            files::write(&work, "./a/b/../b/c.txt", "short").await,
            Ok(5)
        );
        assert_eq!(
            files::read(&work, "a/b/c.txt").await.as_deref(),
            Ok("short")
        );
    });
    assert_eq!(
        std::fs::read_to_string(work.join("a/b/c.txt"))
            .ok()
            .as_deref(),
        Some("short")
    );
}

#[test]
fn a_dangling_symlink_does_not_create_a_file_outside() {
    let (_t, work, outside) = dirs();
    symlink(outside.join("created.txt"), work.join("link.txt")).unwrap_or_else(|e| panic!("{e}"));
    symlink(outside.join("newdir"), work.join("linkdir")).unwrap_or_else(|e| panic!("{e}"));
    block_on(async {
        let r = files::write(&work, "link.txt", "pwned").await;
        assert!(r.is_err(), "{r:?}");
        let r = files::write(&work, "linkdir/f.txt", "pwned").await;
        assert!(r.is_err(), "{r:?}");
    });
    assert_eq!(entries(&outside), Vec::<String>::new());
}

#[test]
fn a_symlink_to_an_existing_file_outside_is_refused_both_ways() {
    let (_t, work, outside) = dirs();
    std::fs::write(outside.join("secret"), "s3cret").unwrap_or_else(|e| panic!("{e}"));
    symlink(outside.join("secret"), work.join("s")).unwrap_or_else(|e| panic!("{e}"));
    symlink(&outside, work.join("d")).unwrap_or_else(|e| panic!("{e}"));
    block_on(async {
        assert!(files::read(&work, "s").await.is_err());
        assert!(files::read(&work, "d/secret").await.is_err());
        assert!(files::write(&work, "s", "x").await.is_err());
        assert!(files::write(&work, "d/secret", "x").await.is_err());
    });
    assert_eq!(
        std::fs::read_to_string(outside.join("secret"))
            .ok()
            .as_deref(),
        Some("s3cret")
    );
}

#[test]
fn a_hard_link_is_not_written_through() {
    let (_t, work, outside) = dirs();
    let victim = outside.join("victim.txt");
    std::fs::write(&victim, "original").unwrap_or_else(|e| panic!("{e}"));
    std::fs::hard_link(&victim, work.join("h.txt")).unwrap_or_else(|e| panic!("{e}"));
    let r = block_on(files::write(&work, "h.txt", "pwned"));
    let e = r.expect_err("a file with two names must be refused");
    assert!(e.to_string().contains("link"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&victim).ok().as_deref(),
        Some("original")
    );
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: `c` is a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

#[test]
fn a_fifo_is_refused_at_once_not_waited_on() {
    let (_t, work, _) = dirs();
    mkfifo(&work.join("p"));
    let w = work.clone();
    let read = within(Duration::from_secs(5), move || {
        block_on(files::read(&w, "p"))
    });
    let e = read.expect_err("a FIFO is not a regular file");
    assert!(e.to_string().contains("regular file"), "{e}");
    let w = work.clone();
    let write = within(Duration::from_secs(5), move || {
        block_on(files::write(&w, "p", "x"))
    });
    assert!(write.is_err(), "{write:?}");
}

#[test]
fn a_device_is_refused() {
    let (_t, work, _) = dirs();
    symlink("/dev/zero", work.join("z")).unwrap_or_else(|e| panic!("{e}"));
    let w = work.clone();
    let r = within(Duration::from_secs(5), move || {
        block_on(files::read(&w, "z"))
    });
    assert!(r.is_err(), "{r:?}");
}

#[test]
fn writes_have_the_same_size_limit_as_reads() {
    let (_t, work, _) = dirs();
    let big = "x".repeat(files::MAX_FILE_BYTES as usize + 1);
    let e = block_on(files::write(&work, "big.txt", &big)).expect_err("over the limit");
    assert!(e.to_string().contains("larger than"), "{e}");
    assert!(!work.join("big.txt").exists());
    let ok = "x".repeat(files::MAX_FILE_BYTES as usize);
    assert_eq!(
        block_on(files::write(&work, "ok.txt", &ok)),
        Ok(files::MAX_FILE_BYTES as usize)
    );
}

/// The race of the issue: `d` flips between a real directory and a symlink to outside while
/// files are written under `d/`. A check of the path followed by an open by name lets some
/// writes land outside; a descriptor-relative, no-follow open never does.
#[test]
fn flipping_a_symlinked_directory_while_writing_never_escapes() {
    let (_t, work, outside) = dirs();
    let real = work.join("real");
    std::fs::create_dir(&real).unwrap_or_else(|e| panic!("{e}"));
    let link_tmp = work.join("link.tmp");
    let real_tmp = work.join("real.tmp");
    let d = work.join("d");
    symlink(&real, &d).unwrap_or_else(|e| panic!("{e}"));
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = stop.clone();
        let (outside, d, link_tmp, real_tmp) = (
            outside.clone(),
            d.clone(),
            link_tmp.clone(),
            real_tmp.clone(),
        );
        std::thread::spawn(move || {
            // `d` alternates between a symlink to `real` (inside) and one to `outside`; both
            // are swapped in atomically with rename.
            let mut to_outside = true;
            while !stop.load(Ordering::Relaxed) {
                let target = if to_outside { &outside } else { &real_tmp };
                let _ = std::fs::remove_file(&link_tmp);
                if symlink(target, &link_tmp).is_ok() {
                    let _ = std::fs::rename(&link_tmp, &d);
                }
                to_outside = !to_outside;
            }
        })
    };
    // `real.tmp` is another name of `real` through a symlink, so "inside" also goes through a
    // link and the two states look alike to a name-based check.
    symlink(&real, &real_tmp).unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    block_on(async {
        for i in 0..3000 {
            if start.elapsed() > Duration::from_secs(20) {
                break;
            }
            let _ = files::write(&work, &format!("d/f{i}.txt"), "x").await;
        }
    });
    stop.store(true, Ordering::Relaxed);
    let _ = flipper.join();
    assert_eq!(entries(&outside), Vec::<String>::new());
}
