// Breakpoints (with conditions, enabled or not) and break on error: kept in the store, sent to
// the live run at once (it refuses a bad condition), sent with the next start otherwise.
import { errorMessage } from '../../backend';
import type { Breakpoint } from '../types';
import type { Kit } from './kit';
import { isLive, type Actions } from './state';

/** Send the breakpoints to a live run; returns the refusal message or null. */
async function pushBreakpoints(k: Kit, bps: Breakpoint[], breakOnError: boolean): Promise<string | null> {
  if (!isLive(k.get())) return null;
  try {
    await k.backend.runBreakpoints(bps, breakOnError);
    return null;
  } catch (e) {
    return errorMessage(e);
  }
}

export function breakpointActions(k: Kit): Actions<'toggleBreakpoint' | 'setBreakpointCondition' | 'setBreakpointEnabled' | 'setBreakOnError'> {
  const { get, set, backend, app } = k;
  return {
    async toggleBreakpoint(node) {
      const st = get();
      const prev = st.breakpoints;
      const next = prev.some((b) => b.node === node)
        ? prev.filter((b) => b.node !== node)
        : [...prev, { node, condition: null, enabled: true }];
      set({ breakpoints: next });
      const err = await pushBreakpoints(k, next, get().breakOnError);
      if (err) {
        if (get().breakpoints === next) set({ breakpoints: prev });
        k.toast(`Setting breakpoints failed: ${err}`);
      }
    },

    async setBreakpointCondition(node, condition) {
      const cond = condition?.trim() ? condition.trim() : null;
      const st = get();
      const prev = st.breakpoints;
      const next = prev.some((b) => b.node === node)
        ? prev.map((b) => (b.node === node ? { ...b, condition: cond } : b))
        : [...prev, { node, condition: cond, enabled: true }];
      if (cond && !isLive(st)) {
        // No run to ask: check the syntax with the editor's expression checker.
        const dialect = app.getState().view?.dialect;
        if (dialect) {
          try {
            const errs = await backend.checkExpr(dialect === 'loki' ? 'template' : 'cel', cond);
            if (errs.length) return `breakpoint on \`${node}\`: condition \`${cond}\`: ${errs[0].message}`;
          } catch {
            // The checker is unavailable: accept; a run will check it when it starts.
          }
        }
      }
      set({ breakpoints: next });
      const err = await pushBreakpoints(k, next, get().breakOnError);
      if (err) {
        if (get().breakpoints === next) set({ breakpoints: prev });
        return err;
      }
      return null;
    },

    async setBreakpointEnabled(node, enabled) {
      const prev = get().breakpoints;
      if (!prev.some((b) => b.node === node)) return;
      const next = prev.map((b) => (b.node === node ? { ...b, enabled } : b));
      set({ breakpoints: next });
      const err = await pushBreakpoints(k, next, get().breakOnError);
      if (err) {
        if (get().breakpoints === next) set({ breakpoints: prev });
        k.toast(`Setting breakpoints failed: ${err}`);
      }
    },

    async setBreakOnError(on) {
      const prev = get().breakOnError;
      set({ breakOnError: on, config: { ...get().config, break_on_error: on } });
      const err = await pushBreakpoints(k, get().breakpoints, on);
      if (err) {
        if (get().breakOnError === on) set({ breakOnError: prev, config: { ...get().config, break_on_error: prev } });
        k.toast(`Setting break on error failed: ${err}`);
      }
    },
  };
}
