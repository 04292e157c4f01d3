//! Token counts of the prompt's pieces: a pluggable counter, the estimate by default.
//!
//! The simulator needs the size of every cacheable piece of a request (each tool, each system
//! block, each message block). [`Estimate`] is the workspace's one estimate
//! ([`threadline_wire::tokens`]: about four bytes a token, images at a fixed cost);
//! [`ExactCounts`] takes counts from somewhere better (the
//! `count_tokens` endpoint, a recorded usage) and falls back to the estimate for the pieces it
//! was not given. Any [`TokenCounter`] can be plugged in.

use std::collections::HashMap;

use threadline_wire::tokens;
use threadline_wire::{ContentBlock, TextBlock, ToolDefinition};

/// A piece of the prompt, in the order the API reads the prefix (tools → system → messages).
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// One tool definition.
    Tool(&'a ToolDefinition),
    /// One system text block.
    System(&'a TextBlock),
    /// One content block of a message.
    Block(&'a ContentBlock),
}

/// Counts the tokens of one piece of a prompt.
pub trait TokenCounter {
    /// The tokens `piece` adds to the prompt. `hash` is the piece's content hash (markers
    /// excluded), which counters holding exact counts key on.
    fn count(&self, piece: Piece<'_>, hash: u64) -> u64;
}

impl<T: TokenCounter + ?Sized> TokenCounter for &T {
    fn count(&self, piece: Piece<'_>, hash: u64) -> u64 {
        (**self).count(piece, hash)
    }
}

/// The default counter: the workspace's one estimate ([`threadline_wire::tokens`]) of each
/// piece: a tool by its JSON, a system block and a content block by their text (about four
/// bytes a token), images and documents of unknown size at a fixed cost, each with its block
/// overhead.
#[derive(Debug, Clone, Copy, Default)]
pub struct Estimate;

impl TokenCounter for Estimate {
    fn count(&self, piece: Piece<'_>, _hash: u64) -> u64 {
        match piece {
            Piece::Tool(tool) => tokens::tool_tokens(tool),
            Piece::System(block) => tokens::system_block_tokens(block),
            Piece::Block(block) => tokens::block_tokens(block),
        }
    }
}

/// Exact counts for some pieces (keyed by the piece's hash as [`crate::Prefix::of`] gives it
/// in [`crate::prefix::PrefixPiece::own_hash`]), another counter (the estimate by default) for
/// the rest.
///
/// Exact counts come from wherever the caller has them: `count_tokens` for a block, or a
/// response's `output_tokens`, which is the exact size of the assistant message it becomes in
/// the next request ([`ExactCounts::insert_message`]).
#[derive(Debug, Clone, Default)]
pub struct ExactCounts<F = Estimate> {
    counts: HashMap<u64, u64>,
    fallback: F,
}

impl ExactCounts {
    /// No exact counts yet; the estimate for everything.
    pub fn new() -> Self {
        ExactCounts::default()
    }
}

impl<F: TokenCounter> ExactCounts<F> {
    /// No exact counts yet; `fallback` for everything.
    pub fn over(fallback: F) -> Self {
        ExactCounts {
            counts: HashMap::new(),
            fallback,
        }
    }

    /// Records the exact count of the piece whose hash is `hash`.
    pub fn insert(&mut self, hash: u64, tokens: u64) {
        self.counts.insert(hash, tokens);
    }

    /// Records that message `message` of `request` is `tokens` tokens in all (for an
    /// assistant message: the `output_tokens` of the response it was), shared among its
    /// blocks in proportion to the fallback's counts.
    pub fn insert_message(
        &mut self,
        request: &threadline_wire::MessagesRequest,
        message: usize,
        tokens: u64,
    ) {
        let prefix = crate::Prefix::of(request, &self.fallback, crate::UnseenPrefix::default());
        let pieces: Vec<&crate::prefix::PrefixPiece> = prefix
            .pieces
            .iter()
            .filter(|p| matches!(p.location, crate::Location::Message { message: m, .. } if m == message))
            .collect();
        let estimated: u64 = pieces.iter().map(|p| p.tokens).sum();
        if estimated == 0 {
            return;
        }
        let mut left = tokens;
        for (i, piece) in pieces.iter().enumerate() {
            let share = if i + 1 == pieces.len() {
                left
            } else {
                (tokens as u128 * piece.tokens as u128 / estimated as u128) as u64
            };
            left = left.saturating_sub(share);
            self.counts.insert(piece.own_hash, share);
        }
    }

    /// How many pieces have exact counts.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether no piece has an exact count.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl<F: TokenCounter> TokenCounter for ExactCounts<F> {
    fn count(&self, piece: Piece<'_>, hash: u64) -> u64 {
        self.counts
            .get(&hash)
            .copied()
            .unwrap_or_else(|| self.fallback.count(piece, hash))
    }
}

/// Another counter's counts times a factor (a counter calibrated on a recorded usage).
#[derive(Debug, Clone, Copy)]
pub struct Scaled<C> {
    inner: C,
    factor: f64,
}

impl<C: TokenCounter> Scaled<C> {
    /// `inner`'s counts times `factor`, rounded.
    pub fn new(inner: C, factor: f64) -> Self {
        Scaled { inner, factor }
    }

    /// The factor.
    pub fn factor(&self) -> f64 {
        self.factor
    }
}

impl<C: TokenCounter> TokenCounter for Scaled<C> {
    fn count(&self, piece: Piece<'_>, hash: u64) -> u64 {
        (self.inner.count(piece, hash) as f64 * self.factor).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_about_four_bytes_a_token() {
        let block = ContentBlock::text("x".repeat(400));
        assert_eq!(
            Estimate.count(Piece::Block(&block), 0),
            100 + tokens::BLOCK_OVERHEAD_TOKENS
        );
        // The same estimate as the compaction's and the telemetry's.
        assert_eq!(
            Estimate.count(Piece::Block(&block), 0),
            tokens::block_tokens(&block)
        );
    }

    #[test]
    fn exact_counts_win_over_the_estimate() {
        let block = ContentBlock::text("hello");
        let mut exact = ExactCounts::new();
        exact.insert(42, 7);
        assert_eq!(exact.count(Piece::Block(&block), 42), 7);
        assert_eq!(
            exact.count(Piece::Block(&block), 1),
            Estimate.count(Piece::Block(&block), 1)
        );
    }
}
