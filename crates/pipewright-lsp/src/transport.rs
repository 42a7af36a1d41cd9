//! The stdio transport: the base protocol's framing (`Content-Length: N\r\n\r\n` then N bytes of
//! JSON-RPC) read on a thread of our own and handed to the server as lsp-server `Message`s.
//!
//! lsp-server's own `Connection::stdio()` sizes its buffer from the header before any body byte
//! arrives: `Content-Length: 3000000000` allocated 3 GB and `18446744073709551615` panicked
//! (issue 22, item 13). Here a header is read within fixed bounds, the length is checked against
//! a limit before anything is allocated, and the buffer grows only with bytes that arrive.
//!
//! What happens to bad input (docs/editors.md):
//! - framing errors (a header line too long or malformed, no or a non-numeric `Content-Length`,
//!   a length over the limit, input ending inside a message) end the server: the stream can no
//!   longer be split into messages safely (skipping an oversized body would mean reading
//!   gigabytes). The reason goes to stderr and the exit code is 1.
//! - a body that is read whole but is not a JSON-RPC message is logged to stderr and skipped;
//!   the framing is intact, so the next message is read as usual.

use crossbeam_channel::{bounded, Receiver, Sender};
use lsp_server::Message;
use std::io::{self, BufRead, Read, Write};
use std::thread::JoinHandle;

/// The default limit on one message's body: 64 MiB, far above any document an editor sends.
pub const DEFAULT_MAX_MESSAGE: usize = 64 << 20;

/// Overrides the limit, in MiB (`PIPEWRIGHT_LSP_MAX_MESSAGE_MIB=256`).
pub const MAX_MESSAGE_ENV: &str = "PIPEWRIGHT_LSP_MAX_MESSAGE_MIB";

/// A header line longer than this is not a header (`Content-Length: ` and 20 digits is 36).
const MAX_HEADER_LINE: usize = 4096;
/// Headers in one message (the protocol defines two).
const MAX_HEADERS: usize = 32;

/// The limit from [`MAX_MESSAGE_ENV`], else the default; `Err` when it is set to anything but
/// a positive number of MiB.
pub fn max_message_from_env() -> Result<usize, String> {
    let Some(v) = std::env::var_os(MAX_MESSAGE_ENV) else {
        return Ok(DEFAULT_MAX_MESSAGE);
    };
    v.to_str()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&m| m > 0)
        .and_then(|m| m.checked_mul(1 << 20))
        .ok_or_else(|| {
            format!(
                "{MAX_MESSAGE_ENV} must be a positive number of MiB, found {:?}",
                v.to_string_lossy()
            )
        })
}

fn framing(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// One header line (without its line ending) within [`MAX_HEADER_LINE`] bytes. `None` at the
/// end of the input before any byte of the line.
fn header_line(r: &mut impl BufRead) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let limit = MAX_HEADER_LINE as u64 + 2;
    r.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(framing(if line.len() as u64 >= limit {
            format!("a header line is longer than {MAX_HEADER_LINE} bytes")
        } else {
            "the input ended inside a message header".to_string()
        }));
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(line))
}

/// The body of the next message, at most `max` bytes. `Ok(None)` when the input ends between
/// messages.
pub fn read_frame(r: &mut impl BufRead, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut length: Option<u64> = None;
    let mut headers = 0;
    loop {
        let Some(line) = header_line(r)? else {
            return if headers == 0 {
                Ok(None)
            } else {
                Err(framing(
                    "the input ended inside a message header".to_string(),
                ))
            };
        };
        if line.is_empty() {
            if headers == 0 {
                // Stray blank lines between messages are tolerated.
                continue;
            }
            break;
        }
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(framing(format!(
                "a message has more than {MAX_HEADERS} header lines"
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let Some((name, value)) = text.split_once(':') else {
            return Err(framing(format!("malformed header line {text:?}")));
        };
        if !name.trim().eq_ignore_ascii_case("Content-Length") {
            continue;
        }
        let value = value.trim();
        let n = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
            .then(|| value.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| framing(format!("Content-Length {value:?} is not a byte count")))?;
        if length.is_some_and(|l| l != n) {
            return Err(framing(
                "a message has two different Content-Length headers".to_string(),
            ));
        }
        length = Some(n);
    }
    let Some(n) = length else {
        return Err(framing(
            "a message has no Content-Length header".to_string(),
        ));
    };
    if n > max as u64 {
        return Err(framing(format!(
            "a message of {n} bytes (Content-Length) is over the limit of {} MiB ({MAX_MESSAGE_ENV} raises it)",
            max >> 20
        )));
    }
    // Grows with the bytes that arrive, not with what the header announced.
    let mut body = Vec::with_capacity((n as usize).min(64 << 10));
    r.by_ref().take(n).read_to_end(&mut body)?;
    if (body.len() as u64) < n {
        return Err(framing(format!(
            "the input ended inside a message ({} of {n} bytes)",
            body.len()
        )));
    }
    Ok(Some(body))
}

/// Reads messages from `input` and sends them on `to` until the input ends, an `exit`
/// notification has been sent, the receiver is gone, or the framing breaks (the `Err`).
pub fn read_messages(
    mut input: impl BufRead,
    max: usize,
    to: &Sender<Message>,
    mut log: impl FnMut(&str),
) -> io::Result<()> {
    while let Some(body) = read_frame(&mut input, max)? {
        // A JSON-RPC message is an object; serde would also read an array as a struct.
        let is_object = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        let parsed = if is_object {
            serde_json::from_slice::<Message>(&body).map_err(|e| e.to_string())
        } else {
            Err("a JSON-RPC message is a JSON object".to_string())
        };
        let msg = match parsed {
            Ok(m) => m,
            Err(e) => {
                log(&format!(
                    "skipped a message of {} bytes that is not JSON-RPC: {e}",
                    body.len()
                ));
                continue;
            }
        };
        let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
        if to.send(msg).is_err() || is_exit {
            break;
        }
    }
    Ok(())
}

/// The stdio transport's threads: the writer, and how the reader ended.
pub struct IoThreads {
    writer: JoinHandle<io::Result<()>>,
    /// The reader's framing error (`Some(None)`: it ended cleanly), sent before it lets go of
    /// the connection, so it is here by the time the server sees the connection close.
    reader_done: Receiver<Option<String>>,
}

/// A connection over standard input and output whose reader enforces `max`.
pub fn stdio(max: usize) -> Result<(lsp_server::Connection, IoThreads), String> {
    let (reader_tx, reader_rx) = bounded::<Message>(0);
    let (writer_tx, writer_rx) = bounded::<Message>(0);
    let (done_tx, done_rx) = bounded::<Option<String>>(1);
    let spawn_failed = |e: io::Error| format!("cannot start a thread: {e}");
    std::thread::Builder::new()
        .name("lsp-reader".into())
        .spawn(move || {
            let stdin = io::stdin();
            let ended = read_messages(stdin.lock(), max, &reader_tx, |m| {
                // stdout is the protocol; stderr is the server's log.
                let _ = writeln!(io::stderr(), "pipewright lsp: {m}");
            });
            let _ = done_tx.send(ended.err().map(|e| e.to_string()));
            drop(reader_tx);
        })
        .map_err(spawn_failed)?;
    let writer = std::thread::Builder::new()
        .name("lsp-writer".into())
        .spawn(move || {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            writer_rx.into_iter().try_for_each(|m| m.write(&mut out))
        })
        .map_err(spawn_failed)?;
    Ok((
        lsp_server::Connection {
            sender: writer_tx,
            receiver: reader_rx,
        },
        IoThreads {
            writer,
            reader_done: done_rx,
        },
    ))
}

impl IoThreads {
    /// Waits for the writer (every sender of the connection must be gone by then) and returns
    /// the reader's framing error if it had one: that is why the connection ended. A reader
    /// still blocked on standard input is left to the process's exit.
    pub fn finish(self) -> Result<(), String> {
        let writer = self
            .writer
            .join()
            .map_err(|_| "the writer thread panicked".to_string())
            .and_then(|r| r.map_err(|e| format!("writing to the client: {e}")));
        if let Ok(Some(e)) = self.reader_done.try_recv() {
            return Err(format!("framing error: {e}"));
        }
        writer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], max: usize) -> Result<Vec<Vec<u8>>, String> {
        let mut r = input;
        let mut out = Vec::new();
        loop {
            match read_frame(&mut r, max) {
                Ok(Some(b)) => out.push(b),
                Ok(None) => return Ok(out),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    #[test]
    fn frames_split_on_content_length_with_other_headers_and_either_line_ending() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length:3\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1]";
        assert_eq!(
            frames(input, 100),
            Ok(vec![b"{}".to_vec(), b"[1]".to_vec()])
        );
        assert_eq!(frames(b"", 100), Ok(vec![]));
    }

    #[test]
    fn lengths_are_checked_before_anything_is_read() {
        for len in [
            "101",
            "18446744073709551615",
            "18446744073709551616",
            "3000000000",
        ] {
            let e = frames(format!("Content-Length: {len}\r\n\r\n{{").as_bytes(), 100);
            assert!(e.is_err(), "{len}");
        }
        let e = frames(b"Content-Length: 101\r\n\r\n", 100).unwrap_err();
        assert!(e.contains("101 bytes"), "{e}");
        for bad in ["-1", "1e3", "", "0x10", "+5", "1 2"] {
            let input = format!("Content-Length: {bad}\r\n\r\n");
            assert!(frames(input.as_bytes(), 100).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn headers_are_bounded() {
        let long = vec![b'a'; MAX_HEADER_LINE + 10];
        assert!(frames(&long, 100).unwrap_err().contains("longer than"));
        let many = "X: y\r\n".repeat(MAX_HEADERS + 1);
        assert!(frames(many.as_bytes(), 100)
            .unwrap_err()
            .contains("header lines"));
        assert!(frames(b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 100).is_err());
        assert!(frames(b"Content-Type: x\r\n\r\n", 100)
            .unwrap_err()
            .contains("no Content-Length"));
        assert!(frames(b"Content-Length: 5\r\n", 100)
            .unwrap_err()
            .contains("ended inside a message header"));
        assert!(frames(b"Content-Length: 5\r\n\r\n{}", 100)
            .unwrap_err()
            .contains("2 of 5 bytes"));
    }

    #[test]
    fn bodies_that_are_not_messages_are_skipped_and_exit_stops_reading() {
        let body = |s: &str| format!("Content-Length: {}\r\n\r\n{s}", s.len());
        let input = [
            body("{oops"),
            body("[1, 2]"),
            body(r#"{"jsonrpc": "2.0", "method": "initialized", "params": {}}"#),
            body(r#"{"jsonrpc": "2.0", "method": "exit"}"#),
            body(r#"{"jsonrpc": "2.0", "method": "never-read"}"#),
        ]
        .concat();
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut logged = Vec::new();
        let r = read_messages(input.as_bytes(), 100, &tx, |m| logged.push(m.to_string()));
        assert!(r.is_ok());
        drop(tx);
        let methods: Vec<String> = rx
            .iter()
            .filter_map(|m| match m {
                Message::Notification(n) => Some(n.method),
                _ => None,
            })
            .collect();
        assert_eq!(methods, ["initialized", "exit"]);
        assert_eq!(logged.len(), 2, "{logged:?}");
    }
}
