use crate::run::common::*;

#[test]
fn hello_example_runs_offline_with_no_input() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/hello.yaml"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let d = tempdir();
    let v = run_json(&text, opts(d.path()));
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["output"], "Hello, world! All reviews passed.");
    assert_eq!(v["stores"]["passed"], 3);
}
