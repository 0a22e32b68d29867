// The Tauri backend's `onRunEvents`: the app sends a `run-events-ready` notice and the page takes
// the queued batches with `run_events_take` (src-tauri/src/debug.rs `EventQueue`): one take at a
// time, in order, another one when a notice came during a take, nothing lost.
import { beforeEach, describe, expect, it, vi } from 'vitest';

const h = vi.hoisted(() => ({
  listener: null as null | (() => void),
  queue: [] as unknown[],
  takes: 0,
  inFlight: 0,
  maxInFlight: 0,
  gate: null as null | Promise<void>,
}));

vi.mock('@tauri-apps/api/event', () => ({
  listen: async (name: string, cb: () => void) => {
    expect(name).toBe('run-events-ready');
    h.listener = cb;
    return () => {
      h.listener = null;
    };
  },
}));

vi.mock('@tauri-apps/api/core', () => ({
  invoke: async (cmd: string) => {
    expect(cmd).toBe('run_events_take');
    h.takes++;
    h.inFlight++;
    h.maxInFlight = Math.max(h.maxInFlight, h.inFlight);
    // What is queued when the take reaches the app is what it answers, two batches at most.
    const batches = h.queue.splice(0, 2);
    const more = h.queue.length > 0;
    if (h.gate) await h.gate;
    h.inFlight--;
    return { batches, more };
  },
}));

import { createTauriBackend } from '../backend';

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('run events taken from the app', () => {
  beforeEach(() => {
    Object.assign(h, { listener: null, queue: [], takes: 0, inFlight: 0, maxInFlight: 0, gate: null });
  });

  it('takes what was queued before it listened, then on every notice, in order', async () => {
    h.queue.push({ run: 'r', events: [1] });
    const got: unknown[] = [];
    const stop = await createTauriBackend().onRunEvents((b) => got.push(b));
    await flush();
    expect(got).toEqual([{ run: 'r', events: [1] }]);
    h.queue.push({ run: 'r', events: [2] }, { run: 'r', events: [3] }, { run: 'r', events: [4] }, { run: 'r', events: [5] }, { run: 'r', events: [6] });
    h.listener!();
    for (let i = 0; i < 5; i++) await flush();
    // Answers of two batches with `more`: taken again until the queue is empty.
    expect(got.map((b) => (b as { events: number[] }).events[0])).toEqual([1, 2, 3, 4, 5, 6]);
    expect(h.takes).toBe(4);
    stop();
    expect(h.listener).toBeNull();
  });

  it('never takes twice at once, and takes again when told during a take', async () => {
    let open!: () => void;
    h.gate = new Promise((r) => (open = r));
    const got: number[] = [];
    await createTauriBackend().onRunEvents((b) => got.push((b as unknown as { events: number[] }).events[0]));
    // The first take (for what was queued before) is waiting for the app.
    await flush();
    h.queue.push({ events: [1] });
    h.listener!();
    h.listener!();
    await flush();
    expect(h.takes).toBe(1);
    h.gate = null;
    open();
    for (let i = 0; i < 5; i++) await flush();
    expect(h.maxInFlight).toBe(1);
    expect(h.takes).toBe(2);
    expect(got).toEqual([1]);
  });
});
