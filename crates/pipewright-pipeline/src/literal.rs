//! YAML literal values → JSON values (tool argument literals, `items`, enum values).

pub use pipewright_yaml::to_json;
