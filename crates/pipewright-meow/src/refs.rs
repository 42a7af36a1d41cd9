//! Template references (notes §3): `.name` in this file, `path#workflow` and bare
//! `lib/name#workflow` in the project's `.meow/workflows`, and the project root they resolve
//! against.

use crate::ast::Module;
use crate::tree;
use pipewright_syntax::{FileId, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a reference leads.
pub enum Target {
    /// A workflow of the referencing file.
    Local(String),
    /// A workflow of another file, loaded.
    File {
        module: Arc<Module>,
        workflow: String,
        /// The file, for the references its own steps make.
        path: PathBuf,
    },
    /// Computed at run time (`{{…}}`): not followed.
    Dynamic,
}

pub enum Problem {
    /// `.name` that is no workflow of this file.
    UnknownLocal { name: String },
    /// No file at any of these paths.
    FileNotFound { searched: Vec<PathBuf> },
    /// The file exists but has no such workflow.
    WorkflowNotInFile {
        path: PathBuf,
        workflow: String,
        available: Vec<String>,
    },
}

/// Loaded template files, shared by every reference of one check.
#[derive(Default)]
pub struct Library {
    files: HashMap<PathBuf, Option<Arc<Module>>>,
    roots: HashMap<PathBuf, PathBuf>,
}

impl Library {
    /// [`project_root`], remembered per directory.
    pub fn root(&mut self, dir: &Path) -> PathBuf {
        if let Some(r) = self.roots.get(dir) {
            return r.clone();
        }
        let r = project_root(dir);
        self.roots.insert(dir.to_path_buf(), r.clone());
        r
    }

    fn load(&mut self, path: &Path) -> Option<Arc<Module>> {
        if let Some(m) = self.files.get(path) {
            return m.clone();
        }
        let module = std::fs::read_to_string(path).ok().and_then(|text| {
            let file = FileId(u32::MAX);
            let root = tree::parse(file, &text).ok()?;
            let mut sink = Vec::new();
            crate::ast::build(&root, Span::new(file, 0..0), &mut sink).map(Arc::new)
        });
        self.files.insert(path.to_path_buf(), module.clone());
        module
    }

    /// Resolves `reference` written in the file at `from` (whose module is `local`).
    pub fn resolve(
        &mut self,
        reference: &str,
        from: &Path,
        local: &Module,
    ) -> Result<Target, Problem> {
        if reference.contains("{{") {
            return Ok(Target::Dynamic);
        }
        let (path_part, wf) = match reference.split_once('#') {
            Some((p, w)) => (p, Some(w)),
            None => (reference, None),
        };
        if path_part.is_empty() {
            // `#name`: a workflow of this file, as `.name`.
            let name = wf.unwrap_or("main");
            return if local.workflow(name).is_some() {
                Ok(Target::Local(name.to_string()))
            } else {
                Err(Problem::UnknownLocal {
                    name: name.to_string(),
                })
            };
        }
        let dir = from.parent().unwrap_or(Path::new("."));
        let root = self.root(dir);
        let is_local = reference.starts_with('.')
            && !reference.contains('/')
            && !reference.contains('#')
            && !reference.ends_with(".toml");
        if is_local {
            let name = &reference[1..];
            return if local.workflow(name).is_some() {
                Ok(Target::Local(name.to_string()))
            } else {
                Err(Problem::UnknownLocal {
                    name: name.to_string(),
                })
            };
        }
        let explicit = Path::new(path_part).is_absolute()
            || path_part.starts_with('.')
            || path_part.ends_with(".toml");
        let bases: Vec<PathBuf> = if Path::new(path_part).is_absolute() {
            vec![PathBuf::new()]
        } else if path_part.starts_with("./") || path_part.starts_with("../") {
            // The reference resolves these against the project root; authors mean the file's
            // directory. Either is accepted.
            vec![dir.to_path_buf(), root.clone()]
        } else if explicit {
            vec![root.clone()]
        } else {
            vec![root.join(".meow").join("workflows")]
        };
        let mut searched = Vec::new();
        for base in bases {
            let given = base.join(path_part);
            let candidates = [given.clone(), with_suffix(&given)];
            for c in candidates {
                if searched.contains(&c) {
                    continue;
                }
                searched.push(c.clone());
                if !c.is_file() {
                    continue;
                }
                let workflow = wf.unwrap_or("main").to_string();
                let Some(module) = self.load(&c) else {
                    // An unreadable or broken file is its own check's problem.
                    return Ok(Target::Dynamic);
                };
                if module.workflow(&workflow).is_none() {
                    return Err(Problem::WorkflowNotInFile {
                        path: c,
                        workflow,
                        available: module.workflows.iter().map(|w| w.name.clone()).collect(),
                    });
                }
                let same_file = std::fs::canonicalize(&c).ok() == std::fs::canonicalize(from).ok();
                if same_file {
                    return Ok(Target::Local(workflow));
                }
                return Ok(Target::File {
                    module,
                    workflow,
                    path: c,
                });
            }
        }
        Err(Problem::FileNotFound { searched })
    }
}

fn with_suffix(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_os_string();
    s.push(".meow.toml");
    PathBuf::from(s)
}

/// The nearest directory at or above `dir` that holds a `.meow` directory (MEOW's project
/// layout); `dir` itself when there is none.
fn project_root(dir: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    for a in abs.ancestors() {
        if a.file_name().is_some_and(|n| n == ".meow") {
            continue;
        }
        if a.join(".meow").is_dir() {
            return a.to_path_buf();
        }
    }
    abs
}
