//! Which of an upstream's names to take: `include` (absent: all) less `exclude`, each a name or
//! a glob (`*` any run of characters, `?` one), matched by `wildmatch`.

use wildmatch::WildMatch;

#[derive(Debug, Clone, Default)]
pub struct Filter {
    include: Option<Vec<WildMatch>>,
    exclude: Vec<WildMatch>,
}

impl Filter {
    /// A filter from the configuration's patterns; `Err` names the first empty one.
    pub fn new(include: Option<&[String]>, exclude: &[String]) -> Result<Filter, String> {
        let compile = |list: &[String], field: &str| -> Result<Vec<WildMatch>, String> {
            list.iter()
                .enumerate()
                .map(|(i, p)| if p.trim().is_empty() { Err(format!("{field}[{i}]")) } else { Ok(WildMatch::new(p)) })
                .collect()
        };
        Ok(Filter { include: include.map(|l| compile(l, "include")).transpose()?, exclude: compile(exclude, "exclude")? })
    }

    pub fn takes(&self, name: &str) -> bool {
        self.takes_any(&[name])
    }

    /// For an entry known by several names (a resource's name and URI): included by one of
    /// them, and excluded by none.
    pub fn takes_any(&self, names: &[&str]) -> bool {
        let included = self.include.as_ref().is_none_or(|list| names.iter().any(|n| list.iter().any(|p| p.matches(n))));
        included && !names.iter().any(|n| self.exclude.iter().any(|p| p.matches(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: Option<&[&str]>, exclude: &[&str]) -> Filter {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Filter::new(include.map(own).as_deref(), &own(exclude)).unwrap()
    }

    #[test]
    fn include_then_exclude_by_name_or_glob() {
        let all = filter(None, &[]);
        assert!(all.takes("anything") && all.takes(""));
        let some = filter(Some(&["get-*", "echo"]), &["get-env", "*-secret"]);
        assert!(some.takes("echo") && some.takes("get-sum") && some.takes("get-tiny-image"));
        assert!(!some.takes("get-env") && !some.takes("get-secret") && !some.takes("echoes") && !some.takes("toggle"));
        let one = filter(Some(&["get-?um"]), &[]);
        assert!(one.takes("get-sum") && !one.takes("get-summ"));
        assert!(!filter(Some(&[]), &[]).takes("echo"), "an empty include takes nothing");
        let by_either = filter(Some(&["docs://*"]), &["draft*"]);
        assert!(by_either.takes_any(&["readme", "docs://readme"]));
        assert!(!by_either.takes_any(&["draft-1", "docs://draft-1"]), "excluded by its name");
        assert!(!by_either.takes_any(&["x", "files://x"]));
        assert_eq!(Filter::new(None, &["ok".into(), " ".into()]).unwrap_err(), "exclude[1]");
    }
}
