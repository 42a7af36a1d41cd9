//! Pipelines run on the shared run core: steps, fan-outs, budgets, cancellation, the run
//! store and its resume, the backends (mock, script, command, OpenAI over HTTP, TLS and
//! proxies) and tool confinement.

mod common;

mod backends;
mod budget;
mod cancel;
mod confine;
mod example;
mod members;
mod openai;
mod openai_proxy;
mod openai_tls;
mod partial;
mod recursion;
mod sqlite_store;
mod steps;
mod store;
