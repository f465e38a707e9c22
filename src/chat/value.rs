//! Building template values from requests cheaply.
//!
//! Messages, tool calls and small JSON objects become [`SmallMap`]s: an ordered list of
//! key/value pairs looked up by linear scan. For the handful of keys a message has, this is
//! several times cheaper to build, query and drop than a hashed map, and it behaves as a
//! Python dict does in templates (key order, `items()`, `in`, `==`, `tojson`).

use std::sync::Arc;

use minijinja::value::{Enumerator, Object, ObjectExt, ObjectRepr, Value};
use serde_json::Value as Json;

/// Objects with more keys than this use minijinja's hashed map.
const SMALL_MAP_MAX: usize = 24;

/// An insertion-ordered map with linear lookup, for small dicts.
#[derive(Debug)]
pub(crate) struct SmallMap(Vec<(Value, Value)>);

impl SmallMap {
    /// A map value from pairs (keys are expected to be unique).
    pub(crate) fn value(pairs: Vec<(Value, Value)>) -> Value {
        if pairs.len() > SMALL_MAP_MAX {
            return Value::from_pairs(pairs);
        }
        Value::from_object(SmallMap(pairs))
    }
}

impl Object for SmallMap {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        match key.as_str() {
            Some(k) => self
                .0
                .iter()
                .find(|(name, _)| name.as_str() == Some(k))
                .map(|(_, v)| v.clone()),
            None => self
                .0
                .iter()
                .find(|(name, _)| name == key)
                .map(|(_, v)| v.clone()),
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.mapped_key_value_enumerator(|this| {
            Box::new(this.0.iter().map(|(k, v)| (k.clone(), v.clone())))
        })
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.0.len())
    }

    fn is_true(self: &Arc<Self>) -> bool {
        !self.0.is_empty()
    }
}

/// Converts JSON to a template value (objects keep their key order).
pub(crate) fn json_to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::from(items.iter().map(json_to_value).collect::<Vec<_>>()),
        Json::Object(map) => SmallMap::value(
            map.iter()
                .map(|(k, v)| (Value::from(k.as_str()), json_to_value(v)))
                .collect(),
        ),
    }
}
