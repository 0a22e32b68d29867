// The timeline: one row per step of the viewed run, windowed (fixed row height) so a run of
// 10,000 steps renders only the rows in view. Click selects a step (and its node on the canvas).
import { memo, useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { useAppStore } from '../../store';
import { nestedPause, shownModel, useDebug, useDebugStore } from '../../debug/store';
import { findRow, type HookRecord, type StepRow } from '../../debug/model';
import { maskSecrets } from '../../untrusted';

/** Row height in px (must match `.tl-row` height set inline). */
export const ROW_HEIGHT = 24;
/** Rows rendered above and below the visible ones. */
const OVERSCAN = 8;

const STATUS_ICON: Record<StepRow['status'], string> = {
  running: '◌',
  done: '✓',
  error: '✕',
  interrupted: '⏸',
};

export function fmtMs(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return '';
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;
}

export function fmtTokens(t: { input: number; output: number } | null | undefined): string {
  if (!t) return '';
  return `${t.input} → ${t.output}`;
}

/** One hook run as a line of the hooks chip's tooltip. */
export function hookLine(h: HookRecord): string {
  const what = h.outcome === 'pass' ? 'passed' : h.outcome === 'modified' ? 'changed' : h.outcome;
  return `${h.point}${h.node ? ` (${h.node})` : ''} · ${h.executor} · ${what}${h.detail ? `: ${maskSecrets(h.detail)}` : ''} · ${h.durationMs} ms`;
}

interface RowProps {
  row: StepRow;
  index: number;
  selected: boolean;
  latest: boolean;
  onPick(row: StepRow): void;
}

const TimelineRow = memo(function TimelineRow({ row, index, selected, latest, onPick }: RowProps) {
  const kinds = Array.from(new Set(row.kinds ?? [])).join(', ');
  const routes = row.routes ?? [];
  const routeText = routes.map((r) => `→ ${r.to}${r.label ? ` · ${r.label}` : ''}`).join('  ');
  const llm = (row.calls ?? []).filter((c) => c.kind === 'llm').length;
  const tools = (row.calls ?? []).length - llm;
  const edits = row.edits?.length ?? 0;
  const nested = row.nested ?? 0;
  const failed = row.llmErrors ?? 0;
  const callText = [llm ? `${llm} LLM` : '', tools ? `${tools} tool${tools === 1 ? '' : 's'}` : ''].filter(Boolean).join(' · ');
  const streaming = (row.calls ?? []).some((c) => c.kind === 'llm' && c.endMs == null && c.stream);
  const hooks = row.hooks ?? [];
  const hooksFailed = hooks.filter((h) => h.outcome === 'failed').length;
  return (
    <div
      className={`tl-row${selected ? ' selected' : ''}${latest ? ' latest' : ''}${row.status === 'error' ? ' st-row-error' : ''}`}
      style={{ top: index * ROW_HEIGHT, height: ROW_HEIGHT }}
      data-testid="timeline-row"
      data-step={row.step}
      data-node={row.nodes.join(',')}
      data-status={row.status}
      data-selected={selected ? 'true' : 'false'}
      role="row"
      aria-selected={selected}
      onClick={() => onPick(row)}
    >
      <span className="tl-step">{row.step}</span>
      <span className={`tl-status st-${row.status}`} title={row.status}>
        {STATUS_ICON[row.status] ?? '?'}
      </span>
      <span className="tl-node" title={`${row.nodes.join(', ')}${kinds ? ` (${kinds})` : ''}`}>
        {row.nodes.join(', ')}
        {kinds ? <span className="tl-kind">{kinds}</span> : null}
      </span>
      <span className="tl-num" title="duration">
        {row.status === 'running' ? '…' : fmtMs(row.durationMs)}
      </span>
      <span className="tl-num" title="tokens in → out">
        {fmtTokens(row.tokens)}
      </span>
      <span className="tl-route" title={routeText}>
        {routeText}
      </span>
      <span className="tl-extra" title={[callText, failed ? `${failed} LLM call${failed === 1 ? '' : 's'} failed` : '', nested ? `${nested} events in nested runs` : ''].filter(Boolean).join(', ') || undefined}>
        {callText}
        {streaming ? <span className="tl-streaming"> · streaming…</span> : null}
        {failed ? (
          <span className="tl-llm-error" data-testid="timeline-llm-errors" data-count={failed}>
            {callText ? ' · ' : ''}⚠ {failed} failed
          </span>
        ) : null}
        {nested ? `${callText || failed ? ' · ' : ''}↳ nested` : ''}
        {hooks.length ? (
          <span
            className={`tl-hooks${hooksFailed ? ' tl-hooks-failed' : ''}`}
            data-testid="timeline-hooks"
            data-count={hooks.length}
            data-failed={hooksFailed}
            title={hooks.map(hookLine).join('\n')}
          >
            {callText || failed || nested ? ' · ' : ''}⚓ {hooks.length}
            {hooksFailed ? ` ⚠ ${hooksFailed}` : ''}
          </span>
        ) : null}
      </span>
      <span className="tl-extra" title={edits ? `State edited after this step: ${row.edits.map((e) => e.key).join(', ')}` : undefined}>
        {edits ? `✎ ${edits}` : ''}
      </span>
    </div>
  );
});

export function Timeline() {
  const dbg = useDebugStore();
  const app = useAppStore();
  const steps = useDebug((s) => shownModel(s).steps);
  const selectedStep = useDebug((s) => s.selectedStep);
  const readOnly = useDebug((s) => s.viewing != null || s.mode !== 'live' || !s.info);
  const running = useDebug((s) => s.starting || s.status?.state === 'running');
  const nested = useDebug((s) => nestedPause(s) != null);
  const scrollRef = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(320);
  const follow = selectedStep === null;

  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    const measure = (h?: number) => setHeight(Math.max(ROW_HEIGHT * 4, h || el.clientHeight || 320));
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver((entries) => measure(entries[0]?.contentRect.height));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // Following: the newest rows are drawn at once (the rows in view are derived from the step
  // count, not from the scroll position read back), and the scroll position follows in the next
  // animation frame, when the browser lays out anyway: a long run streaming thousands of steps a
  // second never forces a layout, nor a second render, per batch.
  const bottom = Math.max(0, steps.length * ROW_HEIGHT - height);
  useEffect(() => {
    if (!follow) return;
    const raf = typeof requestAnimationFrame === 'function' ? requestAnimationFrame : (f: FrameRequestCallback) => setTimeout(() => f(0), 0) as unknown as number;
    const caf = typeof cancelAnimationFrame === 'function' ? cancelAnimationFrame : (id: number) => clearTimeout(id);
    const id = raf(() => {
      const el = scrollRef.current;
      if (el && el.scrollTop < bottom) el.scrollTop = bottom;
    });
    return () => caf(id);
  }, [follow, bottom]);

  // A selected step scrolls into view.
  const selIndex = selectedStep === null ? -1 : indexOfStep(steps, selectedStep);
  useEffect(() => {
    const el = scrollRef.current;
    if (!el || selIndex < 0) return;
    const top = selIndex * ROW_HEIGHT;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + ROW_HEIGHT > el.scrollTop + height) el.scrollTop = top + ROW_HEIGHT - height;
    setScrollTop(el.scrollTop);
  }, [selIndex, height]);

  const pick = useCallback(
    (row: StepRow) => {
      dbg.getState().selectStep(row.step);
      const node = row.nodes[0];
      const st = app.getState();
      if (node && st.view?.nodes.some((n) => n.id === node)) st.select({ type: 'node', id: node }, { reveal: false, focus: true });
    },
    [dbg, app],
  );

  const onKey = (e: React.KeyboardEvent) => {
    if (steps.length === 0) return;
    let i = selIndex < 0 ? steps.length - 1 : selIndex;
    if (e.key === 'ArrowDown') i = Math.min(steps.length - 1, i + 1);
    else if (e.key === 'ArrowUp') i = Math.max(0, selIndex < 0 ? steps.length - 1 : i - 1);
    else if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = steps.length - 1;
    else if (e.key === 'Escape') {
      dbg.getState().selectStep(null);
      e.preventDefault();
      return;
    } else return;
    e.preventDefault();
    pick(steps[i]);
  };

  // The rows in view, and while following also the newest rows (where the view is about to go).
  const windowOf = (top: number): [number, number] => [
    Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN),
    Math.min(steps.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN),
  ];
  const ranges = [windowOf(scrollTop)];
  if (follow) {
    const [a, b] = windowOf(bottom);
    if (a <= ranges[0][1]) ranges[0] = [Math.min(a, ranges[0][0]), Math.max(b, ranges[0][1])];
    else ranges.push([a, b]);
  }
  const latestStep = steps.length ? steps[steps.length - 1].step : null;
  const rows = [];
  for (const [first, last] of ranges) {
    for (let i = first; i < last; i++) {
      const r = steps[i];
      rows.push(<TimelineRow key={r.step} row={r} index={i} selected={r.step === selectedStep} latest={follow && r.step === latestStep} onPick={pick} />);
    }
  }
  const remoteRun = useDebug((s) => (s.mode === 'live' && s.viewing == null ? s.remoteRun : null));
  const canRewind = !readOnly && selectedStep !== null && !running && !remoteRun;

  return (
    <div className="timeline">
      <div className="dp-toolbar">
        <label title="Keep the newest step selected as the run goes on">
          <input
            type="checkbox"
            data-testid="timeline-follow"
            checked={follow}
            onChange={(e) => dbg.getState().selectStep(e.target.checked ? null : latestStep)}
          />
          Follow latest
        </label>
        <span className="muted small">
          {steps.length} step{steps.length === 1 ? '' : 's'}
          {selectedStep !== null ? ` · step ${selectedStep} selected` : ''}
        </span>
        <span className="spacer" />
        <button
          type="button"
          className="btn"
          data-testid="timeline-rewind"
          disabled={!canRewind}
          title={
            remoteRun
              ? `Rewinding is not available for a run on a server (${remoteRun}): it has no endpoint for it`
              : selectedStep === null
              ? 'Select a step to rewind to'
              : readOnly
                ? 'Only the current run can be rewound'
                : nested
                  ? 'Paused inside a nested run: Step Out (Shift+F11) or Continue to the top level first'
                  : running
                    ? 'Pause the run first'
                    : `Rewind to step ${selectedStep} and run from there (a fork; this run is kept to compare)`
          }
          onClick={() => selectedStep !== null && void dbg.getState().rewind(selectedStep)}
        >
          ⟲ Rewind to step {selectedStep ?? 'N'}
        </button>
      </div>
      <div className="tl-header" role="row">
        <span className="tl-step">step</span>
        <span />
        <span>node</span>
        <span className="tl-num">time</span>
        <span className="tl-num">tokens</span>
        <span>route</span>
        <span>calls</span>
        <span>edits</span>
      </div>
      <div
        className="tl-scroll"
        ref={scrollRef}
        tabIndex={0}
        role="grid"
        aria-label="Timeline"
        data-testid="timeline"
        onScroll={(e) => setScrollTop((e.target as HTMLDivElement).scrollTop)}
        onKeyDown={onKey}
      >
        {steps.length === 0 ? <div className="tl-empty muted small">No steps yet.</div> : null}
        <div style={{ height: steps.length * ROW_HEIGHT, position: 'relative' }}>{rows}</div>
      </div>
    </div>
  );
}

/** Index of `step` in `steps` (steps are in order; usually index = step - 1). */
/** The index of the row of `step` (kept as a name for the panel's callers). */
export const indexOfStep = findRow;
