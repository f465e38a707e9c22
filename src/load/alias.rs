//! Model aliases: the names a router's clients use, mapped to tokenizer sources.
//!
//! A router serves `my-llama-ft`; its tokenizer is `meta-llama/Llama-3.1-8B-Instruct`.
//! Aliases are resolved before anything else, so an alias may shadow a path,
//! an encoding or an OpenAI model name (the built-in table stays the default).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Longest alias chain followed before it is reported as a cycle-free but
/// runaway definition (a chain this long is a configuration mistake).
const MAX_HOPS: usize = 32;

/// Largest alias file read, in bytes: it is configuration, not data.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Model name → tokenizer source (a hub id `org/name[@rev]`, a path, a tiktoken
/// encoding, an OpenAI model name, or another alias).
///
/// ```
/// use router_tokenizer::{LoadOptions, ModelAliases};
///
/// let mut aliases = ModelAliases::new();
/// aliases.insert("my-gpt", "o200k_base")?;
/// aliases.insert("support-bot", "my-gpt")?;
/// let options = LoadOptions::default().with_aliases(aliases);
/// let tok = options.load("support-bot")?;
/// assert_eq!(tok.source(), "o200k_base");
///
/// // A cycle is an error that names it, not a hang.
/// let mut looped = ModelAliases::new();
/// looped.insert("a", "b")?;
/// looped.insert("b", "a")?;
/// assert!(looped.resolve("a").unwrap_err().to_string().contains("a -> b -> a"));
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelAliases {
    map: BTreeMap<String, String>,
}

impl ModelAliases {
    /// No aliases.
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps `name` to `source`, replacing an earlier mapping of `name`.
    /// An empty name or an empty source is an error.
    pub fn insert(&mut self, name: impl Into<String>, source: impl Into<String>) -> Result<()> {
        let (name, source) = (name.into(), source.into());
        if name.trim().is_empty() {
            return Err(alias_error(&name, "the alias name is empty"));
        }
        if source.trim().is_empty() {
            return Err(alias_error(
                &name,
                "the alias points to nothing (empty source)",
            ));
        }
        self.map.insert(name, source);
        Ok(())
    }

    /// Parses `NAME=SOURCE`, the command line's `--alias` form.
    pub fn insert_pair(&mut self, pair: &str) -> Result<()> {
        let (name, source) = pair.split_once('=').ok_or_else(|| {
            alias_error(
                pair,
                "expected NAME=SOURCE (for example my-llama=meta-llama/Llama-3.1-8B-Instruct)",
            )
        })?;
        self.insert(name.trim(), source.trim())
    }

    /// Adds every alias in a JSON (`{"name": "source", …}`) or TOML
    /// (`name = "source"`) file; a `.toml` extension picks TOML, anything else
    /// is tried as JSON first.
    pub fn extend_from_file(&mut self, path: &Path) -> Result<()> {
        let text = read_config_text(path)?;
        let is_toml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
        let table: BTreeMap<String, String> = if is_toml {
            toml::from_str(&text).map_err(|e| {
                Error::parse(
                    path,
                    format!("alias file (TOML of name = \"source\"): {}", e.message()),
                )
            })?
        } else {
            match serde_json::from_str(&text) {
                Ok(table) => table,
                Err(json_err) => toml::from_str(&text).map_err(|_| {
                    Error::parse(
                        path,
                        format!(
                            "alias file: neither a JSON object of strings nor TOML (JSON: line {}, column {})",
                            json_err.line(),
                            json_err.column()
                        ),
                    )
                })?,
            }
        };
        for (name, source) in table {
            self.insert(name, source)
                .map_err(|e| Error::parse(path, e.kind().to_string()))?;
        }
        Ok(())
    }

    /// The aliases, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Follows `name` through the aliases to a source that is not an alias;
    /// a name that is no alias is returned as it is. An alias naming itself
    /// (`gpt-4o -> gpt-4o`, a table listing every served model) is that
    /// source, not a cycle; a loop through other names is.
    pub fn resolve<'a>(&'a self, name: &'a str) -> Result<&'a str> {
        let mut chain: Vec<&str> = vec![name];
        let mut current = name;
        while let Some(next) = self.map.get(current) {
            let next = next.as_str();
            if next == current {
                break;
            }
            if chain.contains(&next) {
                chain.push(next);
                return Err(alias_error(
                    name,
                    &format!("alias cycle: {}", chain.join(" -> ")),
                ));
            }
            chain.push(next);
            if chain.len() > MAX_HOPS {
                return Err(alias_error(
                    name,
                    &format!("alias chain longer than {MAX_HOPS}"),
                ));
            }
            current = next;
        }
        Ok(current)
    }
}

/// Reads a small regular file as UTF-8, refusing devices and FIFOs and
/// anything over [`MAX_FILE_BYTES`].
fn read_config_text(path: &Path) -> Result<String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::parse(path, "alias file: not a regular file"));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::parse(
            path,
            format!("alias file: larger than {MAX_FILE_BYTES} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| Error::parse(path, "alias file: not UTF-8"))
}

fn alias_error(name: &str, reason: &str) -> Error {
    Error::new(ErrorKind::Alias {
        name: name.to_owned(),
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_resolve_and_unknown_names_pass_through() {
        let mut a = ModelAliases::new();
        a.insert("x", "y").unwrap();
        a.insert("y", "org/model@v1").unwrap();
        assert_eq!(a.resolve("x").unwrap(), "org/model@v1");
        assert_eq!(a.resolve("org/other").unwrap(), "org/other");
    }

    #[test]
    fn cycles_and_empty_targets_are_errors() {
        let mut a = ModelAliases::new();
        a.insert("self", "self").unwrap();
        assert_eq!(a.resolve("self").unwrap(), "self");
        a.insert("p", "q").unwrap();
        a.insert("q", "p").unwrap();
        let err = a.resolve("p").unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Alias { .. }));
        assert!(err.to_string().contains("p -> q -> p"), "{err}");
        assert!(a.insert("empty", " ").is_err());
        assert!(a.insert("", "o200k_base").is_err());
        assert!(a.insert_pair("no-equals-sign").is_err());
    }

    #[test]
    fn runaway_chains_stop() {
        let mut a = ModelAliases::new();
        for i in 0..100 {
            a.insert(format!("n{i}"), format!("n{}", i + 1)).unwrap();
        }
        assert!(
            a.resolve("n0")
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
    }
}
