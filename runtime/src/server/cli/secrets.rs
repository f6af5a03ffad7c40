//! Secrets read from files, as a container mounts them: the handle key
//! (`--handle-key-file`), and the JWT secret (`--jwt-secret-file`). A trailing newline is
//! not part of a secret (an editor or `echo` adds one), and no message ever quotes one.

use std::path::Path;

use super::ServeError;
use super::args::usage;
use super::sources::Sources;
use crate::flow::handle::{HANDLE_KEY_ENV, HANDLE_KEYS_ENV, MIN_KEY_BYTES};
use crate::server::ServerBuilder;

/// The secret in the file at `path`: its bytes, less one trailing line ending (`\n` or
/// `\r\n`).
pub(super) fn read_secret(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut secret = std::fs::read(path)?;
    if secret.last() == Some(&b'\n') {
        secret.pop();
        if secret.last() == Some(&b'\r') {
            secret.pop();
        }
    }
    Ok(secret)
}

impl ServerBuilder {
    /// The handle key from the file at `path` (`--handle-key-file`). Given with
    /// `TOOLGATE_HANDLE_KEY(S)`, or to a server whose code sets its key, it is refused:
    /// which one would win is not for a reader of the deployment to guess.
    pub(super) fn handle_key_from_file(self, path: &Path, sources: &Sources) -> Result<Self, ServeError> {
        let shown = sources.given("handle-key-file", path.display());
        for variable in [HANDLE_KEY_ENV, HANDLE_KEYS_ENV] {
            if std::env::var_os(variable).is_some_and(|value| !value.is_empty()) {
                return Err(usage(format!("{shown}: {variable} is set too; give the handle key once")));
            }
        }
        if !self.handle_keys.is_empty() {
            return Err(usage(format!(
                "{shown}: this server sets its handle key in its code (`ServerBuilder::handle_key`)"
            )));
        }
        let key = read_secret(path).map_err(|e| usage(format!("{shown}: {e}")))?;
        if key.len() < MIN_KEY_BYTES {
            return Err(usage(format!(
                "{shown}: the key is {} bytes (a trailing newline left out); a handle key has {MIN_KEY_BYTES} or more",
                key.len()
            )));
        }
        Ok(self.handle_key(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_file_loses_one_trailing_newline_only() {
        let dir = std::env::temp_dir().join(format!("toolgate-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("secret");
        for (written, read) in [
            (&b"s3cret\n"[..], &b"s3cret"[..]),
            (b"s3cret\r\n", b"s3cret"),
            (b"s3cret", b"s3cret"),
            (b"s3cret\n\n", b"s3cret\n"),
            (b" s3cret \n", b" s3cret "),
        ] {
            std::fs::write(&path, written).unwrap();
            assert_eq!(read_secret(&path).unwrap(), read, "{written:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
