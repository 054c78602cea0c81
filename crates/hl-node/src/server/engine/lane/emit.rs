//! The second half of a coin's `l2Book` publication on a lane: encode the views the first half
//! found changed (`Lane::changed`, levels in `Lane::pool`), then queue each new frame once for
//! all the view's subscribers.
//!
//! Owns: the order of `Lane::frames` (one per changed view, empty when nothing is sent) and the
//! frames refused by a client's queue (`Lane::undelivered`).
//! Must not: aggregate (the first half did), report or disconnect (the engine thread does).

use std::time::Instant;

use bytes::Bytes;

use ticktrade_hl_proto::ws::Units;

use super::super::super::publish::{CoinL2, Frames};
use super::{BlockCtx, Lane, ViewSlot};

impl Lane {
    /// Encodes the views in `self.changed` (positions in `list`, the coin's views) into
    /// `self.frames`, in the same order; an empty frame when a view's levels were what it last
    /// sent (a frame is never empty).
    pub(super) fn encode_views(&mut self, ctx: &BlockCtx<'_, '_>, list: &mut [ViewSlot], units: Units) {
        // Every view listed here was prefetched (`L2View::prefetch`) when `publish_l2` kept it.
        self.frames.clear();
        for &(pos, at, twin) in &self.changed {
            let frame = match twin {
                // The twin's frame of this block (encoded above): the same bytes.
                Some((_, t, _))
                    if self.changed.iter().zip(&self.frames).any(|(&(_, a, _), f)| a == t && !f.is_empty()) =>
                {
                    let (src, dst) = pair_mut(list, t, at);
                    dst.view.share(&src.view)
                }
                // In step with its twin, which did not change: neither did it.
                Some((_, _, true)) => Bytes::new(),
                // Its twin's levels when only this view changed (it did: checked above).
                Some((p, _, false)) => {
                    let [bids, asks] = &self.pool[p];
                    list[at].view.encode(&mut self.out, &mut self.scratch, ctx.time_ms, units, bids, asks)
                }
                None => {
                    let [bids, asks] = &self.pool[pos];
                    list[at]
                        .view
                        .encode_changed(&mut self.out, &mut self.scratch, ctx.time_ms, units, bids, asks)
                        .unwrap_or_default()
                }
            };
            self.frames.push(frame);
        }
    }

    /// Queues every non-empty frame of `self.frames` (drained) to the subscribers of its view
    /// (`keys`: the coin's subscribed keys in order, with their clients): per client, its frames
    /// of the coin in key order as one item (`Frames`, a new one after every `BATCH`), each
    /// frame shared by all the view's clients.
    pub(super) fn queue(&mut self, ctx: &BlockCtx<'_, '_>, keys: &CoinL2) {
        if ctx.timings && self.first_frame.is_none() && self.frames.iter().any(|f| !f.is_empty()) {
            self.first_frame = Some(Instant::now());
        }
        let Lane { changed, frames, batch, undelivered, .. } = self;
        let mut next = changed.iter().zip(frames.drain(..)).filter(|(_, f)| !f.is_empty()).peekable();
        batch.clear();
        for (pos, ids) in keys.values().enumerate() {
            let Some((_, mut frame)) = next.next_if(|((p, _, _), _)| *p == pos) else { continue };
            let mut ids = ids.iter().peekable();
            while let Some(&id) = ids.next() {
                // The last client takes the frame itself (one reference count less to move).
                let frame = if ids.peek().is_some() { frame.clone() } else { std::mem::take(&mut frame) };
                batch.push((id, pos as u32, frame));
            }
        }
        // Each client's frames together, in key order (a client twice on one key, as
        // `mantissa` 1 and null are, has the same frame twice: their order is moot). In key
        // order already with one client (the sort then only compares neighbours).
        batch.sort_unstable_by_key(|&(id, pos, _)| (id, pos));
        // An item goes when it is full or its client's last frame is in it.
        let mut item = Frames::new();
        let mut batch = batch.drain(..).peekable();
        while let Some((id, _, frame)) = batch.next() {
            item.push(frame);
            if (item.is_full() || batch.peek().is_none_or(|&(next, _, _)| next != id))
                && let Err(why) = ctx.subs.try_send(id, std::mem::take(&mut item))
            {
                undelivered.push((id, why));
            }
        }
    }
}

/// `list[src]` and `list[dst]` (`src != dst`) at once.
fn pair_mut<T>(list: &mut [T], src: usize, dst: usize) -> (&T, &mut T) {
    if src < dst {
        let (a, b) = list.split_at_mut(dst);
        (&a[src], &mut b[0])
    } else {
        let (a, b) = list.split_at_mut(src);
        (&b[0], &mut a[dst])
    }
}
