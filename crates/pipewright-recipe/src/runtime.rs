//! Placeholder: filled in by the runtime-semantics work (notes §3.6, §4, §5).
