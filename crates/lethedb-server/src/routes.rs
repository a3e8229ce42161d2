//! Request paths: which resource a path names, and the link and type its signature covers.
//!
//! Cosmos paths alternate resource types and ids (`/dbs/{db}/colls/{coll}/docs/{id}`). A path
//! with an odd number of segments names a feed of its last type under the link before it; an
//! even number names one resource, whose link is the whole path. Doubled and trailing slashes
//! are ignored, and each id is percent-decoded. This module does not look at methods or bodies.

use crate::error::{ApiError, ApiResult, Code};

/// The most path segments a route may have (`dbs/x/colls/y/docs/z/attachments/w`).
pub const PATH_SEGMENTS_MAX: usize = 8;

/// What a request's path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// Decoded segments, alternating type and id.
    pub segments: Vec<String>,
    /// The resource type the signature covers (`dbs`, `colls`, `docs`, ... or empty for `/`).
    pub resource_type: String,
    /// The resource link the signature covers, ids decoded.
    pub link: String,
    /// The link as the service's routing gateway forms it when it checks a signature, when that
    /// differs from `link` (see `gateway_id`); `None` for every other path.
    pub gateway_link: Option<String>,
    /// The same link with ids as they appeared on the wire (some clients sign that form).
    pub raw_link: String,
    /// The container part of the path as it appeared on the wire (`dbs/a%20b/colls/c`), which
    /// clients key their session tokens by.
    pub raw_container_path: String,
}

impl ResourcePath {
    pub fn parse(path: &str) -> ApiResult<ResourcePath> {
        let raw: Vec<&str> = path
            .split('/')
            .filter(|segment| !segment.is_empty())
            .collect();
        if raw.len() > PATH_SEGMENTS_MAX {
            return Err(ApiError::new(
                Code::UnknownResource,
                format!("The path '{path}' names no resource."),
            ));
        }
        let mut segments = Vec::with_capacity(raw.len());
        // Most paths encode nothing; a segment without a `%` decodes to itself.
        let mut encoded = false;
        for segment in &raw {
            if !segment.contains('%') {
                segments.push((*segment).to_owned());
                continue;
            }
            encoded = true;
            let decoded = percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .map_err(|_| {
                    ApiError::new(
                        Code::InvalidUri,
                        "The request path is not valid UTF-8 after decoding.",
                    )
                })?;
            segments.push(decoded.into_owned());
        }
        let (resource_type, link_len) = match segments.len() {
            0 => (String::new(), 0),
            // Container operations (`.../colls/{c}/operations/partitionkeydelete`) are signed as
            // the container itself.
            6 if segments[2] == "colls" && segments[4] == "operations" => ("colls".to_string(), 4),
            n if n % 2 == 1 => (segments[n - 1].clone(), n - 1),
            n => (segments[n - 2].clone(), n),
        };
        let link = segments[..link_len].join("/");
        // Only an id the gateway could read differently (a `%`, trailing whitespace) makes
        // the gateway's link worth forming: nearly every request has none.
        let gateway = segments[..link_len]
            .iter()
            .skip(1)
            .step_by(2)
            .any(|id| id.contains('%') || id.ends_with(char::is_whitespace))
            .then(|| {
                segments[..link_len]
                    .iter()
                    .enumerate()
                    .map(|(index, segment)| match index % 2 {
                        1 => gateway_id(segment),
                        _ => segment.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("/")
            });
        let raw_link = if encoded {
            raw[..link_len].join("/")
        } else {
            link.clone()
        };
        Ok(ResourcePath {
            raw_container_path: raw[..raw.len().min(4)].join("/"),
            gateway_link: gateway.filter(|gateway| *gateway != link),
            link,
            raw_link,
            resource_type,
            segments,
        })
    }

    /// The route shape: the types along the path, and whether it ends on an id.
    pub fn shape(&self) -> (Vec<&str>, bool) {
        let types = self
            .segments
            .iter()
            .step_by(2)
            .map(String::as_str)
            .collect();
        (
            types,
            self.segments.len().is_multiple_of(2) && !self.segments.is_empty(),
        )
    }

    /// The id at position `index` along the path (0: database, 1: container, 2: item).
    pub fn id(&self, index: usize) -> &str {
        self.segments
            .get(index * 2 + 1)
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// Replaces the id at position `index` (used when a resource id is resolved to a name).
    pub fn set_id(&mut self, index: usize, id: String) {
        if let Some(slot) = self.segments.get_mut(index * 2 + 1) {
            *slot = id;
        }
    }

    /// The last id along the link, lower-cased: what clients sign for paths made of resource ids.
    pub fn resource_id_link(&self) -> String {
        self.link
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase()
    }
}

/// An id as the service's routing gateway reads it from a path to check the signature: it
/// decodes the path once more (an id holding `%20` or `%E9%B1%80` becomes the character) and
/// drops trailing whitespace. A client signs the id as stored, so a point operation on such an
/// id is refused with 401 by the service's gateway, which the JavaScript SDK's own tests pin
/// (`itemIdEncoding.spec`, the `RGW_` cases; see `docs/compatibility.md`).
fn gateway_id(id: &str) -> String {
    let decoded = percent_encoding::percent_decode_str(id).decode_utf8_lossy();
    decoded.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &str, resource_type: &str, link: &str, raw_link: &str) {
        let parsed = ResourcePath::parse(path).expect("parse");
        assert_eq!(
            (
                parsed.resource_type.as_str(),
                parsed.link.as_str(),
                parsed.raw_link.as_str()
            ),
            (resource_type, link, raw_link),
            "{path}"
        );
    }

    #[test]
    fn links_and_types() {
        check("/", "", "", "");
        check("/dbs", "dbs", "", "");
        check("/dbs/db1", "dbs", "dbs/db1", "dbs/db1");
        check("/dbs/db1/colls/", "colls", "dbs/db1", "dbs/db1");
        check(
            "//dbs//db1/colls/c1/",
            "colls",
            "dbs/db1/colls/c1",
            "dbs/db1/colls/c1",
        );
        check(
            "/dbs/db1/colls/c1/docs",
            "docs",
            "dbs/db1/colls/c1",
            "dbs/db1/colls/c1",
        );
        check(
            "/dbs/db%201/colls/c1/docs/%C3%A4",
            "docs",
            "dbs/db 1/colls/c1/docs/ä",
            "dbs/db%201/colls/c1/docs/%C3%A4",
        );
        check(
            "/dbs/db1/colls/c1/pkranges",
            "pkranges",
            "dbs/db1/colls/c1",
            "dbs/db1/colls/c1",
        );
        check("/offers/abc", "offers", "offers/abc", "offers/abc");
        check(
            "/dbs/d/colls/c/operations/partitionkeydelete",
            "colls",
            "dbs/d/colls/c",
            "dbs/d/colls/c",
        );
    }

    #[test]
    fn the_gateway_link_decodes_ids_again_and_drops_trailing_whitespace() {
        let gateway = |path: &str| ResourcePath::parse(path).expect("parse").gateway_link;
        assert_eq!(gateway("/dbs/d/colls/c/docs/Test"), None);
        assert_eq!(gateway("/dbs/d/colls/c/docs/%20Test%20is"), None);
        assert_eq!(gateway("/dbs/d/colls/c/docs/a%3Fb"), None);
        assert_eq!(
            gateway("/dbs/d/colls/c/docs/Test%20%20"),
            Some("dbs/d/colls/c/docs/Test".to_string())
        );
        assert_eq!(
            gateway("/dbs/d/colls/c/docs/x%2520"),
            Some("dbs/d/colls/c/docs/x".to_string())
        );
        assert_eq!(
            gateway("/dbs/d/colls/c/docs/x%25E9%25B1%2580"),
            Some("dbs/d/colls/c/docs/x\u{9c40}".to_string())
        );
        // A feed's link ends before its type; the type segments are never read as ids.
        assert_eq!(gateway("/dbs/d/colls/c/docs"), None);
    }

    #[test]
    fn shapes_and_ids() {
        let parsed = ResourcePath::parse("/dbs/a/colls/b/docs/c").expect("parse");
        assert_eq!(parsed.shape(), (vec!["dbs", "colls", "docs"], true));
        assert_eq!((parsed.id(0), parsed.id(1), parsed.id(2)), ("a", "b", "c"));
        assert!(ResourcePath::parse(&"/x".repeat(20)).is_err());
        assert!(ResourcePath::parse("/dbs/%FF").is_err());
    }
}
