//! The integration tests of pipewright: one module per former `tests/*.rs` file, linked into
//! one executable (one link instead of one per file; docs/ci.md, "Testing pipewright").

mod common;

#[cfg(feature = "restate")]
mod balancer;

mod cancel_cli;
mod check_cli;
mod check_fix_cli;
mod check_worst_case;
mod ci_integration;
mod cli_robustness;
mod crash;
mod dialects_cli;
#[cfg(feature = "restate")]
mod engine_restate;
#[cfg(feature = "restate")]
mod engine_restate_recipe;
#[cfg(feature = "restate")]
mod engine_restate_tmux;
mod fmt_cli;
mod graph_cli;
mod lsp_cli;
mod meow_channel;
mod meow_cli;
mod meow_run;
mod meow_tmux;
mod readme;
mod recipe_run;
mod run_cli;
mod run_dry;
mod run_error_data;
mod run_prerun;
mod run_recursion;
mod run_secrets;
mod run_usage;
mod run_usage_openai;
mod schemas;
mod statemachine_cli;
mod statemachine_run;
mod step_keys;
mod suppress_cli;
mod ui_api;
mod ui_browser;
#[cfg(feature = "restate")]
mod ui_engine;
