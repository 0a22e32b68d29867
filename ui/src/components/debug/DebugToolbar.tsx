// The debugger toolbar above the canvas: run controls (with the usual debugger keys), the run
// configuration, break on error, opening a trace, and the status line.
import '../../debug/debug.css';
import { currentPending, isLive, nestedPause, shownModel, useDebug, useDebugStore, type DebugState } from '../../debug/store';
import type { NestedPause } from '../../debug/model';
import type { RunStatusInfo } from '../../debug/types';
import { useApp } from '../../store';
import { DEBUG_KEYS } from '../../shortcuts';
import { useEffect, useRef, useState } from 'react';
import { SaveCaseButton } from './SaveCaseButton';

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

function list(nodes: string[] | undefined): string {
  return nodes && nodes.length ? nodes.join(', ') : '';
}

/** The status line while paused inside a nested run. */
export function nestedStatusText(n: NestedPause): string {
  const due = list(n.due);
  const where = `${n.agent || n.run} (in ${n.node}${n.depth > 1 ? `, depth ${n.depth}` : ''})`;
  return `Paused in nested ${where}${due ? ` before ${due}` : ''} · nested step ${n.step} · Shift+F11 steps out`;
}

/** The status line: what the run is doing, in words. */
export function statusText(
  s: Pick<DebugState, 'mode' | 'status' | 'info' | 'starting' | 'viewing' | 'history'> & { pendingNode?: string | null; nested?: NestedPause | null },
): string {
  if (s.viewing != null) return `Viewing ${s.history[s.viewing]?.label ?? 'an earlier run'}`;
  if (s.starting) return 'Starting…';
  const st: RunStatusInfo | null = s.status;
  if (s.mode === 'idle' || !st) return s.mode === 'live' ? 'Starting…' : 'Not running · F5 runs, F10 steps';
  const prefix = s.mode === 'review' ? 'Trace · ' : '';
  const step = st.step;
  const due = list(st.due);
  if (s.nested && st.state === 'running') return nestedStatusText(s.nested);
  switch (st.state) {
    case 'running':
      return `${prefix}Running · step ${step}`;
    case 'ready':
      return `${prefix}Ready${due ? ` to run ${due}` : ''} · F5 continues, F10 steps`;
    case 'paused': {
      const at = due ? ` before ${due}` : '';
      switch (st.reason) {
        case 'breakpoint':
          return `${prefix}Paused at breakpoint${at} · step ${step}`;
        case 'step':
          return `${prefix}Paused after step ${step}${due ? ` · next: ${due}` : ''}`;
        case 'error':
          return `${prefix}Paused on error${st.error?.node ? ` at ${st.error.node}` : ''}${st.error ? `: ${st.error.message}` : ''} · step ${step}`;
        default:
          return `${prefix}Paused${at} · step ${step}`;
      }
    }
    case 'interrupted': {
      const node = st.pending?.node ?? s.pendingNode ?? due;
      return `${prefix}Waiting for your answer${node ? ` at ${node}` : ''} · step ${step}`;
    }
    case 'finished':
      switch (st.status) {
        case 'completed':
          return `${prefix}Completed in ${plural(step, 'step')}`;
        case 'failed':
          return `${prefix}Failed${st.error?.node ? ` at node ${st.error.node}` : ''}${st.error ? `: ${st.error.message}` : ''}`;
        case 'stopped':
          return `${prefix}Stopped after ${plural(step, 'step')}`;
        case 'interrupted':
          return `${prefix}Ended waiting for an answer after ${plural(step, 'step')}`;
        default:
          return `${prefix}Finished after ${plural(step, 'step')}`;
      }
    default:
      return `${prefix}${String(st.state)} · step ${step}`;
  }
}

function baseName(p: string): string {
  const i = Math.max(p.lastIndexOf('/'), p.lastIndexOf('\\'));
  return i >= 0 ? p.slice(i + 1) : p;
}

const RUNS_TITLE = 'Runs…: durable runs, resume a paused or interrupted run, delete old ones';
const CONNECT_TITLE = "Connect to server…: show a switchyard serve server's runs, debug them, start new ones there";
const TRACE_TITLE = 'Open trace…: review a past run from its JSONL trace';

/**
 * What does not fit on a narrow toolbar (debug.css's container queries hide the inline Break on
 * error, Runs…, Server…, Open trace… and show this menu instead): the toolbar stays one row at
 * any width the window allows.
 */
function MoreMenu(p: { breakOnError: boolean; onBreakOnError(v: boolean): void; onRuns(): void; onConnect(): void; onTrace(): void }) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const away = (e: Event) => {
      if (ref.current && !ref.current.contains(e.target as Node)) setOpen(false);
    };
    const esc = (e: KeyboardEvent) => {
      if (e.key === 'Escape') setOpen(false);
    };
    document.addEventListener('pointerdown', away);
    document.addEventListener('keydown', esc);
    return () => {
      document.removeEventListener('pointerdown', away);
      document.removeEventListener('keydown', esc);
    };
  }, [open]);
  const item = (testid: string, label: string, title: string, run: () => void) => (
    <button
      type="button"
      role="menuitem"
      data-testid={testid}
      title={title}
      onClick={() => {
        setOpen(false);
        run();
      }}
    >
      {label}
    </button>
  );
  return (
    <div className="menu dbg-more" ref={ref}>
      <button type="button" className="btn dbg-btn" data-testid="dbg-more" aria-haspopup="menu" aria-expanded={open} onClick={() => setOpen(!open)} title="More: runs, server, traces, break on error">
        <span className="dbg-label">More ▾</span>
      </button>
      {open ? (
        <div className="menu-pop" role="menu" data-testid="dbg-more-menu">
          {item('dbg-more-runs', 'Runs…', RUNS_TITLE, p.onRuns)}
          {item('dbg-more-connect', 'Connect to server…', CONNECT_TITLE, p.onConnect)}
          {item('dbg-more-trace', 'Open trace…', TRACE_TITLE, p.onTrace)}
          <label className="menu-check" title="Break on error: pause when a node fails, before the run ends">
            <input type="checkbox" data-testid="dbg-more-break-on-error" checked={p.breakOnError} onChange={(e) => p.onBreakOnError(e.target.checked)} />
            Break on error
          </label>
        </div>
      ) : null}
    </div>
  );
}

export function DebugToolbar() {
  const dbg = useDebugStore();
  const hasView = useApp((s) => s.view !== null);
  const mode = useDebug((s) => s.mode);
  const status = useDebug((s) => s.status);
  const info = useDebug((s) => s.info);
  const starting = useDebug((s) => s.starting);
  const viewing = useDebug((s) => s.viewing);
  const history = useDebug((s) => s.history);
  const breakOnError = useDebug((s) => s.breakOnError);
  const configOpen = useDebug((s) => s.configOpen);
  const live = useDebug(isLive);
  const pendingNode = useDebug((s) => currentPending(s)?.node ?? null);
  const dialogOpen = useDebug((s) => s.dialogOpen);
  const errorCount = useDebug((s) => shownModel(s).errors.length);
  const nested = useDebug(nestedPause);
  const remoteRun = useDebug((s) => (s.mode === 'live' ? s.remoteRun : null));
  const remoteDoc = useDebug((s) => s.remoteDoc);

  const state = status?.state ?? 'idle';
  // Paused inside a nested run, the driver says `running` but the user is paused.
  const running = mode === 'live' && (starting || (state === 'running' && !nested));
  const interrupted = mode === 'live' && state === 'interrupted';
  const stopped = live && (state === 'paused' || state === 'ready');
  const canRun = hasView && !running && !interrupted;
  const canStepInto = hasView && !starting && (stopped || nested != null) && !remoteRun;
  const text = statusText({ mode, status, info, starting, viewing, history, pendingNode, nested });
  const s = dbg.getState;

  return (
    <div className="dbg-toolbar" data-testid="dbg-toolbar" role="toolbar" aria-label="Debugger">
      <div className="btn-group dbg-run-controls">
        <button
          type="button"
          className="btn dbg-btn primary"
          data-testid="dbg-continue"
          disabled={!canRun}
          onClick={() => void s().continue()}
          title={`${stopped || nested ? 'Continue' : 'Run'} (${DEBUG_KEYS.continue}): ${stopped || nested ? 'go on from the pause' : 'start a run of the open document'}`}
          aria-keyshortcuts={DEBUG_KEYS.continue}
        >
          <span className="dbg-ico" aria-hidden>
            ▶
          </span>
          <span className="dbg-label">{stopped || nested ? 'Continue' : 'Run'}</span>
        </button>
        <button
          type="button"
          className="btn dbg-btn"
          data-testid="dbg-step"
          disabled={!canRun}
          onClick={() => void s().step()}
          title={nested ? `Step over (${DEBUG_KEYS.step}): run one step of ${nested.agent || 'the nested run'} and pause` : `Step (${DEBUG_KEYS.step}): run one step and pause`}
          aria-keyshortcuts={DEBUG_KEYS.step}
        >
          <span className="dbg-ico" aria-hidden>
            ⤼
          </span>
          <span className="dbg-label">Step</span>
        </button>
        <button
          type="button"
          className="btn dbg-btn"
          data-testid="dbg-step-into"
          disabled={!canStepInto}
          onClick={() => void s().stepInto()}
          title={remoteRun ? `Step Into (${DEBUG_KEYS['step-into']}) is not available for a run on a server (${remoteRun}): it has no endpoint for it` : `Step Into (${DEBUG_KEYS['step-into']}): run one step, pausing inside a sub-agent or agent node it starts`}
          aria-keyshortcuts={DEBUG_KEYS['step-into']}
        >
          <span className="dbg-ico" aria-hidden>
            ⤓
          </span>
          <span className="dbg-label">Step Into</span>
        </button>
        <button
          type="button"
          className="btn dbg-btn"
          data-testid="dbg-step-out"
          disabled={!nested || starting}
          onClick={() => void s().stepOut()}
          title={nested ? `Step Out (${DEBUG_KEYS['step-out']}): run the rest of ${nested.agent || 'the nested run'} and pause in its parent` : `Step Out (${DEBUG_KEYS['step-out']}): only while paused inside a nested run`}
          aria-keyshortcuts={DEBUG_KEYS['step-out']}
        >
          <span className="dbg-ico" aria-hidden>
            ⤒
          </span>
          <span className="dbg-label">Step Out</span>
        </button>
        <button type="button" className="btn dbg-btn" data-testid="dbg-pause" disabled={!(live && state === 'running' && !nested)} onClick={() => void s().pause()} title="Pause: stop after the step in progress (no key)">
          <span className="dbg-ico" aria-hidden>
            ❚❚
          </span>
          <span className="dbg-label">Pause</span>
        </button>
        <button type="button" className="btn dbg-btn" data-testid="dbg-stop" disabled={!live} onClick={() => void s().stop()} title={`Stop (${DEBUG_KEYS.stop}): end the run`} aria-keyshortcuts={DEBUG_KEYS.stop}>
          <span className="dbg-ico stop" aria-hidden>
            ■
          </span>
          <span className="dbg-label">Stop</span>
        </button>
        <button
          type="button"
          className="btn dbg-btn"
          data-testid="dbg-restart"
          disabled={!hasView || starting || mode !== 'live' || !!remoteRun}
          onClick={() => void s().restart()}
          title={remoteRun ? `Restart (${DEBUG_KEYS.restart}) is not available for a run on a server (${remoteRun}): start a new run (F5 when it has finished)` : `Restart (${DEBUG_KEYS.restart}): back to step 0 and run again`}
          aria-keyshortcuts={DEBUG_KEYS.restart}
        >
          <span className="dbg-ico" aria-hidden>
            ↻
          </span>
          <span className="dbg-label">Restart</span>
        </button>
      </div>
      <div
        className={`dbg-status st-${nested ? 'paused nested' : state}${status?.status ? ` fin-${status.status}` : ''}`}
        data-testid="dbg-status"
        data-state={state}
        data-nested={nested ? nested.run : ''}
        data-step={String(status?.step ?? 0)}
        data-reason={status?.reason ?? ''}
        data-finished={state === 'finished' ? (status?.status ?? '') : ''}
        role="status"
        aria-live="polite"
        title={`${text}${info?.llm ? `\nLLM: ${info.llm}` : ''}${info?.trace ? `\nTrace: ${info.trace}` : ''}`}
      >
        <span className="dbg-light" aria-hidden />
        <span className="dbg-status-text">{text}</span>
      </div>
      {interrupted && pendingNode != null && !dialogOpen ? (
        <button type="button" className="btn dbg-btn primary" data-testid="interrupt-reopen" onClick={() => s().reopenDialog()} title="Show the question the run is waiting on">
          Answer…
        </button>
      ) : null}
      {errorCount > 0 && state !== 'finished' ? <span className="dbg-errors" title="Errors in this run (see the timeline)">{plural(errorCount, 'error')}</span> : null}
      <div className="spacer" />
      <button
        type="button"
        className={`btn dbg-btn dbg-config-btn${configOpen ? ' on' : ''}`}
        data-testid="dbg-config"
        disabled={!hasView}
        aria-expanded={configOpen}
        onClick={() => s().openConfig(!configOpen)}
        title="Run configuration: input, initial state, agent, LLM mode (scripted, replay, live), recording, answers"
      >
        <span className="dbg-ico" aria-hidden>
          ☰
        </span>
        <span className="dbg-label">Configure…</span>
      </button>
      <label className="dbg-check dbg-tier-1" title="Break on error: pause when a node fails, before the run ends">
        <input type="checkbox" data-testid="dbg-break-on-error" checked={breakOnError} onChange={(e) => void s().setBreakOnError(e.target.checked)} />
        <span className="dbg-label">Break on error</span>
      </label>
      <button type="button" className="btn dbg-btn dbg-tier-1" data-testid="dbg-runs" onClick={() => void s().openRuns(true)} title={RUNS_TITLE}>
        <span className="dbg-label">Runs…</span>
      </button>
      <button type="button" className="btn dbg-btn dbg-tier-1" data-testid="dbg-connect" onClick={() => void s().openConnect(true)} title={CONNECT_TITLE}>
        <span className="dbg-label">Server…</span>
      </button>
      <button type="button" className="btn dbg-btn dbg-tier-1" data-testid="dbg-open-trace" onClick={() => void s().openTrace(null)} title={TRACE_TITLE}>
        <span className="dbg-label">Open trace…</span>
      </button>
      <SaveCaseButton />
      <MoreMenu
        breakOnError={breakOnError}
        onBreakOnError={(v) => void s().setBreakOnError(v)}
        onRuns={() => void s().openRuns(true)}
        onConnect={() => void s().openConnect(true)}
        onTrace={() => void s().openTrace(null)}
      />
      {remoteDoc ? (
        <span className="dbg-remote" data-testid="dbg-remote" title={`${remoteDoc.assistant}'s agent file on ${remoteDoc.url}, shown read-only (not on this computer); runs start there`}>
          Remote · {remoteDoc.assistant} · read-only
        </span>
      ) : null}
      {info ? (
        <div className="dbg-info">
          {info.llm ? (
            <span className="dbg-llm" data-testid="dbg-llm" title={`What answers LLM calls: ${info.llm}`}>
              {info.llm}
            </span>
          ) : null}
          {info.trace ? (
            <span className="dbg-trace mono" data-testid="dbg-trace" title={`Trace: ${info.trace}`}>
              {baseName(info.trace)}
            </span>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
