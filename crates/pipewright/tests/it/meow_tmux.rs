//! MEOW agents in real tmux sessions (`--backend command`) through a test adapter whose agent is
//! testdata/meow/tmux/fake-agent.sh: it reads the injected prompt and answers with
//! `pipewright meow done` over the run's socket. These tests are slow: they run only with
//! `PIPEWRIGHT_SLOW_TESTS=1` (as .ci/run runs them), and then need tmux and fail when it is
//! missing (.ci/run installs it).

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A private tmux server for one test, killed when the test ends.
pub(crate) struct Tmux(pub(crate) String);

impl Tmux {
    /// `None` when the slow tests are off (`skip_slow_test`): the test then returns.
    pub(crate) fn new(name: &str) -> Option<Tmux> {
        if skip_slow_test() {
            return None;
        }
        let ok = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "these tests need tmux (apt-get install tmux)");
        Some(Tmux(format!("pwtest-{}-{name}", std::process::id())))
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-L").arg(&self.0);
        c
    }

    pub(crate) fn sessions(&self) -> Vec<String> {
        self.cmd()
            .args(["list-sessions", "-F", "#{session_name}"])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
    }
}

/// The fixtures and the `fake` adapter in a fresh directory.
fn setup() -> tempfile::TempDir {
    let d = tempdir();
    setup_in(d.path());
    d
}

/// The fixtures and the `fake` adapter in `dir`.
pub(crate) fn setup_in(dir: &Path) {
    for e in std::fs::read_dir(testdata("meow").join("tmux"))
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
    {
        copy_into(&e.path(), dir);
    }
    let adapter = dir.join(".meow/adapters/fake");
    std::fs::create_dir_all(&adapter).unwrap_or_else(|e| panic!("{e}"));
    let toml = format!(
        "[adapter]\nname = \"fake\"\n[spawn]\ncommand = \"bash {0} --session-id {{{{session_id}}}}\"\nresume_command = \"bash {0} --resume {{{{session_id}}}}\"\nstartup_delay = \"300ms\"\n[environment]\nPW = \"{1}\"\nFAKE_LOG = \"{2}\"\n[prompt_injection]\nmethod = \"literal\"\npost_keys = [\"Enter\"]\n[graceful_stop]\nkeys = [\"C-c\"]\nwait = \"100ms\"\n",
        dir.join("fake-agent.sh").display(),
        env!("CARGO_BIN_EXE_pipewright"),
        dir.join("fake.log").display(),
    );
    std::fs::write(adapter.join("adapter.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
}

fn run(t: &Tmux, dir: &Path, args: &[&str]) -> Output {
    bin()
        .current_dir(dir)
        .env("PIPEWRIGHT_TMUX_SOCKET", &t.0)
        .args(["run", "--backend", "command", "--format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `--var pw=<this pipewright>`, for fixtures whose shell steps run `pipewright meow`.
fn pw() -> String {
    format!("pw={}", env!("CARGO_BIN_EXE_pipewright"))
}

/// `run` in the background.
fn start(t: &Tmux, dir: &Path, args: &[&str]) -> std::process::Child {
    bin()
        .current_dir(dir)
        .env("PIPEWRIGHT_TMUX_SOCKET", &t.0)
        .args(["run", "--backend", "command", "--format", "json"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or(Value::Null)
}

pub(crate) fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("fake.log")).unwrap_or_default()
}

/// What the fake agent logged after `prefix` on each line that starts with it.
fn logged<'a>(log: &'a str, prefix: &str) -> Vec<&'a str> {
    log.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
}

#[test]
fn tmux_agents_report_outputs_a_refused_answer_is_fixed_and_kill_ends_the_session() {
    let Some(t) = Tmux::new("agents") else {
        return;
    };
    let d = setup();
    let o = run(&t, d.path(), &["agents.meow.toml"]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), log(d.path()));
    assert_eq!(v["stores"]["plan"]["title"], "Plan");
    assert_eq!(v["stores"]["plan"]["size"], 3, "typed as declared");
    assert_eq!(v["stores"]["fix"]["file"], "made.txt");
    assert_eq!(
        v["stores"]["spawn"]["workdir"]
            .as_str()
            .map(|w| w.ends_with("/w1")),
        Some(true)
    );
    let l = log(d.path());
    // The prompt carried the expected-outputs block; the first answer was refused.
    assert!(l.contains("## Expected Outputs"), "{l}");
    assert!(l.contains("- size (number, required)"), "{l}");
    assert!(l.contains("refused"), "{l}");
    assert!(l.contains("output validation failed"), "{l}");
    // fire_forget reached the agent; kill stopped its session.
    assert!(l.contains("just a nudge"), "{l}");
    assert!(t.sessions().is_empty(), "{:?}", t.sessions());
}

#[test]
fn an_accepted_done_pauses_the_agent_with_its_adapters_pre_keys() {
    let Some(t) = Tmux::new("pause") else {
        return;
    };
    let d = setup();
    // The fake adapter, with keys typed before each prompt and after each accepted answer.
    let fake = d.path().join(".meow/adapters/fake/adapter.toml");
    let toml = std::fs::read_to_string(&fake).unwrap_or_else(|e| panic!("{e}"));
    let dir = d.path().join(".meow/adapters/pausing");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let pausing = toml
        .replace("name = \"fake\"", "name = \"pausing\"")
        .replace(
            "[prompt_injection]\n",
            "[prompt_injection]\npre_keys = [\"PAUSED\", \"Enter\"]\n",
        );
    std::fs::write(dir.join("adapter.toml"), pausing).unwrap_or_else(|e| panic!("{e}"));
    let o = run(&t, d.path(), &["pause.meow.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), log(d.path()));
    // The prompt came after the keys; then, once `meow done` was accepted, the keys alone
    // (which the fake agent took for a prompt, and answered with a refused `meow done`).
    let l = log(d.path());
    assert!(l.contains("PAUSED\nDo it."), "{l}");
    assert!(l.contains("---\nPAUSED\n---\n"), "{l}\n{}", text(&o));
}

#[test]
fn a_foreach_of_tmux_agents_runs_at_most_max_concurrent_at_once() {
    let Some(t) = Tmux::new("many") else {
        return;
    };
    let d = setup();
    let mut child = start(&t, d.path(), &["many.meow.toml"]);
    let mut most = 0;
    while child.try_wait().ok().flatten().is_none() {
        most = most.max(t.sessions().len());
        std::thread::sleep(Duration::from_millis(30));
    }
    let o = finish(child);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), log(d.path()));
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        assert_eq!(v["stores"][format!("each.{i}.work")]["who"], *name);
    }
    assert_eq!(most, 2, "two agents at a time");
    assert_eq!(log(d.path()).matches("started").count(), 4);
}

#[test]
fn a_tmux_agent_that_never_answers_fails_at_its_timeout() {
    let Some(t) = Tmux::new("hang") else {
        return;
    };
    let d = setup();
    let o = run(&t, d.path(), &["hang.meow.toml"]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("step `stuck` failed: step timed out after 1"),
        "{msg}"
    );
    // The run ended: its agents were stopped.
    assert!(t.sessions().is_empty(), "{:?}", t.sessions());
}

#[test]
fn resume_after_kill_9_reattaches_to_the_live_agent_and_finishes() {
    let Some(t) = Tmux::new("resume") else {
        return;
    };
    let d = setup();
    let mut child = start(&t, d.path(), &["slow.meow.toml", "--var", &pw()]);
    wait_for(
        Duration::from_secs(20),
        "the prompt to reach the agent",
        || log(d.path()).contains("Take your time").then_some(()),
    );
    child.kill().unwrap_or_else(|e| panic!("{e}"));
    let _ = child.wait();
    assert_eq!(t.sessions().len(), 1, "the agent outlives the orchestrator");
    let o = run_in(d.path(), &["runs", "--format", "json"]);
    let runs: Value = serde_json::from_str(&stdout(&o)).unwrap_or(Value::Null);
    let id = runs[0]["run_id"].as_str().unwrap_or("").to_string();
    let o = run(&t, d.path(), &["--resume", &id]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), log(d.path()));
    assert_eq!(v["stores"]["after"]["line"], "5");
    // The session id recorded at the first spawn survived in the run store.
    let sid = v["stores"]["sid"]["session_id"].as_str().unwrap_or("");
    assert!(!sid.is_empty(), "{}", text(&o));
    assert!(
        log(d.path()).contains(&format!("sid {sid}\n")),
        "{}",
        log(d.path())
    );
    // Re-attached: the agent that was working answered the resumed run (its prompt was typed
    // again into the same session); no second agent started.
    let l = log(d.path());
    assert_eq!(l.matches("started").count(), 1, "{l}");
    assert!(
        t.sessions().is_empty(),
        "the finished run stopped its agent"
    );
}

#[test]
fn a_tmux_agent_whose_session_ends_fails_its_step_instead_of_hanging() {
    let Some(t) = Tmux::new("dies") else {
        return;
    };
    let d = setup();
    let o = run(&t, d.path(), &["dies.meow.toml"]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("step `gone` failed: the agent's session ended before the agent reported"),
        "{msg}"
    );
}

#[test]
fn prime_repeats_the_prompt_and_why_done_was_refused_but_not_for_an_interactive_step() {
    let Some(t) = Tmux::new("prime") else {
        return;
    };
    let d = setup();
    let o = run(&t, d.path(), &["prime.meow.toml", "--var", &pw()]);
    let v = json(&o);
    let l = log(d.path());
    assert_eq!(o.status.code(), Some(0), "{}\n{l}", text(&o));
    let primes: Vec<Value> = logged(&l, "prime: ")
        .iter()
        .map(|p| serde_json::from_str(p).unwrap_or(Value::Null))
        .collect();
    assert_eq!(primes.len(), 2, "{l}");
    // The autonomous step: its prompt as typed, expected outputs included.
    assert_eq!(primes[0]["step"], "auto");
    assert_eq!(primes[0]["mode"], "autonomous");
    let p = primes[0]["prompt"].as_str().unwrap_or("");
    assert!(p.starts_with("Count the files.\nFAKE-PRIME"), "{p}");
    assert!(p.contains("- n (number, required): how many"), "{p}");
    // After the refused `done`, the same prompt and why it was refused.
    let after = l.split("prime-refused: ").nth(1).unwrap_or("");
    assert!(after.starts_with("Count the files."), "{l}");
    assert!(
        after.contains("Your last `pipewright meow done` was refused: output validation failed: output `n` (number) `many`"),
        "{l}"
    );
    // The same for a Claude Code Stop hook: blocking the stop, the prompt as the reason.
    let hook: Value =
        serde_json::from_str(logged(&l, "prime-hook: ").first().unwrap_or(&"")).unwrap_or_default();
    assert_eq!(hook["decision"], "block", "{l}");
    assert!(
        hook["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("Count the files.") && r.contains("was refused")),
        "{l}"
    );
    // The interactive step: nothing to repeat, yet it waited for the agent's `done`.
    assert_eq!(primes[1]["step"], "talk");
    assert_eq!(primes[1]["mode"], "interactive");
    assert_eq!(primes[1]["prompt"], "");
    assert_eq!(v["stores"]["talk"]["said"], "hi", "{}", text(&o));
    assert_eq!(v["stores"]["auto"]["n"], 3);
    // `--notes` is kept with the step in the run store.
    let id = v["run_id"].as_str().unwrap_or("");
    let shown = run_in(d.path(), &["runs", "show", id]);
    let state: Value = serde_json::from_str(&stdout(&shown)).unwrap_or(Value::Null);
    assert_eq!(
        state["completed"]["auto"]["notes"],
        "counted by hand",
        "{}",
        text(&shown)
    );
}

#[test]
fn a_checkpointed_session_id_resumes_the_agent_it_was_read_from() {
    let Some(t) = Tmux::new("session") else {
        return;
    };
    let d = setup();
    let o = run(&t, d.path(), &["prime.meow.toml", "--var", &pw()]);
    let v = json(&o);
    let l = log(d.path());
    assert_eq!(o.status.code(), Some(0), "{}\n{l}", text(&o));
    // The adapter's `{{session_id}}` got a fresh id; the spawn and `meow session-id` name it.
    let sids = logged(&l, "sid ");
    assert_eq!(sids.len(), 1, "{l}");
    let sid = sids[0];
    assert!(
        sid.len() == 36 && sid.matches('-').count() == 4,
        "a UUID: {sid}"
    );
    assert_eq!(v["stores"]["spawn"]["session_id"], sid);
    assert_eq!(v["stores"]["checkpoint"]["session_id"], sid);
    // The second spawn resumed that session, which is still the agent's.
    assert_eq!(logged(&l, "resumed "), [sid], "{l}");
    assert_eq!(v["stores"]["again"]["session_id"], sid);
    assert_eq!(v["stores"]["after"]["session_id"], sid);
}

#[test]
fn an_agent_started_again_under_an_unknown_session_forgets_the_old_id() {
    let Some(t) = Tmux::new("forget") else {
        return;
    };
    let d = setup();
    let fake = d.path().join(".meow/adapters/fake/adapter.toml");
    let plain = std::fs::read_to_string(&fake)
        .unwrap_or_default()
        .replace(" --session-id {{session_id}}", "")
        .replace("name = \"fake\"", "name = \"plain\"");
    let dir = d.path().join(".meow/adapters/plain");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("adapter.toml"), plain).unwrap_or_else(|e| panic!("{e}"));
    let o = run(&t, d.path(), &["forget.meow.toml", "--var", &pw()]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), log(d.path()));
    assert!(
        v["stores"]["first"]["session_id"]
            .as_str()
            .is_some_and(|s| s.len() == 36),
        "{}",
        text(&o)
    );
    assert!(
        v["stores"]["again"].get("session_id").is_none(),
        "{}",
        text(&o)
    );
    let err = v["stores"]["second"]["error"].as_str().unwrap_or("");
    assert!(
        err.contains("the session id of agent `w` is not known: its adapter's command has no `{{session_id}}`"),
        "{err}"
    );
}

/// Runs `recovery.meow.toml#<workflow>`, whose `work` step fails and whose `.retry` recovery
/// gives the work to a fresh agent: the run ends ok, `work` recovered and `after` done.
/// Returns what the recovery's `seen` step printed of `_failed_step` and the fake agent's log.
fn recovered(t: &Tmux, workflow: &str) -> (String, String) {
    let d = setup();
    let file = format!("recovery.meow.toml#{workflow}");
    let o = run(t, d.path(), &[&file]);
    let v = json(&o);
    let l = log(d.path());
    assert_eq!(o.status.code(), Some(0), "{}\n{l}", text(&o));
    assert_eq!(v["steps"]["work"], "recovered", "{}", text(&o));
    assert_eq!(v["steps"]["work.on_error.again"], "done", "{}", text(&o));
    assert_eq!(v["steps"]["after"], "done", "{}", text(&o));
    assert_eq!(v["stores"]["after"]["line"], "after");
    // The failed step's prompt went to the fresh agent, which did the work.
    let agent = if workflow == "ghost" { "ghost" } else { "w" };
    assert_eq!(
        v["stores"]["work.on_error.again"]["who"],
        format!("{agent}-2"),
        "{}\n{l}",
        text(&o)
    );
    // The run stopped its agents.
    assert!(t.sessions().is_empty(), "{:?}", t.sessions());
    let seen = v["stores"]["work.on_error.seen"]["line"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (seen, l)
}

const WORK: &str = "Do the work.\nFAKE: --output who=$MEOW_AGENT";

#[test]
fn an_agent_that_dies_mid_step_is_recovered_as_agent_crashed_by_a_fresh_agent() {
    let Some(t) = Tmux::new("crashed") else {
        return;
    };
    let (seen, l) = recovered(&t, "main");
    assert_eq!(
        seen,
        "work|agent_crashed|w|Do the work.\nFAKE-ONLY-FOR: w\nFAKE-EXIT\nFAKE: --output who=$MEOW_AGENT",
        "{l}"
    );
    // The first agent quit on the prompt; a second one started for the retry.
    assert_eq!(l.matches("started").count(), 2, "{l}");
}

#[test]
fn an_agent_step_past_its_timeout_is_recovered_as_timeout() {
    let Some(t) = Tmux::new("timeout") else {
        return;
    };
    let (seen, l) = recovered(&t, "slow");
    assert_eq!(
        seen,
        "work|timeout|w|Do the work.\nFAKE-ONLY-FOR: w\nFAKE-HANG\nFAKE: --output who=$MEOW_AGENT",
        "{l}"
    );
}

#[test]
fn an_agent_step_without_a_live_session_is_recovered_as_agent_not_found() {
    let Some(t) = Tmux::new("notfound") else {
        return;
    };
    // Spawned, then its session killed before the step typed the prompt.
    let (seen, l) = recovered(&t, "gone");
    assert_eq!(seen, format!("work|agent_not_found|w|{WORK}"), "{l}");
    // The killed agent never saw the prompt: only the retry's agent did.
    assert_eq!(l.matches("started").count(), 2, "{l}");
    assert_eq!(l.matches("Do the work.").count(), 1, "{l}");
    // Stopped by a kill step.
    let (seen, l) = recovered(&t, "killed");
    assert_eq!(seen, format!("work|agent_not_found|w|{WORK}"), "{l}");
    // Never spawned at all.
    let (seen, l) = recovered(&t, "ghost");
    assert_eq!(seen, format!("work|agent_not_found|ghost|{WORK}"), "{l}");
}

#[test]
fn an_agent_cannot_report_done_for_another_agents_step() {
    let Some(t) = Tmux::new("assigned") else {
        return;
    };
    let d = setup();
    let o = run(&t, d.path(), &["assigned.meow.toml", "--var", &pw()]);
    let v = json(&o);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", text(&o), log(d.path()));
    // `w`'s report was refused, in the reference's words; `v`'s own was taken.
    let said = v["stores"]["intruder"]["said"].as_str().unwrap_or("");
    assert!(
        said.contains("step `work2` is not assigned to agent `w`"),
        "{said}"
    );
    assert!(!said.contains("accepted"), "{said}");
    assert_eq!(v["stores"]["work2"]["m"], "own", "{}", text(&o));
}
