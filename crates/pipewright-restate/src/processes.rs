//! A worker's step processes. Spawning them is pipewright-runtime's
//! (`pipewright_runtime::tools::process::run`: each child in its own process group, killed when
//! its step ends, SIGKILL from the kernel to the child when its spawning thread dies, even by
//! kill -9). What a worker adds is the bookkeeping around its life: a dead worker's leftover
//! groups are killed when the next one starts (a step's grandchildren, which the death signal
//! does not reach), and every live group dies when the worker stops. Without that, Restate
//! runs the step again on another worker while the first copy still runs.

use std::path::Path;

/// Called once when a worker starts, before it serves: kills what dead workers that recorded
/// their groups in `dir` left running, then records this worker's groups there. Returns how
/// many processes were killed. `dir` is the worker's own (one per worker host and data
/// directory), not shared with a local run store.
pub fn adopt(dir: &Path) -> usize {
    let killed = pipewright_runtime::tools::process::kill_orphans(dir);
    pipewright_runtime::tools::process::record_groups_in(dir.to_path_buf());
    killed
}

/// Kills every step process group of this worker still running (on shutdown, after the
/// endpoint stopped serving).
pub fn kill_all() {
    pipewright_runtime::tools::process::kill_all_children();
}
