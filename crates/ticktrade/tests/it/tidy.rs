//! Architecture checks run as tests (rust-analyzer's "tidy"): the layering and hygiene rules
//! (docs/ARCHITECTURE.md) that the compiler does not enforce.
//!
//! - Pure crates have no normal dependency on an I/O crate (tokio, sockets, TLS, HTTP), nor on
//!   an I/O ticktrade crate.
//! - Pure crates' non-test source never names `std::net`, `std::fs`, `Instant::now`,
//!   `SystemTime::now` or `thread::spawn` (the one exception: `crates/latency/src/clock.rs`).
//! - `ticktrade-testkit` depends on no other ticktrade crate but leaves (crates that depend on
//!   no ticktrade crate themselves), so anything may dev-depend on it.
//! - `ticktrade-serve` does not depend on `ticktrade-sim` (only its tests may).
//! - Library code never calls `.unwrap()` outside tests.
//! - Only `ticktrade-net` implements WebSocket framing: no other crate's non-test source (library,
//!   binary or benchmark) holds the RFC 6455 GUID, frame-byte constants (`0x81`…`0x8A`, the
//!   `126`/`127` length forms, `& 0x7f` on a length byte) or a four-byte mask XOR loop. Using a
//!   WebSocket library (tungstenite, yawc) or `ticktrade_net::frame` trips none of these.
//! - No Rust source file is over about 600 lines without a stated reason (`lengths`).
//! - No comment or doc points to a file outside the repository, and every section reference
//!   names a section that exists (`pointers`, over every tracked source, doc and script).
//! - No test sleeps over 200 ms of wall time on a literal duration (`sleeps`).
//!
//! Test code is whatever item follows a `#[cfg(test)]` (or `#[cfg(any(test, …))]`) attribute,
//! found by matching braces, plus the files of out-of-line `#[cfg(test)] mod name;` modules.
//! Comments and the contents of string literals are ignored, so prose and messages may name
//! the forbidden APIs. Only direct dependencies are checked (`cargo metadata --no-deps`), so a
//! pure crate could still pull tokio in through a third-party crate.

#![allow(clippy::unwrap_used, reason = "test code: a panic here is a failed test with its message")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "tidy/lengths.rs"]
mod lengths;
#[path = "tidy/pointers.rs"]
mod pointers;
#[path = "tidy/scan.rs"]
mod scan;
#[path = "tidy/sleeps.rs"]
mod sleeps;

use scan::{Line, scan, test_module_names};

const PURE_CRATES: [&str; 7] = [
    "ticktrade-core",
    "ticktrade-book",
    "ticktrade-latency",
    "ticktrade-deribit-proto",
    "ticktrade-hl-proto",
    "ticktrade-exchange",
    "ticktrade-strategy",
];

/// Crates that do I/O or bring a runtime: a pure crate must not depend on them.
const IO_DEPENDENCIES: [&str; 12] = [
    "tokio",
    "mio",
    "socket2",
    "tungstenite",
    "tokio-tungstenite",
    "rustls",
    "tokio-rustls",
    "hyper",
    "hyper-util",
    "axum",
    "reqwest",
    "notify",
];

/// Substrings that mean I/O, threads or a clock read in a pure crate's code.
const PURE_FORBIDDEN: [&str; 5] = ["std::net", "std::fs", "Instant::now", "SystemTime::now", "thread::spawn"];

/// The one file of a pure crate allowed to read clocks.
const CLOCK_EXCEPTION: &str = "crates/latency/src/clock.rs";

#[test]
fn pure_crates_have_no_io_dependencies() {
    let workspace = Workspace::load();
    let mut violations = Vec::new();
    for name in PURE_CRATES {
        let Some(package) = workspace.package(name) else {
            violations.push(format!("{name}: pure crate not found in the workspace (renamed? update tidy.rs)"));
            continue;
        };
        for dep in package.normal_dependencies() {
            if IO_DEPENDENCIES.contains(&dep.as_str()) {
                violations.push(format!(
                    "{}: pure crate {name} depends on `{dep}` (I/O belongs in net/gateway/sim/serve)",
                    package.manifest_rel
                ));
            } else if dep.starts_with("ticktrade") && !PURE_CRATES.contains(&dep.as_str()) {
                violations.push(format!(
                    "{}: pure crate {name} depends on `{dep}`, which is not pure (dependencies point one way)",
                    package.manifest_rel
                ));
            }
        }
    }
    report("pure crates with I/O dependencies", &violations);
}

#[test]
fn pure_crates_source_does_no_io() {
    let workspace = Workspace::load();
    let mut violations = Vec::new();
    for name in PURE_CRATES {
        let Some(package) = workspace.package(name) else { continue };
        for line in package.non_test_lines(&workspace.root) {
            if line.file == CLOCK_EXCEPTION {
                continue;
            }
            for pattern in PURE_FORBIDDEN {
                if line.code.contains(pattern) {
                    violations.push(format!(
                        "{}:{}: `{pattern}` in pure crate {name}: {}",
                        line.file,
                        line.number,
                        line.text.trim()
                    ));
                }
            }
            if let Some(what) = grouped_std_import(&line.code) {
                violations.push(format!(
                    "{}:{}: `std::{{{what}}}` in pure crate {name}: {}",
                    line.file,
                    line.number,
                    line.text.trim()
                ));
            }
        }
    }
    report("I/O, threads or clock reads in pure crates (time and bytes come in as arguments)", &violations);
}

#[test]
fn testkit_is_a_leaf() {
    let workspace = Workspace::load();
    let testkit = workspace.package("ticktrade-testkit");
    assert!(testkit.is_some(), "ticktrade-testkit not found in the workspace");
    let is_leaf = |name: &str| {
        workspace.package(name).is_some_and(|p| p.dependencies.iter().all(|(dep, _)| !dep.starts_with("ticktrade")))
    };
    let violations: Vec<String> = testkit
        .iter()
        .flat_map(|package| {
            package.dependencies.iter().filter(|(dep, _)| dep.starts_with("ticktrade") && !is_leaf(dep)).map(
                |(dep, kind)| {
                    format!(
                        "{}: ticktrade-testkit depends on `{dep}` ({kind}), which is not a leaf",
                        package.manifest_rel
                    )
                },
            )
        })
        .collect();
    report("testkit dependencies", &violations);
}

/// `serve` is a sink: it reads any Deribit-protocol upstream by URL, and whoever wants the
/// embedded simulator (the binary, serve's own tests) starts it and hands serve its URL.
#[test]
fn serve_does_not_depend_on_sim() {
    let workspace = Workspace::load();
    let serve = workspace.package("ticktrade-serve");
    assert!(serve.is_some(), "ticktrade-serve not found in the workspace");
    let violations: Vec<String> = serve
        .iter()
        .filter(|package| package.normal_dependencies().any(|dep| dep == "ticktrade-sim"))
        .map(|package| {
            format!("{}: ticktrade-serve depends on ticktrade-sim (a dev-dependency is fine)", package.manifest_rel)
        })
        .collect();
    report("serve's dependencies", &violations);
}

#[test]
fn library_code_does_not_unwrap() {
    let workspace = Workspace::load();
    let mut violations = Vec::new();
    for package in workspace.packages.iter().filter(|p| p.lib_src_dir.is_some()) {
        for line in package.non_test_lines(&workspace.root) {
            if line.code.contains(".unwrap()") {
                violations.push(format!(
                    "{}:{}: `.unwrap()` in library {}: {}",
                    line.file,
                    line.number,
                    package.name,
                    line.text.trim()
                ));
            }
        }
    }
    report("`.unwrap()` in library code (return an error, or use `let … else` with a reason)", &violations);
}

/// The one crate that may lay out WebSocket frames.
const FRAMER_CRATE: &str = "ticktrade-net";

/// Why a line of code looks like WebSocket framing, if it does. `code` has comments and string
/// contents blanked; `text` is the raw line (the GUID lives in a string).
fn framing_sign(code: &str, text: &str) -> Option<&'static str> {
    let words: Vec<&str> = code.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
    let has_word = |w: &str| words.iter().any(|x| x.eq_ignore_ascii_case(w));
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if text.contains("258EAFA5") {
        Some("the RFC 6455 handshake GUID")
    } else if ["0x81", "0x82", "0x88", "0x89", "0x8a"].into_iter().any(has_word) {
        Some("a FIN + opcode first byte")
    } else if ["|126", "|127", "126=>", "127=>", "126..="].iter().any(|p| compact.contains(p)) {
        Some("a 16/64-bit payload-length form")
    } else if compact.contains("&0x7f") || compact.contains("&0x7F") {
        Some("a payload-length mask")
    } else if compact.contains('^') && (compact.contains("&3]") || compact.contains("%4]")) {
        Some("a four-byte mask XOR")
    } else {
        None
    }
}

#[test]
fn only_net_implements_websocket_framing() {
    let workspace = Workspace::load();
    let mut violations = Vec::new();
    for package in workspace.packages.iter().filter(|p| p.name != FRAMER_CRATE) {
        for line in package.all_non_test_lines(&workspace.root) {
            if let Some(sign) = framing_sign(&line.code, &line.text) {
                violations.push(format!(
                    "{}:{}: {sign} in {}: {}",
                    line.file,
                    line.number,
                    package.name,
                    line.text.trim()
                ));
            }
        }
    }
    report("WebSocket framing outside ticktrade-net (use ticktrade_net::frame)", &violations);
}

#[test]
fn framing_signs_fire_on_framers_and_not_on_library_uses() {
    let framers = [
        (r#"const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";"#, r#"const GUID: &str = "";"#),
        ("out.push(0x81);", "out.push(0x81);"),
        ("n @ 126..=0xffff => {", "n @ 126..=0xffff => {"),
        ("out.push(0x80 | 126);", "out.push(0x80 | 126);"),
        ("match b1 & 0x7f {", "match b1 & 0x7f {"),
        ("*b ^= mask[i & 3];", "*b ^= mask[i & 3];"),
        ("map(|(i, b)| b ^ key[i % 4])", "map(|(i, b)| b ^ key[i % 4])"),
    ];
    for (text, code) in framers {
        assert!(framing_sign(code, text).is_some(), "{text}");
    }
    let uses = [
        "let (ws, _) = tokio_tungstenite::connect_async(url).await?;",
        "ws.send(Message::Text(text.into())).await?;",
        "let frame = yawc::Frame::text(payload);",
        "frame::push_frame(&mut out, Opcode::Text, None, payload);",
        "let header = frame::parse_header(buf).ok()??;",
        "if byte == 0x1b { continue; }",
        "let x = a ^ b[i & 7];",
    ];
    for code in uses {
        assert_eq!(framing_sign(code, code), None, "{code}");
    }
}

#[track_caller]
fn report(what: &str, violations: &[String]) {
    assert!(violations.is_empty(), "{what}:\n  {}\n", violations.join("\n  "));
}

/// `fs`, `net` or `thread` imported through a grouped `use std::{…}` on one line.
fn grouped_std_import(code: &str) -> Option<&'static str> {
    let start = code.find("std::{")? + "std::{".len();
    let group = &code[start..];
    let group = &group[..group.find('}').unwrap_or(group.len())];
    let names: Vec<&str> = group.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
    ["fs", "net", "thread"].into_iter().find(|forbidden| names.contains(forbidden))
}

// ---------------------------------------------------------------------------------------------
// Workspace metadata

struct Workspace {
    root: PathBuf,
    packages: Vec<Package>,
}

struct Package {
    name: String,
    /// Path of Cargo.toml relative to the workspace root.
    manifest_rel: String,
    /// `(name, kind)`, kind being "normal", "dev" or "build".
    dependencies: Vec<(String, String)>,
    /// Directory of the library target's root file, if the package has a library.
    lib_src_dir: Option<PathBuf>,
    /// Root files of binary targets (not library code).
    bin_roots: Vec<PathBuf>,
}

impl Workspace {
    fn load() -> Workspace {
        let output = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(output.status.success(), "cargo metadata failed:\n{}", String::from_utf8_lossy(&output.stderr));
        let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
        let root = PathBuf::from(metadata["workspace_root"].as_str().unwrap());
        let packages = metadata["packages"].as_array().unwrap().iter().map(|p| Package::from_json(p, &root)).collect();
        Workspace { root, packages }
    }

    fn package(&self, name: &str) -> Option<&Package> {
        self.packages.iter().find(|p| p.name == name)
    }
}

impl Package {
    fn from_json(json: &Value, root: &Path) -> Package {
        let manifest = PathBuf::from(json["manifest_path"].as_str().unwrap());
        let dependencies = json["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["name"].as_str().unwrap().to_string(), d["kind"].as_str().unwrap_or("normal").to_string()))
            .collect();
        let targets = json["targets"].as_array().unwrap();
        let has_kind = |target: &Value, kind: &str| target["kind"].as_array().unwrap().iter().any(|k| k == kind);
        let src_path = |target: &Value| PathBuf::from(target["src_path"].as_str().unwrap());
        let lib_src_dir = targets
            .iter()
            .find(|t| ["lib", "rlib", "proc-macro"].iter().any(|k| has_kind(t, k)))
            .map(|t| src_path(t).parent().unwrap().to_path_buf());
        let bin_roots = targets.iter().filter(|t| has_kind(t, "bin")).map(src_path).collect();
        Package {
            name: json["name"].as_str().unwrap().to_string(),
            manifest_rel: relative(&manifest, root),
            dependencies,
            lib_src_dir,
            bin_roots,
        }
    }

    fn normal_dependencies(&self) -> impl Iterator<Item = &String> {
        self.dependencies.iter().filter(|(_, kind)| kind == "normal").map(|(name, _)| name)
    }

    /// Every non-test line of the library's source files (binaries under `src/bin/` and bin
    /// roots excluded; for a package without a library, its `src/`).
    fn non_test_lines(&self, root: &Path) -> Vec<Line> {
        let src = match &self.lib_src_dir {
            Some(dir) => dir.clone(),
            None => return Vec::new(),
        };
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.retain(|f| !self.bin_roots.contains(f) && !f.starts_with(src.join("bin")));
        non_test_lines_of(files, root)
    }

    /// Every non-test line of the package's `src/` (library and binaries) and `benches/`.
    fn all_non_test_lines(&self, root: &Path) -> Vec<Line> {
        let dir = root.join(Path::new(&self.manifest_rel).parent().unwrap_or(Path::new("")));
        let mut files = Vec::new();
        for sub in ["src", "benches"] {
            if dir.join(sub).is_dir() {
                rust_files(&dir.join(sub), &mut files);
            }
        }
        non_test_lines_of(files, root)
    }
}

/// The non-test lines of `files`: test-only items and out-of-line test modules left out.
fn non_test_lines_of(mut files: Vec<PathBuf>, root: &Path) -> Vec<Line> {
    files.sort();

    let mut scanned = Vec::new();
    let mut test_modules = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines = scan(&text);
        for module in test_module_names(&lines) {
            test_modules.extend(module_paths(file, &module));
        }
        for path in lines.iter().filter_map(|l| l.test_module_path.as_deref()) {
            test_modules.insert(file.parent().unwrap_or(Path::new("")).join(path));
        }
        scanned.push((file, lines));
    }
    let mut out = Vec::new();
    for (file, lines) in scanned {
        if test_modules.iter().any(|m| file == m || file.starts_with(m.with_extension(""))) {
            continue;
        }
        let rel = relative(file, root);
        out.extend(lines.into_iter().filter(|l| !l.test_only).map(|l| Line { file: rel.clone(), ..l }));
    }
    out
}

fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Where `mod name;` declared in `file` lives: `name.rs` or `name/mod.rs` beside a `lib.rs`,
/// `main.rs` or `mod.rs`, otherwise inside the declaring file's own directory.
fn module_paths(file: &Path, name: &str) -> [PathBuf; 2] {
    let parent = file.parent().unwrap_or(Path::new(""));
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = if ["lib", "main", "mod"].contains(&stem) { parent.to_path_buf() } else { parent.join(stem) };
    [base.join(format!("{name}.rs")), base.join(name).join("mod.rs")]
}

#[test]
fn test_modules_resolve_beside_their_parent() {
    let [a, b] = module_paths(Path::new("src/lib.rs"), "tests");
    assert_eq!((a, b), (PathBuf::from("src/tests.rs"), PathBuf::from("src/tests/mod.rs")));
    let [a, _] = module_paths(Path::new("src/book/l2.rs"), "tests");
    assert_eq!(a, PathBuf::from("src/book/l2/tests.rs"));
}

#[test]
fn grouped_imports_are_caught() {
    assert_eq!(grouped_std_import("use std::{fs, io};"), Some("fs"));
    assert_eq!(grouped_std_import("use std::{io, net::TcpStream};"), Some("net"));
    assert_eq!(grouped_std_import("use std::{fmt, io};"), None);
    assert_eq!(grouped_std_import("use std::collections::HashMap;"), None);
}
