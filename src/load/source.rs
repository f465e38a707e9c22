//! Parsing a source string: path, tiktoken encoding, OpenAI model, or hub id.

use std::path::PathBuf;

use super::LoadOptions;
use crate::backend::tiktoken::encodings::BuiltinEncoding;
use crate::error::{Error, ErrorKind, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Path(PathBuf),
    Builtin(BuiltinEncoding),
    Hub {
        repo: String,
        revision: Option<String>,
    },
    /// `org/name/file.gguf`: one GGUF file of a hub repo.
    HubFile {
        repo: String,
        revision: Option<String>,
        file: String,
    },
}

impl Source {
    /// An existing path wins; then encoding names, OpenAI model names, hub ids.
    pub(crate) fn parse(source: &str, options: &LoadOptions) -> Result<Self> {
        let invalid = |reason: &str| {
            Error::new(ErrorKind::InvalidSource {
                given: source.to_owned(),
                reason: reason.to_owned(),
            })
        };
        if source.trim().is_empty() {
            return Err(invalid("empty"));
        }
        let path = PathBuf::from(source);
        if path.exists() {
            return Ok(Self::Path(path));
        }
        if let Some(enc) = BuiltinEncoding::from_name(source) {
            return Ok(Self::Builtin(enc));
        }
        if let Some(enc) = BuiltinEncoding::for_openai_model(source) {
            return Ok(Self::Builtin(enc));
        }
        let (repo, revision) = match source.split_once('@') {
            Some((repo, rev)) => (repo, Some(rev.to_owned())),
            None => (source, options.revision.clone()),
        };
        if let Some(rev) = &revision {
            let ok = !rev.is_empty()
                && rev.len() <= 128
                && !rev.contains("..")
                && rev
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
            if !ok {
                return Err(invalid("invalid revision"));
            }
        }
        let parts: Vec<&str> = repo.split('/').collect();
        let valid_part = |p: &str| {
            !p.is_empty()
                && p.len() <= 96
                && !p.contains("..")
                && !p.starts_with(['-', '.'])
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        match parts.as_slice() {
            [org, name] if valid_part(org) && valid_part(name) => Ok(Self::Hub {
                repo: repo.to_owned(),
                revision,
            }),
            [org, name, file]
                if valid_part(org)
                    && valid_part(name)
                    && valid_part(file)
                    && file.ends_with(".gguf") =>
            {
                Ok(Self::HubFile {
                    repo: format!("{org}/{name}"),
                    revision,
                    file: (*file).to_owned(),
                })
            }
            [_] if source.starts_with(['.', '/', '~']) => Err(Error::new(ErrorKind::NotFound {
                what: source.to_owned(),
            })),
            [name] if valid_part(name) => Err(invalid(
                "not an existing path, a tiktoken encoding, an OpenAI model name, or a hub id `org/name`",
            )),
            _ if source.contains('/') && PathBuf::from(source).is_absolute() => {
                Err(Error::new(ErrorKind::NotFound {
                    what: source.to_owned(),
                }))
            }
            _ => Err(invalid("not a valid hub id `org/name[@revision]`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_in_order() {
        let o = LoadOptions::default();
        assert_eq!(
            Source::parse("cl100k_base", &o).unwrap(),
            Source::Builtin(BuiltinEncoding::Cl100kBase)
        );
        assert_eq!(
            Source::parse("gpt-4o", &o).unwrap(),
            Source::Builtin(BuiltinEncoding::O200kBase)
        );
        assert_eq!(
            Source::parse("Qwen/Qwen3-8B@abc", &o).unwrap(),
            Source::Hub {
                repo: "Qwen/Qwen3-8B".into(),
                revision: Some("abc".into())
            }
        );
        assert_eq!(
            Source::parse("openai/gpt-oss-20b", &o).unwrap(),
            Source::Hub {
                repo: "openai/gpt-oss-20b".into(),
                revision: None
            }
        );
        for bad in [
            "",
            "a/b/c",
            "../x/y",
            "org/na me",
            "nonsense",
            "a/b@",
            "a/b@../x",
        ] {
            assert!(Source::parse(bad, &o).is_err(), "{bad:?}");
        }
        assert!(matches!(
            Source::parse("/no/such/file.json", &o).unwrap_err().kind(),
            ErrorKind::NotFound { .. }
        ));
    }
}
