// Run comparison (issue 33 item 6): the earlier run being viewed (e.g. the run before a rewind)
// against the current run (its fork), aligned by step by the engine (`trace_diff`, what
// `switchyard trace diff` prints): the first divergence — node, LLM request or reply, question,
// state value, route — highlighted, then the steps side by side.
import { useState } from 'react';
import { errorMessage } from '../backend';
import type { AlignedStep, StepView, TraceDiff } from '../contract/tracediff';
import { useDebug } from '../debug/store';
import { useAppStore } from '../store';
import { showValue } from './model';
import './diff.css';

/** `answer [llm×1] → count`: one step of one run on a line. */
export function stepText(v: StepView | null): string {
  if (!v) return '—';
  const nodes = v.nodes.map(([n]) => n);
  let s = nodes.length ? nodes.join(', ') : '(start)';
  if (v.llm.length) s += ` [llm×${v.llm.length}]`;
  if (v.interrupt !== null) s += ' [asks]';
  if (v.error !== null) s += ' [error]';
  const to = [...new Set(v.routes.map((r) => r.to))];
  if (to.length) s += ` → ${to.join(', ')}`;
  return s;
}

function Row({ st, first }: { st: AlignedStep; first: boolean }) {
  return (
    <tr className={st.same ? '' : first ? 'sy-rc-first' : 'sy-rc-differs'} data-testid="rc-step" data-step={st.step} data-same={String(st.same)}>
      <td>{st.same ? '' : '≠'}</td>
      <td>{st.step}</td>
      <td>{stepText(st.a)}</td>
      <td>{stepText(st.b)}</td>
    </tr>
  );
}

/** "Compare with the current run", beside the banner of an earlier run being viewed. */
export function CompareRuns() {
  const store = useAppStore();
  const viewing = useDebug((s) => s.viewing);
  const history = useDebug((s) => s.history);
  const info = useDebug((s) => s.info);
  const model = useDebug((s) => s.model);
  const [result, setResult] = useState<TraceDiff | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const earlier = viewing != null ? history[viewing] : null;
  const can = !!earlier?.trace && !!info?.trace;
  const compare = async () => {
    if (!earlier?.trace || !info?.trace) return;
    setBusy(true);
    setError(null);
    try {
      setResult(await store.getState().backend.traceDiff(earlier.trace, earlier.model.eventCount, info.trace, model.eventCount));
    } catch (e) {
      setError(errorMessage(e));
    }
    setBusy(false);
  };
  const d = result?.first_divergence ?? null;
  return (
    <>
      <button
        type="button"
        className="link"
        data-testid="compare-runs"
        disabled={!can || busy}
        title={can ? `Compare ${earlier?.label} with the current run, step by step` : 'Both runs need a trace to compare'}
        onClick={() => void compare()}
      >
        {busy ? 'Comparing…' : 'Compare with the current run'}
      </button>
      {error ? <span className="sy-diff-error" data-testid="compare-runs-error">{error}</span> : null}
      {result ? (
        <div className="sy-rc-backdrop" role="dialog" aria-label="Run comparison" data-testid="run-compare">
          <div className="sy-rc-dialog">
            <div className="sy-rc-head">
              <strong>{earlier?.label ?? 'earlier run'}</strong> (A) ↔ <strong>current run</strong> (B)
              <button type="button" className="btn" data-testid="run-compare-close" onClick={() => setResult(null)}>
                Close
              </button>
            </div>
            {d ? (
              <div className="sy-rc-divergence" data-testid="run-compare-divergence" data-kind={d.kind} data-step={d.step}>
                <div>
                  <strong>First divergence at step {d.step}</strong>
                  {d.node ? ` (${d.node})` : ''}: {d.message}
                </div>
                {d.a !== null || d.b !== null ? (
                  <table className="sy-diff-fields">
                    <tbody>
                      <tr>
                        <th scope="row">A</th>
                        <td className="sy-diff-old">{showValue(d.a, 400)}</td>
                      </tr>
                      <tr>
                        <th scope="row">B</th>
                        <td className="sy-diff-new">{showValue(d.b, 400)}</td>
                      </tr>
                    </tbody>
                  </table>
                ) : null}
              </div>
            ) : (
              <p data-testid="run-compare-same">The same run: no divergence in {result.steps.length} steps.</p>
            )}
            <table className="sy-rc-steps">
              <thead>
                <tr>
                  <th />
                  <th>step</th>
                  <th>A</th>
                  <th>B</th>
                </tr>
              </thead>
              <tbody>
                {result.steps.map((st) => (
                  <Row key={st.step} st={st} first={d !== null && st.step === d.step} />
                ))}
              </tbody>
            </table>
            <p className="sy-diff-note">
              Ended: A {result.end_a ?? 'not yet'}, B {result.end_b ?? 'not yet'}
            </p>
          </div>
        </div>
      ) : null}
    </>
  );
}
