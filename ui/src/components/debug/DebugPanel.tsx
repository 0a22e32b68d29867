// The debugger's bottom panel: Timeline / State / Calls tabs over the run being viewed (the current
// run or an earlier one kept in `history`, e.g. the run before a rewind, to compare with the fork).
import '../../debug/panel.css';
import { shownModel, shownNestedPause, useDebug, useDebugStore, type PanelTab } from '../../debug/store';
import { nestedDiff, type Divergence } from '../../debug/model';
import { useAppStore } from '../../store';
import { CallInspector } from './CallInspector';
import { StateTree } from './StateTree';
import { Timeline } from './Timeline';
import { RecordWarning } from './RecordWarning';
import { CompareRuns } from '../../diff/RunCompare';

const TABS: { id: PanelTab; label: string }[] = [
  { id: 'timeline', label: 'Timeline' },
  { id: 'state', label: 'State' },
  { id: 'calls', label: 'Calls' },
];

function RunHeader() {
  const dbg = useDebugStore();
  const info = useDebug((s) => s.info);
  const mode = useDebug((s) => s.mode);
  const history = useDebug((s) => s.history);
  const viewing = useDebug((s) => s.viewing);
  const current = info
    ? mode === 'review'
      ? `Trace: ${info.trace ?? info.agent}`
      : `Current run: ${info.agent} · ${info.llm}`
    : mode === 'live'
      ? 'Current run (starting…)'
      : 'No current run';
  return (
    <div className="dp-run">
      <span className="dp-run-label" title={info ? `run ${info.run}${info.trace ? `\ntrace: ${info.trace}` : ''}` : undefined}>
        {viewing == null ? current : `Viewing: ${history[viewing]?.label ?? 'earlier run'}`}
      </span>
      <select
        className="input"
        data-testid="history-select"
        value={viewing == null ? '' : String(viewing)}
        disabled={history.length === 0}
        onChange={(e) => dbg.getState().viewHistory(e.target.value === '' ? null : Number(e.target.value))}
        title={history.length ? 'Earlier runs and runs before a rewind, to compare' : 'Earlier runs appear here (a rewind keeps the run before it)'}
        aria-label="Run to view"
      >
        <option value="">{mode === 'review' ? 'Trace' : 'Current run'}</option>
        {history.map((h, i) => (
          <option key={i} value={String(i)}>
            {h.label}
          </option>
        ))}
      </select>
      {info?.record?.warn && mode === 'live' && viewing == null ? <RecordWarning key={info.run} check={info.record} compact /> : null}
    </div>
  );
}

/** A JSON value on one line, cut to `max` characters. */
export function shortValue(v: unknown, max = 120): string {
  let t: string;
  if (v === undefined) t = '(nothing)';
  else if (typeof v === 'string') t = JSON.stringify(v);
  else {
    try {
      t = JSON.stringify(v) ?? String(v);
    } catch {
      t = String(v);
    }
  }
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

/** "Replay diverged at call 2 of node `answer`: `messages[1].content` was … now …" */
export function divergenceText(d: Divergence): string {
  return `Replay diverged at call ${d.call} of node ${d.node}: \`${d.path}\` was ${shortValue(d.recorded)} now ${shortValue(d.now)}`;
}

function DivergedBanner({ d }: { d: Divergence }) {
  const dbg = useDebugStore();
  const app = useAppStore();
  const pick = () => {
    if (d.step != null) void dbg.getState().selectStep(d.step);
    const st = app.getState();
    if (st.view?.nodes.some((n) => n.id === d.node)) st.select({ type: 'node', id: d.node }, { reveal: true, focus: true });
    else st.toast('info', `Node \`${d.node}\` is not on this canvas (it ran in ${d.run})`);
  };
  return (
    <div className="dp-banner diverged" data-testid="replay-diverged" data-node={d.node} data-call={d.call} data-path={d.path} role="alert" title={divergenceText(d)}>
      <strong>Replay diverged</strong>
      <span>
        at call {d.call} of node <code>{d.node}</code>
        {d.step != null ? ` (step ${d.step})` : ''}: <code>{d.path}</code> was <code title={shortValue(d.recorded, 4000)}>{shortValue(d.recorded)}</code> now{' '}
        <code title={shortValue(d.now, 4000)}>{shortValue(d.now)}</code>
      </span>
      <button type="button" className="link" data-testid="replay-diverged-select" onClick={pick} title="Select the node and its step">
        Show {d.node}
      </button>
    </div>
  );
}

export function DebugPanel() {
  const dbg = useDebugStore();
  const tab = useDebug((s) => s.panelTab);
  const viewing = useDebug((s) => s.viewing);
  const diverged = useDebug((s) => shownModel(s).diverged);
  const hasRun = useDebug((s) => s.mode !== 'idle' || s.starting || s.viewing != null || shownModel(s).eventCount > 0);
  const stepCount = useDebug((s) => shownModel(s).steps.length);
  const nestedRun = useDebug((s) => shownNestedPause(s)?.run ?? null);
  const diffCount = useDebug((s) => {
    const n = shownNestedPause(s);
    if (n) return nestedDiff(n).length;
    return s.stateView && !s.stateView.loading ? s.stateView.diff.length : 0;
  });
  const callCount = useDebug((s) => {
    const m = shownModel(s);
    const row = s.selectedStep != null ? m.steps.find((r) => r.step === s.selectedStep) : m.steps[m.steps.length - 1];
    return row?.calls.length ?? 0;
  });
  const count: Record<PanelTab, number> = { timeline: stepCount, state: diffCount, calls: callCount };

  return (
    <section className="debug-panel" data-testid="debug-panel" data-tab={tab}>
      <div className="dp-head">
        <div className="dp-tabs" role="tablist" aria-label="Debugger views">
          {TABS.map((t) => (
            <button
              key={t.id}
              type="button"
              role="tab"
              aria-selected={tab === t.id}
              className={`dp-tab${tab === t.id ? ' active' : ''}`}
              data-testid={`tab-${t.id}`}
              onClick={() => dbg.getState().setPanelTab(t.id)}
              title={t.id === 'state' ? 'Changes since the step before' : undefined}
            >
              {t.label}
              {hasRun && count[t.id] ? <span className="dp-count">{count[t.id]}</span> : null}
            </button>
          ))}
        </div>
        {hasRun ? <RunHeader /> : null}
      </div>
      {viewing != null ? (
        <div className="dp-banner" data-testid="history-banner">
          Viewing an earlier run (read-only), to compare with the current one.
          <button type="button" className="link" onClick={() => dbg.getState().viewHistory(null)}>
            Back to the current run
          </button>
          <CompareRuns />
        </div>
      ) : null}
      {diverged ? <DivergedBanner d={diverged} /> : null}
      <div className="dp-body" role="tabpanel">
        {!hasRun ? (
          <div className="dp-hint" data-testid="debug-hint">
            <div>
              Press <kbd>F5</kbd> to run, <kbd>F10</kbd> to step
            </div>
            <div className="small">
              <kbd>F9</kbd> toggles a breakpoint on the selected node · the run configuration sets the input and the LLM mode
            </div>
          </div>
        ) : tab === 'timeline' ? (
          <Timeline />
        ) : tab === 'state' ? (
          // A nested run's state is another tree: its own expansions, filter and editor.
          <StateTree key={nestedRun ?? ''} />
        ) : (
          <CallInspector />
        )}
      </div>
    </section>
  );
}
