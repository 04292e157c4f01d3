//! A raw HTTP/1.1 client: requests written by hand, responses read and parsed just enough.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The upper bound of every "does not hang" wait: generous for a loaded 2-core machine.
pub(crate) const PATIENCE: Duration = Duration::from_secs(15);

/// A valid Messages request whose only user turn says `text`.
pub(crate) fn message_body(text: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "model": "claude-sonnet-4-6",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": text}],
    }))
    .expect("JSON serializes")
}

/// The head of a `POST /v1/messages` with credentials; `length` is the `content-length`,
/// `None` for a chunked body.
pub(crate) fn head(length: Option<usize>, close: bool) -> String {
    let mut head = String::from(
        "POST /v1/messages HTTP/1.1\r\nhost: mock\r\nx-api-key: test-key\r\n\
         anthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n",
    );
    match length {
        Some(n) => head.push_str(&format!("content-length: {n}\r\n")),
        None => head.push_str("transfer-encoding: chunked\r\n"),
    }
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    head
}

/// One HTTP/1.1 chunk of a chunked body.
pub(crate) fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A response: its status and body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// Reads one response with a `content-length` off `stream` (leaving the connection open),
/// or everything up to the end of the connection when there is none.
pub(crate) async fn read_answer(stream: &mut TcpStream) -> std::io::Result<Answer> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut byte).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or(std::io::ErrorKind::InvalidData)?;
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|n| n.trim().parse::<usize>().ok());
    let mut body = buf[head_end..].to_vec();
    match length {
        Some(n) => {
            while body.len() < n {
                let read = stream.read(&mut byte).await?;
                if read == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                body.extend_from_slice(&byte[..read]);
            }
        }
        None => {
            stream.read_to_end(&mut body).await?;
        }
    }
    Ok(Answer {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Sends `body` whole on a new connection (closed after the answer) and reads the answer.
pub(crate) async fn post(addr: SocketAddr, body: &[u8]) -> std::io::Result<Answer> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(head(Some(body.len()), true).as_bytes())
        .await?;
    stream.write_all(body).await?;
    read_answer(&mut stream).await
}

/// Waits for the server to close `stream`, reading (and discarding) whatever it sends;
/// `false` if it was still open after [`PATIENCE`].
pub(crate) async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut sink = [0u8; 4096];
    let closed = async {
        loop {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(PATIENCE, closed).await.is_ok()
}
