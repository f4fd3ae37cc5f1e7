//! `.indexignore` files: gitignore-style patterns that hide files from a catalog directory.
//!
//! Input: the catalog root (every `.indexignore` under it is read). Output: a matcher for file paths
//! relative to the root. Reads local files only.
//!
//! Semantics follow what operator-registry uses (joelanford/ignore over go-git v5's gitignore):
//!
//! | rule | behaviour |
//! |---|---|
//! | scope | a pattern applies only below the directory holding its `.indexignore` |
//! | lines | trimmed of surrounding whitespace; empty lines and lines starting with `#` are skipped |
//! | `!pat` | re-includes what an earlier pattern excluded |
//! | precedence | the last pattern (in walk order of the `.indexignore` files, then line order) that matches decides |
//! | `pat/` | matches directories only, so it hides every file below a directory of that name |
//! | no `/` in pattern | matches any path component (a file or a parent directory) |
//! | `/` in pattern | matched component by component from the scope directory; `**` spans directories; a match of a directory prefix hides the files below it |
//! | globs | `*`, `?`, `[...]` (with `^` negation and ranges), `\` escapes, never crossing `/`; a malformed glob matches nothing |
//!
//! Only files are matched (directories are still walked), exactly as upstream.

use std::io;
use std::path::Path;

use super::walk::{MAX_INDEX_IGNORE_BYTES, WalkError, file_error};
use crate::regular_file::read_regular;

/// The name of the files holding ignore patterns.
pub const INDEX_IGNORE_FILE: &str = ".indexignore";

#[derive(Clone, Debug)]
struct Pattern {
    domain: Vec<String>,
    segments: Vec<String>,
    inclusion: bool,
    dir_only: bool,
    is_glob: bool,
}

enum MatchResult {
    NoMatch,
    Exclude,
    Include,
}

impl Pattern {
    fn parse(line: &str, domain: &[String]) -> Pattern {
        let mut p = line;
        let mut inclusion = false;
        if let Some(rest) = p.strip_prefix('!') {
            inclusion = true;
            p = rest;
        }
        let trimmed;
        if !p.ends_with("\\ ") {
            trimmed = p.trim_end_matches(' ');
            p = trimmed;
        }
        let mut dir_only = false;
        if let Some(rest) = p.strip_suffix('/') {
            dir_only = true;
            p = rest;
        }
        Pattern {
            domain: domain.to_vec(),
            segments: p.split('/').map(str::to_owned).collect(),
            inclusion,
            dir_only,
            is_glob: p.contains('/'),
        }
    }

    fn matches(&self, path: &[&str], is_dir: bool) -> MatchResult {
        if path.len() <= self.domain.len() {
            return MatchResult::NoMatch;
        }
        if self.domain.iter().zip(path).any(|(d, p)| d != p) {
            return MatchResult::NoMatch;
        }
        let rest = &path[self.domain.len()..];
        let hit = if self.is_glob {
            self.glob_match(rest, is_dir)
        } else {
            self.simple_name_match(rest, is_dir)
        };
        match (hit, self.inclusion) {
            (false, _) => MatchResult::NoMatch,
            (true, true) => MatchResult::Include,
            (true, false) => MatchResult::Exclude,
        }
    }

    fn simple_name_match(&self, path: &[&str], is_dir: bool) -> bool {
        let pat = &self.segments[0];
        for (i, name) in path.iter().enumerate() {
            match glob_match(pat, name) {
                None => return false,
                Some(false) => continue,
                Some(true) => {}
            }
            if self.dir_only && !is_dir && i == path.len() - 1 {
                return false;
            }
            return true;
        }
        false
    }

    fn glob_match(&self, mut path: &[&str], is_dir: bool) -> bool {
        let mut matched = false;
        let mut can_traverse = false;
        for (i, pat) in self.segments.iter().enumerate() {
            if pat.is_empty() {
                can_traverse = false;
                continue;
            }
            if pat == "**" {
                if i == self.segments.len() - 1 {
                    break;
                }
                can_traverse = true;
                continue;
            }
            if pat.contains("**") {
                return false;
            }
            if path.is_empty() {
                return false;
            }
            if can_traverse {
                can_traverse = false;
                while let Some((first, rest)) = path.split_first() {
                    path = rest;
                    match glob_match(pat, first) {
                        None => return false,
                        Some(true) => {
                            matched = true;
                            break;
                        }
                        Some(false) => {
                            if path.is_empty() {
                                matched = false;
                            }
                        }
                    }
                }
            } else {
                if glob_match(pat, path[0]) != Some(true) {
                    return false;
                }
                matched = true;
                path = &path[1..];
            }
        }
        if matched && self.dir_only && !is_dir && path.is_empty() {
            matched = false;
        }
        matched
    }
}

/// All `.indexignore` patterns found under a catalog root.
#[derive(Clone, Debug, Default)]
pub struct IgnoreMatcher {
    patterns: Vec<Pattern>,
}

impl IgnoreMatcher {
    /// Reads every `.indexignore` below `root`, in the same lexical walk order as the catalog walk.
    /// Each must be a regular file of at most [`MAX_INDEX_IGNORE_BYTES`]; errors name the path
    /// that failed (a directory or file below the root, not the root).
    pub fn load(root: &Path) -> Result<IgnoreMatcher, WalkError> {
        let mut matcher = IgnoreMatcher::default();
        matcher.collect(root, &mut Vec::new())?;
        Ok(matcher)
    }

    fn collect(&mut self, dir: &Path, rel: &mut Vec<String>) -> Result<(), WalkError> {
        let io_err = |path: &Path, source: io::Error| WalkError::Io {
            path: path.display().to_string(),
            source,
        };
        for entry in super::walk::sorted_entries(dir).map_err(|e| io_err(dir, e))? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let file_type = entry.file_type().map_err(|e| io_err(&path, e))?;
            if file_type.is_dir() {
                rel.push(name);
                self.collect(&path, rel)?;
                rel.pop();
            } else if name == INDEX_IGNORE_FILE {
                let text = read_regular(&path, MAX_INDEX_IGNORE_BYTES).map_err(file_error)?;
                self.add_patterns(&String::from_utf8_lossy(&text), rel);
            }
        }
        Ok(())
    }

    /// Adds the patterns of one `.indexignore` whose directory is `domain` (path components
    /// relative to the root; empty for the root itself).
    pub fn add_patterns(&mut self, text: &str, domain: &[String]) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            self.patterns.push(Pattern::parse(line, domain));
        }
    }

    /// Whether the file at `path` (components relative to the root) is ignored.
    pub fn is_ignored(&self, path: &[&str]) -> bool {
        for p in self.patterns.iter().rev() {
            match p.matches(path, false) {
                MatchResult::NoMatch => continue,
                MatchResult::Exclude => return true,
                MatchResult::Include => return false,
            }
        }
        false
    }
}

/// Go's `filepath.Match` for one path component (which never contains `/`).
/// `None` means the pattern is malformed.
fn glob_match(pattern: &str, name: &str) -> Option<bool> {
    if !glob_is_valid(pattern) {
        return None;
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    Some(match_from(&p, &n))
}

fn glob_is_valid(pattern: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return false;
                }
                i += 2;
            }
            '[' => match class_end(&p, i) {
                Some(end) => i = end,
                None => return false,
            },
            _ => i += 1,
        }
    }
    true
}

/// Index just past the `]` closing the class that starts at `start`, if the class is well formed.
fn class_end(p: &[char], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if p.get(i) == Some(&'^') {
        i += 1;
    }
    let mut first = true;
    loop {
        let c = *p.get(i)?;
        if c == ']' && !first {
            return Some(i + 1);
        }
        first = false;
        // low end of a range (or a single char)
        let lo_len = class_char_len(p, i)?;
        i += lo_len;
        if p.get(i) == Some(&'-') {
            i += 1;
            let hi_len = class_char_len(p, i)?;
            i += hi_len;
        }
    }
}

fn class_char_len(p: &[char], i: usize) -> Option<usize> {
    match p.get(i)? {
        '\\' => {
            p.get(i + 1)?;
            Some(2)
        }
        '-' | ']' => None,
        _ => Some(1),
    }
}

fn class_char(p: &[char], i: usize) -> char {
    if p[i] == '\\' { p[i + 1] } else { p[i] }
}

fn match_from(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' if ni < n.len() => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' if ni < n.len() => {
                    let end = class_end(p, pi).unwrap_or(p.len());
                    if class_matches(p, pi, end, n[ni]) {
                        pi = end;
                        ni += 1;
                        continue;
                    }
                }
                '\\' if ni < n.len() && p.get(pi + 1) == Some(&n[ni]) => {
                    pi += 2;
                    ni += 1;
                    continue;
                }
                c if c != '?' && c != '[' && c != '\\' && ni < n.len() && c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        } else if ni == n.len() {
            return true;
        }
        // Mismatch: let the last `*` absorb one more character.
        match star {
            Some((sp, sn)) if sn < n.len() => {
                star = Some((sp, sn + 1));
                pi = sp + 1;
                ni = sn + 1;
            }
            _ => return false,
        }
    }
}

fn class_matches(p: &[char], start: usize, end: usize, c: char) -> bool {
    let mut i = start + 1;
    let negated = p.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut hit = false;
    let last = end - 1; // index of the closing ']'
    while i < last {
        let lo = class_char(p, i);
        i += if p[i] == '\\' { 2 } else { 1 };
        let mut hi = lo;
        if i < last && p[i] == '-' {
            i += 1;
            hi = class_char(p, i);
            i += if p[i] == '\\' { 2 } else { 1 };
        }
        if lo <= c && c <= hi {
            hit = true;
        }
    }
    hit != negated
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(lines: &[(&str, &[&str])]) -> IgnoreMatcher {
        let mut m = IgnoreMatcher::default();
        for (text, domain) in lines {
            let domain: Vec<String> = domain.iter().map(|s| s.to_string()).collect();
            m.add_patterns(text, &domain);
        }
        m
    }

    fn ignored(m: &IgnoreMatcher, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        m.is_ignored(&parts)
    }

    #[test]
    fn anchored_pattern_hides_only_the_file_at_the_scope_root() {
        let m = matcher(&[("/expected_all.json\n..*\n", &[])]);
        assert!(ignored(&m, "expected_all.json"));
        assert!(!ignored(&m, "sub/expected_all.json"));
        assert!(!ignored(&m, "catalog.yaml"));
    }

    #[test]
    fn double_dot_glob_hides_kubernetes_mount_artifacts_at_any_depth() {
        let m = matcher(&[("..*", &[])]);
        assert!(ignored(&m, "..data"));
        assert!(ignored(&m, "..2024_01_01/catalog.yaml"));
        assert!(!ignored(&m, ".hidden"));
        assert!(!ignored(&m, "catalog.yaml"));
    }

    #[test]
    fn patterns_apply_only_below_their_directory() {
        let m = matcher(&[("*.md", &["pkg"])]);
        assert!(ignored(&m, "pkg/README.md"));
        assert!(ignored(&m, "pkg/deep/README.md"));
        assert!(!ignored(&m, "README.md"));
        assert!(!ignored(&m, "other/README.md"));
    }

    #[test]
    fn negation_reincludes_and_the_last_matching_pattern_wins() {
        let m = matcher(&[("*.json\n!keep.json\n", &[])]);
        assert!(ignored(&m, "drop.json"));
        assert!(!ignored(&m, "keep.json"));
        let m = matcher(&[("!keep.json\n*.json\n", &[])]);
        assert!(ignored(&m, "keep.json"));
    }

    #[test]
    fn directory_pattern_hides_files_below_but_not_a_file_of_that_name() {
        let m = matcher(&[("build/", &[])]);
        assert!(ignored(&m, "build/catalog.yaml"));
        assert!(ignored(&m, "a/build/x.json"));
        assert!(!ignored(&m, "build"));
    }

    #[test]
    fn slash_patterns_match_directory_prefixes_and_double_star() {
        let m = matcher(&[("a/b", &[])]);
        assert!(ignored(&m, "a/b"));
        assert!(ignored(&m, "a/b/c.yaml"));
        assert!(!ignored(&m, "x/a/b"));
        let m = matcher(&[("**/tmp/*.yaml", &[])]);
        assert!(ignored(&m, "tmp/x.yaml"));
        assert!(ignored(&m, "a/b/tmp/x.yaml"));
        assert!(!ignored(&m, "a/b/tmp/x.json"));
        let m = matcher(&[("docs/**", &[])]);
        assert!(ignored(&m, "docs/a/b.yaml"));
    }

    #[test]
    fn comments_blank_lines_and_surrounding_spaces_are_ignored() {
        let m = matcher(&[("# a comment\n\n   spaced.yaml   \n", &[])]);
        assert!(ignored(&m, "spaced.yaml"));
        assert!(!ignored(&m, "# a comment"));
    }

    #[test]
    fn glob_syntax_follows_go_filepath_match() {
        assert_eq!(glob_match("*.yaml", "catalog.yaml"), Some(true));
        assert_eq!(glob_match("cat?log.yaml", "catalog.yaml"), Some(true));
        assert_eq!(glob_match("[a-c]at", "bat"), Some(true));
        assert_eq!(glob_match("[^a-c]at", "bat"), Some(false));
        assert_eq!(glob_match("[^a-c]at", "rat"), Some(true));
        assert_eq!(glob_match("\\*", "*"), Some(true));
        assert_eq!(glob_match("\\*", "x"), Some(false));
        assert_eq!(glob_match("a*b*c", "axxbyyc"), Some(true));
        assert_eq!(glob_match("a*b*c", "axxbyy"), Some(false));
        assert_eq!(glob_match("[", "x"), None);
        assert_eq!(glob_match("[]", "x"), None);
        assert_eq!(glob_match("x\\", "x"), None);
        assert_eq!(glob_match("é?", "éa"), Some(true));
    }

    #[test]
    fn malformed_glob_matches_nothing() {
        let m = matcher(&[("[broken", &[])]);
        assert!(!ignored(&m, "[broken"));
    }
}
