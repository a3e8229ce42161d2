//! TLS material: a self-signed certificate for localhost and 127.0.0.1, generated once into the
//! data directory (as the emulator does), or the operator's own PEM files.
//!
//! This module produces PEM text; serving it is `main.rs`'s job.

use std::path::Path;

/// File names of the generated certificate and key inside the data directory.
pub const CERTIFICATE_FILE: &str = "lethedb-cert.pem";
pub const KEY_FILE: &str = "lethedb-key.pem";

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read or write TLS material at {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot generate a certificate: {0}")]
    Generate(String),
}

/// A certificate chain and private key, both PEM.
#[derive(Clone)]
pub struct TlsMaterial {
    pub certificate_pem: String,
    pub key_pem: String,
}

fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), TlsError> {
    std::fs::write(path, text).map_err(|source| TlsError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Generates a fresh self-signed certificate for localhost and 127.0.0.1.
pub fn generate() -> Result<TlsMaterial, TlsError> {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified =
        rcgen::generate_simple_self_signed(names).map_err(|e| TlsError::Generate(e.to_string()))?;
    Ok(TlsMaterial {
        certificate_pem: certified.cert.pem(),
        key_pem: certified.signing_key.serialize_pem(),
    })
}

/// Loads the given files, or the generated pair in `data_dir` (creating it on first start), or
/// generates a throwaway pair when there is no data directory (in-memory mode).
pub fn load_or_generate(
    explicit: Option<(&Path, &Path)>,
    data_dir: Option<&Path>,
) -> Result<TlsMaterial, TlsError> {
    if let Some((certificate, key)) = explicit {
        return Ok(TlsMaterial {
            certificate_pem: read(certificate)?,
            key_pem: read(key)?,
        });
    }
    let Some(dir) = data_dir else {
        return generate();
    };
    let (certificate, key) = (dir.join(CERTIFICATE_FILE), dir.join(KEY_FILE));
    if certificate.exists() && key.exists() {
        return Ok(TlsMaterial {
            certificate_pem: read(&certificate)?,
            key_pem: read(&key)?,
        });
    }
    let material = generate()?;
    write(&key, &material.key_pem)?;
    write(&certificate, &material.certificate_pem)?;
    Ok(material)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_pair_is_reused_on_the_next_start() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = load_or_generate(None, Some(dir.path())).expect("generate");
        assert!(first
            .certificate_pem
            .starts_with("-----BEGIN CERTIFICATE-----"));
        let second = load_or_generate(None, Some(dir.path())).expect("reload");
        assert_eq!(first.certificate_pem, second.certificate_pem);
    }
}
