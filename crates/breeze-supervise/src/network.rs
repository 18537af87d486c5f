//! A role's only way out of its network namespace: an allow-list, and the proxy that holds
//! to it.
//!
//! A role (or project command) given a [`NetworkAccess`] runs in a network namespace of its
//! own whose only interface is its loopback (module `sandbox`). Listening there are sockets
//! the engine accepts on: the proxy port its `HTTP(S)_PROXY` names — `CONNECT host:port` and
//! absolute-form `http://` requests, each checked against [`NetworkAccess::allow`] — and, at
//! the same address, each allowed loopback endpoint (a model server on `127.0.0.1:8080`
//! works whether or not the client honours the proxy). Everything else fails: nothing else
//! listens in the namespace and it has no route out. A refused request is answered with
//! `403` and handed to [`NetworkAccess::on_refused`] (the engine journals it).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The port `HTTP_PROXY` and `HTTPS_PROXY` name inside a role's namespace (or the next free
/// one above it when an allowed loopback endpoint uses it).
pub const PROXY_PORT: u16 = 3128;

/// Most loopback endpoints a role reaches at their own address (the rest only through the
/// proxy).
pub const MAX_FORWARDED_PORTS: usize = 7;

/// A host (and ports) a role may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// Lowercase host name or address; `*.example.com` matches every name below it.
    pub host: String,
    /// `None`: ports 80 and 443; `Some(0)`: any port.
    pub port: Option<u16>,
}

impl HostRule {
    /// Parses `host`, `host:port`, `host:*`, `*.domain`, `[::1]:port` or a URL
    /// (`https://host:port/path`: its host and port, 443 or 80 by its scheme).
    pub fn parse(text: &str) -> Result<HostRule, String> {
        let text = text.trim();
        let (scheme_port, rest) = match text.split_once("://") {
            Some(("https", rest)) => (Some(443), rest),
            Some(("http", rest)) => (Some(80), rest),
            Some((scheme, _)) => {
                return Err(format!("`{text}`: a URL must be http or https, not {scheme}"));
            }
            None => (None, text),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let (host, port) = split_host_port(authority)
            .ok_or_else(|| format!("`{text}` is not a host, host:port or URL"))?;
        let port = match port {
            Some("*") => Some(0),
            Some(port) => {
                Some(port.parse::<u16>().map_err(|_| format!("`{text}`: `{port}` is not a port"))?)
            }
            None => scheme_port,
        };
        let host = host.to_ascii_lowercase();
        let valid = !host.is_empty()
            && host.chars().all(|c| c.is_ascii_alphanumeric() || "-._:*".contains(c))
            && !host.strip_prefix("*.").unwrap_or(&host).contains('*');
        if !valid {
            return Err(format!("`{text}`: `{host}` is not a host name or address"));
        }
        Ok(HostRule { host, port })
    }

    /// Whether a connection to `host:port` is allowed by this rule.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            None => port == 80 || port == 443,
            Some(0) => true,
            Some(allowed) => allowed == port,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host_ok = match self.host.strip_prefix("*.") {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => same_host(&self.host, host),
        };
        port_ok && host_ok
    }

    /// The loopback port this rule names, when it names exactly one.
    pub fn loopback_port(&self) -> Option<u16> {
        let port = self.port.filter(|port| *port != 0)?;
        is_loopback(&self.host).then_some(port)
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host =
            if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port {
            None => write!(f, "{host} (ports 80, 443)"),
            Some(0) => write!(f, "{host}:*"),
            Some(port) => write!(f, "{host}:{port}"),
        }
    }
}

/// `localhost` is `127.0.0.1` here: the name is resolved by the engine, outside.
fn same_host(rule: &str, host: &str) -> bool {
    rule == host
        || (is_loopback(rule) && is_loopback(host) && (rule == "localhost" || host == "localhost"))
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// `host[:port]` or `[v6]:port`; the port text is returned unparsed.
fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(port) => Some((host, Some(port))),
            None if after.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match authority.rsplit_once(':') {
        Some((host, _)) if host.contains(':') => Some((authority, None)), // bare IPv6
        Some((host, port)) => Some((host, Some(port))),
        None => Some((authority, None)),
    }
}

/// A connection a role asked for and was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host it named (as it named it).
    pub host: String,
    /// The port.
    pub port: u16,
    /// `CONNECT` or the HTTP method of the request.
    pub method: String,
}

/// What receives every [`Refusal`] (the engine journals them).
pub type RefusalSink = Arc<dyn Fn(Refusal) + Send + Sync>;

/// Where a role's network namespace leads: the allow-list, and who hears of refusals.
#[derive(Clone)]
pub struct NetworkAccess {
    /// The hosts it may reach.
    pub allow: Vec<HostRule>,
    /// Called for each refused connection.
    pub on_refused: RefusalSink,
}

impl fmt::Debug for NetworkAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkAccess").field("allow", &self.allow).finish_non_exhaustive()
    }
}

impl NetworkAccess {
    /// Whether `host:port` is on the allow-list.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.allow.iter().any(|rule| rule.allows(host, port))
    }

    /// The loopback ports reached at their own address inside the namespace (at most
    /// [`MAX_FORWARDED_PORTS`], in the order of the rules).
    pub fn forwarded_ports(&self) -> Vec<u16> {
        let mut ports: Vec<u16> = Vec::new();
        for port in self.allow.iter().filter_map(HostRule::loopback_port) {
            if !ports.contains(&port) && ports.len() < MAX_FORWARDED_PORTS {
                ports.push(port);
            }
        }
        ports
    }

    /// The proxy's port inside the namespace: [`PROXY_PORT`], or the next one no forwarded
    /// endpoint uses.
    pub fn proxy_port(&self) -> u16 {
        let forwarded = self.forwarded_ports();
        (PROXY_PORT..).find(|port| !forwarded.contains(port)).unwrap_or(PROXY_PORT)
    }

    /// Every port listening in the namespace: the proxy's first, then the forwarded ones.
    pub fn listening_ports(&self) -> Vec<u16> {
        std::iter::once(self.proxy_port()).chain(self.forwarded_ports()).collect()
    }

    /// The variables that send a role's clients to the proxy (both spellings; no
    /// `NO_PROXY`, so loopback requests are checked too).
    pub fn proxy_env(&self) -> Vec<(String, String)> {
        let url = format!("http://127.0.0.1:{}", self.proxy_port());
        ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]
            .into_iter()
            .map(|name| (name.to_string(), url.clone()))
            .chain(["NO_PROXY", "no_proxy"].map(|name| (name.to_string(), String::new())))
            .collect()
    }
}

/// Serves the listeners of one process's namespace (`ports[i]` is what `listeners[i]`
/// listens on; the first is the proxy) until `cancel`.
pub(crate) fn serve(
    access: NetworkAccess,
    listeners: Vec<(u16, std::net::TcpListener)>,
    cancel: CancellationToken,
) {
    let access = Arc::new(access);
    let proxy_port = access.proxy_port();
    for (port, listener) in listeners {
        let listener =
            match listener.set_nonblocking(true).and_then(|()| TcpListener::from_std(listener)) {
                Ok(listener) => listener,
                Err(err) => {
                    tracing::warn!(port, "a role's network listener cannot be served: {err}");
                    continue;
                }
            };
        let (access, cancel) = (access.clone(), cancel.clone());
        tokio::spawn(async move {
            loop {
                let client = tokio::select! {
                    _ = cancel.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((client, _)) => client,
                        Err(_) => continue,
                    },
                };
                let access = access.clone();
                let task = async move {
                    let _ = if port == proxy_port {
                        proxy(client, &access).await
                    } else {
                        forward(client, port).await
                    };
                };
                let cancel = cancel.clone();
                tokio::spawn(async move {
                    tokio::select! { _ = cancel.cancelled() => {}, _ = task => {} }
                });
            }
        });
    }
}

/// An allowed loopback endpoint reached at its own address: the same port on the engine's
/// loopback.
async fn forward(mut client: TcpStream, port: u16) -> std::io::Result<()> {
    let mut upstream = TcpStream::connect(("127.0.0.1", port)).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(|_| ())
}

/// Most bytes of a request's head the proxy reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// One client of the proxy: `CONNECT` or an absolute-form request, checked, then relayed.
async fn proxy(mut client: TcpStream, access: &NetworkAccess) -> std::io::Result<()> {
    let Some((head, rest)) = read_head(&mut client).await? else { return Ok(()) };
    let Some(request) = ProxyRequest::parse(&head) else {
        return answer(
            &mut client,
            "400 Bad Request",
            "breeze's proxy takes CONNECT and absolute-form http:// requests only\n",
        )
        .await;
    };
    if !access.allows(&request.host, request.port) {
        (access.on_refused)(Refusal {
            host: request.host.clone(),
            port: request.port,
            method: request.method.clone(),
        });
        let body = format!(
            "breeze: {}:{} is not on this run's network allow-list; the person can add it to [sandbox] network in breeze.toml\n",
            request.host, request.port
        );
        return answer(&mut client, "403 Forbidden", &body).await;
    }
    let connect = TcpStream::connect((request.host.as_str(), request.port));
    let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(err)) => {
            return answer(&mut client, "502 Bad Gateway", &format!("breeze: {err}\n")).await;
        }
        Err(_) => return answer(&mut client, "504 Gateway Timeout", "breeze: no answer\n").await,
    };
    match &request.origin_head {
        None => client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?,
        Some(origin_head) => upstream.write_all(origin_head).await?,
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await.map(|_| ())
}

/// Reads up to the end of the request head; `None` when the client went away first.
async fn read_head(client: &mut TcpStream) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Ok(Some((buffer, rest)));
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Ok(None);
        }
        match client.read(&mut chunk).await? {
            0 => return Ok(None),
            n => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn answer(client: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// A request to the proxy: where to, and for a plain `http://` request the head to send
/// there (origin-form, without the `Proxy-*` headers).
#[derive(Debug, PartialEq, Eq)]
struct ProxyRequest {
    method: String,
    host: String,
    port: u16,
    origin_head: Option<Vec<u8>>,
}

impl ProxyRequest {
    fn parse(head: &[u8]) -> Option<ProxyRequest> {
        let text = std::str::from_utf8(head).ok()?;
        let mut lines = text.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target, version) = (first.next()?, first.next()?, first.next()?);
        if method == "CONNECT" {
            let (host, port) = split_host_port(target)?;
            let port = port?.parse().ok()?;
            return Some(ProxyRequest {
                method: method.into(),
                host: host.into(),
                port,
                origin_head: None,
            });
        }
        let rest = target.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, "/"),
        };
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            Some(port) => port.parse().ok()?,
            None => 80,
        };
        let mut origin = format!("{method} {path} {version}\r\n");
        for line in lines.filter(|line| !line.to_ascii_lowercase().starts_with("proxy-")) {
            origin.push_str(line);
            origin.push_str("\r\n");
        }
        // The head ended with an empty line, which the loop above kept: one CRLF too many.
        origin.truncate(origin.len() - 2);
        Some(ProxyRequest {
            method: method.into(),
            host: host.into(),
            port,
            origin_head: Some(origin.into_bytes()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_hosts_ports_wildcards_and_urls() {
        let rule = |text| HostRule::parse(text).unwrap();
        assert_eq!(
            rule("registry.npmjs.org"),
            HostRule { host: "registry.npmjs.org".into(), port: None }
        );
        assert_eq!(
            rule("http://127.0.0.1:8080/v1"),
            HostRule { host: "127.0.0.1".into(), port: Some(8080) }
        );
        assert_eq!(
            rule("https://API.example.com/x"),
            HostRule { host: "api.example.com".into(), port: Some(443) }
        );
        assert_eq!(rule("[::1]:9000").loopback_port(), Some(9000));
        assert!(rule("*.pythonhosted.org").allows("files.pythonhosted.org", 443));
        assert!(!rule("*.pythonhosted.org").allows("pythonhosted.org.evil.com", 443));
        assert!(!rule("registry.npmjs.org").allows("registry.npmjs.org", 22));
        assert!(rule("localhost:4873").allows("127.0.0.1", 4873));
        assert!(rule("example.com:*").allows("example.com", 22));
        for bad in ["ftp://x", "", "a b", "x:port", "ev*il.com"] {
            assert!(HostRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_absolute_form_request_is_sent_on_in_origin_form_without_proxy_headers() {
        let head = b"POST http://127.0.0.1:9000/v1/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:9000\r\nProxy-Connection: keep-alive\r\n\r\n";
        let request = ProxyRequest::parse(head).unwrap();
        assert_eq!((request.host.as_str(), request.port), ("127.0.0.1", 9000));
        assert_eq!(
            String::from_utf8(request.origin_head.unwrap()).unwrap(),
            "POST /v1/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n"
        );
        let connect =
            ProxyRequest::parse(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            (connect.host.as_str(), connect.port, connect.origin_head),
            ("api.anthropic.com", 443, None)
        );
        assert_eq!(ProxyRequest::parse(b"GET /index.html HTTP/1.1\r\n\r\n"), None);
    }

    #[test]
    fn the_proxy_port_steps_aside_for_a_forwarded_endpoint() {
        let access = NetworkAccess {
            allow: vec![
                HostRule::parse("127.0.0.1:3128").unwrap(),
                HostRule::parse("api.openai.com").unwrap(),
            ],
            on_refused: Arc::new(|_| {}),
        };
        assert_eq!(access.listening_ports(), vec![3129, 3128]);
    }
}
