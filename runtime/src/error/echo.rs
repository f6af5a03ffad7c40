//! How much of its input an error may say back. A name or a value a client sent is cut to
//! a short length wherever an error repeats it, and the whole structured error to a few
//! KB, whatever the input: a 4 MB argument name must not come back four times (message
//! and field, text block and `structuredContent`) as 16 MB.

use serde_json::{Map, Value};

/// The most characters of a field's pointer an error repeats (the name a client chose).
pub(crate) const MAX_FIELD_CHARS: usize = 96;

/// The most characters of any one string in an error's structured content.
pub(crate) const MAX_STRING_CHARS: usize = 1_024;

/// The most bytes an error's structured content takes, serialized (the text block
/// repeats it once more).
pub(crate) const MAX_STRUCTURED_BYTES: usize = 6_144;

/// `text` cut to `max` characters, `…` marking the cut.
pub(crate) fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => text.into(),
        Some((end, _)) => format!("{}…", &text[..end]).into(),
    }
}

/// A name a client sent (a tool's, a prompt's, a resource's URI), as an error repeats it:
/// cut to [`MAX_FIELD_CHARS`].
pub(crate) fn name(sent: &str) -> std::borrow::Cow<'_, str> {
    cut(sent, MAX_FIELD_CHARS)
}

/// Every string in `value` (keys too) cut to [`MAX_STRING_CHARS`].
pub(crate) fn bound_strings(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let std::borrow::Cow::Owned(shorter) = cut(text, MAX_STRING_CHARS) {
                *text = shorter;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_strings),
        Value::Object(map) => bound_map(map),
        _ => {}
    }
}

/// [`bound_strings`] for an object.
pub(crate) fn bound_map(map: &mut Map<String, Value>) {
    if map.keys().any(|key| key.len() > MAX_STRING_CHARS) {
        *map = std::mem::take(map)
            .into_iter()
            .map(|(key, value)| (cut(&key, MAX_STRING_CHARS).into_owned(), value))
            .collect();
    }
    map.values_mut().for_each(bound_strings);
}

/// The serialized size of `value`.
pub(crate) fn size(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_long_text_is_cut_on_a_character_boundary() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("ééééé", 2), "éé…");
    }

    #[test]
    fn every_string_and_key_is_bounded() {
        let long = "x".repeat(10_000);
        let mut value = json!({ long.clone(): [long.clone(), { "a": long }] });
        bound_strings(&mut value);
        assert!(size(&value) < 4 * MAX_STRING_CHARS, "{}", size(&value));
    }
}
