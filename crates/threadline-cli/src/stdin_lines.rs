//! One reader of stdin for `threadline run`: a thread reads lines into a channel, and both
//! the prompt loop and the permission questions take lines from it. Taking a line is
//! cancel-safe: a question dropped while it waits (its tool call aborted) consumes nothing,
//! and a thread blocked on the terminal never keeps the process from ending.

use std::io::BufRead as _;
use std::sync::Arc;

use tokio::sync::Mutex;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// Lines of stdin, in order; `None` at end of input (or after a read error, reported once).
#[derive(Debug)]
pub(crate) struct StdinLines {
    lines: Mutex<UnboundedReceiver<std::io::Result<String>>>,
}

impl StdinLines {
    /// Starts the reader thread.
    pub(crate) fn spawn() -> Arc<StdinLines> {
        let (sender, receiver) = unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            loop {
                let mut line = String::new();
                let read = stdin.lock().read_line(&mut line);
                let stop = !matches!(read, Ok(n) if n > 0);
                let item = match read {
                    Ok(0) => break,
                    Ok(_) => Ok(line),
                    Err(error) => Err(error),
                };
                if sender.send(item).is_err() || stop {
                    break;
                }
            }
        });
        Arc::new(StdinLines {
            lines: Mutex::new(receiver),
        })
    }

    /// The next line (with its line ending), `Some(Err)` once if reading failed, `None` at
    /// end of input.
    pub(crate) async fn next(&self) -> Option<std::io::Result<String>> {
        self.lines.lock().await.recv().await
    }
}
