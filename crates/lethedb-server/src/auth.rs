//! Master-key authorization, re-exported from the `lethedb-auth` crate.
//!
//! The signing rule, the header parser and the clock-skew limit live in `lethedb-auth` so that
//! clients can sign requests without building the server; this module only keeps the old path
//! `lethedb_server::auth::…` working. Which link a path signs is the router's, not this module's.

pub use lethedb_auth::{
    parse_authorization, MasterKey, Token, AUTHORIZATION_BYTES_MAX, CLOCK_SKEW_MAX_SECS,
};
