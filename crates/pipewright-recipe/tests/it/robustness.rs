//! No input makes the condition parser, the template parser or the loader panic.

use proptest::prelude::*;

proptest! {
    #[test]
    fn condition_never_panics(src in "[{}()'\"=!<>a-z0-9 ._&|-]{0,60}") {
        let ctx = serde_json::json!({"a": "x", "b": {"c": 1}});
        let (_, issues) = pipewright_recipe::condition::parse(&src);
        for i in issues {
            prop_assert!(i.range.end <= src.len());
        }
        let _ = pipewright_recipe::condition::eval(&src, &ctx);
        let _ = pipewright_recipe::template::render(&src, &ctx);
    }

    #[test]
    fn loader_never_panics(body in "(  - id: [a-z\"]{0,3}\n|    [a-z_]{1,12}: [a-z0-9{}\"\\[\\]]{0,8}\n|[a-z_]{1,8}: [a-z0-9\"]{0,5}\n){0,12}") {
        let text = format!("name: x\nsteps:\n{body}");
        let mut sources = pipewright_syntax::SourceMap::new();
        let _ = pipewright_recipe::check_file(&mut sources, std::path::Path::new("/nonexistent/x.yaml"), &text);
    }
}
