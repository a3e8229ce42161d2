//! The Azure Cosmos DB for NoSQL query language: lexer, parser, syntax tree, and a pure
//! evaluator that pages results over documents the caller pushes in.
//!
//! The crate does no I/O, reads no clock and knows nothing of storage or HTTP: the engine
//! prepares a query (`prepare`), asks where to resume its scan (`PageRun::resume_after`),
//! pushes visible documents in ascending storage-key order (`PageRun::push`) until told to
//! stop, and takes the page with its continuation token (`PageRun::finish`).
//!
//! The modules, by role: reading text (`lexer`, `parser`, `ast`: the tree, its `Display`, the
//! walkers); built-in functions (`builtins`: their one table; `functions`: one module per
//! family); running a query (`context`, `plan`: checks and derived facts, `eval`: one
//! expression over one row, `exec`: rows, projection, grouping, `subquery`); pages (`prepared`:
//! `prepare`; `paging`: `PageRun`; `token`: continuation tokens; `ordering`: what the index
//! serving an ORDER BY does to its rows); the SDKs' client pipelines
//! (`client_rewrite`, `client_plan`, `hybrid_plan`); ORDER BY RANK (`ranking`: its scoring
//! functions and rules; `scoring`: BM25 and reciprocal rank fusion); computed properties
//! (`computed`); the filter's conjuncts an index can serve (`sargable`, over the byte order of
//! `sort_key`); the vector search a query asks for, which a store of vectors may serve
//! (`vector_search`); and the ground they
//! share (`value`, `json_out`: compact JSON text, `error`, `datetime`, `like`). Which may import which (their floors, from the
//! bottom up) is listed once, in `ARCHITECTURE.md`, where the tidy test checks it.
//!
//! This file is only the front door: module declarations and re-exports.

mod aggregates;
mod ast;
mod builtins;
mod client_plan;
mod client_rewrite;
mod computed;
mod context;
mod covered;
mod datetime;
mod error;
mod eval;
mod exec;
mod full_text;
mod functions;
mod hybrid_plan;
mod json_out;
mod lexer;
mod like;
mod ordering;
mod paging;
mod parser;
mod plan;
mod prepared;
mod ranking;
mod rewrite;
mod sargable;
mod scoring;
mod sort_key;
mod subquery;
mod text_rank;
mod token;
mod value;
mod vector_search;
mod vectors;

pub use ast::{
    BinaryOp, Expr, From, OffsetLimit, Projection, Query, Select, SelectItem, SortKey, Source,
    UnaryOp,
};
pub use client_plan::{ClientPlan, DistinctType, QueryRange};
pub use client_rewrite::{AggregateKind, ORDER_BY_FILTER_PLACEHOLDER};
pub use computed::{prepare_with_computed, ComputedProperties, COMPUTED_PROPERTIES_MAX};
pub use context::UdfHost;
pub use covered::{CoveredAggregate, CoveredQuery};
pub use error::QueryError;
pub use exec::ACCUMULATED_ROWS_MAX;
pub use full_text::{full_text_stem_key, FullTextPolicy, Language};
pub use functions::spatial_grid::{spatial_cells, SPATIAL_CELL_KEY_BYTES};
pub use functions::text::terms as full_text_terms;
pub use hybrid_plan::{ComponentPlan, HybridPlan};
pub use json_out::{to_json_vec, write_json, write_json_str};
pub use ordering::OrderingRules;
pub use paging::{Page, PageRun};
pub use parser::{
    parse, EXPRESSION_DEPTH_MAX, JOINS_MAX, PARSER_RECURSION_MAX, QUERY_TEXT_CHARS_MAX,
};
pub use prepared::{prepare, prepare_with_udfs, Prepared, PARAMETERS_MAX};
pub use sargable::{IndexConjunct, IndexProbe, ProbeKind};
pub use scoring::{bm25, dense_ranks, fuse, Statistics, BM25_B, BM25_K1, RRF_CONSTANT};
pub use sort_key::{
    complement, decode_scalar_key, encode_sort_key, number_bytes, sort_key_extent,
    sort_key_is_exact, string_prefix_key, type_bounds, SORT_KEY_TEXT_BYTES_MAX,
};
pub use text_rank::TextRank;
pub use token::CONTINUATION_CHARS_MAX;
pub use value::{canonical_key, total_order, type_rank};
pub use vector_search::VectorSearch;
pub use vectors::{Distance, VectorPolicy};
