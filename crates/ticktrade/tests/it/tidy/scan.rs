//! The source scanner tidy's checks read through: each line's code with comments and string
//! contents blanked out, and which lines belong to test-only items or test modules.

/// One source line: its text, its code with comments and string contents blanked out, and
/// whether it belongs to a test-only item.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Line {
    pub(super) file: String,
    pub(super) number: usize,
    pub(super) text: String,
    pub(super) code: String,
    pub(super) test_only: bool,
    /// Name of an out-of-line module declared here under a test cfg (`#[cfg(test)] mod tests;`).
    pub(super) test_module: Option<String>,
    /// Its `#[path = "…"]`, if it has one (relative to the declaring file's directory).
    pub(super) test_module_path: Option<String>,
}

pub(super) fn test_module_names(lines: &[Line]) -> Vec<String> {
    lines.iter().filter_map(|l| l.test_module.clone()).collect()
}

/// True for `#[cfg(test)]`, `#[cfg(any(test, feature = "testing"))]`, `#[cfg(all(test, …))]`.
fn is_test_cfg(code: &str) -> bool {
    let code = code.trim();
    if !code.starts_with("#[cfg(") {
        return false;
    }
    let tokens: Vec<&str> =
        code.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|t| !t.is_empty()).collect();
    tokens.contains(&"test") && !tokens.contains(&"not")
}

#[derive(Clone, Copy, PartialEq)]
enum Lexer {
    Code,
    BlockComment(u32),
    Str,
    RawStr(usize),
}

/// Splits `text` into lines, blanks comments and string contents, and marks test-only items:
/// from a test `#[cfg]` attribute to the end of the item it applies to (the matching `}` of
/// its first `{`, or a `;` before any `{`).
pub(super) fn scan(text: &str) -> Vec<Line> {
    let mut lexer = Lexer::Code;
    let mut lines = Vec::new();
    // Test item being skipped: `None` outside; `Some(depth)` inside, depth of braces opened
    // since the attribute.
    let mut test_item: Option<u32> = None;
    let mut pending_path: Option<String> = None;
    for (idx, raw) in text.lines().enumerate() {
        let (code, next) = blank_line(raw, lexer);
        lexer = next;
        let starts_test = test_item.is_none() && is_test_cfg(&code);
        if starts_test {
            test_item = Some(0);
        }
        let test_only = test_item.is_some();
        let mut test_module = None;
        let mut test_module_path = None;
        if test_only && raw.trim_start().starts_with("#[path") {
            pending_path = raw.split('"').nth(1).map(str::to_string);
        }
        if let Some(mut depth) = test_item {
            let mut ended = false;
            let mut opened = depth > 0;
            // The attribute's own brackets are not braces, so scan the whole line.
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            ended = true;
                            break;
                        }
                    }
                    ';' if !opened => {
                        ended = true;
                        test_module = out_of_line_module(&code);
                        test_module_path = pending_path.take();
                        break;
                    }
                    _ => {}
                }
            }
            test_item = if ended { None } else { Some(depth) };
            if ended {
                pending_path = None;
            }
        }
        lines.push(Line {
            file: String::new(),
            number: idx + 1,
            text: raw.to_string(),
            code,
            test_only,
            test_module,
            test_module_path,
        });
    }
    lines
}

/// `tests` from `mod tests;` / `pub(crate) mod tests;`.
fn out_of_line_module(code: &str) -> Option<String> {
    let rest = &code[code.find("mod ")? + 4..];
    let name = rest.trim().trim_end_matches(';').trim();
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')).then(|| name.to_string())
}

/// One line with comments removed and string/char literal contents replaced by spaces,
/// carrying block-comment and multi-line-string state to the next line.
fn blank_line(raw: &str, mut state: Lexer) -> (String, Lexer) {
    let chars: Vec<char> = raw.chars().collect();
    let mut code = String::with_capacity(raw.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match state {
            Lexer::BlockComment(depth) => {
                if c == '*' && next == Some('/') {
                    state = if depth == 1 { Lexer::Code } else { Lexer::BlockComment(depth - 1) };
                    i += 1;
                } else if c == '/' && next == Some('*') {
                    state = Lexer::BlockComment(depth + 1);
                    i += 1;
                }
            }
            Lexer::Str => {
                if c == '\\' {
                    i += 1;
                } else if c == '"' {
                    code.push('"');
                    state = Lexer::Code;
                } else {
                    code.push(' ');
                }
            }
            Lexer::RawStr(hashes) => {
                let closes = c == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    code.push('"');
                    i += hashes;
                    state = Lexer::Code;
                } else {
                    code.push(' ');
                }
            }
            Lexer::Code => {
                if c == '/' && next == Some('/') {
                    break;
                } else if c == '/' && next == Some('*') {
                    state = Lexer::BlockComment(1);
                    i += 1;
                } else if c == '"' {
                    code.push('"');
                    state = Lexer::Str;
                } else if c == 'r' && !prev_is_ident(&chars, i) && matches!(next, Some('"' | '#')) {
                    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                    if chars.get(i + 1 + hashes) == Some(&'"') {
                        code.push('"');
                        state = Lexer::RawStr(hashes);
                        i += hashes + 1;
                    } else {
                        code.push(c);
                    }
                } else if c == '\'' {
                    // A char literal ('x', '\n', '\u{7f}') is blanked; a lifetime ('a) is kept.
                    let close = if next == Some('\\') {
                        chars[i + 2..].iter().position(|&q| q == '\'').map(|p| i + 2 + p)
                    } else if chars.get(i + 2) == Some(&'\'') {
                        Some(i + 2)
                    } else {
                        None
                    };
                    match close {
                        Some(end) => {
                            code.push_str("' '");
                            i = end;
                        }
                        None => code.push(c),
                    }
                } else {
                    code.push(c);
                }
            }
        }
        i += 1;
    }
    (code, state)
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

#[test]
fn scanner_marks_test_items_and_ignores_comments_and_strings() {
    let source = r###"//! Docs may say std::fs and .unwrap() freely.
use std::collections::HashMap; // a comment naming Instant::now
/* block comment with std::net
   still in it: .unwrap() */
fn real() -> u8 {
    let message = "std::fs in a string";
    let raw = r#"raw "std::net" text"#;
    let brace = '{';
    let x: Option<u8> = None;
    x.unwrap()
}

#[cfg(test)]
mod tests {
    fn inner() {
        let _ = std::fs::read("x").unwrap();
    }
}

fn after_tests() { std::thread::spawn(|| ()); }

#[cfg(any(test, feature = "testing"))]
pub fn helper() -> u8 { Some(1).unwrap() }

#[cfg(test)]
#[path = "sibling_tests.rs"]
mod more_tests;

#[cfg(not(test))]
fn only_in_production() { std::fs::remove_file("x").unwrap(); }
"###;
    let lines = scan(source);
    let flagged = |pattern: &str| -> Vec<usize> {
        lines.iter().filter(|l| !l.test_only && l.code.contains(pattern)).map(|l| l.number).collect()
    };
    assert_eq!(flagged(".unwrap()"), vec![10, 30]);
    assert_eq!(flagged("std::fs"), vec![30]);
    assert_eq!(flagged("std::net"), Vec::<usize>::new());
    assert_eq!(flagged("Instant::now"), Vec::<usize>::new());
    assert_eq!(flagged("thread::spawn"), vec![20]);
    let test_lines: Vec<usize> = lines.iter().filter(|l| l.test_only).map(|l| l.number).collect();
    assert_eq!(test_lines, vec![13, 14, 15, 16, 17, 18, 22, 23, 25, 26, 27]);
    assert_eq!(test_module_names(&lines), vec!["more_tests".to_string()]);
    let paths: Vec<&str> = lines.iter().filter_map(|l| l.test_module_path.as_deref()).collect();
    assert_eq!(paths, vec!["sibling_tests.rs"]);
}
