//! Compact checkpoints for long runs: a [`RunSession`](super::RunSession) keeps the newest
//! checkpoints as machine forks and the older ones as the machine's own snapshot
//! ([`Machine::snapshot`](super::Machine::snapshot), the JSON a durable run is saved as), one
//! JSON line each, deflated in blocks of [`BLOCK`] neighbours, which differ in a few values and
//! so compress to a few dozen bytes per step. A packed checkpoint is read back by restoring its
//! snapshot into a fork of the running machine ([`Machine::restore`](super::Machine::restore)).
//! Which checkpoints get packed, and the check that each snapshot gives back the same state
//! and next nodes before the fork goes, live in the session (`RunSession::pack_old`).

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use std::io::{Read, Write};

/// Checkpoints kept as forks, newest first: the ones a debugger goes back to most.
pub(super) const KEEP_FULL: usize = 64;
/// Snapshots per deflated block.
pub(super) const BLOCK: usize = 64;
/// A snapshot longer than this stays a fork: its state is big, and a fork shares it with the
/// neighbouring checkpoints (`Arc`-shared values), which a snapshot per step would not.
pub(super) const MAX_LINE: usize = 16 * 1024;

/// Where a packed checkpoint's line is: block, line in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct At(u32, u32);

/// Packed checkpoint lines: sealed blocks (deflated, lines joined by `\n`) and the open block.
#[derive(Default)]
pub(super) struct Packed {
    blocks: Vec<Box<[u8]>>,
    open: Vec<String>,
}

impl Packed {
    /// Add one line (compact JSON: it holds no raw newline).
    pub(super) fn push(&mut self, line: String) -> At {
        let at = At(self.blocks.len() as u32, self.open.len() as u32);
        self.open.push(line);
        if self.open.len() == BLOCK {
            let mut enc = DeflateEncoder::new(Vec::new(), Compression::fast());
            // Writing to a Vec cannot fail.
            let _ = enc.write_all(self.open.join("\n").as_bytes());
            let bytes = enc.finish().unwrap_or_default();
            self.blocks.push(bytes.into_boxed_slice());
            self.open.clear();
        }
        at
    }

    pub(super) fn get(&self, at: At) -> Result<String, String> {
        let At(b, i) = at;
        if b as usize == self.blocks.len() {
            return self.open.get(i as usize).cloned().ok_or_else(|| "a packed checkpoint is missing".to_string());
        }
        let block = self.blocks.get(b as usize).ok_or_else(|| "a packed checkpoint's block is missing".to_string())?;
        let mut text = String::new();
        DeflateDecoder::new(&block[..]).read_to_string(&mut text).map_err(|e| format!("a packed checkpoint is unreadable: {e}"))?;
        text.split('\n').nth(i as usize).map(str::to_string).ok_or_else(|| "a packed checkpoint is missing".to_string())
    }

    /// Forget every line after `last` (all of them for `None`): a rewind dropped their
    /// checkpoints. Later lines go to a new block.
    pub(super) fn truncate(&mut self, last: Option<At>) {
        match last {
            None => {
                self.blocks.clear();
                self.open.clear();
            }
            Some(At(b, i)) if b as usize == self.blocks.len() => self.open.truncate(i as usize + 1),
            Some(At(b, _)) => {
                // The rest of block `b` stays unread; new lines start block `b + 1`.
                self.blocks.truncate(b as usize + 1);
                self.open.clear();
            }
        }
    }

    /// Bytes held (blocks and open lines), for tests and measurements.
    pub(super) fn bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.len()).sum::<usize>() + self.open.iter().map(String::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cx, Machine, Pending, RunOptions, RunSession, StepOutcome};
    use crate::provider::NoProvider;
    use serde_json::{Value, json};

    /// A counting machine: `count` goes up by one a step, `note` and a short `log` follow it;
    /// `snap` says whether it has snapshots, `lossy` that its snapshot forgets `log`.
    #[derive(Clone)]
    struct Counter {
        state: Value,
        limit: u64,
        snap: bool,
        lossy: bool,
    }

    impl Counter {
        fn new(limit: u64) -> Counter {
            Counter { state: json!({"count": 0, "note": "", "log": []}), limit, snap: true, lossy: false }
        }
        fn count(&self) -> u64 {
            self.state["count"].as_u64().unwrap()
        }
    }

    impl Machine for Counter {
        fn agent(&self) -> &str {
            "counter"
        }
        fn due(&self) -> Vec<String> {
            if self.count() < self.limit { vec![if self.count() % 2 == 0 { "inc" } else { "check" }.into()] } else { vec![] }
        }
        fn node_kind(&self, _node: &str) -> String {
            "set_state".into()
        }
        fn step(&mut self, _cx: &Cx<'_>) -> StepOutcome {
            let n = self.count() + 1;
            // Edits change what follows: the step adds `bump` (0 unless edited) as well.
            let bump = self.state["bump"].as_u64().unwrap_or(0);
            self.state["count"] = json!(n + bump);
            self.state["note"] = json!(format!("checked {}", n + bump));
            let log = self.state["log"].as_array_mut().unwrap();
            log.push(json!(n));
            if log.len() > 3 {
                log.remove(0);
            }
            if self.count() >= self.limit { StepOutcome::Finished { output: json!(self.count()) } } else { StepOutcome::Continue }
        }
        fn answer(&mut self, _p: &Pending, _a: Value) -> Result<(), String> {
            Err("no questions".into())
        }
        fn state(&self) -> Value {
            self.state.clone()
        }
        fn edit_state(&mut self, key: &str, value: Value) -> Result<(), String> {
            self.state[key] = value;
            Ok(())
        }
        fn condition(&self, _node: &str, _c: &str) -> Result<bool, String> {
            Ok(false)
        }
        fn check_condition(&self, _c: &str) -> Result<(), String> {
            Ok(())
        }
        fn fork(&self) -> Box<dyn Machine> {
            Box::new(self.clone())
        }
        fn snapshot(&self) -> Value {
            if !self.snap {
                return Value::Null;
            }
            let mut state = self.state.clone();
            if self.lossy {
                state["log"] = json!([]);
            }
            json!({"format": 1, "state": state})
        }
        fn restore(&mut self, snapshot: &Value) -> Result<(), String> {
            self.state = snapshot.get("state").cloned().ok_or("no state")?;
            Ok(())
        }
    }

    fn session(m: Counter) -> RunSession {
        let mut o = RunOptions::new(Box::new(NoProvider));
        o.keep_events = false;
        RunSession::new(Box::new(m), json!({}), o)
    }

    /// The state after every step of a straight run, step by step (index = step).
    fn straight(m: Counter) -> Vec<Value> {
        let mut s = session(m);
        let mut states = vec![s.state()];
        while !s.status().is_finished() {
            s.step();
            states.push(s.state());
        }
        states
    }

    const N: u64 = 5_000;
    /// Steps to go back to: the first, block edges, the packed/fork border, the newest.
    fn probes() -> Vec<u64> {
        let mut v = vec![0, 1, 2, 63, 64, 65, 127, 128, 129, 1_000, 2_345, 4_000];
        v.extend((N - 70)..=N);
        // And a spread of others (a fixed stride through the run).
        v.extend((0..N).step_by(97));
        v
    }

    #[test]
    fn every_step_of_a_long_run_reads_back_and_rewinds_to_the_straight_runs_state() {
        let want = straight(Counter::new(N));
        assert_eq!(want.len() as u64, N + 1);
        let mut s = session(Counter::new(N));
        s.run();
        assert!(s.status().is_finished());
        let (packed, bytes) = s.packed_checkpoints();
        // All but the newest 64 to 127 are packed, in a few dozen bytes each.
        assert!(packed as u64 >= N + 1 - 128, "{packed} packed");
        assert!(bytes < packed * 64, "{bytes} bytes for {packed} checkpoints");
        for step in 0..=N {
            assert_eq!(s.state_at(step).as_ref(), Some(&want[step as usize]), "state at step {step}");
        }
        let infos = s.checkpoints();
        assert_eq!(infos.len() as u64, N + 1);
        assert_eq!(infos[10].nodes, vec!["check".to_string()]);
        assert_eq!(infos[10].due, vec!["inc".to_string()]);
        for step in probes() {
            let mut r = session(Counter::new(N));
            r.run();
            r.rewind(step).unwrap();
            assert_eq!(r.state(), want[step as usize], "state after rewinding to {step}");
            assert_eq!(r.steps(), step);
            // Going on from there is the straight run again, step by step.
            for next in step + 1..(step + 3).min(N) {
                r.step();
                assert_eq!(r.state(), want[next as usize], "step {next} after rewinding to {step}");
            }
            r.run();
            assert_eq!(r.state(), want[N as usize]);
            // And every earlier step still reads back.
            for back in [0, step / 2, step] {
                assert_eq!(r.state_at(back).as_ref(), Some(&want[back as usize]));
            }
        }
    }

    #[test]
    fn rewinds_into_packed_steps_twice_with_an_edit_then_a_long_fork() {
        let mut s = session(Counter::new(N));
        s.run();
        s.rewind(3_000).unwrap();
        s.rewind(1_500).unwrap();
        s.edit_state("bump", json!(1)).unwrap();
        let edited = s.state();
        s.run();
        // The fork is the straight run of a machine that started at the edited state.
        let mut m = Counter::new(N);
        m.state = edited.clone();
        let mut tail = straight(m);
        let fork_end = s.steps();
        assert_eq!(fork_end, 1_500 + tail.len() as u64 - 1);
        for (i, want) in tail.drain(..).enumerate() {
            let step = 1_500 + i as u64;
            assert_eq!(s.state_at(step).as_ref(), Some(&want), "state at step {step} of the fork");
        }
        // Before the fork point the run is as it was.
        let before = straight(Counter::new(N));
        for step in [0, 700, 1_499] {
            assert_eq!(s.state_at(step).as_ref(), Some(&before[step as usize]));
        }
        // The edited checkpoint (after step 1,500) is what a rewind there gives.
        s.rewind(1_500).unwrap();
        assert_eq!(s.state(), edited);
    }

    #[test]
    fn a_machine_without_snapshots_or_with_unfaithful_ones_keeps_forks() {
        for (snap, lossy) in [(false, false), (true, true)] {
            let m = Counter { snap, lossy, ..Counter::new(1_000) };
            let want = straight(m.clone());
            let mut s = session(m);
            s.run();
            // A lossy snapshot is caught at the first checkpoint it loses something of (step
            // 1: the initial `log` is empty either way).
            assert_eq!(s.packed_checkpoints().0, usize::from(lossy), "snap {snap} lossy {lossy}");
            for step in [0, 1, 500, 1_000] {
                assert_eq!(s.state_at(step).as_ref(), Some(&want[step as usize]));
            }
            s.rewind(10).unwrap();
            assert_eq!(s.state(), want[10]);
        }
    }

    #[test]
    fn lines_read_back_across_sealed_and_open_blocks_and_after_truncation() {
        let mut p = super::Packed::default();
        let ats: Vec<super::At> = (0..200).map(|i| p.push(format!("{{\"i\":{i}}}"))).collect();
        for (i, at) in ats.iter().enumerate() {
            assert_eq!(p.get(*at).unwrap(), format!("{{\"i\":{i}}}"));
        }
        // Back to line 70 (in the second, sealed block): later lines go, new ones follow.
        p.truncate(Some(ats[70]));
        let at = p.push("x".into());
        assert_eq!(at, super::At(2, 0));
        assert_eq!(p.get(ats[70]).unwrap(), "{\"i\":70}");
        assert_eq!(p.get(at).unwrap(), "x");
        p.truncate(Some(at));
        assert_eq!(p.get(at).unwrap(), "x");
        p.truncate(None);
        assert!(p.get(ats[0]).is_err());
        assert_eq!(p.bytes(), 0);
    }
}
