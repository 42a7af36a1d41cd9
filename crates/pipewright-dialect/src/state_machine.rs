//! The state-machine recipe dialect: JSON with `initialStep` and `steps`. Recognised and
//! formatted; checking, graph and run come with its crate.

use crate::{Dialect, NearMiss, Source, Verb};
use pipewright_syntax::{Diagnostic, FileId, Span};

pub struct StateMachine;

const SIGNATURE: &[&[&str]] = &[&["initialStep"], &["steps"]];

impl Dialect for StateMachine {
    fn name(&self) -> &'static str {
        "state-machine"
    }

    fn noun(&self) -> &'static str {
        "state-machine recipe"
    }

    fn shape(&self) -> &'static str {
        "a state-machine recipe is JSON with `initialStep` and `steps`"
    }

    fn detect(&self, src: &Source) -> bool {
        if src.extension() != "json" {
            return false;
        }
        serde_json::from_str::<serde_json::Value>(src.text)
            .is_ok_and(|v| v.get("initialStep").is_some() && v.get("steps").is_some())
    }

    fn near_miss(&self, src: &Source, file: FileId) -> Option<NearMiss> {
        if src.extension() != "json" {
            return None;
        }
        let keys = crate::near_miss::json_keys(src, file);
        let keys: Vec<(&str, Span)> = keys.iter().map(|(k, s)| (k.as_str(), *s)).collect();
        crate::near_miss::by_keys(self.noun(), &keys, SIGNATURE)
    }

    fn supports(&self, verb: Verb) -> bool {
        verb == Verb::Fmt
    }

    fn format(&self, file: FileId, text: &str) -> Result<String, Vec<Diagnostic>> {
        pipewright_fmt::format_source(file, text, pipewright_fmt::Dialect::StateMachine)
            .map(|f| f.output)
    }
}
