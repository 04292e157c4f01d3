//! Cache breakpoints: at most four (the top-level automatic marker counts one), and no `1h`
//! marker after a `5m` one in `tools` → `system` → `messages` order.

use super::report::{Ctx, Loc};
use super::rule::{self, Rule};
use threadline_wire::cache_control::{CacheControl, CacheTtl};

/// The most breakpoints a request may hold.
const MAX_BREAKPOINTS: usize = 4;

/// A marker's lifetime as far as ordering goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ttl {
    /// `5m` or absent.
    FiveMinutes,
    /// `1h`.
    OneHour,
    /// A value this version does not know (ordered by neither rule).
    Other,
}

impl From<&CacheControl> for Ttl {
    fn from(marker: &CacheControl) -> Self {
        match &marker.ttl {
            None | Some(CacheTtl::FiveMinutes) => Ttl::FiveMinutes,
            Some(CacheTtl::OneHour) => Ttl::OneHour,
            Some(_) => Ttl::Other,
        }
    }
}

impl Ttl {
    /// The lifetime of a raw `cache_control` value (from a block this version does not know).
    pub(super) fn of_value(marker: &serde_json::Value) -> Self {
        match marker.get("ttl") {
            None | Some(serde_json::Value::Null) => Ttl::FiveMinutes,
            Some(ttl) => match ttl.as_str() {
                Some("5m") => Ttl::FiveMinutes,
                Some("1h") => Ttl::OneHour,
                _ => Ttl::Other,
            },
        }
    }
}

/// The markers seen so far, in processing order.
#[derive(Debug, Default)]
pub(super) struct Breakpoints {
    count: usize,
    seen_five_minutes: bool,
    fifth: Option<Loc>,
}

impl Breakpoints {
    /// Counts a marker at `loc` and checks its lifetime against the markers before it.
    pub(super) fn marker(&mut self, ctx: &mut Ctx<'_>, ttl: Ttl, loc: Loc) {
        self.count += 1;
        if self.count == MAX_BREAKPOINTS + 1 {
            self.fifth = Some(loc);
        }
        match ttl {
            Ttl::FiveMinutes => self.seen_five_minutes = true,
            Ttl::OneHour if self.seen_five_minutes => {
                let (path, api) = loc.ttl_paths();
                let message = rule::cache_ttl_order(&api);
                ctx.report_at(Rule::CacheTtlOrder, loc, path, message);
            }
            Ttl::OneHour | Ttl::Other => {}
        }
    }

    /// Counts the top-level automatic-caching marker (processed last: it lands on the last
    /// cacheable block) and reports a count above four at the fifth marker.
    pub(super) fn finish(mut self, ctx: &mut Ctx<'_>, top_level: Option<&CacheControl>) {
        if let Some(marker) = top_level {
            self.marker(ctx, marker.into(), Loc::TopCache);
        }
        if let Some(fifth) = self.fifth {
            let message = rule::too_many_cache_breakpoints(self.count);
            ctx.report(Rule::TooManyCacheBreakpoints, fifth, message);
        }
    }
}
