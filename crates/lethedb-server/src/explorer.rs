//! The explorer's files: one HTML page, its stylesheet, its ES modules and an icon, embedded in
//! the binary at build time and served under `/_explorer/` without authentication (they hold
//! no secret: the page signs its own Cosmos requests with a key the user has).
//!
//! Every file is sent with a strict `Content-Security-Policy` (the page may load and reach
//! only this server, run no inline script and be framed by nobody) and `Cache-Control:
//! no-cache` (a browser revalidates, so a new binary's page is never mixed with old modules).
//! This module knows file names and types only; routing is `app`'s.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// What the page may load and connect to: this origin only.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";

macro_rules! assets {
    ($($name:literal => $type:expr),* $(,)?) => {
        /// Every file the explorer serves, by name under `/_explorer/`.
        pub const ASSETS: &[Asset] = &[
            $(Asset { name: $name, content_type: $type, body: include_bytes!(concat!("../explorer/", $name)) },)*
        ];
    };
}

assets! {
    "index.html" => HTML,
    "style.css" => CSS,
    "favicon.svg" => SVG,
    "app.js" => JS,
    "api.js" => JS,
    "signing.js" => JS,
    "dom.js" => JS,
    "dialogs.js" => JS,
    "tree.js" => JS,
    "items.js" => JS,
    "editor.js" => JS,
    "query.js" => JS,
    "search.js" => JS,
    "ttl.js" => JS,
    "settings.js" => JS,
}

/// The file named `name`, if the explorer has one (the page itself for an empty name).
pub fn asset(name: &str) -> Option<&'static Asset> {
    let name = if name.is_empty() { "index.html" } else { name };
    ASSETS.iter().find(|asset| asset.name == name)
}

/// The response that serves `asset`.
pub fn serve(asset: &Asset) -> Response {
    let mut response = (StatusCode::OK, asset.body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
