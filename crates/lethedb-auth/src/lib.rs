//! LetheDB's authorization tokens: master-key request signatures (`master.rs`), the resource
//! tokens a permission hands out (`resource_token.rs`), and the Entra ID tokens the Cosmos DB
//! emulator accepts (`entra.rs`).
//!
//! It is its own crate so that clients such as the load generator can sign requests without
//! building the server (no HTTP stack, no storage): it depends only on the hashing and encoding
//! crates signing needs. Public API, by file:
//! - `master.rs`: [`MasterKey`] (sign, verify, the header a client sends), [`parse_authorization`]
//!   (and its two steps, [`decode_authorization`] or [`decode_authorization_into`] a buffer,
//!   and [`parse_decoded_authorization`]),
//!   [`header_starts_with`], [`Token`], [`EMULATOR_KEY`], [`CLOCK_SKEW_MAX_SECS`], [`AUTHORIZATION_BYTES_MAX`].
//! - `resource_token.rs`: [`ResourceToken`] (what a token names), [`TokenError`],
//!   [`RESOURCE_TOKEN_PREFIX`].
//! - `entra.rs`: [`check_emulator_entra_token`], [`EntraError`], [`ENTRA_TOKEN_PREFIX`].

mod entra;
mod master;
mod resource_token;

pub use entra::{check_emulator_entra_token, EntraError, ENTRA_TOKEN_PREFIX};
pub use master::{
    decode_authorization, decode_authorization_into, header_starts_with, parse_authorization,
    parse_decoded_authorization, MasterKey, Token, AUTHORIZATION_BYTES_MAX, CLOCK_SKEW_MAX_SECS,
    EMULATOR_KEY,
};
pub use resource_token::{ResourceToken, TokenError, RESOURCE_TOKEN_PREFIX};
