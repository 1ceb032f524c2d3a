//! Stable reason codes for what the proxy itself rejects (the `code` of its problem
//! responses, [`crate::problem`]).

pub const BAD_REQUEST: &str = "http.bad_request";
pub const SMUGGLING: &str = "http.ambiguous_framing";
pub const HEADERS_TOO_LARGE: &str = "http.headers_too_large";
pub const URI_TOO_LONG: &str = "http.uri_too_long";
pub const BODY_TOO_LARGE: &str = "http.body_too_large";
pub const HEADER_TIMEOUT: &str = "http.header_timeout";
pub const BODY_TIMEOUT: &str = "http.body_timeout";
pub const NO_APP: &str = "route.no_app";
/// The app's own reading of the path would choose another app than the broadest reading.
pub const PATH_AMBIGUOUS: &str = "path.ambiguous";
pub const UPSTREAM_UNAVAILABLE: &str = "upstream.unavailable";
pub const UPSTREAM_TIMEOUT: &str = "upstream.timeout";
pub const UPSTREAM_ERROR: &str = "upstream.bad_response";
pub const SHUTTING_DOWN: &str = "server.shutting_down";
pub const UNSUPPORTED: &str = "http.not_implemented";
