//! The Azure Cosmos DB for NoSQL query language: lexer, parser, syntax tree, and a pure
//! evaluator that pages results over documents the caller pushes in.
//!
//! The crate does no I/O, reads no clock and knows nothing of storage or HTTP: the engine
//! prepares a query (`prepare`), asks where to resume its scan (`PageRun::resume_after`),
//! pushes visible documents in ascending storage-key order (`PageRun::push`) until told to
//! stop, and takes the page with its continuation token (`PageRun::finish`).
//!
//! Module map, lowest first (each module imports only modules listed before it):
//! - `ast` (syntax tree, `Display`, tree walkers), `value`, `error`, `datetime`, `like`;
//! - `lexer` → `parser` (text to tree); `context` (scopes, parameters, the subquery and
//!   user-defined-function hooks); `token` (continuation tokens);
//! - `builtins` (the table of built-in names, arities and kinds) → `functions` (scalar
//!   built-ins, one module per family) → `plan` (checks and derived facts) → `eval` (one expression over
//!   one row) → `exec` (rows, projection, grouping) → `subquery` (the subquery runner, plans made once);
//! - `prepared` (`prepare`, `Prepared`, paging mode) → `paging` (`PageRun`, pages);
//! - `client_rewrite` (the texts each partition key range runs) → `client_plan` (the service's
//!   plan for the SDKs' client pipelines, `Prepared::client_plan`).
//! - `computed` (a container's computed properties, substituted into a query before it is
//!   planned; `prepare_with_computed`).
//!
//! This file is only the front door: module declarations and re-exports.

mod ast;
mod builtins;
mod client_plan;
mod client_rewrite;
mod computed;
mod context;
mod datetime;
mod error;
mod eval;
mod exec;
mod functions;
mod lexer;
mod like;
mod paging;
mod parser;
mod plan;
mod prepared;
mod subquery;
mod token;
mod value;

pub use ast::{
    BinaryOp, Expr, From, OffsetLimit, Projection, Query, Select, SelectItem, SortKey, Source,
    UnaryOp,
};
pub use client_plan::{ClientPlan, DistinctType, QueryRange};
pub use client_rewrite::{AggregateKind, ORDER_BY_FILTER_PLACEHOLDER};
pub use computed::{prepare_with_computed, ComputedProperties, COMPUTED_PROPERTIES_MAX};
pub use context::UdfHost;
pub use error::QueryError;
pub use exec::ACCUMULATED_ROWS_MAX;
pub use paging::{Page, PageRun};
pub use parser::{
    parse, EXPRESSION_DEPTH_MAX, JOINS_MAX, PARSER_RECURSION_MAX, QUERY_TEXT_CHARS_MAX,
};
pub use prepared::{prepare, prepare_with_udfs, Prepared, PARAMETERS_MAX};
pub use token::CONTINUATION_CHARS_MAX;
