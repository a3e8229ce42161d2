//! Authorization tokens, re-exported from the `lethedb-auth` crate.
//!
//! The signing rule, the header parser, the clock-skew limit, resource tokens and the
//! emulator's Entra ID tokens live in `lethedb-auth` so that clients can sign requests without
//! building the server; this module only keeps the old path `lethedb_server::auth::…` working.
//! Which link a path signs is the router's, not this module's.

pub use lethedb_auth::{
    check_emulator_entra_token, parse_authorization, EntraError, MasterKey, ResourceToken, Token,
    TokenError, AUTHORIZATION_BYTES_MAX, CLOCK_SKEW_MAX_SECS, ENTRA_TOKEN_PREFIX,
};
