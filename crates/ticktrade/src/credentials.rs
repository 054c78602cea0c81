//! Credentials for `ticktrade trade`: `$DERIBIT_CLIENT_ID`/`$DERIBIT_CLIENT_SECRET`, or a
//! config file that only its owner can read. Never from the command line, never printed.
//!
//! Owns: the file format (`client_id = …` / `client_secret = …` lines, `#` comments,
//! optional quotes) and the permission check.

use std::path::Path;

use anyhow::{Context as _, bail};
use ticktrade_gateway::venue::{Credentials, Secret};

/// The simulator's built-in key (public knowledge, like a test fixture; not a secret).
pub fn simulator_default() -> Credentials {
    let key = ticktrade_sim::ApiKey::default_key();
    Credentials { client_id: key.client_id, client_secret: Secret::new(key.client_secret.expose()) }
}

/// From the environment, else from `path`. `Ok(None)` when neither is set.
pub fn load(path: Option<&Path>) -> anyhow::Result<Option<Credentials>> {
    if let Some(path) = path {
        return from_file(path).map(Some);
    }
    match (std::env::var("DERIBIT_CLIENT_ID"), std::env::var("DERIBIT_CLIENT_SECRET")) {
        (Ok(id), Ok(secret)) if !id.is_empty() && !secret.is_empty() => {
            Ok(Some(Credentials { client_id: id, client_secret: Secret::new(secret) }))
        }
        _ => Ok(None),
    }
}

fn from_file(path: &Path) -> anyhow::Result<Credentials> {
    check_private(path)?;
    let text = std::fs::read_to_string(path).with_context(|| format!("config {}", path.display()))?;
    parse(&text).with_context(|| format!("config {}", path.display()))
}

#[cfg(unix)]
fn check_private(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).with_context(|| format!("config {}", path.display()))?;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        bail!(
            "config {} is readable by other users (mode {:o}); run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

fn parse(text: &str) -> anyhow::Result<Credentials> {
    let (mut id, mut secret) = (None, None);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('[') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { bail!("expected `key = value`") };
        let value = value.trim().trim_matches('"').to_owned();
        match key.trim() {
            "client_id" => id = Some(value),
            "client_secret" => secret = Some(Secret::new(value)),
            other => bail!("unknown key {other:?} (expected client_id, client_secret)"),
        }
    }
    match (id, secret) {
        (Some(client_id), Some(client_secret)) => Ok(Credentials { client_id, client_secret }),
        _ => bail!("needs both client_id and client_secret"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_hides_the_secret() {
        let creds = parse("# key\nclient_id = \"abc\"\nclient_secret = s3cr3t\n").unwrap();
        assert_eq!(creds.client_id, "abc");
        assert_eq!(creds.client_secret.expose(), "s3cr3t");
        assert!(!format!("{creds:?}").contains("s3cr3t"));
        assert!(parse("client_id = x\n").is_err());
        let err = parse("client_id = x\nclient_secret = hunter2\npassword = hunter2\n").unwrap_err();
        assert!(!format!("{err:#}").contains("hunter2"));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_world_readable_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deribit.conf");
        std::fs::write(&path, "client_id = a\nclient_secret = b\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = from_file(&path).unwrap_err();
        assert!(format!("{err:#}").contains("readable by other users"), "{err:#}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(from_file(&path).unwrap().client_id, "a");
    }
}
