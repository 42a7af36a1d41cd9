//! Placeholder: filled in by the DOT work (notes §6).
