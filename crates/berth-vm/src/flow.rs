//! Credit-based flow control of the agent channel's streams (see the
//! protocol's module doc): many processes share the one channel, so no
//! stream may hold it up. A sender sends a stream's bytes only within the
//! credit its [`SendWindow`] has; the receiver holds them in a
//! [`ReceiveWindow`] until it has passed them on (to the host descriptor, to
//! the process's pipe) and gives the credit back then, in batches.
//!
//! The agent sends each process's stdout and stderr through a send window of
//! [`OUTPUT_WINDOW`] and stops reading that pipe at 0, so the process blocks
//! writing to it (as it would on a namespace container's pipe whose reader
//! stopped); the host sends each process's stdin through one of
//! [`INPUT_WINDOW`] and stops reading its source at 0.
//!
//! [`OUTPUT_WINDOW`]: crate::protocol::OUTPUT_WINDOW
//! [`INPUT_WINDOW`]: crate::protocol::INPUT_WINDOW

/// What one stream's sender may still send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendWindow {
    /// Below zero only after bytes sent beyond it (a drain of an ended
    /// process's pipes, [`crate::protocol::DRAIN_ALLOWANCE`]).
    credit: i64,
}

impl SendWindow {
    pub fn new(size: u32) -> SendWindow {
        SendWindow {
            credit: i64::from(size),
        }
    }

    /// Whether anything may be sent now.
    pub fn is_open(&self) -> bool {
        self.credit > 0
    }

    /// How many bytes may be sent now.
    pub fn available(&self) -> usize {
        usize::try_from(self.credit.max(0)).unwrap_or(usize::MAX)
    }

    /// `bytes` were sent.
    pub fn spend(&mut self, bytes: usize) {
        self.credit = self
            .credit
            .saturating_sub(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// The receiver passed `bytes` on.
    pub fn grant(&mut self, bytes: u32) {
        self.credit = self.credit.saturating_add(i64::from(bytes));
    }
}

/// What one stream's receiver holds of what was sent, and the credit it owes
/// the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiveWindow {
    size: u32,
    /// Received and not yet credited back (held, or passed on and owed).
    outstanding: u64,
    /// Passed on, not yet credited back.
    owed: u32,
}

impl ReceiveWindow {
    pub fn new(size: u32) -> ReceiveWindow {
        ReceiveWindow {
            size,
            outstanding: 0,
            owed: 0,
        }
    }

    /// `bytes` arrived; false when the sender has now sent more than its
    /// window and `allowance` beyond it (a confused or hostile sender: the
    /// receiver would hold without bound).
    #[must_use]
    pub fn received(&mut self, bytes: usize, allowance: u32) -> bool {
        self.outstanding = self.outstanding.saturating_add(bytes as u64);
        self.outstanding <= u64::from(self.size) + u64::from(allowance)
    }

    /// `bytes` were passed on: the credit to give back now, if it is due. It
    /// is given back a quarter window at a time, so a stream of small writes
    /// costs one credit message per 64 KiB and not one per write; the sender
    /// is left at least three quarters of its window meanwhile, so it never
    /// waits on credit that is owed but not sent.
    pub fn passed_on(&mut self, bytes: usize) -> Option<u32> {
        let bytes = u32::try_from(bytes).unwrap_or(u32::MAX);
        self.owed = self.owed.saturating_add(bytes);
        if self.owed < self.batch() {
            return None;
        }
        let credit = std::mem::take(&mut self.owed);
        self.outstanding = self.outstanding.saturating_sub(u64::from(credit));
        Some(credit)
    }

    /// Held, not yet passed on.
    pub fn held(&self) -> u64 {
        self.outstanding.saturating_sub(u64::from(self.owed))
    }

    fn batch(&self) -> u32 {
        (self.size / 4).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_stops_at_zero_and_goes_on_with_credit() {
        let mut window = SendWindow::new(10);
        assert!(window.is_open());
        assert_eq!(window.available(), 10);
        window.spend(4);
        assert_eq!(window.available(), 6);
        window.spend(6);
        assert!(!window.is_open());
        assert_eq!(window.available(), 0);
        window.grant(3);
        assert_eq!(window.available(), 3);
        // A drain past the window leaves it closed until that is paid back.
        window.spend(5);
        assert!(!window.is_open());
        window.grant(2);
        assert!(!window.is_open());
        window.grant(1);
        assert_eq!(window.available(), 1);
    }

    #[test]
    fn credit_goes_back_a_quarter_window_at_a_time() {
        let mut window = ReceiveWindow::new(400);
        assert!(window.received(150, 0));
        assert_eq!(window.held(), 150);
        assert_eq!(window.passed_on(60), None);
        assert_eq!(window.held(), 90);
        assert_eq!(window.passed_on(40), Some(100));
        assert_eq!(window.held(), 50);
        assert_eq!(window.passed_on(50), None);
        assert_eq!(window.held(), 0);
        // Owed 50: the sender still has 350 of its 400.
        assert!(window.received(350, 0));
        assert!(!window.received(1, 0), "past the window");
    }

    #[test]
    fn the_allowance_bounds_a_drain_past_the_window() {
        let mut window = ReceiveWindow::new(100);
        assert!(window.received(100, 50));
        assert!(window.received(50, 50));
        assert!(!window.received(1, 50));
    }

    /// A sender and a receiver with a slow consumer: the sender is held to
    /// the window, and every byte arrives once the consumer goes on.
    #[test]
    fn a_stopped_consumer_holds_the_sender_to_the_window() {
        let size = 256 << 10;
        let mut sender = SendWindow::new(size);
        let mut receiver = ReceiveWindow::new(size);
        let total = 5 << 20;
        let (mut sent, mut consumed) = (0usize, 0usize);
        let mut held = 0usize;
        // The consumer takes nothing at first.
        for round in 0.. {
            let piece = sender.available().min(64 << 10).min(total - sent);
            if piece > 0 {
                sender.spend(piece);
                assert!(receiver.received(piece, 0));
                sent += piece;
                held += piece;
            }
            assert!(held <= size as usize);
            if round < 100 {
                continue;
            }
            let take = held.min(10_000);
            held -= take;
            consumed += take;
            if let Some(credit) = receiver.passed_on(take) {
                sender.grant(credit);
            }
            if consumed == total {
                break;
            }
        }
        assert_eq!(sent, total);
    }
}
