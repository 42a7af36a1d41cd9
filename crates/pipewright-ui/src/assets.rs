//! The web app's built files (`web/dist/`, committed, built by Vite), embedded in the binary:
//! the UI works offline and from any directory. A path that is no file is a page of the app
//! (client-side routing: `/runs/ID`), so it gets `index.html`.

use axum::body::Body;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;
use std::fmt::Write as _;

#[derive(RustEmbed)]
#[folder = "web/dist/"]
struct Dist;

/// A file's validator: its content hash, so `index.html` (revalidated at every load) costs a
/// 304 when this binary served it before.
fn etag(hash: &[u8; 32]) -> String {
    let mut tag = String::from("\"");
    for b in &hash[..16] {
        let _ = write!(tag, "{b:02x}");
    }
    tag.push('"');
    tag
}

/// Whether `If-None-Match` names `tag` (or `*`).
fn matches(headers: &HeaderMap, tag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == tag || t == "*")
}

fn file(headers: &HeaderMap, path: &str, cache: &'static str) -> Option<Response> {
    let f = Dist::get(path)?;
    let tag = etag(&f.metadata.sha256_hash());
    let mime = f.metadata.mimetype().to_string();
    if matches(headers, &tag) {
        return Some(
            (
                StatusCode::NOT_MODIFIED,
                [
                    (header::ETAG, tag),
                    (header::CACHE_CONTROL, cache.to_string()),
                ],
            )
                .into_response(),
        );
    }
    Some(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, cache.to_string()),
                (header::ETAG, tag),
            ],
            // The embedded bytes as they are, not a copy per request.
            Body::from(f.data),
        )
            .into_response(),
    )
}

pub(crate) async fn serve(headers: HeaderMap, uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("api/") || path == "api" {
        return crate::security::error(StatusCode::NOT_FOUND, "no such API route");
    }
    // Vite names built files by their content hash: they never change under a name.
    let asset = (!path.is_empty() && path != "index.html")
        .then(|| file(&headers, path, "public, max-age=31536000, immutable"))
        .flatten();
    asset
        .or_else(|| file(&headers, "index.html", "no-cache"))
        .unwrap_or_else(|| {
            crate::security::error(
                StatusCode::NOT_FOUND,
                "the web app is not built into this binary",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_if_none_match_naming_the_tag_is_a_match() {
        let tag = etag(&[0xab; 32]);
        assert_eq!(tag, format!("\"{}\"", "ab".repeat(16)));
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::IF_NONE_MATCH,
                v.parse().unwrap_or_else(|e| panic!("{e}")),
            );
            h
        };
        assert!(matches(&with(&tag), &tag));
        assert!(matches(&with(&format!("\"x\", W/{tag}")), &tag));
        assert!(matches(&with("*"), &tag));
        assert!(!matches(&with("\"x\""), &tag));
        assert!(!matches(&HeaderMap::new(), &tag));
    }
}
