//! What a container's vector embedding policy does to a query's `VectorDistance` calls: the
//! distance function a call without one uses (the policy's function for the path it names,
//! cosine otherwise), and the direction `ORDER BY VectorDistance(...)` sorts in (most similar
//! first: descending for cosine and dot product, which grow with similarity, ascending for
//! euclidean distance, which shrinks).
//!
//! The arithmetic itself is `functions/vectors.rs`; this module only reads and rewrites the
//! syntax tree before the query is planned.

use crate::full_text::property_path;
use serde_json::Value;

use crate::ast::{Expr, Query};
use crate::builtins::Builtin;
use crate::rewrite::rewrite_query;

/// The field of `VectorDistance`'s options object that names the distance function.
pub(crate) const DISTANCE_OPTION: &str = "distanceFunction";
/// The service's refusal of `ORDER BY VectorDistance(...) ASC` or `DESC`: the distance
/// function decides the direction.
pub(crate) const VECTOR_ORDER_REFUSAL: &str =
    "Specifying a sorting order (ASC or DESC) with VectorDistance function is not supported.";
/// Where the options object sits among `VectorDistance`'s arguments.
const OPTIONS_ARGUMENT: usize = 3;

/// A distance function of vector search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    Cosine,
    DotProduct,
    Euclidean,
}

impl Distance {
    /// A distance function by name, in any letter case (`cosine`, `DotProduct`, ...).
    pub fn parse(name: &str) -> Option<Distance> {
        match name.to_ascii_lowercase().as_str() {
            "cosine" => Some(Distance::Cosine),
            "dotproduct" => Some(Distance::DotProduct),
            "euclidean" => Some(Distance::Euclidean),
            _ => None,
        }
    }

    /// The name the service's policies use.
    pub fn name(self) -> &'static str {
        match self {
            Distance::Cosine => "cosine",
            Distance::DotProduct => "dotproduct",
            Distance::Euclidean => "euclidean",
        }
    }

    /// Whether a larger score means a closer vector (so the closest come first when sorting
    /// descending).
    pub fn larger_is_closer(self) -> bool {
        self != Distance::Euclidean
    }
}

/// The distance function of each path of a container's vector embedding policy.
#[derive(Clone, Debug, Default)]
pub struct VectorPolicy {
    embeddings: Vec<(Vec<String>, Distance)>,
}

impl VectorPolicy {
    /// The policy of a container resource (its `vectorEmbeddingPolicy`, already validated);
    /// an absent policy has no embeddings.
    pub fn from_container(resource: &Value) -> VectorPolicy {
        let embeddings = resource
            .get("vectorEmbeddingPolicy")
            .and_then(|policy| policy.get("vectorEmbeddings"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|embedding| {
                let path = embedding.get("path")?.as_str()?;
                let distance = Distance::parse(embedding.get(DISTANCE_OPTION)?.as_str()?)?;
                let segments = path.trim_start_matches('/').split('/').map(str::to_string);
                Some((segments.collect(), distance))
            })
            .collect();
        VectorPolicy { embeddings }
    }

    /// Whether the policy names no embedding.
    pub fn is_empty(&self) -> bool {
        self.embeddings.is_empty()
    }

    /// Writes the policy's distance function into every `VectorDistance` call of `query` that
    /// names none and whose vector is a path of the policy.
    pub(crate) fn apply(&self, query: &mut Query) {
        if self.is_empty() {
            return;
        }
        rewrite_query(query, &mut |expr| {
            let Expr::Call {
                name,
                args,
                builtin: Some(Builtin::VectorDistance),
            } = expr
            else {
                return None;
            };
            if written_distance(args).is_some() {
                return None;
            }
            let distance = args.iter().take(2).find_map(|arg| self.distance_of(arg))?;
            Some(Expr::Call {
                name: name.clone(),
                args: with_distance(args, distance),
                builtin: Some(Builtin::VectorDistance),
            })
        });
    }

    /// The distance function of the embedding `expr` reads (`c.embedding`, `c.a.b`).
    fn distance_of(&self, expr: &Expr) -> Option<Distance> {
        let segments = property_path(expr)?;
        self.embeddings
            .iter()
            .find(|(path, _)| *path == segments)
            .map(|(_, distance)| *distance)
    }
}

/// The arguments of a `VectorDistance` call with `distance` added to its options (the brute
/// force flag defaulting to false, as the service's).
fn with_distance(args: &[Expr], distance: Distance) -> Vec<Expr> {
    let mut args = args.to_vec();
    let field = (
        DISTANCE_OPTION.to_string(),
        Expr::Literal(Value::String(distance.name().into())),
    );
    if args.len() < OPTIONS_ARGUMENT {
        args.push(Expr::Literal(Value::Bool(false)));
    }
    match args.get_mut(OPTIONS_ARGUMENT) {
        Some(Expr::Object(fields)) => fields.push(field),
        Some(_) => {}
        None => args.push(Expr::Object(vec![field])),
    }
    args
}

/// The distance function a call's options object names as a literal, if any.
pub(crate) fn written_distance(args: &[Expr]) -> Option<Distance> {
    let Some(Expr::Object(fields)) = args.get(OPTIONS_ARGUMENT) else {
        return None;
    };
    fields.iter().find_map(|(name, value)| match value {
        Expr::Literal(Value::String(text)) if name.eq_ignore_ascii_case(DISTANCE_OPTION) => {
            Distance::parse(text)
        }
        _ => None,
    })
}

/// Whether `expr` is a `VectorDistance` call (an ORDER BY key the service sorts by
/// similarity, not by an ASC or DESC written in the query).
pub(crate) fn is_vector_distance(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Call {
            builtin: Some(Builtin::VectorDistance),
            ..
        }
    )
}

/// Sets the direction of every `ORDER BY VectorDistance(...)` key of `query`: the closest
/// vectors first, by the call's distance function (cosine when it names none, the service's
/// default).
pub(crate) fn orient(query: &mut Query) {
    for key in &mut query.order_by {
        if let Expr::Call {
            args,
            builtin: Some(Builtin::VectorDistance),
            ..
        } = &key.expr
        {
            let distance = written_distance(args).unwrap_or(Distance::Cosine);
            key.descending = distance.larger_is_closer();
        }
    }
}
