//! What a script resource's body must hold when it is stored: a stored procedure, trigger or
//! user-defined function has a `body` string (stored whether or not it compiles, as the
//! service stores it; it fails when it runs), and a trigger also a
//! `triggerType` (`Pre`, `Post`) and a `triggerOperation` (`All`, `Create`, `Update`,
//! `Replace`, `Delete`, .NET's `Upsert`, the REST reference's `Insert` for `Create`).
//!
//! The SDKs spell the trigger fields differently (Python and JavaScript send `pre` and `all`,
//! .NET `Pre` and `All`), so they are matched without regard to case and stored exactly as sent:
//! the SDKs compare the echo with what they sent. It neither reads nor writes storage.

use super::kinds::ResourceKind;
use crate::error::{EngineError, EngineResult, ErrorCode};
use serde_json::{Map, Value};

/// When a trigger runs: before the operation that names it, or after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TriggerType {
    Pre,
    Post,
}

impl TriggerType {
    /// A stored `triggerType`, in any case.
    pub fn parse(text: &str) -> Option<TriggerType> {
        [("pre", TriggerType::Pre), ("post", TriggerType::Post)]
            .into_iter()
            .find_map(|(name, value)| text.eq_ignore_ascii_case(name).then_some(value))
    }
}

/// Which operations a trigger may run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TriggerOperation {
    All,
    Create,
    Update,
    Replace,
    Delete,
    /// Only the .NET SDK (v3) offers it.
    Upsert,
}

impl TriggerOperation {
    /// A stored `triggerOperation`, in any case; the REST reference's `Insert` is `Create`.
    pub fn parse(text: &str) -> Option<TriggerOperation> {
        [
            ("all", TriggerOperation::All),
            ("create", TriggerOperation::Create),
            ("insert", TriggerOperation::Create),
            ("update", TriggerOperation::Update),
            ("replace", TriggerOperation::Replace),
            ("delete", TriggerOperation::Delete),
            ("upsert", TriggerOperation::Upsert),
        ]
        .into_iter()
        .find_map(|(name, value)| text.eq_ignore_ascii_case(name).then_some(value))
    }
}

fn invalid(message: String) -> EngineError {
    EngineError::with_message(ErrorCode::InvalidDocument, message)
}

/// A string property of the body, or the failure for a value of another type.
fn text_property<'a>(body: &'a Map<String, Value>, name: &str) -> EngineResult<Option<&'a str>> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(invalid(format!(
            "The input content is invalid because the property '{name}' must be a string, not {other}."
        ))),
    }
}

/// Checks a script resource's body before it is stored: the required properties (all missing
/// ones named at once, in the service's words) and the trigger fields. Other kinds pass
/// unchecked.
pub(crate) fn check_script_body(kind: ResourceKind, body: &Map<String, Value>) -> EngineResult<()> {
    if !kind.is_script() {
        return Ok(());
    }
    let source = text_property(body, "body")?;
    let mut missing = Vec::new();
    if source.is_none() {
        missing.push("body");
    }
    if kind == ResourceKind::Trigger {
        let fields = [
            (
                "triggerType",
                text_property(body, "triggerType")?.map(|text| TriggerType::parse(text).is_some()),
            ),
            (
                "triggerOperation",
                text_property(body, "triggerOperation")?
                    .map(|text| TriggerOperation::parse(text).is_some()),
            ),
        ];
        for (name, known) in fields {
            match known {
                None => missing.push(name),
                Some(true) => {}
                Some(false) => return Err(invalid(unknown_value_message(name, body))),
            }
        }
    }
    if !missing.is_empty() {
        let names: String = missing.iter().map(|name| format!("{name}; ")).collect();
        return Err(invalid(format!(
            "The input content is invalid because the required properties - '{names}' - are missing"
        )));
    }
    // The JavaScript itself is not compiled here: the service stores a body that does not
    // compile (the SDKs' own suites store such bodies and read them back) and reports the
    // error when the script runs (`scripts/execute.rs`, `scripts/udfs.rs`).
    Ok(())
}

/// The message for a trigger field whose value names no type or operation.
fn unknown_value_message(name: &str, body: &Map<String, Value>) -> String {
    let value = body.get(name).and_then(Value::as_str).unwrap_or_default();
    let allowed = if name == "triggerType" {
        "Pre or Post"
    } else {
        "All, Create, Update, Replace, Delete or Upsert"
    };
    format!("The value '{value}' of {name} is invalid: it must be {allowed}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(kind: ResourceKind, body: Value) -> Result<(), String> {
        let Value::Object(body) = body else {
            panic!("not an object")
        };
        check_script_body(kind, &body).map_err(|error| error.to_string())
    }

    #[test]
    fn trigger_fields_parse_in_any_case() {
        assert_eq!(TriggerType::parse("pre"), Some(TriggerType::Pre));
        assert_eq!(TriggerType::parse("POST"), Some(TriggerType::Post));
        assert_eq!(TriggerType::parse("during"), None);
        assert_eq!(TriggerOperation::parse("all"), Some(TriggerOperation::All));
        assert_eq!(
            TriggerOperation::parse("Insert"),
            Some(TriggerOperation::Create)
        );
        assert_eq!(
            TriggerOperation::parse("Upsert"),
            Some(TriggerOperation::Upsert)
        );
        assert_eq!(TriggerOperation::parse("read"), None);
    }

    #[test]
    fn scripts_need_a_body_string() {
        let sproc = ResourceKind::StoredProcedure;
        assert_eq!(
            check(sproc, json!({"id": "s", "body": "function () {}"})),
            Ok(())
        );
        assert_eq!(
            check(sproc, json!({"id": "s"})),
            Err("The input content is invalid because the required properties - 'body; ' - are missing".into())
        );
        assert!(check(sproc, json!({"id": "s", "body": 3}))
            .is_err_and(|message| message.contains("'body' must be a string")));
        // A body that does not compile is stored; it fails when it runs.
        assert_eq!(
            check(
                ResourceKind::UserDefinedFunction,
                json!({"id": "f", "body": "function () {\n  var a = 1;\n  a = +;\n}"})
            ),
            Ok(())
        );
        // Users, permissions and conflicts have no body to check.
        assert_eq!(check(ResourceKind::User, json!({"id": "u"})), Ok(()));
    }

    #[test]
    fn triggers_need_a_known_type_and_operation() {
        let trigger = ResourceKind::Trigger;
        let body = "function () {}";
        assert_eq!(
            check(
                trigger,
                json!({"id": "t", "body": body, "triggerType": "pre", "triggerOperation": "all"})
            ),
            Ok(())
        );
        assert_eq!(
            check(trigger, json!({"id": "t", "body": body})),
            Err("The input content is invalid because the required properties - 'triggerType; triggerOperation; ' - are missing".into())
        );
        assert_eq!(
            check(
                trigger,
                json!({"id": "t", "body": body, "triggerType": "During", "triggerOperation": "All"})
            ),
            Err("The value 'During' of triggerType is invalid: it must be Pre or Post.".into())
        );
        assert!(check(
            trigger,
            json!({"id": "t", "body": body, "triggerType": "Post", "triggerOperation": "read"})
        )
        .is_err_and(|message| message.contains("'read' of triggerOperation")));
    }
}
