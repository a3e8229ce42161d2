//! Writing JSON text from parts: response envelopes (feeds, batch results) whose members are
//! either values we build or fragments that are already JSON text, such as an item's stored
//! bytes, which are copied in as they are, never parsed back.
//!
//! The caller vouches that a fragment is one valid JSON value; this module does not check it.

use serde_json::Value;

/// A JSON object written member by member, in order.
pub struct ObjectWriter {
    out: Vec<u8>,
    empty: bool,
}

impl ObjectWriter {
    pub fn new() -> ObjectWriter {
        ObjectWriter::with_capacity(64)
    }

    pub fn with_capacity(bytes: usize) -> ObjectWriter {
        let mut out = Vec::with_capacity(bytes);
        out.push(b'{');
        ObjectWriter { out, empty: true }
    }

    fn name(&mut self, name: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_value(&mut self.out, &Value::from(name));
        self.out.push(b':');
    }

    /// A member whose value is serialized here.
    pub fn value(mut self, name: &str, value: impl Into<Value>) -> ObjectWriter {
        self.name(name);
        write_value(&mut self.out, &value.into());
        self
    }

    /// A member whose value is already JSON text.
    pub fn fragment(mut self, name: &str, json: &[u8]) -> ObjectWriter {
        self.name(name);
        self.out.extend_from_slice(json);
        self
    }

    /// A member whose value is an array of JSON texts; returns how many there were.
    pub fn fragments<T: AsRef<[u8]>>(
        &mut self,
        name: &str,
        items: impl IntoIterator<Item = T>,
    ) -> usize {
        self.name(name);
        write_array(&mut self.out, items)
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(b'}');
        self.out
    }
}

impl Default for ObjectWriter {
    fn default() -> ObjectWriter {
        ObjectWriter::new()
    }
}

/// Writes `[a,b,...]` from JSON texts; returns how many there were.
pub fn write_array<T: AsRef<[u8]>>(out: &mut Vec<u8>, items: impl IntoIterator<Item = T>) -> usize {
    out.push(b'[');
    let mut count = 0;
    for item in items {
        if count > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.as_ref());
        count += 1;
    }
    out.push(b']');
    count
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    lethedb_engine::write_json(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_and_arrays_splice_fragments_as_they_are() {
        let mut writer = ObjectWriter::new().value("_rid", "a\"b");
        let count = writer.fragments("Documents", [br#"{"x":1.0}"#.as_slice(), b"[2]"]);
        let text = writer.value("_count", count).finish();
        assert_eq!(
            String::from_utf8(text).expect("utf-8"),
            r#"{"_rid":"a\"b","Documents":[{"x":1.0},[2]],"_count":2}"#
        );
        let entry = ObjectWriter::new()
            .value("statusCode", 201)
            .value("requestCharge", 1.5)
            .fragment("resourceBody", br#"{"id":"a"}"#)
            .finish();
        let parsed: Value = serde_json::from_slice(&entry).expect("json");
        assert_eq!(
            parsed,
            json!({"statusCode": 201, "requestCharge": 1.5, "resourceBody": {"id": "a"}})
        );
        let mut out = Vec::new();
        assert_eq!(write_array(&mut out, Vec::<Vec<u8>>::new()), 0);
        assert_eq!(out, b"[]");
    }
}
