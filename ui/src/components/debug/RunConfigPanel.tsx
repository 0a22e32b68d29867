// The run configuration: a panel under the toolbar with the input, the initial state (JSON), the
// agent, where LLM replies come from (scripted, replay of a cassette, live models, none),
// recording to a cassette, answers queued for interrupts, and Run / Step buttons.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import '../../debug/debug.css';
import { errorMessage } from '../../backend';
import { useDebug, useDebugStore } from '../../debug/store';
import type { JsonValue, LlmMode, RecordCheck, RunConfig } from '../../debug/types';
import { RecordWarning } from './RecordWarning';
import type { ModelsInfo } from '../../settings/types';
import { useApp, useAppStore } from '../../store';

/** `<agent stem>.cassette.json`: where a recording goes and a replay looks first. */
export function defaultCassette(fileName: string): string {
  const dot = fileName.lastIndexOf('.');
  const stem = dot > 0 ? fileName.slice(0, dot) : fileName || 'agent';
  return `${stem}.cassette.json`;
}

/** Whether a run error is about provider setup (a key, an unknown provider): Settings can fix it. */
export function needsSettings(message: string | null | undefined): boolean {
  return !!message && /API key|api_key|_API_KEY|Settings|unknown LLM provider|cannot run live/i.test(message);
}

/** Parse the initial-state text: empty = none; otherwise a JSON object. */
export function parseStateText(text: string): { value: { [key: string]: JsonValue } | undefined; error: string | null } {
  if (!text.trim()) return { value: undefined, error: null };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { value: undefined, error: `Initial state: not valid JSON (${e instanceof Error ? e.message : String(e)})` };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { value: undefined, error: 'Initial state: must be a JSON object, e.g. {"count": 0}' };
  return { value: v as { [key: string]: JsonValue }, error: null };
}

/** One answer per non-empty line: JSON when the line parses as JSON, otherwise the text. */
export function parseAnswers(text: string): JsonValue[] {
  const out: JsonValue[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      out.push(line);
    }
  }
  return out;
}

/** The text that `parseAnswers` reads back as `answers`. */
export function answersText(answers: JsonValue[] | undefined): string {
  return (answers ?? [])
    .map((a) => {
      if (typeof a === 'string') {
        // Text that would read back as JSON (e.g. "42", "true") is written quoted.
        try {
          JSON.parse(a);
          return JSON.stringify(a);
        } catch {
          return a.includes('\n') ? JSON.stringify(a) : a;
        }
      }
      return JSON.stringify(a);
    })
    .join('\n');
}

function stateText(state: unknown): string {
  return state === undefined || state === null ? '' : JSON.stringify(state, null, 2);
}

export function RunConfigPanel() {
  const open = useDebug((s) => s.configOpen);
  const hasView = useApp((s) => s.view !== null);
  if (!open || !hasView) return null;
  return <RunConfigForm />;
}

function RunConfigForm() {
  const dbg = useDebugStore();
  const config = useDebug((s) => s.config);
  const configError = useDebug((s) => s.configError);
  const starting = useDebug((s) => s.starting);
  const agents = useApp((s) => s.view?.agents);
  const viewAgent = useApp((s) => s.view?.agent ?? null);
  const dialect = useApp((s) => s.view?.dialect ?? null);
  const fileName = useApp((s) => s.view?.file_name ?? '');
  const app = useAppStore();
  // An LLLM config is drawn whole; the agent a run calls is one of its agent nodes.
  const nodes = useApp((s) => s.view?.nodes);
  const lllmAgents = useMemo(
    () => (dialect === 'lllm' ? (nodes ?? []).filter((n) => n.kind === 'agent').map((n) => n.id.replace(/^agent:/, '')) : null),
    [dialect, nodes],
  );

  // The JSON texts are edited locally and pushed to the configuration whenever they are valid.
  const [stateSrc, setStateSrc] = useState(() => stateText(config.state));
  const [answersSrc, setAnswersSrc] = useState(() => answersText(config.answers));
  const parsedState = useMemo(() => parseStateText(stateSrc), [stateSrc]);
  const panel = useRef<HTMLDivElement>(null);
  const [pos, setPos] = useState<{ top: number; left: number } | null>(null);

  // Sit under the toolbar's Configure button when there is one.
  useLayoutEffect(() => {
    const btn = document.querySelector('[data-testid="dbg-config"]');
    const r = btn?.getBoundingClientRect();
    if (r && (r.width || r.height)) {
      const width = panel.current?.offsetWidth ?? 420;
      setPos({ top: r.bottom + 6, left: Math.max(8, Math.min(r.left, window.innerWidth - width - 8)) });
    }
  }, []);

  useEffect(() => {
    panel.current?.querySelector<HTMLElement>('[data-testid="run-input"]')?.focus();
  }, []);

  const set = (p: Partial<RunConfig>) => dbg.getState().setConfig(p);
  const close = () => dbg.getState().openConfig(false);

  const llm = config.llm ?? { mode: 'scripted' };
  const setMode = (mode: string) => {
    let next: LlmMode;
    if (mode === 'none') next = { mode: 'none' };
    else if (mode === 'scripted') next = { mode: 'scripted', script: llm.mode === 'scripted' ? (llm.script ?? null) : null };
    else if (mode === 'replay') next = llm.mode === 'replay' ? llm : { mode: 'replay', cassette: null, strict: false };
    else if (mode === 'live') next = llm.mode === 'live' ? llm : { mode: 'live', model: null };
    else return;
    set({ llm: next });
  };
  const cassette = defaultCassette(fileName);
  const [recordPath, setRecordPath] = useState(() => config.record || cassette);
  const recording = config.record != null && config.record !== '';
  const replayPath = llm.mode === 'replay' ? llm.cassette?.trim() || cassette : null;
  const overwriting = recording && replayPath != null && (config.record ?? '').trim() === replayPath;
  const openSettings = () => app.getState().openSettings(true);

  const run = async (mode: 'continue' | 'step') => {
    if (parsedState.error) return;
    if (config.record != null && !config.record.trim()) set({ record: null });
    set({ state: parsedState.value, answers: parseAnswers(answersSrc) });
    const runs = lllmAgents ? (lllmAgent ?? lllmAgents[0]) : null;
    if (runs && runs !== viewAgent) await app.getState().selectAgent(runs);
    await dbg.getState().start(mode);
    if (!dbg.getState().configError) close();
  };

  const error = parsedState.error ?? configError;
  const choices = lllmAgents ?? agents ?? [];
  // An LLLM agent chosen here is also the one drawn, with the call loop its run steps through.
  const lllmAgent = lllmAgents ? (config.agent ?? (viewAgent && lllmAgents.includes(viewAgent) ? viewAgent : null)) : null;
  const pickAgent = (a: string) => {
    set({ agent: a || null });
    if (lllmAgents && a && a !== viewAgent) void app.getState().selectAgent(a);
  };
  const multi = lllmAgents ? lllmAgents.length > 0 : choices.length > 1;

  return (
    <div
      ref={panel}
      className="run-config"
      data-testid="run-config"
      role="dialog"
      aria-label="Run configuration"
      style={pos ? { top: pos.top, left: pos.left } : undefined}
      onKeyDown={(e) => {
        if (e.key === 'Escape') {
          e.stopPropagation();
          close();
        } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          e.stopPropagation();
          void run('continue');
        }
      }}
    >
      <div className="rc-head">
        <h3>Run configuration</h3>
        <span className="muted small">{fileName}</span>
        <div className="spacer" />
        <button type="button" className="icon-btn" data-testid="run-config-close" onClick={close} title="Close (Esc)" aria-label="Close">
          ✕
        </button>
      </div>

      <RunTarget />

      <label className="rc-field">
        <span className="rc-label">Input</span>
        <textarea
          className="input"
          data-testid="run-input"
          rows={2}
          value={config.input ?? ''}
          placeholder={dialect === 'loki' ? 'The initial prompt' : 'The user message the run starts with'}
          onChange={(e) => set({ input: e.target.value || null })}
        />
      </label>

      <label className="rc-field">
        <span className="rc-label">
          Initial state <span className="muted">(JSON object, optional)</span>
        </span>
        <textarea
          className={`input mono${parsedState.error ? ' invalid' : ''}`}
          data-testid="run-state"
          rows={3}
          spellCheck={false}
          value={stateSrc}
          placeholder='{"count": 0}'
          aria-invalid={!!parsedState.error}
          onChange={(e) => {
            setStateSrc(e.target.value);
            const p = parseStateText(e.target.value);
            if (!p.error) set({ state: p.value });
          }}
        />
      </label>

      <div className="rc-row">
        {multi ? (
          <label className="rc-field">
            <span className="rc-label">Agent</span>
            <select
              className="input"
              data-testid="run-agent"
              value={lllmAgents ? (lllmAgent ?? '') : (config.agent ?? viewAgent ?? '')}
              onChange={(e) => pickAgent(e.target.value)}
            >
              {lllmAgents && !lllmAgent ? <option value="">{`${lllmAgents[0] ?? ''} (the first; pick one to see its call loop)`}</option> : null}
              {choices.map((a) => (
                <option key={a} value={a}>
                  {a}
                  {a === viewAgent ? ' (shown)' : ''}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <label className="rc-field">
          <span className="rc-label">LLM replies</span>
          <select className="input" data-testid="run-llm-mode" value={llm.mode} onChange={(e) => setMode(e.target.value)}>
            <option value="scripted">scripted (replies file)</option>
            <option value="replay">replay a recorded run (cassette)</option>
            <option value="live">live models (providers in Settings)</option>
            <option value="none">no LLM (agents that call no model)</option>
          </select>
        </label>
      </div>
      {llm.mode === 'scripted' ? (
        <label className="rc-field">
          <span className="rc-label">Replies file</span>
          <input
            className="input mono"
            data-testid="run-llm-script"
            value={llm.script ?? ''}
            placeholder="replies.yaml beside the agent"
            spellCheck={false}
            onChange={(e) => set({ llm: { mode: 'scripted', script: e.target.value || null } })}
          />
        </label>
      ) : null}
      {llm.mode === 'replay' ? (
        <div className="rc-row">
          <label className="rc-field" style={{ flex: 1 }}>
            <span className="rc-label">Cassette</span>
            <input
              className="input mono"
              data-testid="run-llm-cassette"
              value={llm.cassette ?? ''}
              placeholder={`${cassette} beside the agent`}
              spellCheck={false}
              onChange={(e) => set({ llm: { ...llm, cassette: e.target.value || null } })}
            />
          </label>
          <label className="rc-check" title="A request that differs from the recording fails the call (otherwise the recorded reply is used and the first difference is reported)">
            <input type="checkbox" data-testid="run-llm-strict" checked={!!llm.strict} onChange={(e) => set({ llm: { ...llm, strict: e.target.checked } })} />
            strict
          </label>
        </div>
      ) : null}
      {llm.mode === 'live' ? <LiveModels model={llm.model ?? null} onModel={(m) => set({ llm: { mode: 'live', model: m } })} onSettings={openSettings} /> : null}

      <div className="rc-row rc-record">
        <label className="rc-check" title="Write every LLM and tool exchange of the run to a cassette, to replay it offline later">
          <input
            type="checkbox"
            data-testid="run-record"
            checked={recording}
            onChange={(e) => set({ record: e.target.checked ? recordPath.trim() || cassette : null })}
          />
          Record to cassette
        </label>
        <input
          className="input mono"
          data-testid="run-record-path"
          value={recording ? (config.record ?? '') : recordPath}
          disabled={!recording}
          placeholder={cassette}
          spellCheck={false}
          style={{ flex: 1 }}
          onChange={(e) => {
            setRecordPath(e.target.value);
            if (recording) set({ record: e.target.value });
          }}
        />
      </div>
      {recording ? <RecordCheckRow record={config.record ?? ''} /> : null}
      {overwriting ? (
        <div className="rc-warn small" data-testid="run-record-warning">
          Recording over the cassette being replayed: choose another path to keep the original.
        </div>
      ) : null}

      <label className="rc-check" title="Write every step to the run store, so the run can be resumed from the Runs list after the app was closed">
        <input type="checkbox" data-testid="run-durable" checked={!!config.durable} onChange={(e) => set({ durable: e.target.checked })} />
        Durable run <span className="muted small">(resumable after closing the app)</span>
      </label>

      {config.llm.mode !== 'live' ? (
        <label
          className="rc-check"
          title="Scripted and replayed runs contact no host. Allow this run to call remote hooks, skill and RAG URLs, embedding models, A2A agents and MCP servers over HTTP"
        >
          <input
            type="checkbox"
            data-testid="run-allow-network"
            checked={!!config.allow_network}
            onChange={(e) => set({ allow_network: e.target.checked })}
          />
          Allow network <span className="muted small">(this run may contact the hosts its agent names)</span>
        </label>
      ) : null}

      <label className="rc-field">
        <span className="rc-label">
          Answers queued for interrupts <span className="muted">(one per line; JSON or text)</span>
        </span>
        <textarea
          className="input mono"
          data-testid="run-answers"
          rows={2}
          spellCheck={false}
          value={answersSrc}
          placeholder={'ship\n{"approved": true}'}
          onChange={(e) => {
            setAnswersSrc(e.target.value);
            set({ answers: parseAnswers(e.target.value) });
          }}
        />
      </label>

      {error ? (
        <div className="rc-error" data-testid="run-config-error" role="alert">
          {error}
          {needsSettings(error) ? (
            <div>
              <button type="button" className="btn" data-testid="run-open-settings" onClick={openSettings}>
                Open Settings
              </button>
            </div>
          ) : null}
        </div>
      ) : null}

      <div className="rc-actions">
        <span className="muted small">Ctrl+Enter runs</span>
        <div className="spacer" />
        <button type="button" className="btn" data-testid="run-config-step" disabled={!!parsedState.error || starting} onClick={() => void run('step')} title="Start and pause after the first step (F10)">
          Step
        </button>
        <button type="button" className="btn primary" data-testid="run-config-run" disabled={!!parsedState.error || starting} onClick={() => void run('continue')} title="Start and run to the first stop (F5)">
          ▶ Run
        </button>
      </div>
    </div>
  );
}

/** Where the recording goes: asked of the shell whenever the path changes; a warning with "Add
 *  to .gitignore" when git would commit it, the refusal when the path is not one the app may write. */
function RecordCheckRow({ record }: { record: string }) {
  const backend = useAppStore().getState().backend;
  const [check, setCheck] = useState<RecordCheck | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let alive = true;
    if (!record.trim()) {
      setCheck(null);
      setError(null);
      return;
    }
    backend.recordCheck(record.trim()).then(
      (c) => {
        if (!alive) return;
        setCheck(c);
        setError(null);
      },
      (e) => {
        if (!alive) return;
        setCheck(null);
        setError(errorMessage(e));
      },
    );
    return () => {
      alive = false;
    };
  }, [backend, record]);
  if (error) {
    return (
      <div className="rc-error small" data-testid="record-check-error">
        {error}
      </div>
    );
  }
  return check ? <RecordWarning key={check.path} check={check} /> : null;
}

/** The live mode's models: those the document names (with whether each can be called) and the
 *  model for nodes that name none, for this run. */
function LiveModels({ model, onModel, onSettings }: { model: string | null; onModel(m: string | null): void; onSettings(): void }) {
  const backend = useAppStore().getState().backend;
  const revision = useApp((s) => s.settingsRevision);
  const text = useApp((s) => s.view?.text);
  const [info, setInfo] = useState<ModelsInfo | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let alive = true;
    backend.llmModels().then(
      (i) => {
        if (!alive) return;
        setInfo(i);
        setError(null);
      },
      (e) => alive && setError(errorMessage(e)),
    );
    return () => {
      alive = false;
    };
  }, [backend, revision, text]);
  const missing = info ? info.models.filter((m) => !m.ready) : [];
  const choices = info?.choices ?? [];
  return (
    <div className="rc-field" data-testid="run-live">
      <span className="rc-label">Models the document names</span>
      {error ? <div className="rc-error">{error}</div> : null}
      {info && info.models.length === 0 ? <div className="muted small">None: every model call uses the default model below.</div> : null}
      {info && info.models.length ? (
        <ul className="rc-models" data-testid="run-llm-models">
          {info.models.map((m, i) => (
            <li key={`${m.model}:${i}`} data-testid="run-llm-model" data-model={m.model} data-ready={m.ready ? 'true' : 'false'} title={m.problem ?? m.origin}>
              <span className={m.ready ? 'rc-ok' : 'rc-bad'}>{m.ready ? '✓' : '✕'}</span> <span className="mono">{m.model}</span> <span className="muted small">{m.origin}</span>
              {m.problem ? <div className="rc-error small">{m.problem}</div> : null}
            </li>
          ))}
        </ul>
      ) : null}
      <div className="rc-row">
        <label className="rc-field" style={{ flex: 1 }}>
          <span className="rc-label">Model for nodes that name none (this run)</span>
          <select className="input mono" data-testid="run-live-model" value={model ?? ''} onChange={(e) => onModel(e.target.value || null)}>
            <option value="">{info?.default_model ? `default: ${info.default_model}` : 'none set (Settings)'}</option>
            {choices
              .filter((c) => c !== info?.default_model)
              .map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            {model && !choices.includes(model) ? <option value={model}>{model}</option> : null}
          </select>
        </label>
        <button type="button" className="btn" data-testid="run-live-settings" onClick={onSettings} title="Providers, API keys and the default model">
          {missing.length ? 'Add the key in Settings…' : 'Settings…'}
        </button>
      </div>
    </div>
  );
}

/** Where the run runs: this computer, or (connected to a server) an assistant of the server,
 *  whose agent file is opened read-only so its breakpoints can be set on the canvas. */
function RunTarget() {
  const dbg = useDebugStore();
  const remote = useDebug((s) => s.remote);
  const remoteDoc = useDebug((s) => s.remoteDoc);
  const assistants = useDebug((s) => s.remoteAssistants);
  const fileName = useApp((s) => s.view?.file_name ?? '');
  useEffect(() => {
    if (remote?.connected && assistants.length === 0) void dbg.getState().loadRemote();
  }, [dbg, remote?.connected, assistants.length]);
  if (!remote?.connected && !remoteDoc) return null;
  return (
    <label className="rc-field" data-testid="run-target-field">
      <span className="rc-label">
        Run on{' '}
        <span className="muted">
          {remoteDoc ? `the server ${remoteDoc.url} (its LLM settings, recording and answers are the server's)` : 'this computer or a server'}
        </span>
      </span>
      <select
        className="input"
        data-testid="run-target"
        value={remoteDoc ? remoteDoc.assistant_id : ''}
        onChange={(e) => {
          if (e.target.value) void dbg.getState().openRemoteAssistant(e.target.value);
        }}
      >
        {remoteDoc ? null : <option value="">This computer ({fileName})</option>}
        {assistants.map((a) => (
          <option key={a.assistant_id} value={a.assistant_id}>
            {`Server: ${a.graph_id}`}
          </option>
        ))}
      </select>
    </label>
  );
}
