//! Which stored messages each recorded request is made of, held without copying.
//!
//! A request's messages are the first `keep` messages of an earlier request, then its own
//! `tail`. Copying the kept messages into each request would hold `n × m` entries for `n`
//! requests over `m` messages, and a file of one long request and many short records that
//! each keep all of it could ask for any amount of memory. A recipe here holds its tail and a
//! link to the recipe its kept messages come from, so the recipes of a file hold exactly the
//! entries of its tails, whatever the `keep`s.
//!
//! The link skips the recipes that add nothing to the kept messages (those that themselves
//! keep at least as many): along the links from any recipe, `keep` strictly decreases, and
//! each recipe passed adds at least one message. Listing a recipe is linear in its length;
//! finding its `i`-th message, and skipping on adding a recipe, follow skew-binary jump
//! pointers (Myers, "An applicative random-access stack", 1983): O(log n) for `n` recipes.

/// The recipes of a file's requests, each named by its index.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Recipes {
    recipes: Vec<Recipe>,
}

#[derive(Debug, Clone, PartialEq)]
struct Recipe {
    /// The recipe the first `keep` messages come from (`None`: `keep` is 0).
    base: Option<usize>,
    /// How many messages come from `base`; always more than `base` itself keeps.
    keep: usize,
    /// The store indices of the messages after them.
    tail: Vec<usize>,
    /// How many links lead from this recipe to one without a base.
    depth: usize,
    /// A recipe further along the links (itself for a recipe without a base): with `base`,
    /// any recipe along the links is reached in O(log n) steps.
    jump: usize,
}

impl Recipe {
    fn len(&self) -> usize {
        self.keep + self.tail.len()
    }
}

impl Recipes {
    /// Adds the recipe made of the first `keep` messages of recipe `base` (`kept`: both, or
    /// none), then `tail`, and names it. `keep` must be at most `base`'s length.
    pub(super) fn add(&mut self, kept: Option<(usize, usize)>, tail: Vec<usize>) -> usize {
        let at = self.recipes.len();
        let (base, keep) = kept.filter(|&(_, keep)| keep > 0).unzip();
        let keep = keep.unwrap_or(0);
        // The kept messages come from the first recipe along the links that keeps fewer:
        // each one before it keeps them all from its own base.
        let base = base.map(|base| self.along(base, keep - 1));
        debug_assert!(base.is_none_or(|b| self.recipes[b].len() >= keep));
        // Skew-binary jump pointers: the jump skips as far as the base's jump does twice when
        // those two skips are as long, else it is the base.
        let (depth, jump) = match base {
            None => (0, at),
            Some(base) => {
                let parent = &self.recipes[base];
                let next = &self.recipes[parent.jump];
                let jump =
                    if parent.depth - next.depth == next.depth - self.recipes[next.jump].depth {
                        next.jump
                    } else {
                        base
                    };
                (parent.depth + 1, jump)
            }
        };
        self.recipes.push(Recipe {
            base,
            keep,
            tail,
            depth,
            jump,
        });
        at
    }

    /// How many messages recipe `at` has.
    pub(super) fn len(&self, at: usize) -> usize {
        self.recipes[at].len()
    }

    /// The first recipe along the links from `at` (itself included) that keeps at most
    /// `keep` messages from its base. O(log n): `keep` strictly decreases along the links,
    /// so a jump to a recipe that still keeps more passes only recipes that do too.
    fn along(&self, mut at: usize, keep: usize) -> usize {
        loop {
            let recipe = &self.recipes[at];
            let Some(base) = recipe.base.filter(|_| recipe.keep > keep) else {
                return at;
            };
            at = if self.recipes[recipe.jump].keep > keep {
                recipe.jump
            } else {
                base
            };
        }
    }

    /// The store index of message `position` of recipe `at`, if it has that many.
    pub(super) fn message(&self, at: usize, position: usize) -> Option<usize> {
        if position >= self.len(at) {
            return None;
        }
        let holder = &self.recipes[self.along(at, position)];
        holder.tail.get(position - holder.keep).copied()
    }

    /// The store indices of recipe `at`'s messages, in order. Linear in their number: each
    /// recipe along the links adds at least one.
    pub(super) fn messages(&self, at: usize) -> Vec<usize> {
        let mut pieces: Vec<&[usize]> = Vec::new();
        let mut recipe = &self.recipes[at];
        let mut wanted = recipe.len();
        loop {
            pieces.push(&recipe.tail[..wanted - recipe.keep]);
            wanted = recipe.keep;
            match recipe.base {
                Some(base) if wanted > 0 => recipe = &self.recipes[base],
                _ => break,
            }
        }
        let mut messages = Vec::with_capacity(self.len(at));
        for piece in pieces.into_iter().rev() {
            messages.extend_from_slice(piece);
        }
        messages
    }

    /// Per recipe: the position of its first message for which `is_bad` holds, if any.
    /// Linear in the tails.
    pub(super) fn first_bad(&self, is_bad: impl Fn(usize) -> bool) -> Vec<Option<usize>> {
        let mut first: Vec<Option<usize>> = Vec::with_capacity(self.recipes.len());
        for recipe in &self.recipes {
            let kept = recipe
                .base
                .and_then(|base| first[base])
                .filter(|&p| p < recipe.keep);
            let own = || {
                recipe
                    .tail
                    .iter()
                    .position(|&m| is_bad(m))
                    .map(|p| recipe.keep + p)
            };
            first.push(kept.or_else(own));
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What recipes are, copied: the first `keep` of the base's, then the tail.
    fn copied(steps: &[(usize, usize, Vec<usize>)]) -> Vec<Vec<usize>> {
        let mut all: Vec<Vec<usize>> = Vec::new();
        for (base, keep, tail) in steps {
            let mut recipe = match all.get(*base) {
                Some(earlier) => earlier[..(*keep).min(earlier.len())].to_vec(),
                None => Vec::new(),
            };
            recipe.extend_from_slice(tail);
            all.push(recipe);
        }
        all
    }

    fn steps() -> impl Strategy<Value = Vec<(usize, usize, Vec<usize>)>> {
        prop::collection::vec(
            (
                0usize..40,
                0usize..12,
                prop::collection::vec(0usize..6, 0..4),
            ),
            0..40,
        )
    }

    proptest! {
        /// Recipes held by link give the messages copying gives: every message, each by
        /// position, and the first bad one.
        #[test]
        fn linked_recipes_are_the_copied_ones(steps in steps()) {
            let mut recipes = Recipes::default();
            let mut added = Vec::new();
            let mut model = Vec::new();
            for (n, (base, keep, tail)) in steps.into_iter().enumerate() {
                // A base among the earlier recipes (or none), and a keep it can give.
                let base = (base < n).then_some(base);
                let keep = base.map_or(0, |b| keep.min(recipes.len(b)));
                added.push(recipes.add(base.map(|b| (b, keep)), tail.clone()));
                model.push((base.unwrap_or(usize::MAX), keep, tail));
            }
            let copied = copied(&model);
            let first_bad = recipes.first_bad(|m| m == 5);
            for (at, want) in added.iter().zip(&copied) {
                prop_assert_eq!(&recipes.messages(*at), want);
                prop_assert_eq!(recipes.len(*at), want.len());
                for (position, message) in want.iter().enumerate() {
                    prop_assert_eq!(recipes.message(*at, position), Some(*message));
                }
                prop_assert_eq!(recipes.message(*at, want.len()), None);
                prop_assert_eq!(first_bad[*at], want.iter().position(|&m| m == 5));
            }
        }
    }

    // Hostile files, at sizes where a quadratic import takes far longer than a linear one.

    /// A long chain of recipes each keeping all of the one before, then many recipes keeping
    /// one message of the last: the skipping finds the first recipe in O(log n) each, not by
    /// walking the chain (about 4·10⁹ steps at this size), and every recipe lists in its
    /// length.
    #[test]
    fn skipping_along_a_long_chain_is_logarithmic() {
        const CHAIN: usize = 50_000;
        let mut recipes = Recipes::default();
        let mut last = recipes.add(None, vec![0]);
        for n in 1..CHAIN {
            last = recipes.add(Some((last, n)), vec![n]);
        }
        assert_eq!(recipes.messages(last), (0..CHAIN).collect::<Vec<_>>());
        for n in 0..CHAIN {
            let short = recipes.add(Some((last, 1)), vec![CHAIN + n]);
            assert_eq!(recipes.messages(short), [0, CHAIN + n]);
            assert_eq!(recipes.message(last, n), Some(n));
        }
    }
}
