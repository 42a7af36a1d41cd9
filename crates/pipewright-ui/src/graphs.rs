//! The graph of a run's file (`pipewright graph --format json`), lowered once per file
//! content: 10,000 runs of a handful of files lower a handful of times.

use pipewright_dialect::{Context, Source, Verb};
use pipewright_syntax::SourceMap;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A lowered file: its graph document and, per workflow, what run views need of it.
pub(crate) struct FileGraph {
    pub dialect: &'static str,
    /// The graph document as sent: serialized once, not at every request for a run's detail
    /// (5,000 steps are 2 MB of JSON).
    pub graph_text: String,
    pub workflows: HashMap<String, WorkflowKeys>,
}

/// The step keys of one workflow of a graph.
#[derive(Default)]
pub(crate) struct WorkflowKeys {
    /// Its top-level steps' keys, in order (the steps "steps done/total" counts).
    pub top: Vec<String>,
    /// Every node with a key, at every depth: (key, kind).
    pub nodes: Vec<(String, String)>,
    /// The key of its first step (what a state machine's first turn runs).
    pub entry: Option<String>,
}

type Stamp = (SystemTime, u64);
/// A file's graph as of its stamp (`None`: it did not lower).
type Cached = (Stamp, Option<Arc<FileGraph>>);

#[derive(Default)]
pub(crate) struct Graphs {
    cache: Mutex<HashMap<PathBuf, Cached>>,
    /// Where run files given as relative paths are looked up first.
    root: PathBuf,
}

impl Graphs {
    pub(crate) fn new(root: PathBuf) -> Graphs {
        Graphs {
            cache: Mutex::default(),
            root,
        }
    }

    /// The graph of the file a run names (as given to `pipewright run`), `None` when the file
    /// is gone or does not lower.
    pub(crate) fn of(&self, file: &str) -> Option<Arc<FileGraph>> {
        let path = self.resolve(file)?;
        let meta = std::fs::metadata(&path).ok()?;
        let stamp = (meta.modified().ok()?, meta.len());
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((s, g)) = cache.get(&path) {
                if *s == stamp {
                    return g.clone();
                }
            }
        }
        let g = lower(&path).map(Arc::new);
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path, (stamp, g.clone()));
        g
    }

    fn resolve(&self, file: &str) -> Option<PathBuf> {
        // A MEOW file may name a workflow after `#`.
        let file = file.split('#').next().unwrap_or(file);
        let p = Path::new(file);
        let candidates = if p.is_absolute() {
            vec![p.to_path_buf()]
        } else {
            let cwd = std::env::current_dir().unwrap_or_default();
            vec![self.root.join(p), cwd.join(p)]
        };
        candidates.into_iter().find(|c| c.is_file())
    }
}

fn lower(path: &Path) -> Option<FileGraph> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut sources = SourceMap::new();
    let id = sources.add(path.display().to_string(), text.as_str());
    let dialect = pipewright_registry::detect(&Source::new(path, &text))?;
    if !dialect.supports(Verb::Graph) {
        return None;
    }
    let mut diags = Vec::new();
    let (project, _) =
        pipewright_dialect::project::load(None, Some(path), &mut sources, &mut diags).ok()?;
    let ctx = Context {
        project,
        ..Context::default()
    };
    let lowered = dialect.lower(path, id, &text, &mut sources, &ctx).ok()?;
    let graph = pipewright_ir::export::json::json(
        &lowered.program,
        &sources,
        &pipewright_ir::export::ExportOptions::default(),
    );
    let workflows = graph["workflows"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .filter_map(|w| Some((w["name"].as_str()?.to_string(), keys_of(&w["body"]))))
                .collect()
        })
        .unwrap_or_default();
    Some(FileGraph {
        dialect: dialect.name(),
        graph_text: graph.to_string(),
        workflows,
    })
}

fn keys_of(body: &Json) -> WorkflowKeys {
    fn walk(region: &Json, nodes: &mut Vec<(String, String)>) {
        for n in region["nodes"].as_array().into_iter().flatten() {
            if let Some(k) = n["step_key"].as_str() {
                nodes.push((k.to_string(), n["kind"].as_str().unwrap_or("").to_string()));
            }
            for r in n["regions"].as_array().into_iter().flatten() {
                walk(&r["region"], nodes);
            }
        }
    }
    let node_key = |id: &str| {
        body["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|n| n["id"] == id)
            .and_then(|n| n["step_key"].as_str())
            .map(str::to_string)
    };
    let mut nodes = Vec::new();
    walk(body, &mut nodes);
    WorkflowKeys {
        top: body["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n["step_key"].as_str().map(str::to_string))
            .collect(),
        nodes,
        entry: body["entry"].as_str().and_then(node_key),
    }
}
