//! The registry is the only list of dialects: everything a dialect must come with is found from
//! it, by convention, so a dialect added with its two registry lines and nothing else fails here.

mod dialects;
