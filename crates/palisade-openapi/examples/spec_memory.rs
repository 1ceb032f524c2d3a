//! Where the memory of loading a spec goes: live heap bytes after each step of loading and
//! compiling one spec, and the peak, with an allocator that counts live bytes (the binary's
//! allocator, mimalloc, is not involved, so these are the program's own bytes, without
//! allocator overhead or pages it keeps).
//!
//! `cargo run --release -p palisade-openapi --example spec_memory -- SPEC [SPEC...]`
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use palisade_openapi::{compile, load, CompileOptions, FsFetch, Limits};

struct Live;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Live {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Live = Live;

fn mib(b: usize) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

fn main() {
    for spec in std::env::args().skip(1) {
        let path = std::path::absolute(&spec).unwrap().display().to_string();
        let size = std::fs::metadata(&path).map(|m| m.len() as usize).unwrap_or(0);
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let set = match load(&path, &FsFetch, &Limits::default()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{spec}: {}", e[0]);
                continue;
            }
        };
        let loaded = LIVE.load(Ordering::Relaxed) - base;
        let peak_load = PEAK.load(Ordering::Relaxed) - base;
        let api = match compile(&set, &CompileOptions::default()) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("{spec}: {}", e[0]);
                continue;
            }
        };
        let both = LIVE.load(Ordering::Relaxed) - base;
        let peak = PEAK.load(Ordering::Relaxed) - base;
        drop(set);
        let kept = LIVE.load(Ordering::Relaxed) - base;
        println!(
            "{spec}: {} bytes; loaded tree {} (peak {}), tree + compiled {}, peak {} ({:.1}x), compiled alone {} ({:.1}x; {} schemas, {} operations)",
            size,
            mib(loaded),
            mib(peak_load),
            mib(both),
            mib(peak),
            peak as f64 / size.max(1) as f64,
            mib(kept),
            kept as f64 / size.max(1) as f64,
            api.schemas.len(),
            api.operations.len()
        );
    }
}
