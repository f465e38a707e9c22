//! A hub-shaped HTTP server on 127.0.0.1 for download tests.
//!
//! It serves `/{org}/{name}/resolve/{revision}/{file}` from a Hugging Face
//! cache folder (the shared one), with the headers the hub sends: `ETag`
//! (quoted sha256 of the file, as for LFS files), `X-Repo-Commit`, `Range`
//! answers with `Content-Range`, `302` redirects to an absolute content address, `401`
//! for a gated repo without the right bearer token, and `404` with
//! `X-Error-Code`. Faults are switched on per server: drop a body halfway, or
//! answer slowly. Every request is logged for assertions. The server stops
//! when dropped; each connection is bounded in time.

#![allow(dead_code)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub authorization: Option<String>,
}

impl Request {
    /// A request for the file's content (not the 1-byte metadata probe).
    pub fn is_body_fetch(&self) -> bool {
        self.method == "GET" && self.range.as_deref() != Some("bytes=0-0")
    }
}

/// What the server does besides answering correctly.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Repos (`org/name`) that need `Authorization: Bearer {token}`.
    pub gated: HashSet<String>,
    /// The token a gated repo accepts.
    pub token: String,
    /// Answer `resolve` with a 302 to `/cdn/{sha256}` (as the hub does for LFS files).
    pub redirect: bool,
    /// Send only this many body bytes of a content fetch, then close.
    pub drop_body_after: Option<usize>,
    /// Wait this long before every answer.
    pub delay: Option<Duration>,
}

struct State {
    root: PathBuf,
    endpoint: String,
    behaviour: Mutex<Behaviour>,
    log: Mutex<Vec<Request>>,
    stop: AtomicBool,
}

/// The running server; stops when dropped.
pub struct HubServer {
    addr: SocketAddr,
    state: Arc<State>,
    thread: Option<JoinHandle<()>>,
}

impl HubServer {
    /// Serves the cache folder `root` (the one holding `models--org--name`).
    pub fn start(root: &Path, behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(State {
            root: root.to_path_buf(),
            endpoint: format!("http://{addr}"),
            behaviour: Mutex::new(behaviour),
            log: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let thread_state = state.clone();
        let thread = std::thread::spawn(move || {
            while !thread_state.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let state = thread_state.clone();
                        std::thread::spawn(move || {
                            let _ = serve(stream, &state);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Self {
            addr,
            state,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, the endpoint to point the crate at.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.log.lock().unwrap().clone()
    }

    /// Changes the behaviour for later requests.
    pub fn set_behaviour(&self, behaviour: Behaviour) {
        *self.state.behaviour.lock().unwrap() = behaviour;
    }
}

impl Drop for HubServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The file `file` of `repo` at `revision` in the served cache, and its commit.
fn lookup(root: &Path, repo: &str, revision: &str, file: &str) -> Option<(String, Vec<u8>)> {
    let folder = root.join(format!("models--{}", repo.replace('/', "--")));
    let commit = if revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()) {
        revision.to_owned()
    } else {
        std::fs::read_to_string(folder.join("refs").join(revision))
            .ok()?
            .trim()
            .to_owned()
    };
    if file.contains("..") {
        return None;
    }
    let bytes = std::fs::read(folder.join("snapshots").join(&commit).join(file)).ok()?;
    Some((commit, bytes))
}

/// Finds a served file by its sha256 (for `/cdn/{sha256}`).
fn by_digest(dir: &Path, digest: &str) -> Option<Vec<u8>> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            by_digest(&path, digest)
        } else {
            std::fs::read(&path)
                .ok()
                .filter(|bytes| sha256_hex(bytes) == digest)
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

fn serve(mut stream: TcpStream, state: &State) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    // One request per connection keeps the server simple; `Connection: close` tells the client.
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = match (parts.next(), parts.next()) {
        (Some(m), Some(p)) => (m.to_owned(), p.to_owned()),
        _ => return Ok(()),
    };
    let (mut range, mut authorization) = (None, None);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "range" => range = Some(value),
                "authorization" => authorization = Some(value),
                _ => {}
            }
        }
    }
    let request = Request {
        method: method.clone(),
        path: path.clone(),
        range: range.clone(),
        authorization: authorization.clone(),
    };
    state.log.lock().unwrap().push(request.clone());
    let behaviour = state.behaviour.lock().unwrap().clone();
    if let Some(delay) = behaviour.delay {
        std::thread::sleep(delay);
    }

    // /cdn/{sha256}: the content address a redirect points to.
    if let Some(digest) = path.strip_prefix("/cdn/") {
        return match by_digest(&state.root, digest) {
            Some(bytes) => send_content(&mut stream, &request, &bytes, &[], &behaviour),
            None => send_status(&mut stream, 404, &[("X-Error-Code", "EntryNotFound")]),
        };
    }
    // /{org}/{name}/resolve/{revision}/{file…}
    let segments: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    let [org, name, "resolve", revision, file] = segments.as_slice() else {
        return send_status(&mut stream, 404, &[("X-Error-Code", "RepoNotFound")]);
    };
    let repo = format!("{org}/{name}");
    if behaviour.gated.contains(&repo)
        && authorization.as_deref() != Some(&format!("Bearer {}", behaviour.token))
    {
        return send_status(&mut stream, 401, &[("X-Error-Code", "GatedRepo")]);
    }
    if !state
        .root
        .join(format!("models--{}", repo.replace('/', "--")))
        .is_dir()
    {
        // The hub answers 401 for a repo it will not confirm exists.
        return send_status(&mut stream, 401, &[("X-Error-Code", "RepoNotFound")]);
    }
    let Some((commit, bytes)) = lookup(&state.root, &repo, revision, file) else {
        return send_status(&mut stream, 404, &[("X-Error-Code", "EntryNotFound")]);
    };
    let digest = sha256_hex(&bytes);
    let etag = format!("\"{digest}\"");
    if behaviour.redirect {
        // Absolute, as the hub's redirect to its content store is.
        let location = format!("{}/cdn/{digest}", state.endpoint);
        return send_status(
            &mut stream,
            302,
            &[
                ("Location", &location),
                ("X-Repo-Commit", &commit),
                ("X-Linked-Etag", &etag),
                ("X-Linked-Size", &bytes.len().to_string()),
                ("ETag", "\"pointer-file-etag\""),
            ],
        );
    }
    send_content(
        &mut stream,
        &request,
        &bytes,
        &[("X-Repo-Commit", &commit), ("ETag", &etag)],
        &behaviour,
    )
}

fn send_status(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, &str)],
) -> std::io::Result<()> {
    let reason = match status {
        302 => "Found",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Status",
    };
    let mut head =
        format!("HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

/// 200, or 206 for a `Range: bytes=A-[B]` request, with `Content-Range`.
fn send_content(
    stream: &mut TcpStream,
    request: &Request,
    bytes: &[u8],
    headers: &[(&str, &str)],
    behaviour: &Behaviour,
) -> std::io::Result<()> {
    let size = bytes.len();
    let (status, start, end) = match request
        .range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
    {
        Some(spec) => {
            let (a, b) = spec.split_once('-').unwrap_or((spec, ""));
            let start: usize = a.parse().unwrap_or(0).min(size);
            let end: usize = b.parse().map(|b: usize| b + 1).unwrap_or(size).min(size);
            (206, start, end.max(start))
        }
        None => (200, 0, size),
    };
    let body = &bytes[start..end];
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n",
        if status == 206 {
            "Partial Content"
        } else {
            "OK"
        },
        body.len()
    );
    if status == 206 {
        head.push_str(&format!(
            "Content-Range: bytes {start}-{}/{size}\r\n",
            end.saturating_sub(1)
        ));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let body = match behaviour.drop_body_after {
        Some(n) if request.is_body_fetch() => &body[..n.min(body.len())],
        _ => body,
    };
    stream.write_all(body)?;
    stream.flush()?;
    // Drain what the client may still send so the close is clean.
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let _ = stream.read(&mut [0u8; 64]);
    Ok(())
}
