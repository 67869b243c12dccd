// SPDX-License-Identifier: GPL-2.0

//! Property fuzzing of the pure logic: generated headers, packets, WQE
//! slots, PSNs and requester windows, each checked against what the logic
//! promises (round trips, bounds, invariants), not only for panics.
//!
//! A test without the libtest harness, so that `cargo test` always shows
//! its summary: `fuzz: N cases (seed S)`. The seed is fixed unless
//! `RRXE_FUZZ_SEED` gives one (decimal or 0x-hex); `RRXE_FUZZ_SCALE`
//! multiplies the number of cases. A failing case prints its target, index
//! and seed, which reproduce it alone with `RRXE_FUZZ_ONLY=target:index`.

mod hdr;
mod peer;
mod pkt;
mod psn;
mod rng;
mod window;
mod wqe;

use rng::Rng;
use std::cell::Cell;
use std::time::Instant;

/// The seed when `RRXE_FUZZ_SEED` is not set.
const SEED: u64 = 0x5eed_2a7e_0000_0001;

thread_local! {
    /// The case being run, for the panic message.
    static CASE: Cell<(&'static str, u64)> = const { Cell::new(("", 0)) };
}

/// A fuzz target: its name, its number of cases per run, and one case.
struct Target {
    name: &'static str,
    cases: u64,
    run: fn(&mut Rng),
}

const TARGETS: &[Target] = &[
    Target {
        name: "hdr",
        cases: 300_000,
        run: hdr::case,
    },
    Target {
        name: "pkt",
        cases: 200_000,
        run: pkt::case,
    },
    Target {
        name: "wqe",
        cases: 200_000,
        run: wqe::case,
    },
    Target {
        name: "psn",
        cases: 300_000,
        run: psn::case,
    },
    Target {
        name: "window",
        cases: 3_000,
        run: window::case,
    },
];

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={v}: not a number")))
}

fn main() {
    let seed = env_u64("RRXE_FUZZ_SEED").unwrap_or(SEED);
    let scale = env_u64("RRXE_FUZZ_SCALE").unwrap_or(1).max(1);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let (name, i) = CASE.with(Cell::get);
        eprintln!("fuzz: {name} case {i} failed (RRXE_FUZZ_SEED={seed:#x})");
        default_hook(info);
    }));
    // RRXE_FUZZ_ONLY=name or name:index runs one target, or one case.
    let only = std::env::var("RRXE_FUZZ_ONLY").ok();
    let (only_name, only_case) = match only
        .as_deref()
        .map(|o| o.split_once(':').unwrap_or((o, "")))
    {
        Some((n, c)) => (Some(n.to_string()), c.parse::<u64>().ok()),
        None => (None, None),
    };
    let start = Instant::now();
    let mut total = 0u64;
    for t in TARGETS {
        if only_name.as_ref().is_some_and(|n| n != t.name) {
            continue;
        }
        let t0 = Instant::now();
        let n = t.cases * scale;
        let mut steps = 0u64;
        let cases = match only_case {
            Some(i) => i..i + 1,
            None => 0..n,
        };
        let runs = cases.end - cases.start;
        for i in cases {
            CASE.with(|c| c.set((t.name, i)));
            // Every case has its own stream: one case reproduces alone.
            let mut r = Rng::for_case(seed, t.name, i);
            (t.run)(&mut r);
            steps += r.cases();
        }
        println!(
            "fuzz: {}: {} cases ({} runs) in {:.1} s",
            t.name,
            steps,
            runs,
            t0.elapsed().as_secs_f64()
        );
        total += steps;
    }
    println!(
        "fuzz: {total} cases (seed {seed:#x}) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
