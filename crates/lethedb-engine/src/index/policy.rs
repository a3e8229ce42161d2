//! A container's indexing policy compiled once, when the container is loaded: which document
//! paths it indexes and how (`Coverage`), its composite indexes, and its mode.
//!
//! Paths are lists of property names from the document's root, with `[]` standing for any
//! element of an array (the service normalises array positions the same way). The more precise
//! policy path wins, as on the service: a longer path beats a shorter one, and at equal length a
//! path naming the value itself (`/a/?`) beats one naming a subtree (`/a/*`). The legacy root
//! path `/` is the root subtree `/*`, and a policy naming neither includes the root, as the
//! service fills it in. `id` and `_ts` are always indexed unless the mode is `none`.
//!
//! It also says which paths have spatial entries (`spatialIndexes`, `spatially_indexed`) and
//! full-text entries, in which language (`fullTextIndexes`, `full_text_language`; the language
//! comes from the container's full-text policy, written into the compiled source by
//! `indexed_policy`), and
//! how the policy serves an ORDER BY (`IndexPolicy::order_by`): which index, or
//! why none can. This module only answers questions about the policy; it reads no items and
//! decides no query's plan or result.

use lethedb_query::{FullTextPolicy, Language};
use serde_json::Value;

/// How the policy indexes one document path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coverage {
    /// Not indexed: an excluded path wins, or the mode is `none`.
    Excluded,
    /// Indexed through a subtree path (`/*`, `/a/*`): only defined values have entries.
    Wildcard,
    /// Indexed through a path naming the value itself (`/a/?`): an item where the path is
    /// undefined has an entry saying so, as the service documents.
    Explicit,
}

impl Coverage {
    pub(crate) fn is_indexed(self) -> bool {
        self != Coverage::Excluded
    }
}

/// One composite index: its paths in order, each with whether it sorts descending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CompositeIndex {
    pub(crate) paths: Vec<(Vec<String>, bool)>,
}

/// A policy path, parsed: its segments without quotes, and whether it names a subtree.
#[derive(Clone, Debug)]
struct Pattern {
    segments: Vec<String>,
    subtree: bool,
}

impl Pattern {
    fn parse(text: &str) -> Pattern {
        let mut segments = path_segments(text);
        // The legacy root path `/` names the whole document, as `/*` does.
        let subtree = segments.last().is_none_or(|last| last == "*");
        if matches!(segments.last().map(String::as_str), Some("*" | "?")) {
            segments.pop();
        }
        Pattern { segments, subtree }
    }

    /// Whether this is the root subtree (`/*` or `/`), which every policy names once.
    fn is_root(&self) -> bool {
        self.subtree && self.segments.is_empty()
    }

    /// How precisely this pattern covers `path`: `None` when it does not, else a rank where a
    /// longer pattern, and at equal length one naming the value itself, is more precise.
    fn precision(&self, path: &[String]) -> Option<usize> {
        let fits = if self.subtree {
            self.segments.len() <= path.len()
        } else {
            self.segments.len() == path.len()
        };
        let matches = fits
            && self
                .segments
                .iter()
                .zip(path)
                .all(|(pattern, name)| pattern == "[]" || pattern == name);
        matches.then_some(self.segments.len() * 2 + usize::from(!self.subtree))
    }
}

/// The rank of the most precise of `patterns` covering `path`.
fn most_precise(patterns: &[Pattern], path: &[String]) -> Option<usize> {
    patterns
        .iter()
        .filter_map(|pattern| pattern.precision(path))
        .max()
}

/// The segments of a path written as in a policy (`/a/"b-c"/?`), quotes removed.
pub(crate) fn path_segments(text: &str) -> Vec<String> {
    text.split('/')
        .filter(|segment| !segment.is_empty())
        .map(|segment| segment.trim_matches('"').to_string())
        .collect()
}

/// A container's indexing policy, compiled.
#[derive(Clone, Debug, Default)]
pub(crate) struct IndexPolicy {
    /// Indexing mode `none`: nothing is indexed.
    indexes_nothing: bool,
    included: Vec<Pattern>,
    excluded: Vec<Pattern>,
    composites: Vec<CompositeIndex>,
    /// The included paths that name a value (`/a/b/?`, no array step) and win over every
    /// excluded path: an item lacking one has an entry saying it is undefined.
    explicit: Vec<Vec<String>>,
    /// The paths of `spatialIndexes`: a geometry at a path one covers has spatial entries.
    spatial: Vec<Pattern>,
    /// The paths of `fullTextIndexes`, each with the language its text is stemmed in.
    full_text: Vec<(Vec<String>, Language)>,
}

/// The properties the service indexes whatever the policy says, unless the mode is `none`.
const ALWAYS_INDEXED: [&str; 2] = ["id", "_ts"];

impl IndexPolicy {
    /// Compiles a policy as `catalog::indexing_policy::normalize_indexing_policy` stored it.
    pub(crate) fn compile(policy: &Value) -> IndexPolicy {
        let patterns = |list: &str| -> Vec<Pattern> {
            policy
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|entry| entry.get("path").and_then(Value::as_str))
                .map(Pattern::parse)
                .collect()
        };
        let mut included = patterns("includedPaths");
        let excluded = patterns("excludedPaths");
        // The service fills in the root when a policy names it nowhere (older stored policies
        // may lack it; `catalog::indexing_policy` now stores it).
        if !included.iter().chain(&excluded).any(Pattern::is_root) {
            included.push(Pattern::parse("/*"));
        }
        let mut compiled = IndexPolicy {
            indexes_nothing: policy.get("indexingMode").and_then(Value::as_str) == Some("none"),
            included,
            excluded,
            composites: composites(policy),
            explicit: Vec::new(),
            spatial: spatial_patterns(policy),
            full_text: full_text_indexes(policy),
        };
        let mut explicit: Vec<Vec<String>> = compiled
            .included
            .iter()
            .filter(|pattern| !pattern.subtree && !pattern.segments.is_empty())
            .filter(|pattern| !pattern.segments.iter().any(|name| name == "[]"))
            .map(|pattern| pattern.segments.clone())
            .filter(|path| compiled.coverage(path) == Coverage::Explicit)
            .collect();
        explicit.sort();
        explicit.dedup();
        compiled.explicit = explicit;
        compiled
    }

    /// The explicitly included value paths (see `IndexPolicy::explicit`).
    pub(crate) fn explicit_paths(&self) -> &[Vec<String>] {
        &self.explicit
    }

    /// How the policy indexes `path`.
    pub(crate) fn coverage(&self, path: &[String]) -> Coverage {
        if self.indexes_nothing {
            return Coverage::Excluded;
        }
        if let [only] = path {
            if ALWAYS_INDEXED.contains(&only.as_str()) {
                return Coverage::Explicit;
            }
        }
        let included = most_precise(&self.included, path);
        let excluded = most_precise(&self.excluded, path);
        match (included, excluded) {
            (Some(rank), Some(excluded)) if rank <= excluded => Coverage::Excluded,
            // An odd rank is a pattern naming the value itself (see `Pattern::precision`).
            (Some(rank), _) if rank % 2 == 1 => Coverage::Explicit,
            (Some(_), _) => Coverage::Wildcard,
            (None, _) => Coverage::Excluded,
        }
    }

    /// Whether a geometry at `path` has spatial entries: a `spatialIndexes` path names it, or
    /// (ending in `/*`) a path above it. Every geometry type is indexed whatever the index's
    /// `types`, so that a query the index serves finds what a scan finds.
    pub(crate) fn spatially_indexed(&self, path: &[String]) -> bool {
        !self.indexes_nothing && most_precise(&self.spatial, path).is_some()
    }

    /// Whether the policy has a spatial index at all.
    pub(crate) fn has_spatial(&self) -> bool {
        !self.indexes_nothing && !self.spatial.is_empty()
    }

    /// The language of the full-text index at exactly `path`, if there is one.
    pub(crate) fn full_text_language(&self, path: &[String]) -> Option<Language> {
        self.full_text_indexes()
            .iter()
            .find(|(indexed, _)| indexed == path)
            .map(|(_, language)| *language)
    }

    /// The full-text indexes: each a path (no array step) with its language.
    pub(crate) fn full_text_indexes(&self) -> &[(Vec<String>, Language)] {
        if self.indexes_nothing {
            return &[];
        }
        &self.full_text
    }

    /// The composite indexes, in the policy's order.
    pub(crate) fn composites(&self) -> &[CompositeIndex] {
        if self.indexes_nothing {
            return &[];
        }
        &self.composites
    }

    /// The composite index that serves an ORDER BY over `keys` (paths with directions): one
    /// listing exactly these paths in order, with the same directions on every path or the
    /// inverse on every path. Returns its position and whether it is walked inverted.
    pub(crate) fn composite_for(&self, keys: &[(Vec<String>, bool)]) -> Option<(usize, bool)> {
        self.composites()
            .iter()
            .enumerate()
            .find_map(|(position, composite)| {
                if composite.paths.len() != keys.len() {
                    return None;
                }
                let same_paths = composite
                    .paths
                    .iter()
                    .zip(keys)
                    .all(|((path, _), (key, _))| path == key);
                let directions = composite
                    .paths
                    .iter()
                    .zip(keys)
                    .map(|((_, indexed), (_, wanted))| indexed == wanted);
                let all_same = directions.clone().all(|same| same);
                let all_inverse = directions.clone().all(|same| !same);
                (same_paths && (all_same || all_inverse)).then_some((position, all_inverse))
            })
    }
}

/// How a policy serves an ORDER BY, as the service decides it from its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OrderByServing {
    /// No ORDER BY, or a key that is not a document path: nothing for the policy to decide.
    Unchecked,
    /// One key, served by the range index of its path, indexed as this (never `Excluded`).
    Single(Coverage),
    /// Several keys, served by a composite index.
    Composite,
    /// One key whose path the policy excludes (or the mode is `none`).
    Excluded,
    /// Several keys and no composite index listing them in order, with their directions or
    /// the inverse of every one.
    NoComposite,
}

impl IndexPolicy {
    /// How the policy serves an ORDER BY over `keys` (each a document path with whether it sorts
    /// descending, or `None` for a key that is not a path). `id` and `_ts` count as paths like
    /// any other here: several keys need a composite even when they are among them.
    pub(crate) fn order_by(&self, keys: &[Option<(Vec<String>, bool)>]) -> OrderByServing {
        let Some(paths) = keys.iter().cloned().collect::<Option<Vec<_>>>() else {
            return OrderByServing::Unchecked;
        };
        match paths.as_slice() {
            [] => OrderByServing::Unchecked,
            [(path, _)] => match self.coverage(path) {
                Coverage::Excluded => OrderByServing::Excluded,
                coverage => OrderByServing::Single(coverage),
            },
            _ if self.composite_for(&paths).is_some() => OrderByServing::Composite,
            _ => OrderByServing::NoComposite,
        }
    }
}

/// The indexing policies a container had before its current one whose entries some items may
/// still hold, while the index is rebuilt for the current one (a policy change's
/// transformation); empty when no rebuild runs. Kept as stored (to write back with the
/// container) and compiled (to compute those entries).
#[derive(Clone, Debug, Default)]
pub(crate) struct EarlierPolicies {
    pub(crate) sources: Vec<Value>,
    pub(crate) compiled: Vec<IndexPolicy>,
}

impl EarlierPolicies {
    pub(crate) fn new(sources: Vec<Value>) -> EarlierPolicies {
        let compiled = sources.iter().map(IndexPolicy::compile).collect();
        EarlierPolicies { sources, compiled }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

/// The paths of a policy's spatial indexes (`/a/*` or `/a/?`), parsed.
fn spatial_patterns(policy: &Value) -> Vec<Pattern> {
    policy
        .get("spatialIndexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|index| index.get("path").and_then(Value::as_str))
        .map(Pattern::parse)
        // The root names every path; the service refuses it (`catalog/search_policy.rs`).
        .filter(|pattern| !pattern.segments.is_empty())
        .collect()
}

/// The full-text indexes of a policy compiled from `indexed_policy`: each path with the
/// language written beside it (English where none is, as without a full-text policy).
fn full_text_indexes(policy: &Value) -> Vec<(Vec<String>, Language)> {
    policy
        .get("fullTextIndexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|index| {
            let path = path_segments(index.get("path")?.as_str()?);
            let language = index.get("language").and_then(Value::as_str);
            Some((
                path,
                language.and_then(Language::from_code).unwrap_or_default(),
            ))
        })
        .filter(|(path, _)| !path.is_empty())
        .collect()
}

/// The indexing policy of a container resource as the index compiles and compares it: each
/// full-text index given the language of its path in the container's full-text policy, so
/// that a changed language is a changed policy whose rebuild stems the texts anew, and an
/// earlier policy kept for a rebuild remembers the language its entries were stemmed in. The
/// resource itself keeps the policy as the client wrote it.
pub(crate) fn indexed_policy(resource: &Value) -> Value {
    let mut policy = resource
        .get("indexingPolicy")
        .cloned()
        .unwrap_or(Value::Null);
    let languages = FullTextPolicy::from_container(resource);
    if let Some(Value::Array(indexes)) = policy.get_mut("fullTextIndexes") {
        for index in indexes.iter_mut() {
            let Some(path) = index.get("path").and_then(Value::as_str) else {
                continue;
            };
            let language = languages.language_of_path(&path_segments(path));
            if let Some(members) = index.as_object_mut() {
                members.insert("language".into(), Value::from(language.code()));
            }
        }
    }
    policy
}

/// The composite indexes of a policy: each a list of `{path, order}`; a path ending in `/?` or
/// `/*` is read without it, and an order other than `descending` is ascending.
fn composites(policy: &Value) -> Vec<CompositeIndex> {
    policy
        .get("compositeIndexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .map(|entries| CompositeIndex {
            paths: entries
                .iter()
                .map(|entry| {
                    let path = entry.get("path").and_then(Value::as_str).unwrap_or("");
                    let order = entry
                        .get("order")
                        .and_then(Value::as_str)
                        .unwrap_or("ascending");
                    (
                        Pattern::parse(path).segments,
                        order.eq_ignore_ascii_case("descending"),
                    )
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(text: &str) -> Vec<String> {
        text.split('/').map(str::to_string).collect()
    }

    #[test]
    fn the_more_precise_path_decides_coverage() {
        let default = IndexPolicy::compile(&json!({"indexingMode": "consistent",
            "includedPaths": [{"path": "/*"}], "excludedPaths": [{"path": "/\"_etag\"/?"}]}));
        assert_eq!(default.coverage(&path("name")), Coverage::Wildcard);
        assert_eq!(default.coverage(&path("a/b")), Coverage::Wildcard);
        assert_eq!(default.coverage(&path("tags/[]")), Coverage::Wildcard);
        assert_eq!(default.coverage(&path("_etag")), Coverage::Excluded);
        let narrow = IndexPolicy::compile(&json!({
            "includedPaths": [{"path": "/kept/?"}, {"path": "/tree/*"}, {"path": "/tags/[]/?"}],
            "excludedPaths": [{"path": "/*"}, {"path": "/tree/secret/?"}]}));
        assert_eq!(narrow.coverage(&path("kept")), Coverage::Explicit);
        assert_eq!(narrow.coverage(&path("kept/deeper")), Coverage::Excluded);
        assert_eq!(narrow.coverage(&path("tree/leaf")), Coverage::Wildcard);
        assert_eq!(narrow.coverage(&path("tree/secret")), Coverage::Excluded);
        assert_eq!(narrow.coverage(&path("tags/[]")), Coverage::Explicit);
        assert_eq!(narrow.coverage(&path("other")), Coverage::Excluded);
        assert_eq!(narrow.coverage(&path("id")), Coverage::Explicit);
        assert_eq!(narrow.coverage(&path("_ts")), Coverage::Explicit);
        let none = IndexPolicy::compile(
            &json!({"indexingMode": "none", "includedPaths": [], "excludedPaths": [{"path": "/*"}]}),
        );
        assert_eq!(none.coverage(&path("name")), Coverage::Excluded);
        assert_eq!(none.coverage(&path("id")), Coverage::Excluded);
    }

    #[test]
    fn the_root_is_named_once_or_filled_in() {
        let legacy = IndexPolicy::compile(&json!({"includedPaths": [{"path": "/"}]}));
        assert_eq!(legacy.coverage(&path("name")), Coverage::Wildcard);
        let excluded_only = IndexPolicy::compile(
            &json!({"includedPaths": [], "excludedPaths": [{"path": "/a/?"}]}),
        );
        assert_eq!(excluded_only.coverage(&path("name")), Coverage::Wildcard);
        assert_eq!(excluded_only.coverage(&path("a")), Coverage::Excluded);
        let root_excluded = IndexPolicy::compile(&json!({"excludedPaths": [{"path": "/"}]}));
        assert_eq!(root_excluded.coverage(&path("name")), Coverage::Excluded);
    }

    #[test]
    fn an_order_by_is_served_by_a_range_index_or_a_composite() {
        let policy = IndexPolicy::compile(&json!({
            "includedPaths": [{"path": "/*"}, {"path": "/kept/?"}],
            "excludedPaths": [{"path": "/secret/*"}],
            "compositeIndexes": [[{"path": "/a"}, {"path": "/b", "order": "descending"}]]}));
        let key = |text: &str, descending: bool| Some((path(text), descending));
        assert_eq!(policy.order_by(&[]), OrderByServing::Unchecked);
        assert_eq!(
            policy.order_by(&[key("name", false)]),
            OrderByServing::Single(Coverage::Wildcard)
        );
        assert_eq!(
            policy.order_by(&[key("kept", true)]),
            OrderByServing::Single(Coverage::Explicit)
        );
        assert_eq!(
            policy.order_by(&[key("secret/x", false)]),
            OrderByServing::Excluded
        );
        assert_eq!(
            policy.order_by(&[key("a", true), key("b", false)]),
            OrderByServing::Composite
        );
        assert_eq!(
            policy.order_by(&[key("a", false), key("b", false)]),
            OrderByServing::NoComposite
        );
        assert_eq!(
            policy.order_by(&[key("id", false), key("_ts", false)]),
            OrderByServing::NoComposite
        );
        assert_eq!(
            policy.order_by(&[None, key("a", false)]),
            OrderByServing::Unchecked
        );
        let none = IndexPolicy::compile(&json!({"indexingMode": "none", "excludedPaths": []}));
        assert_eq!(none.order_by(&[key("id", false)]), OrderByServing::Excluded);
    }

    #[test]
    fn a_composite_serves_its_sequence_in_its_directions_or_their_inverse() {
        let policy = IndexPolicy::compile(&json!({"compositeIndexes": [
            [{"path": "/name", "order": "ascending"}, {"path": "/age", "order": "descending"}],
            [{"path": "/a/?"}, {"path": "/b/?"}, {"path": "/c/?"}]]}));
        let keys = |list: &[(&str, bool)]| -> Vec<(Vec<String>, bool)> {
            list.iter().map(|(p, d)| (path(p), *d)).collect()
        };
        assert_eq!(
            policy.composite_for(&keys(&[("name", false), ("age", true)])),
            Some((0, false))
        );
        assert_eq!(
            policy.composite_for(&keys(&[("name", true), ("age", false)])),
            Some((0, true))
        );
        assert_eq!(
            policy.composite_for(&keys(&[("name", false), ("age", false)])),
            None
        );
        assert_eq!(
            policy.composite_for(&keys(&[("age", true), ("name", false)])),
            None
        );
        assert_eq!(
            policy.composite_for(&keys(&[("a", false), ("b", false)])),
            None
        );
        assert_eq!(
            policy.composite_for(&keys(&[("a", false), ("b", false), ("c", false)])),
            Some((1, false))
        );
    }
}
