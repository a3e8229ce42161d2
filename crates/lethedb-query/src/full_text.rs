//! A container's full-text policy as its queries need it: the language of each full-text path
//! (`fullTextPolicy.fullTextPaths[].language`, else its `defaultLanguage`), which decides how a
//! text and the terms looked for in it are cut into stems (`functions/text.rs`). A text at a path
//! the policy does not name takes the default language, and any text of a container without a
//! policy is English. Read once per container; checked by the engine's policy validation, so a
//! language here is one of the service's. Also the key of a stem in a full-text index
//! (`full_text_stem_key`), shared by the engine's entries and the probes that read them.

use crate::ast::Expr;
use rust_stemmers::Algorithm;
use serde_json::Value;

/// The languages the service's full-text search offers (English, and in preview the others).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Language {
    #[default]
    English,
    French,
    German,
    Italian,
    Portuguese,
    Spanish,
}

impl Language {
    /// The language of a policy's code (`en-US`, `fr-FR`, `de-DE`, `it-IT`, `pt-BR`, `pt-PT`,
    /// `es-ES`, or `1033`, the Windows locale number of `en-US`, which the service also takes).
    pub fn from_code(code: &str) -> Option<Language> {
        Some(match code {
            "en-US" | "1033" => Language::English,
            "fr-FR" => Language::French,
            "de-DE" => Language::German,
            "it-IT" => Language::Italian,
            "pt-BR" | "pt-PT" => Language::Portuguese,
            "es-ES" => Language::Spanish,
            _ => return None,
        })
    }

    /// A code of this language, one `from_code` reads back (Portuguese as `pt-BR`: both
    /// Portuguese codes stem alike).
    pub fn code(self) -> &'static str {
        match self {
            Language::English => "en-US",
            Language::French => "fr-FR",
            Language::German => "de-DE",
            Language::Italian => "it-IT",
            Language::Portuguese => "pt-BR",
            Language::Spanish => "es-ES",
        }
    }

    /// Its Snowball stemmer (Brazilian and European Portuguese share one).
    pub(crate) fn algorithm(self) -> Algorithm {
        match self {
            Language::English => Algorithm::English,
            Language::French => Algorithm::French,
            Language::German => Algorithm::German,
            Language::Italian => Algorithm::Italian,
            Language::Portuguese => Algorithm::Portuguese,
            Language::Spanish => Algorithm::Spanish,
        }
    }
}

/// The language of each full-text path of a container.
#[derive(Clone, Debug, Default)]
pub struct FullTextPolicy {
    default: Language,
    paths: Vec<(Vec<String>, Language)>,
}

impl FullTextPolicy {
    /// The policy of a container resource (its `fullTextPolicy`, already validated).
    pub fn from_container(resource: &Value) -> FullTextPolicy {
        let Some(policy) = resource.get("fullTextPolicy").filter(|p| p.is_object()) else {
            return FullTextPolicy::default();
        };
        let language =
            |value: Option<&Value>| value.and_then(Value::as_str).and_then(Language::from_code);
        let default = language(policy.get("defaultLanguage")).unwrap_or_default();
        let paths = policy
            .get("fullTextPaths")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let path = entry.get("path")?.as_str()?;
                let segments = path.trim_start_matches('/').split('/').map(str::to_string);
                Some((
                    segments.collect(),
                    language(entry.get("language")).unwrap_or(default),
                ))
            })
            .collect();
        FullTextPolicy { default, paths }
    }

    /// The language of the text `expr` reads: its path's, else the policy's default language
    /// (English without a policy).
    pub fn language_of(&self, expr: Option<&Expr>) -> Language {
        let Some(segments) = expr.and_then(property_path) else {
            return self.default;
        };
        self.language_of_path(&segments)
    }

    /// The language of the text at a document path (property names from the root).
    pub fn language_of_path(&self, segments: &[String]) -> Language {
        self.paths
            .iter()
            .find(|(path, _)| path == segments)
            .map_or(self.default, |(_, language)| *language)
    }
}

/// The key of one stem in a full-text index: its length (4 bytes, big-endian) then its UTF-8
/// bytes, so that no stem's key is a prefix of another's and the entries of one stem, whatever
/// follows its key, are one range of keys.
pub fn full_text_stem_key(stem: &str) -> Vec<u8> {
    // A stem comes from a document or a query, both far below 4 GiB.
    let mut key = (stem.len() as u32).to_be_bytes().to_vec();
    key.extend_from_slice(stem.as_bytes());
    key
}

/// The property names of `c.a.b` (`["a", "b"]`); none for any other expression.
pub(crate) fn property_path(expr: &Expr) -> Option<Vec<String>> {
    let mut segments = Vec::new();
    let mut node = expr;
    loop {
        match node {
            Expr::Property(base, name) => {
                segments.push(name.clone());
                node = base;
            }
            Expr::Identifier(_) => break,
            _ => return None,
        }
    }
    segments.reverse();
    Some(segments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_path_takes_its_own_language_else_the_default() {
        let policy = FullTextPolicy::from_container(&json!({"fullTextPolicy": {
            "defaultLanguage": "de-DE",
            "fullTextPaths": [{"path": "/fr", "language": "fr-FR"}, {"path": "/a/b"}]
        }}));
        let path = |text: &str| {
            text.split('.')
                .skip(1)
                .fold(Expr::Identifier("c".into()), |base, name| {
                    Expr::Property(Box::new(base), name.into())
                })
        };
        assert_eq!(policy.language_of(Some(&path("c.fr"))), Language::French);
        assert_eq!(policy.language_of(Some(&path("c.a.b"))), Language::German);
        assert_eq!(policy.language_of(Some(&path("c.other"))), Language::German);
        assert_eq!(Language::from_code("1033"), Some(Language::English));
        let none = FullTextPolicy::from_container(&json!({}));
        assert_eq!(none.language_of(Some(&path("c.fr"))), Language::English);
    }

    #[test]
    fn each_language_stems_its_own_words() {
        use crate::functions::text::terms;
        let same = |language, a: &str, b: &str| terms(a, language) == terms(b, language);
        assert!(same(Language::Spanish, "demostraciones", "demostración"));
        assert!(!same(Language::English, "demostraciones", "demostración"));
        assert!(same(Language::French, "démonstrations", "démonstration"));
        assert!(same(Language::German, "Beispielen", "Beispiel"));
        assert!(same(Language::Italian, "esempi", "esempio"));
        assert!(same(Language::Portuguese, "exemplos", "exemplo"));
        assert!(same(Language::English, "helmets", "Helmet"));
        assert_eq!(Language::from_code("pt-BR"), Some(Language::Portuguese));
        assert_eq!(Language::from_code("xx-XX"), None);
    }
}
