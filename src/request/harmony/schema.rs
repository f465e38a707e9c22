//! A tool's JSON schema drawn as Harmony's TypeScript-like type, character
//! for character as `openai-harmony` 0.0.8 draws it: the model was trained on
//! that drawing, and engines send it, quirks included (nested objects keep
//! their parent's indent, `anyOf` is `any`, `integer` is `number`).

use serde_json::Value as Json;

/// The type of `schema` at `indent`.
pub(super) fn typescript(schema: &Json, indent: &str) -> String {
    if let Some(variants) = schema.get("oneOf").and_then(Json::as_array) {
        return union(variants, indent);
    }
    let ty = schema.get("type");
    if let Some(list) = ty.and_then(Json::as_array) {
        let names: Vec<&str> = list
            .iter()
            .filter_map(Json::as_str)
            .map(|t| if t == "integer" { "number" } else { t })
            .collect();
        if !names.is_empty() {
            return names.join(" | ");
        }
    }
    match ty.and_then(Json::as_str) {
        Some("object") => object(schema, indent),
        Some("string") => string(schema),
        Some("number" | "integer") => "number".to_owned(),
        Some("boolean") => "boolean".to_owned(),
        Some("array") => match schema.get("items") {
            Some(items) => format!("{}[]", typescript(items, indent)),
            None => "Array<any>".to_owned(),
        },
        _ => "any".to_owned(),
    }
}

/// Whether `schema` has a non-empty `enum`.
fn is_enum(schema: &Json) -> bool {
    schema
        .get("enum")
        .and_then(Json::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// A variant's type, with ` | null` where it is `nullable` and says no null.
fn nullable_type(schema: &Json, indent: &str) -> String {
    let ty = typescript(schema, indent);
    let nullable = schema.get("nullable").and_then(Json::as_bool) == Some(true);
    if nullable && !ty.contains("null") {
        format!("{ty} | null")
    } else {
        ty
    }
}

/// How a default shows in a comment: a string quoted unless the schema is an
/// enum (then bare), anything else as compact JSON.
fn default_text(schema: &Json, default: &Json) -> String {
    match default.as_str() {
        Some(s) if !is_enum(schema) => format!("\"{s}\""),
        Some(s) => s.to_owned(),
        None => json_text(default),
    }
}

/// Compact JSON as openai-harmony 0.0.8 writes it: its serde_json formats
/// floats with ryu (`1e20`, `1e-7`); the serde_json here writes `1e+20`.
fn json_text(value: &Json) -> String {
    struct Ryu;
    impl serde_json::ser::Formatter for Ryu {
        fn write_f64<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            v: f64,
        ) -> std::io::Result<()> {
            let text = serde_json::to_string(&v).map_err(std::io::Error::other)?;
            w.write_all(text.replacen("e+", "e", 1).as_bytes())
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Ryu);
    // A `Value` always serializes, to UTF-8; the plain form stands in should
    // either ever fail.
    match serde::Serialize::serialize(value, &mut ser) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| value.to_string()),
        Err(_) => value.to_string(),
    }
}

/// A top-level `oneOf`: one `\n{indent} | ` line per variant.
fn union(variants: &[Json], indent: &str) -> String {
    let mut out = String::new();
    let deeper = format!("{indent}   ");
    for variant in variants {
        out.push('\n');
        out.push_str(indent);
        out.push_str(" | ");
        out.push_str(&nullable_type(variant, &deeper));
        let mut notes = Vec::new();
        if let Some(d) = variant.get("description").and_then(Json::as_str) {
            notes.push(d.to_owned());
        }
        if let Some(default) = variant.get("default") {
            // At the top level an enum's string default keeps its JSON quotes.
            notes.push(match default.as_str() {
                Some(s) if !is_enum(variant) => format!("default: \"{s}\""),
                _ => format!("default: {}", json_text(default)),
            });
        }
        if !notes.is_empty() {
            out.push_str(" // ");
            out.push_str(&notes.join(" "));
        }
    }
    out
}

/// A string, or the union of its string `enum` values.
fn string(schema: &Json) -> String {
    let values: Vec<String> = schema
        .get("enum")
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Json::as_str)
                .map(|s| format!("\"{s}\""))
                .collect()
        })
        .unwrap_or_default();
    if values.is_empty() {
        "string".to_owned()
    } else {
        values.join(" | ")
    }
}

/// An object: its description, then one line (or block) per property.
fn object(schema: &Json, indent: &str) -> String {
    let mut out = String::new();
    if let Some(d) = schema.get("description").and_then(Json::as_str) {
        out.push_str(&format!("{indent}// {d}\n"));
    }
    out.push_str("{\n");
    if let Some(props) = schema.get("properties").and_then(Json::as_object) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        for (key, prop) in props {
            let mark = if required.contains(&key.as_str()) {
                ""
            } else {
                "?"
            };
            property(&mut out, key, mark, prop, indent);
        }
    }
    out.push_str(indent);
    out.push('}');
    out
}

/// One property of an object.
fn property(out: &mut String, key: &str, mark: &str, prop: &Json, indent: &str) {
    if let Some(t) = prop.get("title").and_then(Json::as_str) {
        out.push_str(&format!("{indent}// {t}\n{indent}//\n"));
    }
    let has_one_of = prop.get("oneOf").is_some();
    if !has_one_of && let Some(d) = prop.get("description").and_then(Json::as_str) {
        out.push_str(&format!("{indent}// {d}\n"));
    }
    if let Some(examples) = prop.get("examples").and_then(Json::as_array)
        && !examples.is_empty()
    {
        out.push_str(&format!("{indent}// Examples:\n"));
        for e in examples.iter().filter_map(Json::as_str) {
            out.push_str(&format!("{indent}// - \"{e}\"\n"));
        }
    }
    if let Some(variants) = prop.get("oneOf").and_then(Json::as_array) {
        one_of_property(out, key, mark, prop, variants, indent);
        return;
    }
    out.push_str(&format!("{indent}{key}{mark}: "));
    out.push_str(&nullable_type(prop, &format!("{indent}    ")));
    out.push(',');
    if !has_one_of && let Some(default) = prop.get("default") {
        out.push_str(&format!(" // default: {}", default_text(prop, default)));
    }
    out.push('\n');
}

/// A property whose type is a `oneOf`: its comments above, one variant a line.
fn one_of_property(
    out: &mut String,
    key: &str,
    mark: &str,
    prop: &Json,
    variants: &[Json],
    indent: &str,
) {
    let desc = prop.get("description").and_then(Json::as_str);
    let first_desc = variants
        .first()
        .and_then(|v| v.get("description"))
        .and_then(Json::as_str);
    // The property's description is drawn above unless the first variant
    // repeats it (then that variant carries it).
    let desc_above = desc.filter(|d| Some(*d) != first_desc);
    if let Some(d) = desc_above {
        out.push_str(&format!("{indent}// {d}\n"));
    }
    if let Some(default) = prop.get("default") {
        out.push_str(&format!(
            "{indent}// default: {}\n",
            default_text(prop, default)
        ));
    }
    out.push_str(&format!("{indent}{key}{mark}:\n"));
    let deeper = format!("{indent}   ");
    for (i, variant) in variants.iter().enumerate() {
        out.push_str(&format!("{indent} | "));
        out.push_str(&nullable_type(variant, &deeper));
        let mut notes = Vec::new();
        if !(i == 0 && desc_above.is_some())
            && let Some(d) = variant.get("description").and_then(Json::as_str)
            && Some(d) != desc
        {
            notes.push(d.to_owned());
        }
        if let Some(default) = variant.get("default") {
            notes.push(format!("default: {}", default_text(variant, default)));
        }
        if !notes.is_empty() {
            out.push_str(" // ");
            out.push_str(&notes.join(" "));
        }
        out.push('\n');
    }
    out.push_str(&format!("{indent},\n"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn draws_the_basic_kinds() {
        let schema = json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City"},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "days": {"type": "integer", "nullable": true},
                "tags": {"type": "array", "items": {"type": "string"}},
                "any": {"type": ["string", "integer"]},
            },
            "required": ["location"],
        });
        assert_eq!(
            typescript(&schema, ""),
            "{\n// City\nlocation: string,\nunit?: \"c\" | \"f\", // default: c\n\
             days?: number | null,\ntags?: string[],\nany?: string | number,\n}"
        );
    }

    #[test]
    fn draws_one_of() {
        assert_eq!(
            typescript(
                &json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
                ""
            ),
            "\n | string\n | number"
        );
    }
}
