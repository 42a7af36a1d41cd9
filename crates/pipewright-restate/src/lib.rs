//! pipewright's second run engine: Restate (restate.dev), a distributed durable-execution
//! engine (issue 24). This crate is the engine's own foundation; the run seam of
//! pipewright-runtime maps a step's side effect onto a journaled `ctx.run` on top of it.
//!
//! - [`server`]: the pinned `restate-server` as a child process on loopback (and the configs of
//!   a cluster on one machine);
//! - [`client`]: the admin API (deployments, SQL) and the ingress (send, attach, call);
//! - [`endpoint`]: a restate-sdk endpoint served from our own accept loop (TCP_NODELAY);
//! - [`processes`]: what a worker does about its steps' process groups.

pub mod client;
pub mod endpoint;
pub mod member;
pub mod processes;
pub mod run_state;
pub mod server;
pub mod store;
pub mod testing;
pub mod workflow;

pub use client::{Client, ClientError, Deployment, Submission};
pub use endpoint::Serving;
pub use server::{RestateServer, ServerError};

/// The restate-sdk this crate serves with, for the worker's services.
pub use restate_sdk;
