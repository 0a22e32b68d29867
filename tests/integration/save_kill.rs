//! Saving survives `kill -9` at any moment (issue 8, "never lose work").
//!
//! The test re-runs its own binary as a child (`child_save_loop` with `SY_SAVE_KILL_FILE` set)
//! that opens a `studio::Session` and saves in a tight loop, alternating two 200 KB contents A
//! and B through the session's real save path (undo/redo flip the text, `save` writes it). The
//! parent kills the child with SIGKILL at random moments and checks after every kill that the
//! file is byte-identical to A or B — never empty, partial or mixed — and that the temporary file
//! a killed save may leave behind is removed by the next `Session::open`.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use switchyard::studio::Session;
use test_support::TempDir;

const ENV_FILE: &str = "SY_SAVE_KILL_FILE";
const SIZE: usize = 200 * 1024;
const READY: &str = "SAVE_KILL_LOOP_READY";

/// A YAML document of about `SIZE` bytes whose every line names its variant, so any mix of A and
/// B (or a truncation) differs from both.
fn content(tag: char) -> String {
    let mut s = String::with_capacity(SIZE + 64);
    s.push_str("# save_kill fixture\nname: g\nversion: \"1.0\"\nstart: a\nnodes:\n  a:\n    type: end\n    message: done\n");
    let mut i = 0u32;
    while s.len() < SIZE {
        s.push_str(&format!("# {tag}{i:07} {}\n", tag.to_string().repeat(40)));
        i += 1;
    }
    s
}

/// The child: saves A and B alternately until killed. Does nothing in a normal test run.
#[test]
fn child_save_loop() {
    let Some(file) = std::env::var_os(ENV_FILE) else {
        return;
    };
    let file = PathBuf::from(file);
    let mut s = Session::open(&file).expect("child opens the file");
    let a = content('A');
    let b = content('B');
    assert!(s.text() == a, "the parent starts every child on A");
    s.set_text(b);
    // Tell the parent the loop starts (it waits for this line before choosing when to kill).
    // (libtest may have printed `test child_save_loop ... ` on the same line.)
    println!("\n{READY}");
    let mut saves = 0u64;
    loop {
        s.save(false).expect("save");
        saves += 1;
        // Flip between A and B without growing the undo stack.
        if saves % 2 == 1 {
            s.undo();
        } else {
            s.redo();
        }
    }
}

/// xorshift64*: random kill delays without a dependency; the seed is printed for reproduction.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn temps(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn save_survives_sigkill_at_any_moment() {
    let iterations: usize = std::env::var("SY_SAVE_KILL_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let seed = std::env::var("SY_SAVE_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    eprintln!("save_kill: {iterations} iterations, seed {seed} (SY_SAVE_KILL_SEED to repeat)");
    let mut rng = Rng(seed);

    let dir = TempDir::new("save-kill");
    let file = dir.join("graph.yaml");
    let a = content('A');
    let b = content('B');
    assert_ne!(a, b);
    let exe = std::env::current_exe().unwrap();

    // Calibrate: how long one save cycle takes, so kills spread over a few cycles.
    let t = Instant::now();
    std::fs::write(&file, &a).unwrap();
    let mut s = Session::open(&file).unwrap();
    s.set_text(b.clone());
    let rounds = 10;
    for i in 0..rounds {
        s.save(false).unwrap();
        if i % 2 == 0 {
            s.undo();
        } else {
            s.redo();
        }
    }
    let cycle = t.elapsed() / rounds;
    drop(s);
    let window_us = (cycle.as_micros() as u64 * 4).clamp(2_000, 200_000);
    eprintln!(
        "save_kill: one save cycle ≈ {cycle:?}; kills land within {window_us} µs after the loop starts"
    );

    let (mut seen_a, mut seen_b, mut left_temp) = (0, 0, 0);
    for it in 0..iterations {
        std::fs::write(&file, &a).unwrap();
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "save_kill::child_save_loop",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV_FILE, &file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            line.clear();
            let n = out.read_line(&mut line).unwrap_or(0);
            assert!(
                n > 0 && Instant::now() < deadline,
                "iteration {it}: the child ended before its loop started"
            );
            if line.contains(READY) {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.next() % window_us));
        child.kill().expect("SIGKILL"); // std sends SIGKILL on unix
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "iteration {it}: the child was not killed ({status:?})"
        );

        let got = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("iteration {it}: the file is gone after the kill: {e}"));
        if got == a.as_bytes() {
            seen_a += 1;
        } else if got == b.as_bytes() {
            seen_b += 1;
        } else {
            let first_diff = got
                .iter()
                .zip(a.as_bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(got.len().min(a.len()));
            panic!(
                "iteration {it} (seed {seed}): the file is neither A nor B after kill -9: {} bytes (A and B are {}), first difference from A at byte {first_diff}",
                got.len(),
                a.len()
            );
        }
        // A kill between create and rename may leave the child's temporary file; the next open
        // removes it, and never touches the file itself.
        if !temps(&dir).is_empty() {
            left_temp += 1;
        }
        let reopened = Session::open(&file).unwrap();
        assert!(
            reopened.text().as_bytes() == got.as_slice(),
            "iteration {it}: reopening changed the text"
        );
        let rest = temps(&dir);
        assert!(
            rest.is_empty(),
            "iteration {it}: temporary files left after reopening: {rest:?}"
        );
    }
    eprintln!(
        "save_kill: {iterations} kills: file was A {seen_a}×, B {seen_b}×; a killed save had left its temporary file {left_temp}× (all removed on reopen)"
    );
    // The kills must really land inside the loop, on both contents, for the test to prove anything.
    assert!(
        seen_b > 0,
        "no kill happened after a save of B: the kill window is too short"
    );
    assert!(
        seen_a > 0 || iterations < 20,
        "no kill happened after a save of A"
    );
}
