//! Noticing that the store changed: file notifications on its directory (the database, its
//! WAL, the run lock files), and a poll once a second of the same files' sizes and times for
//! where notifications do not arrive (a store on a network file system, a directory created
//! after the server started). Every change bumps a counter the streams wait on.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// Keeps the notifications coming while it lives.
pub(crate) struct Watcher {
    _notify: Option<notify::RecommendedWatcher>,
}

fn bump(tx: &watch::Sender<u64>) {
    tx.send_modify(|n| *n = n.wrapping_add(1));
}

/// What the poll compares: each watched file's size and modification time.
fn stamp(paths: &[PathBuf]) -> Vec<Option<(u64, SystemTime)>> {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)))
        })
        .collect()
}

/// Whether a notification says a file's content or presence changed.
fn writes(kind: &notify::EventKind) -> bool {
    use notify::event::{EventKind, ModifyKind};
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(m) => !matches!(m, ModifyKind::Metadata(_)),
        _ => false,
    }
}

pub(crate) fn start(
    store: &Path,
    tx: watch::Sender<u64>,
    mut stop: watch::Receiver<bool>,
) -> Watcher {
    let tx = Arc::new(tx);
    let dir = store
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut locks = store.as_os_str().to_os_string();
    locks.push(".locks");
    let locks = PathBuf::from(locks);
    let mut wal = store.as_os_str().to_os_string();
    wal.push("-wal");
    let watched = vec![store.to_path_buf(), PathBuf::from(wal), locks.clone()];
    let notify = {
        use notify::Watcher as _;
        let tx = tx.clone();
        let watched = watched.clone();
        // Only writes count: the server's own reads open the WAL (a metadata change) and write
        // the `-shm` file, which must not wake the streams that read again.
        let relevant = move |p: &Path| {
            watched
                .iter()
                .any(|w| p == w || p.parent() == Some(&watched[2]))
        };
        notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if res.is_ok_and(|e| writes(&e.kind) && e.paths.iter().any(|p| relevant(p))) {
                bump(&tx);
            }
        })
        .ok()
        .and_then(|mut w| {
            w.watch(&dir, notify::RecursiveMode::NonRecursive).ok()?;
            // The lock directory says when a run starts or stops being owned.
            let _ = w.watch(&locks, notify::RecursiveMode::NonRecursive);
            Some(w)
        })
    };
    tokio::spawn(async move {
        let mut last = stamp(&watched);
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.changed() => return,
            }
            ticks = (ticks + 1) % 10;
            let now = stamp(&watched);
            // Every 10 s regardless: a run whose process was killed -9 changes no file, yet
            // shows as interrupted from then on.
            if now != last || ticks == 0 {
                last = now;
                bump(&tx);
            }
        }
    });
    Watcher { _notify: notify }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, CreateKind, DataChange, EventKind, MetadataKind, ModifyKind};

    #[test]
    fn the_servers_own_reads_are_no_change() {
        // What opening the WAL for a read looks like.
        assert!(!writes(&EventKind::Modify(ModifyKind::Metadata(
            MetadataKind::Any
        ))));
        assert!(!writes(&EventKind::Access(AccessKind::Any)));
        assert!(writes(&EventKind::Modify(ModifyKind::Data(
            DataChange::Any
        ))));
        assert!(writes(&EventKind::Create(CreateKind::File)));
    }
}
