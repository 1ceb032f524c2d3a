//! End-to-end tests: the real server, started in-process on ephemeral loopback ports, in front
//! of real (and misbehaving) upstreams written with tokio; the `palisade` binary for signals and
//! the CLI. Every wait is bounded (see `common::LIMIT`).

#[macro_use]
mod common;

mod access;
mod authz;
mod balancing;
mod bodies;
mod cli;
mod dashboard;
mod detection;
mod events;
mod events_pg;
mod forwarding;
mod graphql;
mod grpc;
mod h2_tls;
mod h2_upstream;
mod hardening;
mod limits;
mod openapi;
mod operations;
mod path_bypass;
mod pooling;
mod problems;
mod reload;
mod responses;
mod routing;
mod rules;
mod shutdown;
mod smuggling;
mod upstream_failures;
mod webdriver;
mod websocket;
