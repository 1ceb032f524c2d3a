criterion_main!();
use criterion::criterion_main;
