//! A strict JSON parser (RFC 8259) that writes a flat tape of tokens into a reusable buffer:
//! no allocation per value, strings and numbers kept as byte spans of the input and decoded
//! only when asked. Shared by OpenAPI validation and attack detection, so that one parse
//! serves both. Bounded: nesting depth and token count are limits, never recursion.
#![forbid(unsafe_code)]
