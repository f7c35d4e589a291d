//! Catalog search: the words of each tool (name, title, tags, description), indexed once, and
//! how well a query's words match them. Pure text and deterministic: the same catalog and query
//! always rank the same tools in the same order, so a model can page and retry predictably.

use serde_json::Value;

use super::Tool;

/// Words too common to tell tools apart; a query of natural language is full of them.
const STOP_WORDS: [&str; 40] = [
    "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "in", "into", "is", "it", "its",
    "me", "my", "of", "on", "or", "our", "some", "that", "the", "their", "them", "this", "to", "what", "which", "who", "with", "you", "your",
];

/// What a query word earns per field it matches: the name says most about a tool, tags and
/// title are chosen words, a description is prose.
const NAME_WEIGHT: u32 = 3;
const TAG_WEIGHT: u32 = 2;
const TITLE_WEIGHT: u32 = 2;
const DESCRIPTION_WEIGHT: u32 = 1;

/// A prefix counts as a match only from this many characters on: `issue` finds `issues` and
/// `repo` finds `repository`, but `in` finds nothing it merely starts.
const MIN_PREFIX_CHARS: usize = 4;

/// The lower-case words of a text: split on anything but letters and digits (so on `_`, `-`,
/// `.` and spaces) and on camelCase boundaries (`listForRepo`, `HTTPServer`), without one-letter
/// words and stop words.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            push(&mut words, &mut word);
            continue;
        }
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        // `aB` and `1B` start a word at B; so does `BCd` at C (the end of an acronym).
        let starts = c.is_uppercase()
            && prev.is_some_and(|p| p.is_lowercase() || p.is_numeric() || (p.is_uppercase() && next.is_some_and(char::is_lowercase)));
        if starts {
            push(&mut words, &mut word);
        }
        word.extend(c.to_lowercase());
    }
    push(&mut words, &mut word);
    words
}

fn push(words: &mut Vec<String>, word: &mut String) {
    let taken = std::mem::take(word);
    if taken.chars().nth(1).is_some() && !STOP_WORDS.contains(&taken.as_str()) {
        words.push(taken);
    }
}

/// Whether a query word matches a tool's word: equal, or one starts the other and the shorter
/// has at least `MIN_PREFIX_CHARS` characters (`issues` ≈ `issue`, `repo` ≈ `repository`).
fn matches(query: &str, word: &str) -> bool {
    let (short, long) = if query.len() <= word.len() { (query, word) } else { (word, query) };
    query == word || (long.starts_with(short) && short.chars().nth(MIN_PREFIX_CHARS - 1).is_some())
}

/// One tool's words by field, each sorted and without repeats.
#[derive(Debug, Clone, Default, PartialEq)]
struct Terms {
    name: Vec<String>,
    title: Vec<String>,
    tags: Vec<String>,
    description: Vec<String>,
}

impl Terms {
    fn of(tool: &Tool) -> Terms {
        let field = |key: &str| tool.listing.get(key).and_then(Value::as_str).map(set).unwrap_or_default();
        Terms { name: set(&tool.name), title: field("title"), tags: set(&tool.tags.join(" ")), description: field("description") }
    }

    /// The weights of the fields each query word matches, summed.
    fn score(&self, query: &[String]) -> u32 {
        let fields = [(&self.name, NAME_WEIGHT), (&self.tags, TAG_WEIGHT), (&self.title, TITLE_WEIGHT), (&self.description, DESCRIPTION_WEIGHT)];
        query
            .iter()
            .map(|q| fields.iter().filter(|(words, _)| words.iter().any(|w| matches(q, w))).map(|(_, weight)| weight).sum::<u32>())
            .sum()
    }
}

fn set(text: &str) -> Vec<String> {
    let mut words = words(text);
    words.sort_unstable();
    words.dedup();
    words
}

/// The words of a server's tools, in configuration order, built when the configuration loads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Index {
    terms: Vec<Terms>,
}

impl Index {
    pub fn new(tools: &[Tool]) -> Index {
        Index { terms: tools.iter().map(Terms::of).collect() }
    }

    /// The tools `keep` accepts that match the query, best first, ties in configuration order.
    /// A query without a word that counts (empty, or only stop words) matches every tool, in
    /// configuration order; otherwise tools that match none of its words are left out.
    pub fn search<'a>(&self, tools: &'a [Tool], query: &str, keep: impl Fn(&Tool) -> bool) -> Vec<&'a Tool> {
        let mut query = words(query);
        query.sort_unstable();
        query.dedup();
        let mut scored: Vec<(u32, &Tool)> = tools.iter().zip(&self.terms).filter(|(tool, _)| keep(tool)).map(|(tool, terms)| (terms.score(&query), tool)).collect();
        if !query.is_empty() {
            scored.retain(|(score, _)| *score > 0);
            // A stable sort: equal scores keep configuration order.
            scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        }
        scored.into_iter().map(|(_, tool)| tool).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_separators_and_camel_case() {
        assert_eq!(words("issues/list-for_repo"), ["issues", "list", "repo"]);
        assert_eq!(words("listForRepo getHTTPServer v2Api oauth2"), ["list", "repo", "get", "http", "server", "v2", "api", "oauth2"]);
        assert_eq!(words("Lists the issues of a repository, in order."), ["lists", "issues", "repository", "order"]);
        assert_eq!(words("Zürich Straße Ä"), ["zürich", "straße"]);
        assert_eq!(words(" _-. "), Vec::<String>::new());
    }

    #[test]
    fn prefixes_match_from_four_characters() {
        assert!(matches("issues", "issue") && matches("issue", "issues"));
        assert!(matches("repo", "repository") && matches("repository", "repos"));
        assert!(matches("pr", "pr"));
        assert!(!matches("pr", "pull") && !matches("rep", "repo") && !matches("pull", "push"));
    }
}
