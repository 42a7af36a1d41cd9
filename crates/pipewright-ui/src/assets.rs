//! The web app's built files (`web/dist/`, committed, built by Vite), embedded in the binary:
//! the UI works offline and from any directory. A path that is no file is a page of the app
//! (client-side routing: `/runs/ID`), so it gets `index.html`.

use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "web/dist/"]
struct Dist;

fn file(path: &str, cache: &'static str) -> Option<Response> {
    let f = Dist::get(path)?;
    let mime = f.metadata.mimetype().to_string();
    Some(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, cache.to_string()),
            ],
            f.data.into_owned(),
        )
            .into_response(),
    )
}

pub(crate) async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("api/") || path == "api" {
        return crate::security::error(StatusCode::NOT_FOUND, "no such API route");
    }
    // Vite names built files by their content hash: they never change under a name.
    let asset = (!path.is_empty() && path != "index.html")
        .then(|| file(path, "public, max-age=31536000, immutable"))
        .flatten();
    asset
        .or_else(|| file("index.html", "no-cache"))
        .unwrap_or_else(|| {
            crate::security::error(
                StatusCode::NOT_FOUND,
                "the web app is not built into this binary",
            )
        })
}
