//! A live line per running top-level step (indicatif), only on a terminal.
//!
//! A top-level step gets a spinner line `⠋ step 1 for_each over ctx.xs [2s]` when it starts;
//! its nested steps update the line (`… 3 inner step(s) done`), and when it ends the line is
//! finished in place: `✓` completed, `✗` failed, `■` cancelled, `↺` replayed from the store.

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
        Some(Progress::with_target(ProgressDrawTarget::stderr()))
    }

    /// Draws to any target (tests use an in-memory terminal through
    /// [`ProgressDrawTarget::term_like`]).
    pub fn with_target(target: ProgressDrawTarget) -> Progress {
        Progress {
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
        }
    }

    fn line(&self, e: &Event) -> ProgressBar {
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_message(describe(e));
        pb
    }
}

fn describe(e: &Event) -> String {
    if e.summary.is_empty() {
        format!("step {} {}", e.key, e.step_kind)
    } else {
        format!("step {} {} {}", e.key, e.step_kind, e.summary)
    }
}

impl EventSink for Progress {
    fn event(&self, e: &Event) {
        let mut bars = self.bars.lock().unwrap_or_else(|p| p.into_inner());
        let top = e.key.split('.').next().unwrap_or("").to_string();
        let is_top = !e.key.contains('.');
        match e.kind {
            EventKind::Started if is_top => {
                let pb = self.line(e);
                pb.enable_steady_tick(Duration::from_millis(120));
                bars.insert(top, (pb, 0));
            }
            EventKind::Replayed if is_top => {
                self.line(e)
                    .finish_with_message(format!("↺ {} (replayed)", describe(e)));
            }
            EventKind::Completed | EventKind::Failed | EventKind::Cancelled if is_top => {
                if let Some((pb, _)) = bars.remove(&top) {
                    let mark = match e.kind {
                        EventKind::Failed => "✗",
                        EventKind::Cancelled => "■",
                        _ => "✓",
                    };
                    pb.finish_with_message(format!("{mark} {}", describe(e)));
                }
            }
            EventKind::Completed | EventKind::Replayed => {
                if let Some((pb, n)) = bars.get_mut(&top) {
                    *n += 1;
                    pb.set_message(format!("step {top} … {n} inner step(s) done"));
                }
            }
            _ => {}
        }
    }
}

impl Drop for Progress {
    /// Lines of steps that never reported an end (a run torn down early) stop spinning.
    fn drop(&mut self) {
        let bars = self.bars.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, (pb, _)) in bars.drain() {
            pb.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::TermLike;
    use std::sync::Arc;
    use std::time::Instant;

    /// An in-memory terminal: a grid of rows with a cursor, auto-wrapping at the width like a
    /// real terminal (indicatif relies on that to end a line).
    #[derive(Debug, Clone)]
    struct Screen {
        width: usize,
        state: Arc<Mutex<Grid>>,
    }

    #[derive(Debug, Default)]
    struct Grid {
        rows: Vec<Vec<char>>,
        row: usize,
        col: usize,
    }

    impl Grid {
        fn row_mut(&mut self) -> &mut Vec<char> {
            while self.rows.len() <= self.row {
                self.rows.push(Vec::new());
            }
            &mut self.rows[self.row]
        }
    }

    impl Screen {
        fn new(width: usize) -> Screen {
            Screen {
                width,
                state: Arc::new(Mutex::new(Grid::default())),
            }
        }

        fn grid(&self) -> std::sync::MutexGuard<'_, Grid> {
            self.state.lock().unwrap_or_else(|p| p.into_inner())
        }

        /// The visible rows, trailing blanks trimmed, empty rows dropped.
        fn lines(&self) -> Vec<String> {
            self.grid()
                .rows
                .iter()
                .map(|r| r.iter().collect::<String>().trim_end().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        }

        /// Waits (up to 5 s: drawing is rate-limited and ticks on a thread) until `ok` holds.
        fn wait_for(&self, what: &str, ok: impl Fn(&[String]) -> bool) -> Vec<String> {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let lines = self.lines();
                if ok(&lines) {
                    return lines;
                }
                assert!(Instant::now() < deadline, "{what}; the screen: {lines:#?}");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            u16::try_from(self.width).unwrap_or(u16::MAX)
        }
        fn height(&self) -> u16 {
            40
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            let mut g = self.grid();
            g.row = g.row.saturating_sub(n);
            g.col = g.col.min(self.width.saturating_sub(1));
            Ok(())
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            let mut g = self.grid();
            g.row += n;
            g.col = g.col.min(self.width.saturating_sub(1));
            Ok(())
        }
        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            let mut g = self.grid();
            g.col = (g.col + n).min(self.width.saturating_sub(1));
            Ok(())
        }
        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            let mut g = self.grid();
            g.col = g.col.saturating_sub(n);
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)?;
            let mut g = self.grid();
            g.row += 1;
            g.col = 0;
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            let mut g = self.grid();
            for ch in s.chars() {
                match ch {
                    '\r' => g.col = 0,
                    '\n' => {
                        g.row += 1;
                        g.col = 0;
                    }
                    _ => {
                        if g.col >= self.width {
                            g.row += 1;
                            g.col = 0;
                        }
                        let col = g.col;
                        let row = g.row_mut();
                        if row.len() <= col {
                            row.resize(col + 1, ' ');
                        }
                        row[col] = ch;
                        g.col += 1;
                    }
                }
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            let mut g = self.grid();
            g.row_mut().clear();
            g.col = 0;
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn event(kind: EventKind, key: &str, step_kind: &'static str, summary: &str) -> Event {
        Event {
            kind,
            key: key.into(),
            step_kind,
            workflow: "p".into(),
            at_ms: 0.0,
            elapsed_ms: None,
            error: None,
            summary: summary.into(),
            usage: None,
            given: None,
        }
    }

    fn progress(screen: &Screen) -> Progress {
        Progress::with_target(ProgressDrawTarget::term_like_with_hz(
            Box::new(screen.clone()),
            100,
        ))
    }

    fn line_with<'a>(lines: &'a [String], needle: &str) -> Option<&'a String> {
        lines.iter().find(|l| l.contains(needle))
    }

    #[test]
    fn a_started_step_gets_a_live_line_that_finishes_when_it_completes() {
        let screen = Screen::new(100);
        let p = progress(&screen);
        p.event(&event(EventKind::Started, "0", "shell", "sleep 1"));
        let lines = screen.wait_for("the running step's line appears", |l| {
            line_with(l, "step 0 shell sleep 1").is_some()
        });
        let running = line_with(&lines, "step 0 shell sleep 1").cloned();
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(
            running.as_deref().is_some_and(|l| !l.contains('✓')),
            "{lines:#?}"
        );
        assert!(
            running.as_deref().is_some_and(|l| l.ends_with("s]")),
            "elapsed time: {lines:#?}"
        );

        p.event(&event(EventKind::Completed, "0", "shell", "sleep 1"));
        let lines = screen.wait_for("the line is marked done", |l| {
            line_with(l, "✓ step 0 shell sleep 1").is_some()
        });
        assert_eq!(
            lines.len(),
            1,
            "finished in place, not a second line: {lines:#?}"
        );
        // A finished line stays put: no spinner redraws it.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(screen.lines(), lines);
    }

    #[test]
    fn nested_steps_update_their_top_level_line_and_ends_are_marked() {
        let screen = Screen::new(100);
        let p = progress(&screen);
        p.event(&event(EventKind::Started, "0", "transform", "1 + 1"));
        p.event(&event(EventKind::Completed, "0", "transform", "1 + 1"));
        p.event(&event(EventKind::Started, "1", "for_each", "over ctx.xs"));
        for k in 0..3 {
            let key = format!("1.for_each.{k}");
            p.event(&event(EventKind::Started, &key, "shell", "echo"));
            p.event(&event(EventKind::Completed, &key, "shell", "echo"));
        }
        let lines = screen.wait_for("the fan-out line counts its items", |l| {
            line_with(l, "step 1 … 3 inner step(s) done").is_some()
        });
        assert!(
            line_with(&lines, "✓ step 0 transform 1 + 1").is_some(),
            "{lines:#?}"
        );
        assert!(
            lines.iter().all(|l| !l.contains("1.for_each")),
            "nested steps get no line of their own: {lines:#?}"
        );
        p.event(&event(EventKind::Failed, "1", "for_each", "over ctx.xs"));
        p.event(&event(EventKind::Replayed, "2", "transform", "pipe"));
        p.event(&event(EventKind::Started, "3", "shell", "sleep 9"));
        p.event(&event(EventKind::Cancelled, "3", "shell", "sleep 9"));
        let lines = screen.wait_for("every end is marked", |l| {
            line_with(l, "■ step 3 shell sleep 9").is_some()
        });
        assert!(
            line_with(&lines, "✗ step 1 for_each over ctx.xs").is_some(),
            "{lines:#?}"
        );
        assert!(
            line_with(&lines, "↺ step 2 transform pipe (replayed)").is_some(),
            "{lines:#?}"
        );
        assert_eq!(lines.len(), 4, "{lines:#?}");
    }

    #[test]
    fn a_hidden_target_draws_nothing() {
        let p = Progress::with_target(ProgressDrawTarget::hidden());
        p.event(&event(EventKind::Started, "0", "shell", "sleep 1"));
        p.event(&event(EventKind::Completed, "0", "shell", "sleep 1"));
        assert!(p.multi.is_hidden());
    }
}
