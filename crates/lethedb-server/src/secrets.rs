//! The master key and what the server exposes: where the key comes from (`--key-file`,
//! `--key`, or the emulator's well-known key), how a log line may name it (a fingerprint, never
//! the key), the start-up refusal to serve the well-known key beyond loopback, and whether the
//! main port serves `/metrics`.
//!
//! Pure decisions over settings and one file read; `main.rs` acts on them.

use crate::cli::EMULATOR_KEY;
use crate::state::MetricsRoute;
use lethedb_auth::MasterKey;
use std::net::SocketAddr;
use std::path::Path;

/// The master key, from a file (`--key-file`), the flag or environment variable (`--key`), or
/// the emulator's well-known key when neither is given. A file holds the base64 key and
/// nothing else; surrounding whitespace (a final newline) is ignored. No error repeats the key.
pub fn load_key(flag: Option<&str>, file: Option<&Path>) -> Result<MasterKey, String> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read the key file {}: {error}", path.display()))?;
        if text.trim().is_empty() {
            return Err(format!(
                "the key file {} is empty: it must hold the base64 master key",
                path.display()
            ));
        }
        return MasterKey::from_base64(&text).ok_or_else(|| {
            format!(
                "the key file {} does not hold a base64 master key (one line of base64, nothing else)",
                path.display()
            )
        });
    }
    let text = flag.unwrap_or(EMULATOR_KEY);
    MasterKey::from_base64(text)
        .ok_or_else(|| "--key (LETHEDB_KEY) must be a non-empty base64 string".to_string())
}

/// How a log line names the key: the emulator's public key by name, any other only by its
/// fingerprint.
pub fn key_label(key: &MasterKey) -> String {
    if key.is_emulator_key() {
        "emulator (the well-known emulator key)".to_string()
    } else {
        format!("custom (fingerprint {})", key.fingerprint())
    }
}

/// The one machine-readable line printed on stdout once the server listens, for a harness that
/// started it on port 0: `{"ready": true, "endpoint": ..., "store": ..., ...}`, with
/// `"computeGateway"` the compute gateway's endpoint when it is served. The key is named
/// only when it is the emulator's public one (`"key"`); any other only by its fingerprint
/// (`"keyFingerprint"`): whoever chose a custom key already has it, and a log never shows it.
pub fn ready_line(
    endpoint: &str,
    compute_gateway: Option<&str>,
    store: &str,
    key: &MasterKey,
) -> String {
    let mut line = serde_json::json!({"ready": true, "endpoint": endpoint, "store": store});
    if let Some(compute_gateway) = compute_gateway {
        line["computeGateway"] = compute_gateway.into();
    }
    if key.is_emulator_key() {
        line["key"] = EMULATOR_KEY.into();
    } else {
        line["keyFingerprint"] = key.fingerprint().into();
    }
    line.to_string()
}

/// Whether `address` is reachable only from this machine.
pub fn is_loopback(address: SocketAddr) -> bool {
    address.ip().to_canonical().is_loopback()
}

/// Refuses to serve the well-known emulator key, which anyone can sign requests with, on an
/// address other machines can reach, unless `allowed` (`--allow-emulator-key-on-network`).
pub fn check_exposure(bind: SocketAddr, key: &MasterKey, allowed: bool) -> Result<(), String> {
    if allowed || is_loopback(bind) || !key.is_emulator_key() {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {bind} with the Cosmos DB emulator's well-known key: anyone who \
         can reach this address could read and change every database with it. Set a key of your \
         own with --key-file PATH (or LETHEDB_KEY_FILE), listen on a loopback address (--bind \
         127.0.0.1:{port}), or, if every client that can reach {bind} may have full access, pass \
         --allow-emulator-key-on-network (LETHEDB_ALLOW_EMULATOR_KEY_ON_NETWORK).",
        port = bind.port()
    ))
}

/// Where `GET /metrics` is answered on the main port: nowhere when it has a port of its own
/// (`--metrics-bind`); served when the main port listens on loopback or `--metrics-public` is
/// given (scrapers do not sign requests, so anyone who can connect can read it); refused
/// otherwise.
pub fn metrics_route(bind: SocketAddr, own_port: bool, public: bool) -> MetricsRoute {
    if own_port {
        MetricsRoute::OwnPort
    } else if public || is_loopback(bind) {
        MetricsRoute::Served
    } else {
        MetricsRoute::LoopbackOnly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> SocketAddr {
        text.parse().expect("address")
    }

    #[test]
    fn the_ready_line_names_only_the_public_key() {
        let emulator = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let line: serde_json::Value = serde_json::from_str(&ready_line(
            "http://127.0.0.1:1/",
            None,
            "memory",
            &emulator,
        ))
        .expect("json");
        assert_eq!(line["ready"], true);
        assert_eq!(line["endpoint"], "http://127.0.0.1:1/");
        assert_eq!(line["key"], EMULATOR_KEY);
        let custom = MasterKey::from_base64("c2VjcmV0LWtleQ==").expect("key");
        let text = ready_line("http://127.0.0.1:1/", None, "redb", &custom);
        assert!(!text.contains("c2VjcmV0LWtleQ=="), "{text}");
        let line: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(line["keyFingerprint"], custom.fingerprint());
        assert!(line.get("key").is_none());
    }

    #[test]
    fn the_key_comes_from_the_file_then_the_flag_then_the_emulator() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("key");
        std::fs::write(&file, "c2VjcmV0LWtleQ==\n").expect("write");
        let from_file = load_key(Some(EMULATOR_KEY), Some(&file)).expect("file");
        let from_flag = load_key(Some(" c2VjcmV0LWtleQ== "), None).expect("flag");
        assert_eq!(from_file.fingerprint(), from_flag.fingerprint());
        assert!(load_key(None, None).expect("default").is_emulator_key());
        let missing = dir.path().join("absent");
        let cases: [(&str, Option<&str>, &str); 4] = [
            ("empty", Some(" \n"), "is empty"),
            (
                "invalid",
                Some("not base64!\n"),
                "does not hold a base64 master key",
            ),
            (
                "padded",
                Some("c2VjcmV0LWtleQ"),
                "does not hold a base64 master key",
            ),
            ("absent", None, "cannot read the key file"),
        ];
        for (name, content, expected) in cases {
            let path = dir.path().join(name);
            if let Some(content) = content {
                std::fs::write(&path, content).expect("write");
            }
            let path = if content.is_some() {
                path
            } else {
                missing.clone()
            };
            let error = load_key(None, Some(&path)).err().expect(name);
            assert!(error.contains(expected), "{name}: {error}");
            assert!(error.contains(&path.display().to_string()), "{error}");
        }
        let error = load_key(Some("not base64!"), None).err().expect("flag");
        assert!(
            !error.contains("not base64!"),
            "the error repeats the key: {error}"
        );
    }

    #[test]
    fn a_log_line_names_a_custom_key_only_by_its_fingerprint() {
        let custom = MasterKey::from_base64("c2VjcmV0LWtleQ==").expect("key");
        let label = key_label(&custom);
        assert_eq!(
            label,
            format!("custom (fingerprint {})", custom.fingerprint())
        );
        assert!(!label.contains("c2VjcmV0"));
        let emulator = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        assert!(key_label(&emulator).starts_with("emulator"));
        assert!(!key_label(&emulator).contains(EMULATOR_KEY));
    }

    #[test]
    fn the_emulator_key_is_refused_beyond_loopback_unless_allowed() {
        let emulator = MasterKey::from_base64(EMULATOR_KEY).expect("key");
        let custom = MasterKey::from_base64("c2VjcmV0LWtleQ==").expect("key");
        for bind in [
            "127.0.0.1:8081",
            "[::1]:8081",
            "127.1.2.3:0",
            "[::ffff:127.0.0.1]:1",
        ] {
            assert_eq!(
                check_exposure(address(bind), &emulator, false),
                Ok(()),
                "{bind}"
            );
        }
        for bind in ["0.0.0.0:8081", "[::]:8081", "10.0.0.5:8081"] {
            let error = check_exposure(address(bind), &emulator, false).expect_err(bind);
            assert!(error.contains("--allow-emulator-key-on-network"), "{error}");
            assert!(error.contains("--key-file"), "{error}");
            assert_eq!(check_exposure(address(bind), &emulator, true), Ok(()));
            assert_eq!(check_exposure(address(bind), &custom, false), Ok(()));
        }
    }

    #[test]
    fn metrics_are_served_on_the_main_port_on_loopback_or_when_public() {
        let cases = [
            ("127.0.0.1:8081", false, false, MetricsRoute::Served),
            ("[::1]:8081", false, false, MetricsRoute::Served),
            ("0.0.0.0:8081", false, false, MetricsRoute::LoopbackOnly),
            ("0.0.0.0:8081", false, true, MetricsRoute::Served),
            ("0.0.0.0:8081", true, false, MetricsRoute::OwnPort),
            ("127.0.0.1:8081", true, true, MetricsRoute::OwnPort),
        ];
        for (bind, own_port, public, expected) in cases {
            assert_eq!(
                metrics_route(address(bind), own_port, public),
                expected,
                "{bind} {own_port} {public}"
            );
        }
    }
}
