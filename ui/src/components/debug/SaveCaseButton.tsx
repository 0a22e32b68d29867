// *Save run as test case* (issue 33): the debugger's shown run (the current one, or an earlier
// one being viewed) becomes a case of the open agent's test suite — its input, answers, replies
// as a cassette and route — written by the shell (`suite_save_run`). Asks for the case's name
// (prefilled), then says where it went and refreshes the Tests panel.
import { useState } from 'react';
import { errorMessage } from '../../backend';
import { shownModel, shownTrace, useDebug } from '../../debug/store';
import { useAppStore } from '../../store';
import { testsStore } from '../../tests-panel/store';

/** The name offered for a new case: the run's input, shortened, else the agent and the outcome. */
export function defaultCaseName(input: string | null | undefined, agent: string | null | undefined, status: string | null | undefined): string {
  const text = (input ?? '').replace(/\s+/g, ' ').trim();
  if (text) return text.length > 60 ? `${text.slice(0, 57)}…` : text;
  return `${agent || 'agent'} ${status || 'run'}`;
}

export function SaveCaseButton() {
  const app = useAppStore();
  const trace = useDebug(shownTrace);
  const busy = useDebug((s) => s.viewing == null && s.mode === 'live' && (s.starting || s.status?.state === 'running'));
  const input = useDebug((s) => s.config.input);
  const agent = useDebug((s) => shownModel(s).agent);
  const status = useDebug((s) => shownModel(s).finished?.status ?? null);
  const [name, setName] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const disabled = !trace || busy;

  async function save() {
    if (!trace || name === null) return;
    setSaving(true);
    setError(null);
    const backend = app.getState().backend;
    try {
      const r = await backend.suiteSaveRun(name.trim(), trace);
      setName(null);
      app.getState().toast('info', `Saved the run as case “${r.case}” in ${r.file}${r.created ? ' (new suite)' : ''}; its replies: ${r.cassette}`);
      void testsStore.getState().refresh(backend);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setSaving(false);
    }
  }

  return (
    <div className="menu dbg-save-case">
      <button
        type="button"
        className="btn dbg-btn"
        data-testid="dbg-save-case"
        disabled={disabled}
        onClick={() => {
          setError(null);
          setName(name === null ? defaultCaseName(input, agent, status) : null);
        }}
        title={trace ? 'Save run as test case: its input, answers, replies (as a cassette) and route become a case of the agent’s test suite' : 'Save run as test case: run the agent first (the run needs a trace)'}
      >
        <span className="dbg-label">Save as test…</span>
      </button>
      {name !== null ? (
        <form
          className="menu-pop dbg-save-case-pop"
          data-testid="dbg-save-case-form"
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          <label>
            Case name
            <input data-testid="dbg-save-case-name" autoFocus value={name} onChange={(e) => setName(e.target.value)} onKeyDown={(e) => e.key === 'Escape' && setName(null)} />
          </label>
          {error ? (
            <p className="sy-tests-error" role="alert" data-testid="dbg-save-case-error">
              {error}
            </p>
          ) : null}
          <div className="btn-group">
            <button type="submit" className="btn primary" data-testid="dbg-save-case-ok" disabled={saving || !name.trim()}>
              Save case
            </button>
            <button type="button" className="btn" onClick={() => setName(null)}>
              Cancel
            </button>
          </div>
        </form>
      ) : null}
    </div>
  );
}
