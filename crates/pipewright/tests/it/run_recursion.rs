//! Deep recursion end to end (issue 11): a self-calling pipeline with n = 1600 used to abort
//! the process (stack overflow, exit 134). Now the default cap fails the step cleanly, and with
//! the cap raised the run completes.

use crate::common::*;

#[test]
fn deep_recursion_fails_cleanly_at_the_cap_and_completes_under_a_raised_one() {
    let d = tempdir();
    let file = copy_into(&testdata("run").join("recursion_down.yaml"), d.path());
    let args = [
        "run",
        file.as_str(),
        "--input",
        "{\"n\": 1600}",
        "--format",
        "json",
    ];
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["error"]["code"], "PW0812", "{v}");

    std::fs::write(
        d.path().join("pipewright.toml"),
        "[run]\nmax_call_depth = 5000\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let o = run_in(d.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["output"], "bottom", "{v}");
}
