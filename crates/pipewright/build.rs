//! Names the git commit the binary is built from, for `pipewright --version`. Outside a git
//! checkout (a source tarball) or without git the commit is "unknown": never a build failure.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PIPEWRIGHT_GIT_COMMIT={commit}");
    // A commit or a branch switch changes HEAD (a detached HEAD) or the branch it names, and
    // a `git gc` moves refs into packed-refs: rebuild the version string on any of them.
    // `--git-path` resolves each file where it really is (a linked worktree keeps HEAD apart
    // from the shared refs).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    let here = std::env::current_dir().unwrap_or_default();
    for name in watched {
        // Only files that exist: cargo reruns the script on every build for a missing one.
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            .map(|p| here.join(PathBuf::from(p)))
            .filter(|p| p.is_file())
        {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
