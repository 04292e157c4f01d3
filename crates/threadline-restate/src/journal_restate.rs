//! The [`Journal`] over a Restate Virtual Object's context: steps are `ctx.run`, state is the
//! object's keyed state (raw bytes, so `value_utf8` in the admin SQL shows the JSON), asks are
//! awakeables.

use futures::FutureExt as _;
use futures::future::BoxFuture;
use restate_sdk::prelude::{
    ContextAwakeables as _, ContextReadState as _, ContextSideEffects as _, ContextWriteState as _,
    ObjectContext, RunFuture as _, SharedObjectContext, TerminalError,
};

use crate::journal::{Journal, JournalError, ReadState};

/// Restate's code for a cancelled invocation.
const CANCELLED: u16 = 409;

fn journal_error(error: TerminalError) -> JournalError {
    if error.code() == CANCELLED {
        JournalError::Cancelled
    } else {
        JournalError::Terminal {
            code: error.code(),
            message: error.message().to_owned(),
        }
    }
}

/// The [`Journal`] of one exclusive invocation of a Virtual Object.
pub struct RestateJournal<'ctx> {
    ctx: ObjectContext<'ctx>,
}

impl std::fmt::Debug for RestateJournal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestateJournal")
            .field("key", &self.ctx.key())
            .finish_non_exhaustive()
    }
}

impl<'ctx> RestateJournal<'ctx> {
    /// The journal of `ctx`'s invocation.
    pub fn new(ctx: ObjectContext<'ctx>) -> RestateJournal<'ctx> {
        RestateJournal { ctx }
    }

    /// The object's key (the session id).
    pub fn key(&self) -> &str {
        self.ctx.key()
    }
}

impl ReadState for RestateJournal<'_> {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, JournalError>> {
        let ctx: &'a ObjectContext<'a> = &self.ctx;
        ctx.get::<Vec<u8>>(key)
            .map(|r| r.map_err(journal_error))
            .boxed()
    }
}

impl Journal for RestateJournal<'_> {
    fn step<'a>(
        &'a self,
        name: &'a str,
        work: BoxFuture<'static, Vec<u8>>,
    ) -> BoxFuture<'a, Result<Vec<u8>, JournalError>> {
        let ctx: &'a ObjectContext<'a> = &self.ctx;
        let run = ctx
            .run(move || work.map(Ok))
            .name(name.to_owned())
            .map(|r| r.map_err(journal_error));
        run.boxed()
    }

    fn set(&self, key: &str, value: Vec<u8>) {
        self.ctx.set(key, value);
    }

    fn clear(&self, key: &str) {
        self.ctx.clear(key);
    }

    fn awakeable(&self) -> (String, BoxFuture<'_, Result<Vec<u8>, JournalError>>) {
        let (id, future) = self.ctx.awakeable::<Vec<u8>>();
        (id, future.map(|r| r.map_err(journal_error)).boxed())
    }
}

/// Reads a Virtual Object's state from a shared (read-only) handler.
pub struct SharedReader<'ctx> {
    ctx: SharedObjectContext<'ctx>,
}

impl std::fmt::Debug for SharedReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedReader")
            .field("key", &self.ctx.key())
            .finish_non_exhaustive()
    }
}

impl<'ctx> SharedReader<'ctx> {
    /// The reader of `ctx`'s object.
    pub fn new(ctx: SharedObjectContext<'ctx>) -> SharedReader<'ctx> {
        SharedReader { ctx }
    }
}

impl ReadState for SharedReader<'_> {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, JournalError>> {
        let ctx: &'a SharedObjectContext<'a> = &self.ctx;
        ctx.get::<Vec<u8>>(key)
            .map(|r| r.map_err(journal_error))
            .boxed()
    }
}
