// Shared by the app-level debugger tests: the whole app on the fake backend with real stores,
// and a way to hand the debugger a batch of run events the way the engine's stream does.
import { expect } from 'vitest';
import { act, render, screen, waitFor } from '@testing-library/react';
import { App } from '../App';
import { createFakeBackend, type FakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { createDebugStore } from '../debug/store';
import type { DebugEvent, RunStatusInfo } from '../debug/types';
import { demoView } from '../fake/demo';
import type { View } from '../types';

/** A run event as a test writes it: `run` is relative to the top-level run (`'/research'`). */
export type Ev = { [k: string]: unknown; event: string; run?: string };

let ts = 1_700_000_000_000;
/** A fresh event timestamp, 10 ms after the last one. */
export const nextTs = () => (ts += 10);

/** The app with `view` open and its graph drawn, plus its debugger. */
export async function renderApp(view: View = demoView()) {
  const backend = createFakeBackend(view);
  const store = createAppStore(backend);
  const dbg = createDebugStore(backend, store);
  render(<App store={store} debugStore={dbg} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  await screen.findAllByTestId('node');
  return { backend, store, dbg };
}

export type Ctx = Awaited<ReturnType<typeof renderApp>>;

/** The fake backend's calls of one command. */
export const cmds = (b: FakeBackend, cmd: string) => b.calls.filter((c) => c.cmd === cmd);

/** Start a run (unless one is live) with `start`, then feed it one batch, folded at once. A
 *  status given is laid over `base` (a run paused after a step unless the caller says). */
export async function feed(
  ctx: Ctx,
  events: Ev[],
  status: Partial<RunStatusInfo> | null,
  { start = 'step', base = { state: 'paused', step: 0, due: [], reason: 'step' } }: { start?: 'step' | 'continue'; base?: Partial<RunStatusInfo> } = {},
) {
  if (!ctx.dbg.getState().info) {
    await act(async () => {
      await ctx.dbg.getState().start(start);
    });
  }
  const run = ctx.dbg.getState().info!.run;
  await act(async () => {
    ctx.backend.emitRun({
      run,
      events: events.map((e) => ({ ts_ms: nextTs(), ...e, run: e.run ? `${run}${e.run}` : run }) as unknown as DebugEvent),
      status: status ? ({ ...base, ...status } as RunStatusInfo) : null,
    });
    ctx.dbg.getState().flush();
  });
  return run;
}
