use crate::run::common::*;
use pipewright_runtime::backend::command::{CommandBackend, Profile};
use pipewright_runtime::backend::script::ScriptBackend;
use std::sync::Arc;
use std::time::Duration;

const REVIEW: &str = "schema: R\nfields:\n  passed: {type: bool, required: true}\n---\npipeline: p\nsteps:\n  - agent: {prompt: \"Review {ctx.doc}\", schema: R, output: r}\n  - agent: {prompt: \"Summarise\"}\n";

#[test]
fn script_backend_matches_step_and_prompt_with_sequences() {
    let script = "replies:\n  - contains: Review\n    replies: [\"not json\", {passed: false}]\n  - step: \"1\"\n    reply: summary text\n";
    let backend =
        Arc::new(ScriptBackend::from_text("s.yaml", script).unwrap_or_else(|e| panic!("{e}")));
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = backend.clone();
    o.input = serde_json::json!({"doc": "a"});
    let v = run_json(REVIEW, o);
    assert_eq!(v["error"]["code"], "PW0802", "first reply is not JSON: {v}");
    let mut o = opts(d.path());
    o.backend = backend;
    o.input = serde_json::json!({"doc": "a"});
    let v = run_json(REVIEW, o);
    assert_eq!(v["stores"]["r"]["passed"], false, "{v}");
    assert_eq!(v["output"], "summary text");
    assert!(ScriptBackend::from_text("s.yaml", "replies: 3").is_err());
}

#[test]
fn the_script_format_example_is_a_valid_script_and_is_the_one_documented() {
    use pipewright_runtime::backend::script::EXAMPLE;
    if let Err(e) = ScriptBackend::from_text("example.yaml", EXAMPLE) {
        panic!("the example does not load: {e}");
    }
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/run.md");
    let docs = std::fs::read_to_string(&docs).unwrap_or_else(|e| panic!("{e}"));
    // Shown inside a list item there: indented by two spaces.
    let shown: Vec<String> = EXAMPLE.lines().map(|l| format!("  {l}")).collect();
    assert!(
        docs.contains(&shown.join("\n")),
        "docs/run.md shows the reply file format as the error messages do:\n{EXAMPLE}"
    );
    // A file of the wrong shape is answered with the format.
    let Err(e) = ScriptBackend::from_text("s.yaml", "- just a list\n") else {
        panic!("a list is not a reply file");
    };
    let e = String::from(e);
    assert!(
        e.contains("expected a `replies:` list") && e.contains(EXAMPLE),
        "{e}"
    );
}

fn fake_agent(dir: &std::path::Path, body: &str) -> String {
    let path = dir.join("fake-agent.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap_or_else(|e| panic!("{e}"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

#[test]
fn command_backend_claude_profile_with_a_fake_agent() {
    let d = tempdir();
    // Reads the prompt on stdin like `claude -p`, answers in its JSON envelope, and prints a
    // lot to stderr (captured through a file, so it cannot block).
    let prog = fake_agent(
        d.path(),
        "prompt=$(cat)\nhead -c 200000 /dev/zero | tr '\\0' x >&2\ncase \"$prompt\" in *Review*) r='{\\\"passed\\\": true}';; *) r='plain';; esac\nprintf '{\"type\":\"result\",\"is_error\":false,\"result\":\"%s\"}' \"$r\"",
    );
    let mut o = opts(d.path());
    o.backend = Arc::new(CommandBackend {
        profile: Profile::Claude,
        program: Some(prog),
        timeout: Duration::from_secs(20),
        workdir: d.path().to_path_buf(),
    });
    o.input = serde_json::json!({"doc": "a"});
    let v = run_json(REVIEW, o);
    assert_eq!(v["stores"]["r"]["passed"], true, "{v}");
    assert_eq!(v["output"], "plain");
}

#[test]
fn command_backend_generic_template_timeout_and_failure() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = Arc::new(CommandBackend {
        profile: Profile::Generic {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo \"$1 for $2\"".into(),
                "--".into(),
                "{prompt}".into(),
                "{step}".into(),
            ],
            stdin_prompt: false,
        },
        program: None,
        timeout: Duration::from_secs(20),
        workdir: d.path().to_path_buf(),
    });
    let v = run_json(
        "pipeline: p\nsteps:\n  - agent: {prompt: \"it's $(not run)\"}\n",
        o,
    );
    assert_eq!(v["output"], "it's $(not run) for 0", "{v}");
    let prog = fake_agent(d.path(), "sleep 30");
    let mut o = opts(d.path());
    o.backend = Arc::new(CommandBackend {
        profile: Profile::Claude,
        program: Some(prog),
        timeout: Duration::from_millis(300),
        workdir: d.path().to_path_buf(),
    });
    let t0 = std::time::Instant::now();
    let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n", o);
    assert_eq!(v["error"]["code"], "PW0803", "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("timed out"));
    assert!(t0.elapsed() < Duration::from_secs(10));
}

fn generic(argv: &[&str], dir: &std::path::Path) -> Arc<CommandBackend> {
    Arc::new(CommandBackend {
        profile: Profile::Generic {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            stdin_prompt: !argv.iter().any(|a| a.contains("{prompt}")),
        },
        program: None,
        timeout: Duration::from_secs(20),
        workdir: dir.to_path_buf(),
    })
}

/// Placeholders are substituted in one pass: a prompt (from the input) that contains
/// `{identity}` or `{step}` reaches the agent as written.
#[test]
fn command_backend_does_not_substitute_inside_the_prompt() {
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = generic(
        &[
            "sh",
            "-c",
            "printf '%s|%s' \"$1\" \"$2\"",
            "--",
            "{prompt}",
            "{identity}/{step}",
        ],
        d.path(),
    );
    o.input = serde_json::json!({"text": "as {identity} at {step} with {schema} {prompt}"});
    let v = run_json(
        "pipeline: p\nsteps:\n  - agent: {prompt: \"{ctx.text}\", identity: bot}\n",
        o,
    );
    assert_eq!(
        v["output"], "as {identity} at {step} with {schema} {prompt}|bot/0",
        "{v}"
    );
}

/// A prompt that starts with `-` is never read as an option of the agent program: `--` goes
/// before the argument `{prompt}` opens (unless argv already has one), and without `{prompt}`
/// in argv the prompt goes to stdin.
#[test]
fn command_backend_prompt_starting_with_a_dash_is_not_an_option() {
    let d = tempdir();
    let prog = fake_agent(
        d.path(),
        "for a; do printf '[%s]' \"$a\"; done; printf '<%s>' \"$(cat)\"",
    );
    let run = |argv: &[&str]| {
        let mut o = opts(d.path());
        o.backend = generic(argv, d.path());
        o.input = serde_json::json!({"text": "--version"});
        run_json(
            "pipeline: p\nsteps:\n  - agent: {prompt: \"{ctx.text}\"}\n",
            o,
        )["output"]
            .clone()
    };
    assert_eq!(
        run(&[&prog, "--json", "{prompt}"]),
        "[--json][--][--version]<>"
    );
    assert_eq!(run(&[&prog, "--", "{prompt}"]), "[--][--version]<>");
    assert_eq!(run(&[&prog, "--prompt={prompt}"]), "[--prompt=--version]<>");
    assert_eq!(run(&[&prog, "--json"]), "[--json]<--version>");
}

#[test]
fn command_backend_failure_words_the_exit_status() {
    let d = tempdir();
    for (body, expected) in [
        (
            "echo broken >&2; exit 2",
            "the agent command exited with status 2: broken",
        ),
        (
            "kill -TERM $$",
            "the agent command was killed by signal 15 (SIGTERM)",
        ),
    ] {
        let prog = fake_agent(d.path(), body);
        let mut o = opts(d.path());
        o.backend = Arc::new(CommandBackend {
            profile: Profile::Claude,
            program: Some(prog),
            timeout: Duration::from_secs(20),
            workdir: d.path().to_path_buf(),
        });
        let v = run_json("pipeline: p\nsteps:\n  - agent: {prompt: \"x\"}\n", o);
        assert_eq!(v["error"]["code"], "PW0803", "{v}");
        let message = v["error"]["message"].as_str().unwrap_or("");
        assert!(message.ends_with(expected), "{message}");
    }
}

#[test]
fn script_backend_without_a_reply_shows_a_json_preview_of_the_prompt() {
    let backend = Arc::new(
        ScriptBackend::from_text("s.yaml", "replies:\n  - step: \"9\"\n    reply: x\n")
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let d = tempdir();
    let mut o = opts(d.path());
    o.backend = backend;
    // A control character (JSON `\u0001`, where Rust's debug form writes `\u{1}`) and a prompt
    // long enough to be cut.
    let text = format!(
        "pipeline: p\nsteps:\n  - agent: {{prompt: \"\\x01{}\"}}\n",
        "a".repeat(300)
    );
    let v = run_json(&text, o);
    let message = v["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(r#"(prompt: "\u0001aaa"#), "{message}");
    assert!(message.ends_with("a…)"), "{message}");
}

/// A recipe's agent step hands its `model`, `mode` and the recipe name to a generic command
/// backend through `{model}`, `{mode}` and `{workflow}`; the mode also leads the prompt.
#[test]
fn command_backend_gets_a_recipe_steps_model_and_mode() {
    let d = tempdir();
    let text = "name: r\ndescription: d\nversion: \"1.0.0\"\nsteps:\n  - id: a\n    agent: team:writer\n    mode: ANALYZE\n    model: m-1\n    prompt: go\n    output: out\n";
    let mut sources = pipewright_syntax::SourceMap::new();
    let file = sources.add("r.yaml", text);
    let (docs, _) = pipewright_yaml::load(file, text, pipewright_yaml::Limits::default());
    let root = docs
        .iter()
        .find_map(|d| d.root.as_ref())
        .unwrap_or_else(|| panic!("no document"));
    let recipe = pipewright_recipe::load::Loader::new().recipe(root);
    let program = Arc::new(pipewright_recipe::lower::recipe(&recipe, file));
    let mut o = opts(d.path());
    o.backend = generic(
        &[
            "sh",
            "-c",
            "printf '%s|%s|%s|%s' \"$1\" \"$2\" \"$3\" \"$4\"",
            "--",
            "{identity}",
            "{model}",
            "{workflow}",
            "{prompt}",
        ],
        d.path(),
    );
    let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let out = rt
        .block_on(pipewright_recipe::run::run(program, &sources, o))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out.stores.to_json()["out"],
        "team:writer|m-1|r|MODE: ANALYZE\n\ngo",
        "{:?}",
        out.error
    );
}
