//! A listener that counts HTTP connections (`_nodes/stats/http`): each accepted stream carries
//! a guard that counts it open until the connection is dropped. With HTTP TLS
//! (`xpack.security.http.ssl.enabled`), handshakes run in their own tasks (bounded in time)
//! and only finished ones are handed to hyper; the request-head check below runs on the
//! decrypted bytes either way.

use lode_api::http_stats::ConnectionGuard;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Each request's `ConnectInfo`: the client's address (failed logins are logged with it) and
/// a probe on its connection.
#[derive(Clone)]
pub struct ConnInfo {
    pub remote: SocketAddr,
    pub probe: ConnProbe,
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, CountingListener>>
    for ConnInfo
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, CountingListener>) -> Self {
        ConnInfo {
            remote: *stream.remote_addr(),
            probe: ConnProbe::of(stream.io().inner.tcp()),
        }
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TcpListener>>
    for ConnInfo
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TcpListener>) -> Self {
        ConnInfo {
            remote: *stream.remote_addr(),
            probe: ConnProbe::of(stream.io()),
        }
    }
}

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct CountingListener {
    tcp: TcpListener,
    tls: Option<Tls>,
    limits: HeadLimits,
}

struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
    tx: tokio::sync::mpsc::Sender<(Transport, SocketAddr)>,
    rx: tokio::sync::mpsc::Receiver<(Transport, SocketAddr)>,
}

impl CountingListener {
    /// `tls`: serve HTTPS with this configuration.
    pub fn new(tcp: TcpListener, tls: Option<std::sync::Arc<rustls::ServerConfig>>) -> Self {
        let tls = tls.map(|cfg| {
            let (tx, rx) = tokio::sync::mpsc::channel(64);
            Tls {
                acceptor: tokio_rustls::TlsAcceptor::from(cfg),
                tx,
                rx,
            }
        });
        CountingListener {
            tcp,
            tls,
            limits: HeadLimits::default(),
        }
    }

    /// Checks request heads against these limits instead of ES's defaults.
    pub fn with_head_limits(mut self, limits: HeadLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// The connection's bytes: plain TCP or TLS over it.
enum Transport {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Transport {
    fn tcp(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(s) => s.get_ref().0,
        }
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Transport::Plain(s) => s.is_write_vectored(),
            Transport::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// A second handle on a connection's socket, given to each of its requests (axum's
/// `ConnectInfo`), so a handler running on the connection's own thread can tell whether the
/// client has gone: `None` when the socket could not be duplicated.
#[derive(Clone)]
pub struct ConnProbe(Option<Arc<std::net::TcpStream>>);

impl ConnProbe {
    fn of(stream: &TcpStream) -> ConnProbe {
        use std::os::fd::AsFd;
        // The duplicate shares the socket's non-blocking mode, so a peek never waits.
        ConnProbe(
            stream
                .as_fd()
                .try_clone_to_owned()
                .ok()
                .map(|fd| Arc::new(std::net::TcpStream::from(fd))),
        )
    }

    /// True once the client has closed its side: a peek reads the end of the stream. Bytes
    /// waiting (a pipelined request) or none yet both mean the client is still there.
    pub fn client_closed(&self) -> bool {
        let Some(s) = &self.0 else {
            return false;
        };
        let mut byte = [0u8; 1];
        match s.peek(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ),
        }
    }
}

pub struct CountedStream {
    inner: Transport,
    _guard: ConnectionGuard,
    check: HeadCheck,
    drain_deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

fn counted(inner: Transport, limits: HeadLimits) -> CountedStream {
    CountedStream {
        inner,
        _guard: ConnectionGuard::opened(),
        check: HeadCheck {
            limits,
            ..HeadCheck::default()
        },
        drain_deadline: None,
    }
}

impl axum::serve::Listener for CountingListener {
    type Io = CountedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let limits = self.limits;
        let Some(tls) = self.tls.as_mut() else {
            let (inner, addr) = axum::serve::Listener::accept(&mut self.tcp).await;
            return (counted(Transport::Plain(inner), limits), addr);
        };
        loop {
            tokio::select! {
                (tcp, addr) = axum::serve::Listener::accept(&mut self.tcp) => {
                    let acceptor = tls.acceptor.clone();
                    let tx = tls.tx.clone();
                    tokio::spawn(async move {
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                            Ok(Ok(stream)) => {
                                let _ = tx.send((Transport::Tls(Box::new(stream)), addr)).await;
                            }
                            Ok(Err(e)) => tracing::debug!(remote = %addr, "TLS handshake failed: {e}"),
                            Err(_) => tracing::debug!(remote = %addr, "TLS handshake timed out"),
                        }
                    });
                }
                Some((stream, addr)) = tls.rx.recv() => return (counted(stream, limits), addr),
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

impl AsyncRead for CountedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let hc = &mut this.check;
        loop {
            if hc.released > 0 {
                let n = hc.released.min(buf.remaining());
                buf.put_slice(&hc.pending[..n]);
                hc.pending.drain(..n);
                hc.released -= n;
                return Poll::Ready(Ok(()));
            }
            if hc.refusal.is_some() {
                // the refused head is never shown to hyper: it reads the end of the stream
                return Poll::Ready(Ok(()));
            }
            if hc.eof {
                if hc.pending.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                // an incomplete head at the end of the stream: hyper sees it as it came
                hc.released = hc.pending.len();
                continue;
            }
            let framing = hc.framing();
            let direct = match framing {
                Framing::Body(n) | Framing::ChunkData(n) => Some(n),
                Framing::Passthrough => Some(u64::MAX),
                _ => None,
            };
            if let (Some(n), true) = (direct, hc.pending.is_empty()) {
                // body bytes go straight into hyper's buffer, never past the body's end
                let limit = (buf.remaining() as u64).min(n) as usize;
                let before = buf.filled().len();
                {
                    let dst = buf.initialize_unfilled_to(limit);
                    let mut sub = ReadBuf::new(dst);
                    std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut sub))?;
                    let got = sub.filled().len();
                    buf.advance(got);
                }
                let got = (buf.filled().len() - before) as u64;
                if got == 0 {
                    hc.eof = true;
                    return Poll::Ready(Ok(()));
                }
                hc.framing = Some(match framing {
                    Framing::Body(n) if got == n => Framing::Head,
                    Framing::Body(n) => Framing::Body(n - got),
                    Framing::ChunkData(n) if got == n => Framing::ChunkEnd(0),
                    Framing::ChunkData(n) => Framing::ChunkData(n - got),
                    other => other,
                });
                return Poll::Ready(Ok(()));
            }
            let mut tmp = [0u8; 8192];
            let mut rb = ReadBuf::new(&mut tmp);
            std::task::ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            if rb.filled().is_empty() {
                hc.eof = true;
                continue;
            }
            hc.pending.extend_from_slice(rb.filled());
            hc.scan();
        }
    }
}

impl CountedStream {
    /// Writes a refusal, then reads and drops what the client still sends (bounded in bytes
    /// and time), so that closing does not reset the connection before the client reads it.
    fn poll_refusal(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some((bytes, written)) = self.check.refusal.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        while *written < bytes.len() {
            let n =
                std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        std::task::ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
        let deadline = self
            .drain_deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(std::time::Duration::from_secs(2))));
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        let mut tmp = [0u8; 8192];
        while self.check.drained < DRAIN_LIMIT && !self.check.eof {
            let mut rb = ReadBuf::new(&mut tmp);
            match Pin::new(&mut self.inner).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if !rb.filled().is_empty() => {
                    self.check.drained += rb.filled().len()
                }
                Poll::Ready(_) => self.check.eof = true,
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for CountedStream {
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
        if self.check.refusal.is_some() {
            let _ = std::task::ready!(self.poll_refusal(cx));
            self.check.refusal = None;
        }
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

// ---------------------------------------------------------------------------------------------
// The request-head pre-check.
//
// hyper answers a request head it cannot parse itself, with an empty body. Elasticsearch
// (Netty's HttpRequestDecoder, then RestController#dispatchBadRequest) answers those with its
// error JSON, status 400. So every request head on a connection is held back from hyper until
// it is complete (up to its `\r\n\r\n`) and checked against the table in `check_head`; a valid
// head is handed on unchanged. A refused one is never shown to hyper: hyper reads the end of
// the stream, finishes what it is answering, and shuts the connection down; the shutdown writes
// ES's error response first and then reads and drops (bounded) what the client still sends, so
// the client gets the answer rather than a reset.
//
// Between heads, the body's framing is tracked so the next pipelined head is found: a
// Content-Length body is read straight into hyper's buffer (no copy, at most its length); a
// chunked body is followed chunk by chunk (chunk data likewise straight through; only size
// lines and trailers pass the small buffer).
// ---------------------------------------------------------------------------------------------

/// Netty's `http.max_initial_line_length` default in Elasticsearch (4kb).
pub const MAX_INITIAL_LINE_LENGTH: usize = 4096;
/// Elasticsearch 8's `http.max_header_size` default (16kb): the size of all header lines.
pub const MAX_HEADER_SIZE: usize = 16 * 1024;
/// hyper's read buffer (its `max_buf_size` default, 8kb + 100 * 4kb): a head larger than this
/// is refused by hyper itself with an empty answer, so the two settings together may not
/// exceed it (checked when the node starts).
pub const HYPER_MAX_HEAD: usize = 8192 + 4096 * 100;

/// The request-head limits, from the node settings `http.max_initial_line_length` and
/// `http.max_header_size` (ES 8's defaults otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadLimits {
    pub max_initial_line_length: usize,
    pub max_header_size: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        HeadLimits {
            max_initial_line_length: MAX_INITIAL_LINE_LENGTH,
            max_header_size: MAX_HEADER_SIZE,
        }
    }
}
/// hyper parses at most this many headers (Netty has no count limit; Lode refuses more).
pub const MAX_HEADERS: usize = 100;

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// After a refusal, what the client still sends is read and dropped up to this much.
const DRAIN_LIMIT: usize = 8 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Reading a request head.
    Head,
    /// `n` body bytes of a Content-Length body left.
    Body(u64),
    /// A chunk size line.
    ChunkSize,
    /// `n` chunk data bytes left, then the chunk's CRLF.
    ChunkData(u64),
    /// The CRLF after a chunk's data (`0` or `1` bytes of it seen).
    ChunkEnd(u8),
    /// Trailer lines after the last chunk, up to an empty line.
    Trailer,
    /// Not HTTP/1 (an HTTP/2 preface) or given up on: bytes pass through unchecked.
    Passthrough,
}

/// What one complete request head means for the bytes after it.
#[derive(Debug, PartialEq, Eq)]
enum HeadVerdict {
    Ok(Framing),
    Refused(u16, &'static str, String),
}

fn bad(kind: &'static str, reason: impl Into<String>) -> HeadVerdict {
    HeadVerdict::Refused(400, kind, reason.into())
}

/// Checks a complete request head (without its final empty line), as Netty's decoder and
/// `HttpUtil` would: the request line, the size of the line and of the headers, each header
/// line's syntax, and the body framing (`Content-Length` syntax and agreement).
fn check_head(head: &[u8], limits: HeadLimits) -> HeadVerdict {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let line = lines.next().unwrap_or(b"");
    if line.len() > limits.max_initial_line_length {
        return too_long_line(limits);
    }
    let line = String::from_utf8_lossy(line);
    let parts: Vec<&str> = line.split_ascii_whitespace().collect();
    match parts.as_slice() {
        [_, _, version] => {
            if *version != "HTTP/1.1" && *version != "HTTP/1.0" {
                return bad(
                    "illegal_argument_exception",
                    format!("Unexpected http protocol version: {version}"),
                );
            }
        }
        [_, _] | [_] | [] => {
            return bad(
                "illegal_argument_exception",
                "text is empty (possibly HTTP/0.9)",
            )
        }
        _ => {
            return bad(
                "illegal_argument_exception",
                format!("invalid version format: {}", parts[2..].join(" ")),
            )
        }
    }
    let mut size = 0;
    let mut count = 0;
    let mut lengths: Vec<&str> = Vec::new();
    let mut chunked = false;
    let mut all: Vec<(String, String)> = Vec::new();
    for l in lines {
        size += l.len();
        if size > limits.max_header_size {
            return too_long_header(limits);
        }
        let Some(colon) = l.iter().position(|&b| b == b':') else {
            return bad("illegal_argument_exception", "No colon found");
        };
        let name = String::from_utf8_lossy(&l[..colon])
            .trim()
            .to_ascii_lowercase();
        let value = String::from_utf8_lossy(&l[colon + 1..]).trim().to_string();
        if name.is_empty() || name.contains(|c: char| c.is_ascii_whitespace()) {
            return bad(
                "illegal_argument_exception",
                format!("Invalid header name [{name}]"),
            );
        }
        count += 1;
        all.push((name, value));
    }
    if count > MAX_HEADERS {
        return bad(
            "illegal_argument_exception",
            format!("request has more than [{MAX_HEADERS}] headers, which Lode does not support"),
        );
    }
    for (name, value) in &all {
        match name.as_str() {
            "content-length" => lengths.extend(value.split(',').map(str::trim)),
            "transfer-encoding" => {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("chunked"))
            }
            _ => {}
        }
    }
    if chunked {
        // hyper ignores a Content-Length next to chunked framing, as RFC 9112 says
        return HeadVerdict::Ok(Framing::ChunkSize);
    }
    let Some(first) = lengths.first() else {
        return HeadVerdict::Ok(Framing::Head);
    };
    if lengths.iter().any(|l| l != first) {
        return bad(
            "illegal_argument_exception",
            format!(
                "Multiple Content-Length values found: [{}]",
                lengths.join(", ")
            ),
        );
    }
    match first.parse::<i64>() {
        Ok(n) if n < 0 => bad(
            "illegal_argument_exception",
            format!("Content-Length value must be >=0: {n}"),
        ),
        Ok(0) => HeadVerdict::Ok(Framing::Head),
        Ok(n) if first.bytes().all(|b| b.is_ascii_digit()) => {
            HeadVerdict::Ok(Framing::Body(n as u64))
        }
        _ => bad(
            "illegal_argument_exception",
            format!("Content-Length value is not a number: {first}"),
        ),
    }
}

fn too_long_line(limits: HeadLimits) -> HeadVerdict {
    bad(
        "too_long_http_line_exception",
        format!(
            "An HTTP line is larger than {} bytes.",
            limits.max_initial_line_length
        ),
    )
}

fn too_long_header(limits: HeadLimits) -> HeadVerdict {
    bad(
        "too_long_http_header_exception",
        format!(
            "HTTP header is larger than {} bytes.",
            limits.max_header_size
        ),
    )
}

/// ES's error response to a refused head, as bytes on the wire; the connection closes after it.
fn error_bytes(status: u16, kind: &str, reason: &str) -> Vec<u8> {
    let e = lode_engine::EsError::new(status, kind, reason.to_string());
    let body = match lode_api::rest::RestResponse::error(&e).body {
        lode_api::rest::RestBody::Json(v) => serde_json::to_vec(&v).unwrap_or_default(),
        _ => Vec::new(),
    };
    let phrase = if status == 400 {
        "Bad Request"
    } else {
        "Error"
    };
    let mut out = format!(
        "HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\nx-elastic-product: Elasticsearch\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

/// The pre-check's state for one connection.
#[derive(Default)]
struct HeadCheck {
    limits: HeadLimits,
    framing: Option<Framing>,
    /// Bytes read from the socket, not yet given to hyper.
    pending: Vec<u8>,
    /// How many of `pending` are checked and may go to hyper.
    released: usize,
    /// The refusal to write at shutdown, and how much of it is written.
    refusal: Option<(Vec<u8>, usize)>,
    /// Bytes of the client's request read and dropped after a refusal.
    drained: usize,
    eof: bool,
}

impl HeadCheck {
    fn framing(&self) -> Framing {
        self.framing.unwrap_or(Framing::Head)
    }

    /// Advances over the unreleased bytes of `pending`, releasing what is checked.
    fn scan(&mut self) {
        loop {
            let rest = &self.pending[self.released..];
            if rest.is_empty() {
                return;
            }
            match self.framing() {
                Framing::Passthrough => {
                    self.released = self.pending.len();
                    return;
                }
                Framing::Head => {
                    if self.released == 0
                        && self.framing.is_none()
                        && H2_PREFACE.starts_with(&rest[..rest.len().min(H2_PREFACE.len())])
                    {
                        if rest.len() < H2_PREFACE.len() {
                            return;
                        }
                        self.framing = Some(Framing::Passthrough);
                        continue;
                    }
                    // blank lines before a request line are skipped (hyper and Netty do)
                    let skip = rest
                        .iter()
                        .take_while(|&&b| b == b'\r' || b == b'\n')
                        .count();
                    let rest = &rest[skip..];
                    let end = rest
                        .windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map(|p| (p, p + 4));
                    let end = end.or_else(|| {
                        rest.windows(2)
                            .position(|w| w == b"\n\n")
                            .map(|p| (p, p + 2))
                    });
                    let verdict = match end {
                        Some((head_end, _)) => check_head(&rest[..head_end], self.limits),
                        None => {
                            let limits = self.limits;
                            let line_len =
                                rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                            if line_len > limits.max_initial_line_length {
                                too_long_line(limits)
                            } else if rest.len()
                                > limits.max_initial_line_length + limits.max_header_size + 4
                            {
                                too_long_header(limits)
                            } else {
                                return;
                            }
                        }
                    };
                    match verdict {
                        HeadVerdict::Ok(next) => {
                            self.released += skip + end.map(|e| e.1).unwrap_or(0);
                            self.framing = Some(next);
                        }
                        HeadVerdict::Refused(status, kind, reason) => {
                            self.refusal = Some((error_bytes(status, kind, &reason), 0));
                            self.pending.truncate(self.released);
                            return;
                        }
                    }
                }
                Framing::Body(n) => {
                    let take = (rest.len() as u64).min(n);
                    self.released += take as usize;
                    self.framing = Some(if take == n {
                        Framing::Head
                    } else {
                        Framing::Body(n - take)
                    });
                }
                Framing::ChunkData(n) => {
                    let take = (rest.len() as u64).min(n);
                    self.released += take as usize;
                    self.framing = Some(if take == n {
                        Framing::ChunkEnd(0)
                    } else {
                        Framing::ChunkData(n - take)
                    });
                }
                Framing::ChunkEnd(seen) => {
                    // hyper checks the CRLF itself; only its two bytes are counted here
                    self.released += 1;
                    self.framing = Some(if seen == 1 {
                        Framing::ChunkSize
                    } else {
                        Framing::ChunkEnd(1)
                    });
                }
                Framing::ChunkSize | Framing::Trailer => {
                    let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                        if rest.len()
                            > self.limits.max_initial_line_length + self.limits.max_header_size
                        {
                            // hyper refuses such a line itself; stop following this connection
                            self.framing = Some(Framing::Passthrough);
                            continue;
                        }
                        return;
                    };
                    let line = &rest[..nl];
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    let next = if self.framing() == Framing::Trailer {
                        if line.is_empty() {
                            Framing::Head
                        } else {
                            Framing::Trailer
                        }
                    } else {
                        let hex = line.split(|&b| b == b';').next().unwrap_or(b"");
                        let hex = String::from_utf8_lossy(hex);
                        match u64::from_str_radix(hex.trim(), 16) {
                            Ok(0) => Framing::Trailer,
                            Ok(n) => Framing::ChunkData(n),
                            // bad chunk framing: hyper answers it (a 400 from Lode's body read)
                            Err(_) => Framing::Passthrough,
                        }
                    };
                    self.released += nl + 1;
                    self.framing = Some(next);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(head: &str) -> Option<&'static str> {
        match check_head(head.as_bytes(), HeadLimits::default()) {
            HeadVerdict::Ok(_) => None,
            HeadVerdict::Refused(_, kind, _) => Some(kind),
        }
    }

    #[test]
    fn heads_are_checked_as_netty_does() {
        assert_eq!(kind("GET / HTTP/1.1\r\nHost: x"), None);
        assert_eq!(kind("HELLO THERE"), Some("illegal_argument_exception"));
        assert_eq!(kind("GET / HTTP/9.9"), Some("illegal_argument_exception"));
        assert_eq!(
            kind("GET / HTTP/1.1\r\nNoColon"),
            Some("illegal_argument_exception")
        );
        assert_eq!(
            kind("POST / HTTP/1.1\r\nContent-Length: abc"),
            Some("illegal_argument_exception")
        );
        assert_eq!(
            kind("POST / HTTP/1.1\r\nContent-Length: -5"),
            Some("illegal_argument_exception")
        );
        assert_eq!(
            kind("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 7"),
            Some("illegal_argument_exception")
        );
        let long = format!("GET /{} HTTP/1.1", "a".repeat(MAX_INITIAL_LINE_LENGTH));
        assert_eq!(kind(&long), Some("too_long_http_line_exception"));
        let big = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEADER_SIZE));
        assert_eq!(kind(&big), Some("too_long_http_header_exception"));
    }

    #[test]
    fn head_limits_come_from_settings() {
        let limits = HeadLimits {
            max_initial_line_length: 100,
            max_header_size: 50,
        };
        let line = format!("GET /{} HTTP/1.1", "a".repeat(90));
        assert!(
            matches!(check_head(line.as_bytes(), limits), HeadVerdict::Refused(400, "too_long_http_line_exception", ref m) if m == "An HTTP line is larger than 100 bytes.")
        );
        let ok = format!("GET /{} HTTP/1.1", "a".repeat(80));
        assert!(matches!(
            check_head(ok.as_bytes(), limits),
            HeadVerdict::Ok(_)
        ));
        let head = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(60));
        assert!(
            matches!(check_head(head.as_bytes(), limits), HeadVerdict::Refused(400, "too_long_http_header_exception", ref m) if m == "HTTP header is larger than 50 bytes.")
        );
        // a longer line passes with larger limits
        let wide = HeadLimits {
            max_initial_line_length: 8192,
            max_header_size: 16384,
        };
        let long = format!("GET /{} HTTP/1.1", "a".repeat(6000));
        assert!(matches!(
            check_head(long.as_bytes(), wide),
            HeadVerdict::Ok(_)
        ));
        // an unfinished head over the limits is refused before it ends
        let mut hc = HeadCheck {
            limits,
            ..HeadCheck::default()
        };
        hc.pending
            .extend_from_slice(format!("GET /{}", "a".repeat(200)).as_bytes());
        hc.scan();
        assert!(hc.refusal.is_some());
    }

    fn released_after(bytes: &[u8]) -> (usize, bool, Framing) {
        let mut hc = HeadCheck::default();
        hc.pending.extend_from_slice(bytes);
        hc.scan();
        (hc.released, hc.refusal.is_some(), hc.framing())
    }

    #[test]
    fn pipelined_heads_after_bodies_are_checked() {
        let ok = b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}GET / HTTP/1.1\r\n\r\n";
        assert_eq!(released_after(ok), (ok.len(), false, Framing::Head));
        let chunked = b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        assert_eq!(
            released_after(chunked),
            (chunked.len(), false, Framing::Head)
        );
        let bad = b"POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}HELLO THERE\r\n\r\n";
        let (released, refused, _) = released_after(bad);
        assert!(refused);
        assert_eq!(released, bad.len() - b"HELLO THERE\r\n\r\n".len());
        // an incomplete head waits for more bytes
        assert_eq!(
            released_after(b"GET / HTTP/1.1\r\nHo"),
            (0, false, Framing::Head)
        );
    }
}
