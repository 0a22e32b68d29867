// The Settings dialog (⚙ in the header, Ctrl+,): LLM providers with their wire format, base URL
// and where their key comes from (never the key itself: a masked form), a form to add or edit one
// (the key goes to the OS keyring, or to the private provider file when no keyring answers), a
// test of the connection, and the default model. Talks to the shell through the backend
// (docs/app-contract.md §6).
import { useCallback, useEffect, useRef, useState } from 'react';
import '../../settings/settings.css';
import { errorMessage } from '../../backend';
import { useApp, useAppStore } from '../../store';
import { emptyForm, formFromProvider, keyText, toInput, validateForm, type FormErrors, type ProviderForm } from '../../settings/form';
import type { ProbeResult, ProviderInfo, Settings, SettingsChange } from '../../settings/types';

export function SettingsDialog() {
  const open = useApp((s) => s.settingsOpen);
  if (!open) return null;
  return <SettingsBody />;
}

function SettingsBody() {
  const app = useAppStore();
  const backend = app.getState().backend;
  const [settings, setSettings] = useState<Settings | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [form, setForm] = useState<ProviderForm | null>(null);
  const [formError, setFormError] = useState<string | null>(null);
  const [message, setMessage] = useState<{ text: string; kind: 'info' | 'warn' } | null>(null);
  const [busy, setBusy] = useState(false);
  const [defaultModel, setDefaultModel] = useState('');
  const dialog = useRef<HTMLDivElement>(null);

  const close = useCallback(() => app.getState().openSettings(false), [app]);

  useEffect(() => {
    let alive = true;
    backend.settingsGet().then(
      (s) => {
        if (!alive) return;
        setSettings(s);
        setDefaultModel(s.default_model ?? '');
      },
      (e) => alive && setLoadError(errorMessage(e)),
    );
    return () => {
      alive = false;
    };
  }, [backend]);

  useEffect(() => {
    dialog.current?.focus();
  }, []);

  // Esc closes the form first, then the dialog (wherever the focus is).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      e.stopPropagation();
      if (form) setForm(null);
      else close();
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, [form, close]);

  const save = async (change: SettingsChange, after?: () => void): Promise<boolean> => {
    setBusy(true);
    setFormError(null);
    try {
      const r = await backend.settingsSave(change);
      setSettings(r.settings);
      setDefaultModel(r.settings.default_model ?? '');
      setMessage(r.message ? { text: r.message, kind: r.key_stored === 'file' ? 'warn' : 'info' } : { text: 'Saved.', kind: 'info' });
      app.getState().settingsSaved();
      after?.();
      return true;
    } catch (e) {
      setFormError(errorMessage(e));
      return false;
    } finally {
      setBusy(false);
    }
  };

  // Removing takes a second click on the same button (it says what it will do).
  const [confirming, setConfirming] = useState<string | null>(null);
  const remove = (p: ProviderInfo) => {
    if (confirming !== p.name) {
      setConfirming(p.name);
      return;
    }
    setConfirming(null);
    void save({ remove: [p.name] }, () => {
      if (form && form.name === p.name) setForm(null);
    });
  };

  const models = settings ? modelChoices(settings) : [];

  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        ref={dialog}
        tabIndex={-1}
        className="modal settings-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby="settings-title"
        data-testid="settings-dialog"
      >
        <div className="st-head">
          <h2 id="settings-title">Settings</h2>
          <div className="spacer" />
          <button type="button" className="icon-btn" data-testid="settings-close" onClick={close} title="Close (Esc)" aria-label="Close">
            ✕
          </button>
        </div>
        <div className="st-body">
          {loadError ? (
            <div className="rc-error" role="alert" data-testid="settings-load-error">
              Reading the settings failed: {loadError}
            </div>
          ) : !settings ? (
            <div className="muted small">Loading…</div>
          ) : (
            <>
              <h3>LLM providers</h3>
              <KeyringLine s={settings} />
              {settings.file_error ? (
                <div className="rc-error" role="alert" data-testid="settings-file-error">
                  {settings.file_error}
                </div>
              ) : null}
              <table className="st-providers" data-testid="settings-providers">
                <thead>
                  <tr>
                    <th>name</th>
                    <th>wire</th>
                    <th>base URL</th>
                    <th>key</th>
                    <th>models</th>
                    <th />
                  </tr>
                </thead>
                <tbody>
                  {settings.providers.map((p) => (
                    <ProviderRow
                      key={p.name}
                      p={p}
                      editing={form?.name === p.name && !form.isNew}
                      confirming={confirming === p.name}
                      onEdit={() => {
                        setFormError(null);
                        setConfirming(null);
                        setForm(formFromProvider(p));
                      }}
                      onRemove={() => remove(p)}
                    />
                  ))}
                </tbody>
              </table>
              {form ? (
                <ProviderFormView
                  form={form}
                  setForm={setForm}
                  existing={settings.providers.map((p) => p.name)}
                  saved={settings.providers.find((p) => p.name === form.name && !form.isNew) ?? null}
                  busy={busy}
                  error={formError}
                  onCancel={() => {
                    setForm(null);
                    setFormError(null);
                  }}
                  onSave={(f) => void save({ provider: toInput(f) }, () => setForm(null))}
                />
              ) : (
                <div className="st-actions">
                  <button
                    type="button"
                    className="btn"
                    data-testid="settings-add"
                    onClick={() => {
                      setFormError(null);
                      setForm(emptyForm());
                    }}
                  >
                    + Add provider
                  </button>
                  <span className="muted small">
                    Any OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenRouter…) works through its base URL.
                  </span>
                </div>
              )}
              {!form && formError ? (
                <div className="rc-error" role="alert" data-testid="settings-error">
                  {formError}
                </div>
              ) : null}

              <h3>Default model</h3>
              <p className="muted small">
                Used by Loki nodes and agents that name no model, as <code>provider:model</code>.
                {settings.default_model_env ? (
                  <>
                    {' '}
                    <strong>SWITCHYARD_MODEL</strong> is set ({settings.default_model_env}) and wins.
                  </>
                ) : null}
              </p>
              <div className="st-row">
                <input
                  className="input mono"
                  data-testid="settings-default-model"
                  list="st-model-choices"
                  value={defaultModel}
                  placeholder="openai:gpt-4o-mini"
                  spellCheck={false}
                  onChange={(e) => setDefaultModel(e.target.value)}
                />
                <datalist id="st-model-choices">
                  {models.map((m) => (
                    <option key={m} value={m} />
                  ))}
                </datalist>
                <button
                  type="button"
                  className="btn"
                  data-testid="settings-default-save"
                  disabled={busy || defaultModel.trim() === (settings.default_model ?? '')}
                  onClick={() => void save({ default_model: defaultModel.trim() })}
                >
                  Set default
                </button>
              </div>
            </>
          )}
          {message ? (
            <div className={`st-message ${message.kind}`} data-testid="settings-message" role="status">
              {message.text}
            </div>
          ) : null}
        </div>
        <div className="modal-actions">
          <span className="muted small" data-testid="settings-file" title="The provider file">
            {settings?.path ? `File: ${settings.path}` : ''}
          </span>
          <div className="spacer" />
          <button type="button" className="btn primary" onClick={close}>
            Done
          </button>
        </div>
      </div>
    </div>
  );
}

/** `provider:model` of every model listed under a provider, for the default-model box. */
function modelChoices(s: Settings): string[] {
  const out: string[] = [];
  for (const p of s.providers) for (const m of p.models) out.push(`${p.name}:${m}`);
  return out;
}

function KeyringLine({ s }: { s: Settings }) {
  return s.keyring.available ? (
    <p className="muted small" data-testid="settings-keyring" data-available="true">
      New keys are stored in the OS keyring. Environment variables (e.g. <code>OPENAI_API_KEY</code>) win over saved keys.
    </p>
  ) : (
    <p className="st-warn small" data-testid="settings-keyring" data-available="false">
      The OS keyring is not available{s.keyring.message ? ` (${s.keyring.message})` : ''}: new keys are saved in the provider file
      {s.path ? ` ${s.path}` : ''}, readable by you only.
    </p>
  );
}

function ProviderRow({ p, editing, confirming, onEdit, onRemove }: { p: ProviderInfo; editing: boolean; confirming: boolean; onEdit(): void; onRemove(): void }) {
  const removable = p.configured || p.key_source === 'keyring' || p.key_source === 'file';
  return (
    <tr
      className={`${editing ? 'editing' : ''}${p.error ? ' has-error' : ''}`}
      data-testid="settings-provider"
      data-name={p.name}
      data-key-source={p.key_source ?? ''}
      data-builtin={p.builtin ? 'true' : 'false'}
    >
      <td className="mono">
        {p.name}
        {p.builtin ? <span className="muted small"> built-in</span> : null}
      </td>
      <td>{p.wire ?? '?'}</td>
      <td className="mono st-url" title={p.base_url_env ? `${p.base_url ?? ''} (from ${p.base_url_env})` : (p.base_url ?? '')}>
        {p.base_url ?? ''}
        {p.base_url_env ? <span className="muted small"> ({p.base_url_env})</span> : null}
        {p.error ? <div className="call-error small">{p.error}</div> : null}
      </td>
      <td title={keyText(p)}>
        {p.key_masked ? (
          <span className="mono" data-testid="settings-provider-key">
            {p.key_masked}
          </span>
        ) : null}
        <span className={`st-key-src ${p.key_source ?? (p.key_optional ? 'optional' : 'missing')}`} data-testid="settings-provider-key-source">
          {p.key_source === 'env' ? `$${p.key_var}` : p.key_source === 'keyring' ? 'keyring' : p.key_source === 'file' ? 'file' : p.key_optional ? 'not needed' : 'no key'}
        </span>
      </td>
      <td className="small">{p.models.length ? p.models.join(', ') : <span className="muted">—</span>}</td>
      <td className="st-row-actions">
        <button type="button" className="link" data-testid="settings-edit" onClick={onEdit}>
          Edit
        </button>
        {removable ? (
          <button
            type="button"
            className="link danger"
            data-testid="settings-remove"
            data-confirm={confirming ? 'true' : 'false'}
            onClick={onRemove}
            title={p.builtin ? 'Back to the built-in settings; forget the saved key' : 'Remove the provider and its saved key'}
          >
            {confirming ? (p.builtin ? 'Click again to reset' : 'Click again to remove') : p.builtin ? 'Reset' : 'Remove'}
          </button>
        ) : null}
      </td>
    </tr>
  );
}

function ProviderFormView({
  form,
  setForm,
  existing,
  saved,
  busy,
  error,
  onCancel,
  onSave,
}: {
  form: ProviderForm;
  setForm(f: ProviderForm): void;
  existing: string[];
  saved: ProviderInfo | null;
  busy: boolean;
  error: string | null;
  onCancel(): void;
  onSave(f: ProviderForm): void;
}) {
  const [touched, setTouched] = useState(false);
  const [probe, setProbe] = useState<ProbeResult | null>(null);
  const [probing, setProbing] = useState(false);
  const backend = useAppStore().getState().backend;
  const errors: FormErrors = validateForm(form, existing);
  // Before the first Save, only fields with something typed in them show their problem.
  const filled: Record<keyof FormErrors, string> = { name: form.name, baseUrl: form.baseUrl, timeout: form.timeout, key: form.key, models: form.models };
  const shown = (touched ? errors : Object.fromEntries(Object.entries(errors).filter(([k]) => filled[k as keyof FormErrors].trim() !== ''))) as FormErrors;
  const valid = Object.keys(errors).length === 0;
  const set = (p: Partial<ProviderForm>) => setForm({ ...form, ...p });
  const savedKey = saved?.key_source === 'keyring' || saved?.key_source === 'file';

  const test = async () => {
    setProbing(true);
    setProbe(null);
    try {
      setProbe(await backend.settingsTestProvider(toInput(form)));
    } catch (e) {
      setProbe({ status: 'error', message: errorMessage(e), models: [] });
    } finally {
      setProbing(false);
    }
  };

  return (
    <form
      className="st-form"
      data-testid="settings-form"
      onSubmit={(e) => {
        e.preventDefault();
        setTouched(true);
        if (valid) onSave(form);
      }}
    >
      <h4>{form.isNew ? 'Add a provider' : `Edit ${form.name}`}</h4>
      <div className="st-grid">
        <label htmlFor="st-name">Name</label>
        <div>
          <input
            id="st-name"
            className={`input mono${shown.name ? ' invalid' : ''}`}
            data-testid="settings-name"
            value={form.name}
            readOnly={!form.isNew}
            placeholder="local"
            spellCheck={false}
            autoFocus={form.isNew}
            onChange={(e) => set({ name: e.target.value })}
          />
          {shown.name ? <div className="st-field-error" data-testid="settings-error-name">{shown.name}</div> : null}
        </div>

        <label htmlFor="st-wire">Wire format</label>
        <select id="st-wire" className="input" data-testid="settings-wire" value={form.wire} onChange={(e) => set({ wire: e.target.value as ProviderForm['wire'] })}>
          <option value="openai">openai (chat completions: OpenAI, Ollama, vLLM, llama.cpp, OpenRouter…)</option>
          <option value="anthropic">anthropic (Messages API)</option>
        </select>

        <label htmlFor="st-url">Base URL</label>
        <div>
          <input
            id="st-url"
            className={`input mono${shown.baseUrl ? ' invalid' : ''}`}
            data-testid="settings-base-url"
            value={form.baseUrl}
            placeholder={form.builtin ? 'the built-in URL' : 'http://127.0.0.1:8080/v1'}
            spellCheck={false}
            onChange={(e) => set({ baseUrl: e.target.value })}
          />
          {shown.baseUrl ? <div className="st-field-error" data-testid="settings-error-base-url">{shown.baseUrl}</div> : null}
        </div>

        <label htmlFor="st-key">API key</label>
        <div>
          <input
            id="st-key"
            type="password"
            autoComplete="off"
            className={`input mono${shown.key ? ' invalid' : ''}`}
            data-testid="settings-key"
            value={form.key}
            placeholder={saved?.key_masked ? `saved: ${saved.key_masked} (type to replace)` : 'paste the key (optional for local servers)'}
            spellCheck={false}
            onChange={(e) => set({ key: e.target.value })}
          />
          {shown.key ? <div className="st-field-error">{shown.key}</div> : null}
          {saved?.key_source === 'env' ? (
            <div className="muted small">The environment variable {saved.key_var} is set: it wins over a key saved here.</div>
          ) : null}
          {savedKey && !form.key ? (
            <label className="small st-check">
              <input type="checkbox" data-testid="settings-clear-key" checked={form.clearKey} onChange={(e) => set({ clearKey: e.target.checked })} /> Forget the saved key
            </label>
          ) : null}
        </div>

        <label htmlFor="st-models">Models</label>
        <div>
          <textarea
            id="st-models"
            className={`input mono${shown.models ? ' invalid' : ''}`}
            data-testid="settings-models"
            rows={2}
            value={form.models}
            placeholder={'one per line, e.g.\nqwen2.5:7b'}
            spellCheck={false}
            onChange={(e) => set({ models: e.target.value })}
          />
          {shown.models ? <div className="st-field-error">{shown.models}</div> : null}
        </div>

        <label htmlFor="st-timeout">Timeout (s)</label>
        <div>
          <input
            id="st-timeout"
            className={`input${shown.timeout ? ' invalid' : ''}`}
            data-testid="settings-timeout"
            inputMode="numeric"
            value={form.timeout}
            placeholder="120"
            style={{ width: 90 }}
            onChange={(e) => set({ timeout: e.target.value })}
          />
          {shown.timeout ? <div className="st-field-error">{shown.timeout}</div> : null}
        </div>
      </div>
      {probe ? (
        <div className={`st-probe ${probe.status}`} data-testid="settings-test-result" data-status={probe.status}>
          {probe.status === 'reachable' ? '✓ reachable' : probe.status === 'auth_error' ? '✕ key refused' : probe.status === 'unreachable' ? '✕ unreachable' : '✕ error'}: {probe.message}
          {probe.models.length && probe.status === 'reachable' ? (
            <button type="button" className="link" data-testid="settings-use-models" onClick={() => set({ models: probe.models.slice(0, 50).join('\n') })}>
              use the listed models
            </button>
          ) : null}
        </div>
      ) : null}
      {error ? (
        <div className="rc-error" role="alert" data-testid="settings-form-error">
          {error}
        </div>
      ) : null}
      <div className="st-actions">
        <button type="button" className="btn" data-testid="settings-test" disabled={probing || !!errors.baseUrl || !!errors.name} onClick={() => void test()} title="Ask the server for its model list (5 s timeout)">
          {probing ? 'Testing…' : 'Test connection'}
        </button>
        <div className="spacer" />
        <button type="button" className="btn" data-testid="settings-cancel" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="btn primary" data-testid="settings-save" disabled={busy || (touched && !valid)}>
          {busy ? 'Saving…' : 'Save'}
        </button>
      </div>
    </form>
  );
}
