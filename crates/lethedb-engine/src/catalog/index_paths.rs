//! The grammar of an indexing policy's paths, as the service checks it when a container is
//! created or replaced: an included or excluded path starts at the root `/`, names properties
//! (plain, or quoted when they hold other characters), array elements (`[]`, `[3]`) or tuples
//! (`{a, b}`), and ends with `/?` (the value) or `/*` (the subtree); the legacy root `/` stands
//! alone. A composite index path names a value, so it has no `*` and needs no `/?`.
//!
//! A path the grammar refuses gets the service's message, with the position where the check
//! gave up (the service reports `/expiration`, which lacks its end, at position 11: its
//! length). The check accepts what it is unsure of, such as unquoted special characters and a
//! path ending in `[]`: refusing what the service accepts would be worse (`docs/indexing.md`).
//! It only checks text; what a path covers is `index/policy.rs`'s business.

use crate::error::{EngineError, ErrorCode};

/// Which list a path belongs to: the two lists share a grammar, composites have their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathList {
    IncludedOrExcluded,
    Composite,
}

/// The service's refusal of a path it cannot read, at `position` (in characters).
fn refused(path: &str, position: usize) -> EngineError {
    EngineError::with_message(
        ErrorCode::InvalidIndexingPolicy,
        format!(
            "The indexing path '{path}' could not be accepted, failed near position '{position}'. Please ensure that the path is a valid path. Common errors include invalid characters or absence of quotes around labels."
        ),
    )
}

/// Checks one path of `list`.
pub(crate) fn check_path(path: &str, list: PathList) -> Result<(), EngineError> {
    let characters: Vec<char> = path.chars().collect();
    if characters.first() != Some(&'/') {
        return Err(refused(path, 0));
    }
    if characters.len() == 1 && list == PathList::IncludedOrExcluded {
        return Ok(());
    }
    let mut position = 1;
    let mut last = Segment::Name;
    while position <= characters.len() {
        let (segment, end) = segment_at(&characters, position)
            .ok_or_else(|| refused(path, failure_position(&characters, position)))?;
        let is_last = end >= characters.len();
        let allowed = match segment {
            Segment::Subtree => is_last && list == PathList::IncludedOrExcluded,
            Segment::Value => is_last,
            Segment::Name | Segment::Array | Segment::Tuple => true,
        };
        if !allowed {
            return Err(refused(path, position));
        }
        last = segment;
        position = end + 1;
    }
    let ended = match list {
        PathList::IncludedOrExcluded => {
            matches!(last, Segment::Value | Segment::Subtree | Segment::Array)
        }
        PathList::Composite => true,
    };
    if ended {
        Ok(())
    } else {
        Err(refused(path, characters.len()))
    }
}

/// What one segment of a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Segment {
    /// A property name, plain or quoted.
    Name,
    /// `[]` or a position such as `[3]`.
    Array,
    /// A tuple of paths inside one array element, `{a, b/c}`.
    Tuple,
    /// `?`: the value at the path.
    Value,
    /// `*`: everything below the path.
    Subtree,
}

/// The segment starting at `start` and the position of the `/` (or the end) after it; `None`
/// when the segment is empty or malformed.
fn segment_at(characters: &[char], start: usize) -> Option<(Segment, usize)> {
    let rest = characters.get(start..)?;
    let (segment, length) = match rest.first()? {
        '/' => return None,
        quote @ ('"' | '\'') => {
            let closing = rest.iter().skip(1).position(|c| c == quote)?;
            (Segment::Name, closing + 2)
        }
        '[' => {
            let closing = rest.iter().position(|c| *c == ']')?;
            let inside = &rest[1..closing];
            inside
                .iter()
                .all(char::is_ascii_digit)
                .then_some((Segment::Array, closing + 1))?
        }
        '{' => (Segment::Tuple, rest.iter().position(|c| *c == '}')? + 1),
        '?' => (Segment::Value, 1),
        '*' => (Segment::Subtree, 1),
        _ => {
            let length = rest.iter().position(|c| *c == '/').unwrap_or(rest.len());
            if rest[..length].iter().any(|c| matches!(c, '*' | '?' | '"')) {
                return None;
            }
            (Segment::Name, length)
        }
    };
    let end = start + length;
    match characters.get(end) {
        None | Some('/') => Some((segment, end)),
        Some(_) => None,
    }
}

/// Where a malformed segment starting at `start` fails: at a `*`, `?` or quote inside a plain
/// name, else at its start.
fn failure_position(characters: &[char], start: usize) -> usize {
    let rest = &characters[start.min(characters.len())..];
    if matches!(rest.first(), Some('"' | '\'' | '[' | '{')) {
        return characters.len();
    }
    let length = rest.iter().position(|c| *c == '/').unwrap_or(rest.len());
    rest[..length]
        .iter()
        .position(|c| matches!(c, '*' | '?' | '"'))
        .map_or(start, |offset| start + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(path: &str, list: PathList) -> Option<usize> {
        let error = check_path(path, list).err()?;
        let message = error.message.unwrap_or_default();
        let (_, after) = message.split_once("near position '")?;
        after.split('\'').next()?.parse().ok()
    }

    #[test]
    fn the_service_s_paths_are_accepted() {
        for path in [
            "/",
            "/*",
            "/?",
            "/name/?",
            "/a/b/*",
            "/\"_etag\"/?",
            "/\"path-abc\"/?",
            "/'quoted'/*",
            "/tags/[]/?",
            "/tags/[]/name/?",
            "/city/[1]/events/[]/{name, category}/?",
            "/tags/[]",
        ] {
            assert_eq!(
                check_path(path, PathList::IncludedOrExcluded),
                Ok(()),
                "{path}"
            );
        }
        for path in ["/name", "/a/b", "/a/?", "/\"a-b\"", "/tags/[]/name"] {
            assert_eq!(check_path(path, PathList::Composite), Ok(()), "{path}");
        }
    }

    #[test]
    fn a_malformed_path_is_refused_where_the_check_gave_up() {
        let listed = PathList::IncludedOrExcluded;
        assert_eq!(position("/expiration", listed), Some(11));
        assert_eq!(position("name/?", listed), Some(0));
        assert_eq!(position("", listed), Some(0));
        assert_eq!(position("/lineItems/*/productSnapshot/?", listed), Some(11));
        assert_eq!(position("/a//?", listed), Some(3));
        assert_eq!(position("/a/?/b", listed), Some(3));
        assert_eq!(position("/a*/?", listed), Some(2));
        assert_eq!(position("/\"open/?", listed), Some(8));
        assert_eq!(position("/a/", listed), Some(3));
        assert_eq!(position("/name/*", PathList::Composite), Some(6));
        assert_eq!(position("/", PathList::Composite), Some(1));
        assert_eq!(position("/a/?/b", PathList::Composite), Some(3));
    }
}
