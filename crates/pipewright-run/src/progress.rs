//! A live line per running top-level step (indicatif), only on a terminal.

use crate::store::{Event, EventKind, EventSink};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

pub struct Progress {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, (ProgressBar, u64)>>,
}

impl Progress {
    /// `None` when stderr is not a terminal: progress lines would only pollute logs.
    pub fn for_terminal() -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Progress {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            bars: Mutex::new(HashMap::new()),
        })
    }
}

impl EventSink for Progress {
    fn event(&self, e: &Event) {
        let mut bars = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        let top = e.key.split('.').next().unwrap_or("").to_string();
        let is_top = !e.key.contains('.');
        match e.kind {
            EventKind::Started if is_top => {
                let pb = self.multi.add(ProgressBar::new_spinner());
                pb.set_style(
                    ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                pb.enable_steady_tick(Duration::from_millis(120));
                pb.set_message(format!("step {} {} {}", e.key, e.step_kind, e.summary));
                bars.insert(top, (pb, 0));
            }
            EventKind::Completed | EventKind::Failed | EventKind::Replayed if is_top => {
                if let Some((pb, _)) = bars.remove(&top) {
                    let mark = if e.kind == EventKind::Failed {
                        "✗"
                    } else {
                        "✓"
                    };
                    pb.finish_with_message(format!(
                        "{mark} step {} {} {}",
                        e.key, e.step_kind, e.summary
                    ));
                }
            }
            EventKind::Completed => {
                if let Some((pb, n)) = bars.get_mut(&top) {
                    *n += 1;
                    pb.set_message(format!("step {top} … {n} inner step(s) done"));
                }
            }
            _ => {}
        }
    }
}
