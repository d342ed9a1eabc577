//! Readers of an object's JSON that every readiness rule shares: one field (`integer`, `text`),
//! `status` (`has_status`), `metadata.generation`, and the conditions of `status.conditions`
//! ([`Condition`], `condition`, `is_true`, and [`conditions`] for failure reports).

use serde_json::Value;

/// One condition of `status.conditions`.
pub(super) struct Condition<'a>(pub(super) &'a Value);

impl Condition<'_> {
    /// One field of the condition (`type`, `status`, `reason`, `message`), `""` when missing.
    pub(super) fn field(&self, name: &str) -> &str {
        self.0.get(name).and_then(Value::as_str).unwrap_or("")
    }
    /// Whether its status is `True`.
    pub(super) fn is_true(&self) -> bool {
        self.field("status") == "True"
    }
    /// `Type=Status (Reason): message`, leaving out what is empty.
    pub(super) fn describe(&self) -> String {
        let mut text = format!("{}={}", self.field("type"), self.field("status"));
        let reason = self.field("reason");
        if !reason.is_empty() {
            text.push_str(&format!(" ({reason})"));
        }
        let message = self.field("message");
        if !message.is_empty() {
            text.push_str(&format!(": {message}"));
        }
        text
    }
}

/// The condition of type `kind`, if the object has one.
pub(super) fn condition<'a>(object: &'a Value, kind: &str) -> Option<Condition<'a>> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .map(Condition)
}

/// Whether the object has condition `kind` with status `True`.
pub(super) fn is_true(object: &Value, kind: &str) -> bool {
    condition(object, kind).is_some_and(|c| c.is_true())
}

/// The integer at `pointer`, if there is one.
pub(super) fn integer(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

/// The string at `pointer`, `""` when missing or not a string.
pub(super) fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether `status` is a non-empty object.
pub(super) fn has_status(object: &Value) -> bool {
    object.get("status").and_then(Value::as_object).is_some_and(|status| !status.is_empty())
}

/// Every condition of the object, one `Type=Status (Reason): message` each, for failure reports.
#[must_use]
pub fn conditions(object: &Value) -> Vec<String> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|all| all.iter().map(|c| Condition(c).describe()).collect())
        .unwrap_or_default()
}

/// `metadata.generation`, if set.
pub(super) fn generation_of(object: &Value) -> Option<i64> {
    integer(object, "/metadata/generation")
}
