//! The letter case of the standard header names the service's gateway sends (`Content-Location`,
//! `Content-Type`, ...), where hyper writes every name lowercase. HTTP names are case-insensitive,
//! but azure-cosmos 4.5.1 copies a response's headers into a plain `dict` and looks up
//! `Content-Location` in the service's case (its global-endpoint tests read it so).
//!
//! hyper writes an HTTP/1 response's names in the case that a private extension records, and only
//! its parser makes that extension (`http1::Builder::preserve_header_case`, made to forward cases
//! as a proxy does). So the extension is made once, by parsing a request that names these headers
//! in the service's case, and a copy goes on every response. The `x-ms-*` names are left alone (the
//! service sends them lowercase, and the SDKs look them up so), and HTTP/2 names are lowercase by
//! rule. If the extension cannot be made, responses go out lowercase, as before.

use axum::body::Body;
use axum::http::{Extensions, Request, Response};
use std::convert::Infallible;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The standard headers LetheDB sends, named as the service's gateway names them.
const SERVICE_CASE: &[&str] = &["Content-Location", "Content-Type", "Content-Length", "Date"];

/// How long making the extension may take; it is a parse of a few bytes in memory.
const RECORD_TIMEOUT: Duration = Duration::from_secs(5);

/// The recorded cases, made on first use; `None` when they could not be made.
static CASES: OnceLock<Option<Extensions>> = OnceLock::new();

/// Makes `response`'s standard header names go out in the service's letter case over HTTP/1.
pub fn apply<B>(response: &mut Response<B>) {
    if let Some(cases) = CASES.get_or_init(record) {
        response.extensions_mut().extend(cases.clone());
    }
}

/// Records the cases on a thread of its own, so that the parse's small runtime never runs
/// inside the server's.
fn record() -> Option<Extensions> {
    let recording = std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        runtime.block_on(async {
            tokio::time::timeout(RECORD_TIMEOUT, parse_service_case())
                .await
                .ok()
                .flatten()
        })
    });
    let cases = recording.join().ok().flatten();
    if cases.is_none() {
        tracing::warn!("could not record the service's header name case; names go out lowercase");
    }
    cases
}

/// Has hyper parse a request naming [`SERVICE_CASE`] and returns the extensions it attached,
/// among them the private one that records each name's case.
async fn parse_service_case() -> Option<Extensions> {
    let (mut client, server) = tokio::io::duplex(4096);
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let sender = Mutex::new(Some(sender));
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        if let Some(sender) = sender.lock().ok().and_then(|mut slot| slot.take()) {
            let _ = sender.send(request.extensions().clone());
        }
        async { Ok::<_, Infallible>(Response::new(Body::empty())) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .serve_connection(hyper_util::rt::TokioIo::new(server), service);
    let serving = tokio::spawn(connection);
    let names: String = SERVICE_CASE
        .iter()
        // A GET's body is empty, so its length is 0; the other values are never read.
        .map(|name| match *name {
            "Content-Length" => format!("{name}: 0\r\n"),
            _ => format!("{name}: x\r\n"),
        })
        .collect();
    let head = format!("GET / HTTP/1.1\r\nHost: localhost\r\n{names}\r\n");
    client.write_all(head.as_bytes()).await.ok()?;
    let cases = receiver.await.ok();
    drop(client);
    serving.abort();
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// The bytes hyper writes for a response that went through [`apply`].
    async fn wire_bytes() -> String {
        let (mut client, server) = tokio::io::duplex(4096);
        let service = hyper::service::service_fn(|_: Request<hyper::body::Incoming>| async {
            let mut response = Response::new(Body::from("{}"));
            let headers = response.headers_mut();
            headers.insert(
                "content-location",
                "https://localhost:8081/dbs".parse().unwrap(),
            );
            headers.insert("content-type", "application/json".parse().unwrap());
            headers.insert("x-ms-request-charge", "1".parse().unwrap());
            apply(&mut response);
            Ok::<_, Infallible>(response)
        });
        let serving = tokio::spawn(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(server), service),
        );
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut bytes = Vec::new();
        client.read_to_end(&mut bytes).await.unwrap();
        serving.abort();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn standard_names_go_out_in_the_service_case_and_x_ms_names_lowercase() {
        let wire = wire_bytes().await;
        assert!(
            wire.contains("\r\nContent-Location: https://localhost:8081/dbs\r\n"),
            "{wire}"
        );
        assert!(
            wire.contains("\r\nContent-Type: application/json\r\n"),
            "{wire}"
        );
        assert!(wire.contains("\r\nContent-Length: 2\r\n"), "{wire}");
        assert!(wire.contains("\r\nx-ms-request-charge: 1\r\n"), "{wire}");
    }
}
