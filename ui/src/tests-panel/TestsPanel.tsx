// The Tests panel: the agent test suites beside the open document (`*.tests.yaml`, see README
// "Agent test suites"), each case with its last result; run one case or a whole suite; a
// failing case shows its first failing expectation and where it is written; the suite's routing
// coverage lists what never ran. Running a suite runs the agent: the shell asks for trust first.
import { useEffect } from 'react';
import { useApp, useAppStore } from '../store';
import { useDebugStore } from '../debug/store';
import type { CaseResult, Coverage } from '../contract/suite';
import { caseKey, useTests } from './store';
import './tests.css';

function Outcome({ r }: { r: CaseResult | undefined }) {
  if (!r) return <span className="sy-tests-badge sy-tests-none">–</span>;
  const text = { passed: 'pass', failed: 'FAIL', error: 'error', skipped: 'skip' }[r.outcome];
  return <span className={`sy-tests-badge sy-tests-${r.outcome}`}>{text}</span>;
}

function CoverageSummary({ c }: { c: Coverage }) {
  const nodes = c.nodes.filter((n) => n.count === 0 && n.id !== '__start__' && n.id !== '__end__');
  const edges = c.edges.filter((e) => e.count === 0);
  return (
    <div className="sy-tests-coverage" data-testid="tests-coverage">
      <p>
        coverage over {c.runs} run{c.runs === 1 ? '' : 's'}: {c.nodes_covered}/{c.nodes.length} nodes ran, {c.edges_covered}/{c.edges.length} edges taken
      </p>
      <CanvasToggle />
      {nodes.length ? <p data-testid="tests-never-ran">never ran: {nodes.map((n) => n.id).join(', ')}</p> : null}
      {edges.length ? (
        <ul data-testid="tests-never-taken">
          {edges.map((e) => (
            <li key={e.index}>
              never taken: {e.from} → {e.to} ({e.kind}){e.label ? ` [${e.label}]` : ''}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** Draw the last run's counts on the canvas (node badges, never-taken edges marked) or not. */
function CanvasToggle() {
  const on = useTests((s) => s.onCanvas);
  const set = useTests((s) => s.setOnCanvas);
  return (
    <label className="sy-tests-oncanvas">
      <input type="checkbox" data-testid="tests-on-canvas" checked={on} onChange={(e) => set(e.target.checked)} /> show on the canvas
    </label>
  );
}

export function TestsPanel() {
  const store = useAppStore();
  const debug = useDebugStore();
  // A failing run's trace in the debugger, at the step where the first expectation failed.
  const openAt = async (trace: string, step: number | null) => {
    await debug.getState().openTrace(trace);
    if (step !== null) await debug.getState().selectStep(step);
  };
  const path = useApp((s) => s.view?.path ?? null);
  const open = useTests((s) => s.open);
  const suites = useTests((s) => s.suites);
  const results = useTests((s) => s.results);
  const coverage = useTests((s) => s.coverage);
  const problems = useTests((s) => s.problems);
  const running = useTests((s) => s.running);
  const error = useTests((s) => s.error);
  const setOpen = useTests((s) => s.setOpen);
  const refresh = useTests((s) => s.refresh);
  const run = useTests((s) => s.run);
  const clear = useTests((s) => s.clear);
  // Another document: its own suites and results.
  useEffect(() => clear(), [path, clear]);
  useEffect(() => {
    if (path !== null && open) void refresh(store.getState().backend);
  }, [path, open, refresh, store]);
  if (path === null) return null;
  const backend = () => store.getState().backend;
  return (
    <>
      <button type="button" className="sy-tests-toggle" data-testid="tests-toggle" aria-pressed={open} onClick={() => setOpen(!open)} title="The agent's test suites (*.tests.yaml)">
        Tests
      </button>
      {open ? (
        <section className="sy-tests-panel" data-testid="tests-panel" aria-label="Tests">
          {error ? (
            <p className="sy-tests-error" data-testid="tests-error">
              {error}
            </p>
          ) : null}
          {suites.length === 0 && !error ? <p data-testid="tests-empty">No test suite beside this agent: write a `&lt;name&gt;.tests.yaml` (README: Agent test suites).</p> : null}
          {suites.map((s) => (
            <div key={s.file} className="sy-tests-suite" data-testid="tests-suite" data-file={s.file}>
              <div className="sy-tests-head">
                <strong title={s.file}>{s.file.split('/').pop()}</strong>
                <button type="button" className="btn" data-testid="tests-run-all" disabled={running !== null} onClick={() => void run(backend(), s.file, null)}>
                  {running === s.file ? 'Running…' : 'Run all'}
                </button>
              </div>
              {[...s.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.line}:${d.column} ${d.message}`), ...(problems[s.file] ?? [])].map((p, i) => (
                <p key={i} className="sy-tests-error" data-testid="tests-problem">
                  {p}
                </p>
              ))}
              <ul className="sy-tests-cases">
                {s.cases.map((c) => {
                  const r = results[caseKey(s.file, c.name)];
                  const f = r?.run?.failures[0];
                  return (
                    <li key={c.name} data-testid="tests-case" data-case={c.name} data-outcome={r?.outcome ?? 'none'}>
                      <Outcome r={r} />
                      <span className="sy-tests-name" title={`line ${c.line}`}>
                        {c.name}
                      </span>
                      <button
                        type="button"
                        className="btn sy-tests-run"
                        data-testid="tests-run-one"
                        disabled={running !== null}
                        onClick={() => void run(backend(), s.file, c.name)}
                      >
                        {running === caseKey(s.file, c.name) ? '…' : 'Run'}
                      </button>
                      {f ? (
                        <p className="sy-tests-failure" data-testid="tests-failure">
                          line {f.line}: {f.message}
                          {f.step != null ? ` (step ${f.step})` : ''}
                          {r?.run?.trace ? (
                            <button
                              type="button"
                              className="btn sy-tests-run"
                              data-testid="tests-open-trace"
                              onClick={() => void openAt(r.run!.trace!, f.step ?? null)}
                              title="Open this run's trace in the debugger"
                            >
                              {f.step != null ? `open at step ${f.step}` : 'open the run'}
                            </button>
                          ) : null}
                        </p>
                      ) : r?.message ? (
                        <p className="sy-tests-failure">{r.message}</p>
                      ) : null}
                    </li>
                  );
                })}
              </ul>
              {coverage[s.file] ? <CoverageSummary c={coverage[s.file]} /> : null}
            </div>
          ))}
        </section>
      ) : null}
    </>
  );
}
