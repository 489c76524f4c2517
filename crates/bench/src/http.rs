//! A minimal HTTP/1.1 client for load generation on hyper 1.
//!
//! Each [`Connection`] is one client connection slot, as in `ab -c`: with keep-alive it holds
//! one TCP connection and reuses it (reconnecting when the server closes it); without
//! keep-alive it opens a fresh TCP connection for every request and sends
//! `Connection: close`, as `ab` without `-k` does, so the latency includes the TCP handshake.

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderValue, AUTHORIZATION, CONNECTION, CONTENT_TYPE, HOST};
use hyper::Method;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;

/// Where requests go: `http://[user:pass@]host[:port][/prefix]`.
#[derive(Debug)]
pub struct Target {
    /// The URL as given, without a trailing slash.
    pub url: String,
    host: String,
    port: u16,
    prefix: String,
    host_header: HeaderValue,
    auth: Option<HeaderValue>,
}

impl Target {
    /// Parses an `http://` URL. TLS is not supported.
    pub fn parse(url: &str) -> Result<Target> {
        let url = url.trim().trim_end_matches('/');
        let Some(rest) = url.strip_prefix("http://") else {
            if url.starts_with("https://") {
                bail!("{url}: https is not supported; use plain http (e.g. a local proxy)");
            }
            bail!("{url}: expected a URL like http://127.0.0.1:9200");
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/').to_string()),
            None => (rest, String::new()),
        };
        let (auth, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hp)) => {
                let token = base64::engine::general_purpose::STANDARD.encode(userinfo);
                let value = HeaderValue::from_str(&format!("Basic {token}"))?;
                (Some(value), hp)
            }
            None => (None, authority),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, p) = v6.split_once(']').context("unclosed [ in IPv6 host")?;
            let port = p.strip_prefix(':').map(str::parse).transpose()?;
            (h.to_string(), port.unwrap_or(80))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().context("bad port")?),
                None => (hostport.to_string(), 80),
            }
        };
        if host.is_empty() {
            bail!("{url}: no host");
        }
        let public = match (authority.rsplit_once('@'), url.find("://")) {
            (Some((userinfo, hp)), Some(i)) => {
                let user = userinfo.split(':').next().unwrap_or("");
                format!("{}{}:***@{}{}", &url[..i + 3], user, hp, prefix)
            }
            _ => url.to_string(),
        };
        Ok(Target {
            url: public,
            host_header: HeaderValue::from_str(hostport)?,
            host,
            port,
            prefix,
            auth,
        })
    }

    /// True when the server runs on this machine (loopback address), sharing its CPUs.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .map(|ip| ip.is_loopback())
                .unwrap_or(false)
    }
}

/// One request to send.
#[derive(Clone, Debug)]
pub struct Request {
    /// HTTP method.
    pub method: Method,
    /// Path and query, e.g. `/accounts/_search?request_cache=false`.
    pub path: String,
    /// Body (empty for none).
    pub body: Bytes,
    /// `Content-Type` of the body.
    pub content_type: Option<&'static str>,
}

impl Request {
    /// A request with a JSON body (or none when `body` is empty).
    pub fn json(method: Method, path: impl Into<String>, body: impl Into<Bytes>) -> Request {
        let body = body.into();
        Request {
            method,
            path: path.into(),
            content_type: (!body.is_empty()).then_some("application/json"),
            body,
        }
    }

    /// A `_bulk` style request with an NDJSON body.
    pub fn ndjson(path: impl Into<String>, body: impl Into<Bytes>) -> Request {
        Request {
            method: Method::POST,
            path: path.into(),
            body: body.into(),
            content_type: Some("application/x-ndjson"),
        }
    }
}

/// A complete response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// The whole body.
    pub body: Bytes,
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// TCP connect or HTTP handshake failed.
    Connect(String),
    /// No complete response within the timeout.
    Timeout,
    /// The connection failed while sending or receiving.
    Io(String),
    /// Open loop: the request was due so long ago that it was dropped unsent.
    NotSent,
}

impl HttpError {
    /// Short category for counting: `connect`, `timeout`, `io`, `not_sent`.
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::Timeout => "timeout",
            HttpError::Io(_) => "io",
            HttpError::NotSent => "not_sent",
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Connect(e) => write!(f, "connect: {e}"),
            HttpError::Timeout => write!(f, "timeout"),
            HttpError::Io(e) => write!(f, "io: {e}"),
            HttpError::NotSent => write!(f, "not sent: the client fell too far behind schedule"),
        }
    }
}

impl std::error::Error for HttpError {}

/// One client connection slot.
pub struct Connection {
    target: Arc<Target>,
    keep_alive: bool,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// TCP connections opened so far.
    pub connects: u64,
}

impl Connection {
    /// A slot that keeps its connection open (`keep_alive`) or opens one per request.
    pub fn new(target: Arc<Target>, keep_alive: bool) -> Connection {
        Connection {
            target,
            keep_alive,
            sender: None,
            connects: 0,
        }
    }

    async fn connect(&mut self) -> Result<SendRequest<Full<Bytes>>, HttpError> {
        let stream = tokio::net::TcpStream::connect((self.target.host.as_str(), self.target.port))
            .await
            .map_err(|e| HttpError::Connect(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| HttpError::Connect(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        self.connects += 1;
        Ok(sender)
    }

    fn build(&self, req: &Request) -> hyper::Request<Full<Bytes>> {
        let mut b = hyper::Request::builder()
            .method(req.method.clone())
            .uri(format!("{}{}", self.target.prefix, req.path))
            .header(HOST, self.target.host_header.clone());
        if let Some(ct) = req.content_type {
            b = b.header(CONTENT_TYPE, ct);
        }
        if let Some(a) = &self.target.auth {
            b = b.header(AUTHORIZATION, a.clone());
        }
        if !self.keep_alive {
            b = b.header(CONNECTION, "close");
        }
        b.body(Full::new(req.body.clone()))
            .expect("valid request parts")
    }

    /// Sends a request and reads the whole response.
    ///
    /// A reused keep-alive connection that turns out to be closed by the server before the
    /// request went out is reopened and the request sent once more.
    pub async fn send(&mut self, req: &Request) -> Result<Response, HttpError> {
        let reused = self.keep_alive && self.sender.as_ref().is_some_and(|s| !s.is_closed());
        let mut sender = match self.sender.take() {
            Some(s) if reused => s,
            _ => self.connect().await?,
        };
        let first = Self::exchange(&mut sender, self.build(req)).await;
        let result = match first {
            Err((e, retryable)) if reused && retryable => {
                let _ = e;
                sender = self.connect().await?;
                Self::exchange(&mut sender, self.build(req))
                    .await
                    .map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        };
        if self.keep_alive && result.is_ok() && !sender.is_closed() {
            self.sender = Some(sender);
        }
        result
    }

    async fn exchange(
        sender: &mut SendRequest<Full<Bytes>>,
        req: hyper::Request<Full<Bytes>>,
    ) -> Result<Response, (HttpError, bool)> {
        if sender.ready().await.is_err() {
            return Err((HttpError::Io("connection closed".into()), true));
        }
        let resp = sender.send_request(req).await.map_err(|e| {
            let retryable = e.is_canceled() || e.is_incomplete_message() || e.is_closed();
            (HttpError::Io(e.to_string()), retryable)
        })?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| (HttpError::Io(e.to_string()), false))?
            .to_bytes();
        Ok(Response { status, body })
    }

    /// [`Connection::send`] with an optional timeout.
    pub async fn send_timeout(
        &mut self,
        req: &Request,
        timeout: Option<Duration>,
    ) -> Result<Response, HttpError> {
        match timeout {
            None => self.send(req).await,
            Some(t) => match tokio::time::timeout(t, self.send(req)).await {
                Ok(r) => r,
                Err(_) => {
                    self.sender = None;
                    Err(HttpError::Timeout)
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:9200/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("127.0.0.1", 9200, "")
        );
        assert!(t.is_loopback());
        let t = Target::parse("http://elastic:secret@localhost:9201/es").unwrap();
        assert_eq!(t.port, 9201);
        assert_eq!(t.prefix, "/es");
        assert!(t.auth.is_some());
        assert!(!t.url.contains("secret"));
        let t = Target::parse("http://[::1]:9300").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9300));
        assert!(t.is_loopback());
        assert!(Target::parse("https://x:1").is_err());
        assert!(Target::parse("ftp://x").is_err());
        assert!(!Target::parse("http://example.com").unwrap().is_loopback());
    }
}
