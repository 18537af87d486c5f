//! One task's way through its lane. The driver (`driver.rs`) takes the task through small
//! named steps, each a file of its own: its lane's worktree (`lane.rs`), worker attempts
//! (`work.rs`), Advisor consults (`consult.rs`) in the advice checkout and reviews
//! (`review.rs`) in the review checkout (`review_checkout.rs`), with the `[review] checks`
//! judged against main's (`checks.rs`), scope requests (`scope.rs`), a person stepping in
//! at safe points (`attach_point.rs`), failed gates (`gates_failed.rs`), and what becomes
//! of the task once its landing ended (`bounce.rs`) — the landing itself is the landing
//! mode's (`run/land`).
//!
//! The steps hand back the values in `outcome.rs`; the driver depends on those, the steps
//! on the driver, and nothing back.

mod attach_point;
mod bounce;
mod checks;
mod consult;
mod driver;
mod gates_failed;
mod lane;
mod outcome;
mod review;
mod review_checkout;
mod scope;
mod work;

pub(crate) use bounce::exit_after_landing;
pub(crate) use driver::TaskDriver;
pub(crate) use outcome::TaskExit;
pub(crate) use review_checkout::record_parked as record_parked_checkout;
