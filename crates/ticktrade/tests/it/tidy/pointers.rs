//! No comment or doc points outside the repository: every fact a reader needs is in the code,
//! its module docs or `docs/`, so a newcomer with only this repository can follow each one.
//!
//! Checked in every tracked source, doc and script (`.rs`, `.md`, `.toml`, `.sh`, `.py`, `.ini`,
//! web assets, and `.txt` outside recorded data), nothing skipped:
//! - no name of a file that lives outside the repository (the background notes the code was
//!   written from: their names are assembled in `outside_names`, so this file does not match
//!   itself);
//! - every section sign names a section that exists: after `RFC <number>` it is the standard's;
//!   after a path ending in `.md` that section must be a heading of that repository file; a bare
//!   one in a Markdown file is a section of that same file; a bare one anywhere else names no
//!   document and fails.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Workspace, report};

/// The section sign, spelled as an escape so this file's own text has none.
const SECTION: char = '\u{a7}';

/// Names of files outside the repository, assembled from pieces (see the module doc).
fn outside_names() -> Vec<String> {
    [
        ["research", "/"],
        ["limits", ".md"],
        ["REFERENCE", ".md"],
        ["../", "shared"],
        ["/work", "/"],
        ["DESIGN", ".md"],
        ["STYLE", ".md"],
    ]
    .iter()
    .map(|parts| parts.concat())
    .collect()
}

#[test]
fn no_comment_or_doc_points_outside_the_repository() {
    let root = Workspace::load().root;
    let names = outside_names();
    let mut violations = Vec::new();
    for rel in checked_files(&root) {
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else { continue };
        for (idx, line) in text.lines().enumerate() {
            let at = format!("{rel}:{}", idx + 1);
            for name in &names {
                if line.contains(name.as_str()) {
                    violations.push(format!("{at}: names `{name}`, outside the repository: {}", line.trim()));
                }
            }
            for problem in section_problems(&root, &rel, line) {
                violations.push(format!("{at}: {problem}: {}", line.trim()));
            }
        }
    }
    report("pointers outside the repository (write the fact itself, or point into docs/)", &violations);
}

#[test]
fn section_checks_accept_repository_sections_and_standards_only() {
    let root = Workspace::load().root;
    let s = SECTION;
    let ok = |line: String| section_problems(&root, "crates/x/src/lib.rs", &line).is_empty();
    assert!(ok(format!("/// the close codes (RFC 6455 {s}7.4.1)")));
    assert!(ok(format!("//! measured there (docs/PERFORMANCE.md {s}4.2)")));
    assert!(ok(format!("//! measured there (docs/PERFORMANCE.md {s}4.2, {s}8)")));
    assert!(!ok(format!("//! measured there (docs/PERFORMANCE.md {s}4.2, {s}99)")), "no such section");
    assert!(!ok(format!("//! measured there (docs/PERFORMANCE.md {s}42)")), "no such section");
    assert!(!ok(format!("//! the channel names (NOTES {s}8.2)")), "a bare section names no document");
    assert!(!ok(format!("//! see `notes/elsewhere.md` {s}1")), "not a file of the repository");
    // In a Markdown file a bare section is one of its own.
    let in_doc = |line: String| section_problems(&root, "docs/PERFORMANCE.md", &line).is_empty();
    assert!(in_doc(format!("on the VM of {s}2")));
    assert!(!in_doc(format!("on the VM of {s}99")));
    let names = outside_names();
    assert!(names.iter().all(|n| !n.is_empty()) && names.len() == 7);
}

/// What is wrong with each section sign on `line` of the file `rel`.
fn section_problems(root: &Path, rel: &str, line: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (pos, _) in line.match_indices(SECTION) {
        let number: String = line[pos + SECTION.len_utf8()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect::<String>()
            .trim_end_matches('.')
            .to_owned();
        let mut before: Vec<&str> = line[..pos].split_whitespace().collect();
        // A list of sections ("4.2, 8" or "1 and 4", each with its sign) belongs to the
        // document named before its first item.
        while let Some(last) = before.last()
            && (last.starts_with(SECTION) || ["and", "or"].contains(last))
        {
            before.pop();
        }
        let word = |back: usize| {
            before.len().checked_sub(back).map(|i| before[i].trim_matches(|c: char| "([`\"'*,;:".contains(c)))
        };
        if word(2) == Some("RFC") && word(1).is_some_and(|w| w.chars().all(|c| c.is_ascii_digit())) {
            continue;
        }
        let doc = match word(1).filter(|w| w.ends_with(".md")) {
            Some(path) => {
                let from_root = root.join(path);
                let from_file = root.join(rel).parent().map(|dir| dir.join(path)).unwrap_or_default();
                match [from_root, from_file].into_iter().find(|p| p.is_file() && p.starts_with(root)) {
                    Some(found) => found,
                    None => {
                        problems.push(format!("`{path}` is not a file of this repository"));
                        continue;
                    }
                }
            }
            None if rel.ends_with(".md") => root.join(rel),
            None => {
                problems.push(format!("section {number} of no document in this repository"));
                continue;
            }
        };
        if number.is_empty() || !headings(&doc).contains(&number) {
            problems.push(format!("no section {number} in {}", super::relative(&doc, root)));
        }
    }
    problems
}

/// The numbers of a Markdown file's numbered headings (`## 4. …` → "4", `### 4.2 …` → "4.2").
fn headings(doc: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(doc).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| l.trim_start_matches('#').trim_start())
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| n.trim_end_matches('.').to_owned())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .collect()
}

/// Tracked files that are sources, docs or scripts (recorded data is not prose).
pub(super) fn checked_files(root: &Path) -> Vec<String> {
    let listed = Command::new("git").arg("-C").arg(root).args(["ls-files", "-z"]).output();
    let files: Vec<String> = match listed {
        Ok(out) if out.status.success() => {
            String::from_utf8_lossy(&out.stdout).split('\0').filter(|f| !f.is_empty()).map(str::to_owned).collect()
        }
        // Not a git checkout (a source archive): every file under the root but build output.
        _ => {
            let mut all = Vec::new();
            walk(root, root, &mut all);
            all
        }
    };
    files.into_iter().filter(|f| is_checked(f)).collect()
}

fn is_checked(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "rs" | "md" | "toml" | "sh" | "py" | "ini" | "html" | "js" | "css" | "yml" | "yaml" => true,
        "txt" => !rel.starts_with("testdata/") && !rel.contains("proptest-regressions/"),
        _ => false,
    }
}

fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path: PathBuf = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            walk(&path, root, out);
        } else {
            out.push(super::relative(&path, root));
        }
    }
}
