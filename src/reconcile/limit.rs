//! The bound on requests in flight during a rollout, served by priority.
//!
//! A rollout runs every component whose dependencies are ready at once; what is bounded is the
//! requests they send ([`Options::concurrency`](super::Options::concurrency) at a time). When
//! requests queue, the one from the component with the longest remaining chain of dependents is
//! sent first (ties: first come, first served), so the critical path is not held up behind
//! leaves. A component waiting for readiness holds no slot.
//!
//! The bound travels with the component's future as a task-local [`Budget`] (set by the
//! scheduler, read by [`super::apply`]'s retry loop for every attempt), so the request
//! functions keep their signatures and requests made outside a rollout are not bounded here.

use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

tokio::task_local! {
    /// The limiter and priority of the component whose future is running.
    static BUDGET: Budget;
}

/// A component's share of the requests: the run's limiter and the component's priority.
#[derive(Clone)]
pub(super) struct Budget {
    pub(super) limiter: Arc<Limiter>,
    /// Higher is served first.
    pub(super) priority: usize,
}

impl Budget {
    /// Runs `future` with this budget in scope.
    pub(super) async fn scope<F: Future>(self, future: F) -> F::Output {
        BUDGET.scope(self, future).await
    }
}

/// A slot for one request, when a budget is in scope; `None` otherwise.
pub(super) async fn slot() -> Option<Permit> {
    let (limiter, priority) = BUDGET.try_with(|b| (b.limiter.clone(), b.priority)).ok()?;
    Some(limiter.acquire(priority).await)
}

/// At most `capacity` permits out at once; waiters served highest priority first.
pub(super) struct Limiter {
    state: Mutex<State>,
}

struct State {
    free: usize,
    waiting: BinaryHeap<Waiter>,
    /// Arrival numbers, for first come, first served among equals.
    arrivals: u64,
}

struct Waiter {
    priority: usize,
    arrival: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        (self.priority, self.arrival) == (other.priority, other.arrival)
    }
}

impl Eq for Waiter {}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // NB: a max-heap: higher priority first, then the earlier arrival.
        self.priority.cmp(&other.priority).then(other.arrival.cmp(&self.arrival))
    }
}

impl Limiter {
    /// A limiter with `capacity` permits (at least one).
    pub(super) fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Limiter { state: Mutex::new(State { free: capacity.max(1), waiting: BinaryHeap::new(), arrivals: 0 }) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a permit; waiters with a higher `priority` get one first.
    pub(super) async fn acquire(self: &Arc<Self>, priority: usize) -> Permit {
        let receiver = {
            let mut state = self.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return Permit { limiter: self.clone() };
            }
            let (wake, receiver) = oneshot::channel();
            state.arrivals += 1;
            let arrival = state.arrivals;
            state.waiting.push(Waiter { priority, arrival, wake });
            receiver
        };
        let mut pending = Pending { limiter: self.clone(), receiver: Some(receiver) };
        pending.wait().await
    }

    /// Hands a returned permit to the best live waiter, or frees it.
    fn release(&self) {
        let mut state = self.lock();
        while let Some(waiter) = state.waiting.pop() {
            // NB: a waiter whose future was dropped has dropped its receiver: skip it.
            if waiter.wake.send(()).is_ok() {
                return;
            }
        }
        state.free += 1;
    }
}

/// A waiter's side of the hand-over; returns a permit handed to a dropped waiter.
struct Pending {
    limiter: Arc<Limiter>,
    receiver: Option<oneshot::Receiver<()>>,
}

impl Pending {
    async fn wait(&mut self) -> Permit {
        if let Some(receiver) = self.receiver.as_mut() {
            // NB: the sender lives in the limiter's queue until it hands over, and the limiter
            // outlives this future (we hold an `Arc`), so it is never dropped unsent.
            let _ = receiver.await;
        }
        self.receiver = None;
        Permit { limiter: self.limiter.clone() }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // NB: dropped while waiting (a cancelled request): a permit handed over in the meantime
        // must go back, or it is lost.
        if let Some(mut receiver) = self.receiver.take() {
            receiver.close();
            if receiver.try_recv().is_ok() {
                self.limiter.release();
            }
        }
    }
}

/// One request's slot; returned when dropped.
pub(super) struct Permit {
    limiter: Arc<Limiter>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.limiter.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    #[tokio::test]
    async fn higher_priority_first_then_first_come() {
        let limiter = Limiter::new(1);
        let held = limiter.acquire(0).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, priority) in [("low", 1), ("high", 5), ("high-later", 5), ("mid", 3)] {
            let (limiter, order) = (limiter.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = limiter.acquire(priority).await;
                order.lock().expect("order").push(name);
            }));
            // NB: let each task queue before the next, so arrival order is the listed order.
            tokio::task::yield_now().await;
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        drop(held);
        for task in tasks {
            task.await.expect("task");
        }
        assert_eq!(*order.lock().expect("order"), ["high", "high-later", "mid", "low"]);
    }

    #[tokio::test]
    async fn a_cancelled_waiter_does_not_lose_a_permit() {
        let limiter = Limiter::new(1);
        let held = limiter.acquire(0).await;
        let mut cancelled = Box::pin(limiter.acquire(9));
        assert!((&mut cancelled).now_or_never().is_none(), "queued behind the held permit");
        drop(held);
        // The permit was handed to the queued waiter; dropping it unpolled returns it.
        drop(cancelled);
        let again = limiter.acquire(0).now_or_never();
        assert!(again.is_some(), "the permit came back");
    }

    #[tokio::test]
    async fn slots_are_bounded_only_inside_a_budget() {
        assert!(slot().await.is_none());
        let limiter = Limiter::new(2);
        let budget = Budget { limiter: limiter.clone(), priority: 1 };
        let (first, second) = budget.scope(async { (slot().await, slot().await) }).await;
        assert!(first.is_some() && second.is_some());
        assert!(limiter.acquire(0).now_or_never().is_none(), "both permits are out");
        drop(first);
        assert!(limiter.acquire(0).now_or_never().is_some());
    }
}
