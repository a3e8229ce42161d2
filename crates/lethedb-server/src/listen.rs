//! Sockets and slow clients: the listening socket (with a backlog that absorbs bursts of
//! connections), and the two deadlines that keep a client from holding a connection without
//! sending a request: the first byte must arrive within the header timeout ([`FirstByte`], for
//! connections that connect and say nothing, which hyper would wait on forever while it reads
//! which HTTP version they speak), and then the whole request head ([`limit_slow_clients`],
//! hyper's header read timeout, which also closes a kept-alive connection idle that long).
//!
//! Connections are tasks, not threads: a slow one never holds a request worker; these
//! deadlines bound how long it holds a socket and its memory.

use axum_server::accept::Accept;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Connections the kernel queues before the server accepts them: enough for a burst of
/// thousands of clients connecting at once (the system's `somaxconn` may lower it).
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listening socket on `address`, ready for the async runtime.
pub fn bind(address: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    let listener = socket.listen(LISTEN_BACKLOG)?.into_std()?;
    Ok(listener)
}

/// hyper's header read timeout: a client must send a request's head within `header_timeout`
/// of starting it (or of the previous response on a kept-alive connection). Without a timer
/// hyper applies none.
pub fn limit_slow_clients(builder: &mut Builder<TokioExecutor>, header_timeout: Duration) {
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
}

/// An acceptor that gives each connection `timeout` to send its first byte, after `inner`
/// (plain TCP, or the TLS handshake) has accepted it.
#[derive(Clone, Debug)]
pub struct FirstByte<A> {
    inner: A,
    timeout: Duration,
}

impl<A> FirstByte<A> {
    pub fn new(inner: A, timeout: Duration) -> FirstByte<A> {
        FirstByte { inner, timeout }
    }
}

type Accepted<S, V> = Pin<Box<dyn Future<Output = io::Result<(FirstByteStream<S>, V)>> + Send>>;

impl<A, I, V> Accept<I, V> for FirstByte<A>
where
    A: Accept<I, V>,
    A::Future: Send + 'static,
    A::Stream: Send + 'static,
    A::Service: Send + 'static,
{
    type Stream = FirstByteStream<A::Stream>;
    type Service = A::Service;
    type Future = Accepted<A::Stream, A::Service>;

    fn accept(&self, stream: I, service: V) -> Self::Future {
        let accepted = self.inner.accept(stream, service);
        let timeout = self.timeout;
        Box::pin(async move {
            let (stream, service) = accepted.await?;
            Ok((FirstByteStream::new(stream, timeout), service))
        })
    }
}

/// A stream whose reads fail with `TimedOut` if no byte arrives before its deadline; once one
/// has, it is the inner stream unchanged.
pub struct FirstByteStream<S> {
    inner: S,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> FirstByteStream<S> {
    fn new(inner: S, timeout: Duration) -> FirstByteStream<S> {
        FirstByteStream {
            inner,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FirstByteStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() > before => self.deadline = None,
            Poll::Pending => {
                if let Some(deadline) = self.deadline.as_mut() {
                    if deadline.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the client sent nothing before the header timeout",
                        )));
                    }
                }
            }
            Poll::Ready(_) => {}
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FirstByteStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_silent_connection_times_out_and_a_talking_one_does_not() {
        let (client, server) = tokio::io::duplex(64);
        let mut silent = FirstByteStream::new(server, Duration::from_millis(200));
        let mut buffer = [0u8; 8];
        let error = silent.read(&mut buffer).await.expect_err("timed out");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        drop(client);

        let (mut client, server) = tokio::io::duplex(64);
        let mut talking = FirstByteStream::new(server, Duration::from_millis(200));
        client.write_all(b"G").await.expect("write");
        assert_eq!(talking.read(&mut buffer).await.expect("read"), 1);
        // Past the deadline, a read waits as long as the inner stream does.
        tokio::time::sleep(Duration::from_millis(400)).await;
        client.write_all(b"ET").await.expect("write");
        assert_eq!(talking.read(&mut buffer).await.expect("read"), 2);
    }
}
