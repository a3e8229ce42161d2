//! The Cosmos DB SQL query language (placeholder until the query crate lands).
