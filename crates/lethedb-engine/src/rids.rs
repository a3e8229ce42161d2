//! Resource ids (`_rid`) and ETags in the service's encodings.
//!
//! A database's rid is its number (4 bytes); a container's adds its number with the top bit set
//! (8 bytes); an item's adds its document number (16 bytes). Children of a container (stored
//! procedures, triggers, user-defined functions, conflicts) are 16 bytes too: the container's 8
//! and an 8-byte number whose top byte marks the kind, so they never collide with items. A user
//! is its database's 4 bytes and a 4-byte number with the top bit clear (so never a container);
//! a permission adds an 8-byte marked number to its user's 8, and a client encryption key an
//! 8-byte marked number to its database's 4 (12 bytes, a length no other resource has). This
//! module only encodes bytes.

use base64::Engine as _;

/// Resource ids in the service's encoding: base64 with `/` written as `-`.
pub(crate) fn encode_rid(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(bytes)
        .replace('/', "-")
}

/// Decodes a resource id; `None` if it is not one.
pub fn decode_rid(rid: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(rid.replace('-', "/"))
        .ok()
}

/// The length in bytes of a database's rid.
pub(crate) const DATABASE_RID_BYTES: usize = 4;
/// The length in bytes of a container's (or a user's) rid.
pub(crate) const CONTAINER_RID_BYTES: usize = 8;
/// The length in bytes of a client encryption key's rid: its database's and a marked number.
pub(crate) const DATABASE_CHILD_RID_BYTES: usize = DATABASE_RID_BYTES + 8;
/// The length in bytes of an item's (or any grandchild's) rid.
pub(crate) const DOCUMENT_RID_BYTES: usize = 16;

pub fn database_rid(database_number: u32) -> String {
    encode_rid(&database_number.to_le_bytes())
}

pub fn container_rid(database_number: u32, container_number: u32) -> String {
    let mut bytes = database_number.to_le_bytes().to_vec();
    // The service sets the top bit of a collection's part of the id.
    bytes.extend_from_slice(&(container_number | 0x8000_0000).to_be_bytes());
    encode_rid(&bytes)
}

pub fn document_rid(database_number: u32, container_number: u32, document_number: u64) -> String {
    let mut bytes = Vec::with_capacity(16);
    bytes.extend_from_slice(&database_number.to_le_bytes());
    bytes.extend_from_slice(&(container_number | 0x8000_0000).to_be_bytes());
    bytes.extend_from_slice(&document_number.to_le_bytes());
    encode_rid(&bytes)
}

/// The `_rid` of a partition key range: its container's rid, then 8 bytes whose last byte marks
/// a range (as the service's do) and whose first ones count the range ids from 2.
pub fn partition_key_range_rid(
    database_number: u32,
    container_number: u32,
    range_id: u32,
) -> String {
    let mut bytes = database_number.to_le_bytes().to_vec();
    bytes.extend_from_slice(&(container_number | 0x8000_0000).to_be_bytes());
    let mut tail = (u64::from(range_id) + 2).to_le_bytes();
    tail[7] = 0x50;
    bytes.extend_from_slice(&tail);
    encode_rid(&bytes)
}

/// The document number an item's rid carries; `None` if `rid` is not an item's.
pub(crate) fn document_number_of(rid: &str) -> Option<u64> {
    let bytes = decode_rid(rid).filter(|b| b.len() == DOCUMENT_RID_BYTES)?;
    Some(u64::from_le_bytes(
        bytes[CONTAINER_RID_BYTES..].try_into().ok()?,
    ))
}

/// Whether `rid` decodes to exactly `length` bytes (the shape of one kind of resource).
pub(crate) fn has_length(rid: &str, length: usize) -> bool {
    decode_rid(rid).map(|bytes| bytes.len()) == Some(length)
}

/// A user's rid: its database's rid and the user's number with the top bit clear.
pub(crate) fn user_rid(database_rid_bytes: &[u8], user_number: u32) -> String {
    let mut bytes = database_rid_bytes.to_vec();
    bytes.extend_from_slice(&(user_number & 0x7fff_ffff).to_be_bytes());
    encode_rid(&bytes)
}

/// A grandchild's rid: its parent's 8 bytes and the child number with a kind marker in the
/// top byte.
pub(crate) fn marked_child_rid(parent_rid_bytes: &[u8], marker: u8, number: u64) -> String {
    let mut bytes = parent_rid_bytes.to_vec();
    let marked = (number & 0x00ff_ffff_ffff_ffff) | (u64::from(marker) << 56);
    bytes.extend_from_slice(&marked.to_le_bytes());
    encode_rid(&bytes)
}

/// The quoted ETag of a write: unique per container LSN.
pub fn etag(container_number: u64, lsn: u64) -> String {
    // Written by hand: every item read and write forms one, and `format!` cost a point read
    // 4 % of its instructions.
    let mut text = String::with_capacity(38);
    text.push('"');
    push_hex(&mut text, u64::from(container_number as u32), 8);
    text.push('-');
    push_hex(&mut text, lsn >> 48, 4);
    text.push_str("-0000-0000-");
    push_hex(&mut text, lsn & 0xffff_ffff_ffff, 12);
    text.push('"');
    text
}

/// Appends the low `digits` hex digits of `value`, lower case, zero-padded.
fn push_hex(text: &mut String, value: u64, digits: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..digits).rev() {
        text.push(char::from(HEX[((value >> (shift * 4)) & 0xf) as usize]));
    }
}

/// A catalog ETag: unique per change, derived from the resource's number and the write's instant.
pub(crate) fn catalog_etag(number: u64, now_ms: i64) -> String {
    format!(
        "\"{number:08x}-0000-0000-0000-{:012x}\"",
        now_ms as u64 & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rids_have_the_services_lengths() {
        assert_eq!(database_rid(1).len(), 8);
        assert_eq!(container_rid(1, 1).len(), 12);
        assert_eq!(document_rid(1, 1, 1).len(), 24);
        assert!(!document_rid(u32::MAX, u32::MAX, u64::MAX).contains('/'));
        assert_ne!(etag(1, 1), etag(1, 2));
        assert_eq!(
            etag(0x1_0000_1234, (5 << 48) | 0xabc),
            "\"00001234-0005-0000-0000-000000000abc\""
        );
        assert_eq!(document_number_of(&document_rid(1, 2, 77)), Some(77));
        assert_eq!(document_number_of(&container_rid(1, 2)), None);
    }

    #[test]
    fn child_rids_do_not_collide_with_their_siblings() {
        let container = decode_rid(&container_rid(3, 4)).unwrap_or_default();
        let sproc = marked_child_rid(&container, 0x08, 1);
        assert_eq!(
            decode_rid(&sproc).map(|b| b.len()),
            Some(DOCUMENT_RID_BYTES)
        );
        assert_ne!(sproc, document_rid(3, 4, 1));
        assert_ne!(sproc, marked_child_rid(&container, 0x07, 1));
        let database = decode_rid(&database_rid(3)).unwrap_or_default();
        assert_ne!(user_rid(&database, 4), container_rid(3, 4));
        assert!(has_length(&user_rid(&database, 4), CONTAINER_RID_BYTES));
        // A client encryption key's rid has a length of its own.
        let key = marked_child_rid(&database, 0x0A, 4);
        assert!(has_length(&key, DATABASE_CHILD_RID_BYTES));
        for other in [CONTAINER_RID_BYTES, DOCUMENT_RID_BYTES] {
            assert!(!has_length(&key, other));
        }
    }
}
