//! Key-for-key comparison of a simulator reply with a recorded Deribit vector, shared by the
//! vector walks (`vectors.rs`, `history_vectors.rs`).
//!
//! Owns: the rule. Every key of the vector's object must be in the reply with the same JSON
//! type, recursively; `null` on either side matches any type (Deribit sends `null` for absent
//! values such as `price_change` before the first trade). Every item of a reply's list must
//! match one item of the vector's list (Deribit's lists mix entries: a transaction log has
//! trades, settlements and transfers).
//!
//! A comparison may name an instrument kind. Then only objects about that kind are compared,
//! on both sides: lists keep their items of that kind (and items naming no instrument), and
//! an object about another kind is a difference. Option objects carry keys (`iv`, `greeks`,
//! `strike`...) a future's lack, so an option reply must meet the vector's option items and
//! not pass by matching a future's; a walk that trades both compares a method once per kind.
//! Must not: know any method; each test passes its own documented `Exceptions`.

use serde_json::Value;

use super::type_of;

/// What one test does not compare, each with its reason.
#[derive(Clone, Copy, Default)]
pub struct Exceptions<'a> {
    /// Keys skipped anywhere in a reply.
    pub keys: &'a [(&'a str, &'a str)],
    /// Paths (`method.key[].key`; `[]` stands for any list index) skipped.
    pub paths: &'a [(&'a str, &'a str)],
}

impl Exceptions<'_> {
    /// No exception: the strict comparison.
    pub const NONE: Exceptions<'static> = Exceptions { keys: &[], paths: &[] };
}

/// The kind of instrument a Deribit instrument name denotes, by its documented form:
/// options `BTC-27MAY20-8750-C`, combos `BTC-FS-2SEP22_PERP`, futures `BTC-26JUN20` and
/// perpetuals `BTC-PERPETUAL`, spot pairs `BTC_USDC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Option,
    Combo,
    /// Futures and perpetuals: they share their objects' keys.
    Future,
    Spot,
}

pub fn kind_of_name(name: &str) -> Kind {
    let parts: Vec<&str> = name.split('-').collect();
    if parts.len() == 4 && matches!(parts[3], "C" | "P") {
        Kind::Option
    } else if parts.len() >= 3 && parts[1] != "PERPETUAL" && parts[1].chars().all(|c| c.is_ascii_uppercase()) {
        Kind::Combo
    } else if parts.len() == 1 {
        Kind::Spot
    } else {
        Kind::Future
    }
}

/// The kind of the object itself (its own `instrument_name`), if it names one.
pub fn kind_of(value: &Value) -> Option<Kind> {
    value.get("instrument_name").and_then(Value::as_str).map(kind_of_name)
}

/// Every kind named anywhere in `value`.
pub fn kinds_in(value: &Value, out: &mut Vec<Kind>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                match (key.as_str(), item) {
                    ("instrument_name", Value::String(name)) => out.push(kind_of_name(name)),
                    _ => kinds_in(item, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| kinds_in(item, out)),
        _ => {}
    }
    out.sort();
    out.dedup();
}

/// `path` with each list index written `[]`, as path exceptions name them.
fn any_index(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for ch in path.chars() {
        match ch {
            '[' => in_index = true,
            ']' => {
                in_index = false;
                out.push_str("[]");
            }
            _ if in_index => {}
            _ => out.push(ch),
        }
    }
    out
}

fn excepted(except: &Exceptions<'_>, path: &str) -> bool {
    except.paths.iter().any(|(p, _)| *p == path || *p == any_index(path))
}

/// Appends every place where `actual` lacks a key of `expected` or has another type; with
/// `kind`, compares only objects about instruments of that kind (see the module docs).
pub fn diff(
    path: &str,
    expected: &Value,
    actual: &Value,
    kind: Option<Kind>,
    except: &Exceptions<'_>,
    out: &mut Vec<String>,
) {
    if expected.is_null() || actual.is_null() || except.paths.iter().any(|(p, _)| *p == path || *p == any_index(path)) {
        return;
    }
    if type_of(expected) != type_of(actual) {
        out.push(format!("{path}: vector {} vs simulator {}", type_of(expected), type_of(actual)));
        return;
    }
    let of_kind = |v: &Value| kind.is_none() || kind_of(v).is_none_or(|k| Some(k) == kind);
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (side, value) in [("vector", expected), ("simulator", actual)] {
                if !of_kind(value) {
                    out.push(format!("{path}: the {side}'s object is about {:?}, not {kind:?}", kind_of(value)));
                    return;
                }
            }
            for (key, value) in e {
                let child = format!("{path}.{key}");
                if except.keys.iter().any(|(k, _)| k == key) || excepted(except, &child) {
                    continue;
                }
                match a.get(key) {
                    Some(actual) => diff(&child, value, actual, kind, except, out),
                    None => out.push(format!("{child}: missing in simulator")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            let wanted: Vec<&Value> = e.iter().filter(|v| of_kind(v)).collect();
            let items = a.iter().enumerate().filter(|(_, v)| of_kind(v));
            for (n, item) in items {
                if wanted.is_empty() {
                    if !e.is_empty() {
                        out.push(format!("{path}: the vector's list has no item about {kind:?}"));
                    }
                    return;
                }
                let tries: Vec<Vec<String>> = wanted
                    .iter()
                    .map(|want| {
                        let mut d = Vec::new();
                        diff(&format!("{path}[{n}]"), want, item, kind, except, &mut d);
                        d
                    })
                    .collect();
                if tries.iter().all(|d| !d.is_empty()) {
                    out.extend(tries.into_iter().min_by_key(Vec::len).unwrap_or_default());
                }
            }
        }
        _ => {}
    }
}

/// The response vectors of `method`, current docs first, then v2.1.1, then the 2019 files.
pub fn method_vectors(method: &str) -> Vec<(String, Value)> {
    let base = method.replace('/', "_");
    [".response.json", ".response.docs_v2_1_1.json", ".response.official_2019.json"]
        .iter()
        .map(|suffix| format!("{base}{suffix}"))
        .filter(|name| super::examples_dir().join(name).exists())
        .map(|name| {
            let value = super::vector(&name);
            (name, value)
        })
        .collect()
}

/// The vector of `method` to compare with: without `kind` the first; with it the first that
/// shows an instrument of that kind, else the first that shows no instrument at all, else the
/// first (whose comparison then reports the missing kind).
pub fn vector_for(method: &str, kind: Option<Kind>) -> (String, Value) {
    let vectors = method_vectors(method);
    assert!(!vectors.is_empty(), "no vector for {method}");
    let kinds = |v: &Value| {
        let mut k = Vec::new();
        kinds_in(&v["result"], &mut k);
        k
    };
    let pick = kind.and_then(|kind| {
        (vectors.iter().position(|(_, v)| kinds(v).contains(&kind)))
            .or_else(|| vectors.iter().position(|(_, v)| kinds(v).is_empty()))
    });
    vectors.into_iter().nth(pick.unwrap_or(0)).unwrap_or_else(|| unreachable!())
}

/// Compares `reply` (a JSON-RPC answer) with the vector of `method` (of `kind`, when given);
/// returns the differences, each naming the vector compared.
pub fn check_reply(method: &str, reply: &Value, kind: Option<Kind>, except: &Exceptions<'_>) -> Vec<String> {
    assert!(reply.get("error").is_none(), "{method} failed: {reply}");
    let (name, vector) = vector_for(method, kind);
    let mut out = Vec::new();
    diff(method, &vector["result"], &reply["result"], kind, except, &mut out);
    out.into_iter().map(|d| format!("{d} ({name})")).collect()
}
