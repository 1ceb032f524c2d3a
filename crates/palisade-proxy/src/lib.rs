//! Palisade's reverse proxy: the thin shell that drives the decision engines.
//!
//! - [`server`]: worker threads, listeners, TLS and HTTP/2 dispatch, graceful shutdown, reload;
//! - [`h1`]: the strict HTTP/1.1 server codec; [`raw_head`]: a request head's fields as parsed;
//!   [`h1_body`]: the request body and the connection state it shares with the server loop;
//! - [`proxy`]: the request lifecycle and pipeline driver; [`h2_forward`]: its upstream phase
//!   over HTTP/2;
//! - [`targets`]: upstream targets, balancing, ejection and health flags;
//! - [`upstream`]: the HTTP/1.1 upstream client and keep-alive pools; [`h2up`], [`grpc`] and
//!   [`grpc_answer`]: HTTP/2 upstreams, gRPC and the answers to gRPC clients; [`health`]:
//!   active health checks;
//! - [`websocket`]: WebSocket handshakes and the frame relay; [`ws_session`]: an accepted
//!   connection on its way to the relay;
//! - [`headers`], [`problem`], [`code`]: the single places for header rules, generated
//!   responses and their reason codes;
//! - [`body`], [`resp_body`], [`body_error`]: the request and response body types and why a
//!   body could not be read;
//! - [`state`]: what every thread of a running server shares (snapshot, reload, shutdown);
//! - [`record`], [`metrics`], [`events`]: what each request leaves behind (metrics, security
//!   events) and the admin listener's view of it ([`admin`]).
#![forbid(unsafe_code)]

pub mod admin;
pub mod authz;
pub mod body;
pub mod body_error;
pub mod code;
pub mod codec;
pub mod date;
pub mod error;
pub mod events;
pub mod grpc;
pub mod grpc_answer;
pub mod h1;
pub mod h1_body;
pub mod h2_forward;
pub mod h2up;
pub mod headers;
pub mod health;
pub mod io;
pub mod judge;
pub mod metrics;
pub mod problem;
pub mod proxy;
pub mod raw_head;
pub mod record;
pub mod request_id;
pub mod resp_body;
pub mod response;
pub mod router;
pub mod server;
pub mod snapshot;
pub mod spin;
pub mod state;
pub mod targets;
pub mod tls;
pub mod token;
pub mod upstream;
pub mod websocket;
pub mod ws_session;

pub use error::{Error, ErrorKind};
pub use server::{auto_workers, start, Running, StartError};
pub use snapshot::{no_stages, Snapshot, StageFactory};
