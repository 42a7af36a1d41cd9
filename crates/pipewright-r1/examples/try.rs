fn main() {
    for src in std::env::args().skip(1) {
        match pipewright_r1::parse(&src) {
            Ok(e) => {
                let ctx = pipewright_r1::Value::from_json(&serde_json::json!({"a": 1, "s": "x", "reviews": [{"passed": true}, {"passed": true}, {"passed": true}]}));
                let scope = pipewright_r1::Scope::new().with("ctx", &ctx).with_owned("pipe", pipewright_r1::Value::Null);
                println!("{src:?} => {e} => {:?}", pipewright_r1::eval(&e, &scope).map(|v| v.to_json_string()));
            }
            Err(es) => {
                println!("{src:?}:");
                for e in es { println!("  {} {:?} {} [{}] {:?}", e.code, e.range, e.message, e.label, e.help); }
            }
        }
    }
}
