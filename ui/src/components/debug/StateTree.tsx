// The state at the selected step as an expandable tree, with the change from the step before
// marked on each row (added / changed / removed), message lists shown as a conversation, a search
// that filters rows, and in-place editing of top-level values while the run is paused. While
// the run is paused inside a nested run, the nested run's state (from its `nested_paused`), with
// the change since its pause before; edits then go to the nested run.
// Secrets are masked (a second layer behind the engine's redaction; rule in `untrusted.ts`):
// values under secret-looking names (api_key, apiKey, ACCESS_TOKEN, db_password, client_secret…)
// and API-key-shaped strings anywhere show as `••••••` with no reveal, are not searchable by their
// text, and a top-level value holding one cannot be edited here (the editor would show it).
import { createContext, useContext, useDeferredValue, useMemo, useRef, useState, useEffect, type ReactNode } from 'react';
import { isLive, latestStep, nestedPause, shownNestedPause, useDebug, useDebugStore, type StateView } from '../../debug/store';
import { diffIndex, loadedSkills, nestedDiff, pathKey, type DiffEntry, type DiffKind } from '../../debug/model';
import { SkillsBar } from './SkillsBar';
import { Conversation, isMessageList } from './Conversation';
import { JsonView, MANY_ENTRIES, Scalar, entriesOf, isContainer, preview, pretty, scalarText, visibleScalar } from './JsonView';
import { hidesAnything, isSecretName, redact } from '../../untrusted';

type Removed = { key: string; before: unknown };

interface Filter {
  /** Rows shown: matches and their ancestors. */
  visible: Set<string>;
  /** Rows whose key or value matched (a matching container shows all of its contents). */
  matched: Set<string>;
  /** Rows with a match below them (forced open). */
  inner: Set<string>;
}

interface Editing {
  key: string;
  text: string;
  error: string | null;
  busy: boolean;
}

interface TreeCtx {
  index: Map<string, DiffKind>;
  direct: Map<string, DiffEntry>;
  removedBy: Map<string, Removed[]>;
  filter: Filter | null;
  open: Map<string, boolean>;
  toggle(path: string, now: boolean): void;
  all: Set<string>;
  showAll(path: string): void;
  raw: Set<string>;
  toggleRaw(path: string): void;
  editable: boolean;
  editing: Editing | null;
  startEdit(key: string, value: unknown): void;
  setEditText(text: string): void;
  cancelEdit(): void;
  saveEdit(): void;
}

const Ctx = createContext<TreeCtx | null>(null);

const MARK: Record<DiffKind, string> = { added: '+', changed: '~', removed: '−' };
const EDITABLE_STATES = new Set(['paused', 'interrupted', 'ready']);

/** Removed entries by the path of their parent (`""` = top level). */
function removedByParent(diff: DiffEntry[]): Map<string, Removed[]> {
  const out = new Map<string, Removed[]>();
  for (const e of diff) {
    if (e.kind !== 'removed' || e.path.length === 0) continue;
    const parent = pathKey(e.path.slice(0, -1));
    const list = out.get(parent) ?? [];
    list.push({ key: String(e.path[e.path.length - 1]), before: e.before });
    out.set(parent, list);
  }
  return out;
}

function textOf(v: unknown): string {
  return typeof v === 'string' ? v : scalarText(v);
}

/** Rows matching `q` (lower case) by key or value text, with their ancestors. */
export function searchState(state: unknown, removedBy: Map<string, Removed[]>, q: string): Filter {
  const visible = new Set<string>();
  const matched = new Set<string>();
  const inner = new Set<string>();
  const visit = (v: unknown, path: string[], depth: number, above: boolean): boolean => {
    const key = path.join('.');
    const name = path[path.length - 1];
    const secret = above || (name !== undefined && isSecretName(name));
    let self = name !== undefined && name.toLowerCase().includes(q);
    let below = false;
    if (isContainer(v)) {
      if (depth < 64) {
        for (const [k, c] of entriesOf(v)) if (visit(c, [...path, k], depth + 1, secret)) below = true;
      }
      // Only what is shown can match: hidden values never do.
    } else if (!self && path.length > 0) self = textOf(visibleScalar(v, secret).value).toLowerCase().includes(q);
    for (const r of removedBy.get(key) ?? []) if (visit(r.before, [...path, r.key], depth + 1, secret)) below = true;
    if (self) matched.add(key);
    if (below) inner.add(key);
    if (self || below) visible.add(key);
    return self || below;
  };
  visit(state, [], 0, false);
  return { visible, matched, inner };
}

function ChangedValue({ entry, secret }: { entry: DiffEntry; secret: boolean }) {
  const [open, setOpen] = useState(false);
  const small = (v: unknown) => !isContainer(v) && textOf(v).length <= 60;
  // The old value as it may be shown (tooltips and text are not masked by `Scalar`).
  const before = redact(entry.before, secret);
  if (small(entry.before) && small(entry.after)) {
    return (
      <span className="st-val" title={`was ${scalarText(before)}`}>
        <span className="st-old">{scalarText(before)}</span>
        <span className="st-arrow">→</span>
        <Scalar value={entry.after} secret={secret} />
      </span>
    );
  }
  return (
    <>
      <span className="st-val" title={`was ${preview(before, 200)}`}>
        {isContainer(entry.after) ? <span className="muted">{preview(entry.after)}</span> : <Scalar value={entry.after} secret={secret} />}
      </span>
      <button type="button" className="icon-btn small" onClick={() => setOpen(!open)} title="Show the old and the new value">
        {open ? 'hide old' : 'old → new'}
      </button>
      {open ? (
        <div className="st-oldnew" style={{ flexBasis: '100%' }}>
          <JsonView value={entry.before} open={2} secret={secret} />
          <span className="st-arrow">→</span>
          <JsonView value={entry.after} open={2} secret={secret} />
        </div>
      ) : null}
    </>
  );
}

function Editor({ depth }: { depth: number }) {
  const ctx = useContext(Ctx)!;
  const ref = useRef<HTMLTextAreaElement>(null);
  const e = ctx.editing!;
  useEffect(() => {
    ref.current?.focus();
  }, []);
  return (
    <div className="st-editor" style={{ '--depth': depth } as React.CSSProperties}>
      <textarea
        ref={ref}
        className={`input${e.error ? ' invalid' : ''}`}
        data-testid="state-edit-input"
        spellCheck={false}
        rows={Math.min(14, Math.max(3, e.text.split('\n').length + 1))}
        value={e.text}
        onChange={(ev) => ctx.setEditText(ev.target.value)}
        onKeyDown={(ev) => {
          if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
            ev.preventDefault();
            ctx.saveEdit();
          } else if (ev.key === 'Escape') {
            ev.preventDefault();
            ev.stopPropagation();
            ctx.cancelEdit();
          }
        }}
        aria-label={`New value of ${e.key} (JSON)`}
      />
      {e.error ? (
        <div className="st-editor-error" data-testid="state-edit-error" role="alert">
          {e.error}
        </div>
      ) : null}
      <div className="st-editor-actions">
        <button type="button" className="btn primary" data-testid="state-edit-save" disabled={e.busy} onClick={() => ctx.saveEdit()}>
          Save
        </button>
        <button type="button" className="btn" data-testid="state-edit-cancel" onClick={() => ctx.cancelEdit()}>
          Cancel
        </button>
        <span className="muted small">
          JSON · <kbd>Ctrl</kbd>+<kbd>Enter</kbd> saves, <kbd>Esc</kbd> cancels · the run continues with the new value
        </span>
      </div>
    </div>
  );
}

interface NodeProps {
  name: string;
  path: string[];
  value: unknown;
  depth: number;
  /** Inside a removed row (the old value's contents). */
  gone?: boolean;
  /** This row is a removed entry (value = the old value). */
  removed?: boolean;
  /** Filtering applies to this row's children. */
  filtered: boolean;
  /** Under a secret name (every scalar below is hidden). */
  secret?: boolean;
}

function StateNode({ name, path, value, depth, gone, removed, filtered, secret: above = false }: NodeProps) {
  const ctx = useContext(Ctx)!;
  const secret = above || isSecretName(name);
  const key = path.join('.');
  const mark: DiffKind | '' = gone ? '' : removed ? 'removed' : (ctx.index.get(key) ?? '');
  const entry = ctx.direct.get(key);
  const container = isContainer(value);
  const matchedSelf = !!ctx.filter?.matched.has(key);
  const childFiltered = filtered && !matchedSelf;
  const forced = filtered && !!ctx.filter?.inner.has(key);
  const autoOpen = forced || (!gone && !removed && mark === 'changed' && !entry) || (depth === 0 && container && entriesOf(value).length <= 20);
  const open = container && (ctx.open.get(key) ?? autoOpen);
  const messages = container && isMessageList(value) && !ctx.raw.has(key) && !secret;
  const topLevel = depth === 0;
  const editingMe = topLevel && ctx.editing?.key === name;
  const editable = topLevel && ctx.editable && !removed && !gone;
  // The editor would show the value as it is: values holding something hidden are not edited here.
  const holdsHidden = useMemo(() => editable && hidesAnything(value, secret), [editable, value, secret]);
  const canEdit = editable && !holdsHidden;

  let children: ReactNode = null;
  if (open && container) {
    if (messages) {
      const list = value as unknown[];
      const extra = ctx.removedBy.get(key) ?? [];
      const all = [...list, ...extra.map((r) => r.before)];
      const diffs = [
        ...list.map((_, i) => (gone ? undefined : ctx.index.get(`${key}.${i}`))),
        ...extra.map(() => 'removed' as const),
      ];
      let only: Set<number> | undefined;
      if (childFiltered && ctx.filter) {
        only = new Set();
        list.forEach((_, i) => ctx.filter!.visible.has(`${key}.${i}`) && only!.add(i));
      }
      children = (
        <div className="st-conv" style={{ '--depth': depth } as React.CSSProperties}>
          <ConversationTail messages={all} diffs={diffs} only={only} path={key} />
        </div>
      );
    } else {
      const entries = entriesOf(value);
      const removedKids = gone || removed ? [] : (ctx.removedBy.get(key) ?? []);
      const limit = childFiltered || ctx.all.has(key) ? Infinity : MANY_ENTRIES;
      const shown = entries.filter(([k]) => !childFiltered || ctx.filter!.visible.has(`${key}.${k}`)).slice(0, limit);
      const hidden = entries.length - shown.length;
      children = (
        <>
          {shown.map(([k, v]) => (
            <StateNode key={k} name={k} path={[...path, k]} value={v} depth={depth + 1} gone={gone || removed} filtered={childFiltered} secret={secret} />
          ))}
          {removedKids
            .filter((r) => !childFiltered || ctx.filter!.visible.has(`${key}.${r.key}`))
            .map((r) => (
              <StateNode key={`removed:${r.key}`} name={r.key} path={[...path, r.key]} value={r.before} depth={depth + 1} removed filtered={childFiltered} secret={secret} />
            ))}
          {!childFiltered && hidden > 0 ? (
            <div className="state-row" style={{ '--depth': depth + 1 } as React.CSSProperties}>
              <span className="diff-mark" />
              <button type="button" className="link small" onClick={() => ctx.showAll(key)}>
                show all ({hidden} more)
              </button>
            </div>
          ) : null}
          {entries.length === 0 && removedKids.length === 0 ? (
            <div className="state-row muted" style={{ '--depth': depth + 1 } as React.CSSProperties}>
              <span className="diff-mark" />
              {Array.isArray(value) ? '(empty list)' : '(empty)'}
            </div>
          ) : null}
        </>
      );
    }
  }

  return (
    <>
      <div
        className={`state-row${mark ? ` diff-${mark}` : ''}${gone ? ' diff-removed' : ''}${mark === 'changed' && !entry ? ' inner-changed' : ''}`}
        style={{ '--depth': depth } as React.CSSProperties}
        data-testid="state-row"
        data-path={key}
        data-diff={mark}
        title={mark === 'removed' ? 'removed since the step before' : mark === 'added' ? 'added since the step before' : undefined}
      >
        {container ? (
          <button type="button" className="jv-toggle" aria-expanded={open} onClick={() => ctx.toggle(key, !open)} title={open ? 'Collapse' : 'Expand'}>
            {open ? '▾' : '▸'}
          </button>
        ) : (
          <span className="jv-toggle-space" />
        )}
        <span className="diff-mark">{mark ? MARK[mark] : ''}</span>
        <span className="st-key">
          {name}
          <span className="jv-colon">: </span>
        </span>
        {entry?.kind === 'changed' && !gone ? (
          <ChangedValue entry={entry} secret={secret} />
        ) : container ? (
          <span className="st-val muted">{preview(value)}</span>
        ) : (
          <span className="st-val">
            <Scalar value={value} secret={secret} />
          </span>
        )}
        <span className={`st-actions${editingMe ? ' shown' : ''}`}>
          {container && isMessageList(value) && !secret ? (
            <button type="button" className="icon-btn" data-testid="state-raw-toggle" onClick={() => ctx.toggleRaw(key)} title="Switch between the conversation and the raw tree">
              {ctx.raw.has(key) ? 'conversation' : 'raw'}
            </button>
          ) : null}
          {canEdit ? (
            <button type="button" className="icon-btn" data-testid="state-edit" onClick={() => ctx.startEdit(name, value)} title={`Edit ${name} (JSON); the run continues with the new value`}>
              ✎ edit
            </button>
          ) : holdsHidden ? (
            <span className="muted small" data-testid="state-edit-hidden" title="Holds a value hidden as a secret, so it cannot be edited here">
              🔒
            </span>
          ) : null}
        </span>
      </div>
      {editingMe ? <Editor depth={depth} /> : null}
      {children}
    </>
  );
}

/** A conversation showing the last messages first-cut: long lists start with the newest 50. */
function ConversationTail({ messages, diffs, only, path }: { messages: unknown[]; diffs: (string | undefined)[]; only?: Set<number>; path: string }) {
  const ctx = useContext(Ctx)!;
  const all = ctx.all.has(path) || only !== undefined;
  const start = all ? 0 : Math.max(0, messages.length - MANY_ENTRIES);
  let shownOnly = only;
  if (start > 0) {
    shownOnly = new Set();
    for (let i = start; i < messages.length; i++) shownOnly.add(i);
  }
  return (
    <>
      {start > 0 ? (
        <button type="button" className="link small" onClick={() => ctx.showAll(path)}>
          show all ({start} earlier messages)
        </button>
      ) : null}
      <Conversation messages={messages} diffs={diffs} only={shownOnly} />
    </>
  );
}

export function StateTree() {
  const dbg = useDebugStore();
  const topView = useDebug((s) => s.stateView);
  const nested = useDebug(shownNestedPause);
  const sv: StateView | null = useMemo(
    () => (nested ? { step: nested.step, state: nested.state, prev: nested.prev, diff: nestedDiff(nested), loading: false, error: null } : topView),
    [nested, topView],
  );
  const editable = useDebug((s) => isLive(s) && s.viewing == null && !s.remoteRun && !!s.status && (EDITABLE_STATES.has(s.status.state) || nestedPause(s) != null));
  const latest = useDebug(latestStep);
  const [query, setQuery] = useState('');
  const q = useDeferredValue(query.trim().toLowerCase());
  const [open, setOpen] = useState<Map<string, boolean>>(() => new Map());
  const [all, setAll] = useState<Set<string>>(() => new Set());
  const [raw, setRaw] = useState<Set<string>>(() => new Set());
  const [editing, setEditing] = useState<Editing | null>(null);
  const editRef = useRef<Editing | null>(null);
  editRef.current = editing;

  const diff = sv?.diff;
  const state = sv?.state ?? null;
  const index = useMemo(() => diffIndex(diff ?? []), [diff]);
  const direct = useMemo(() => new Map((diff ?? []).filter((e) => e.path.length).map((e) => [pathKey(e.path), e])), [diff]);
  const removedBy = useMemo(() => removedByParent(diff ?? []), [diff]);
  const filter = useMemo(() => (q && state ? searchState(state, removedBy, q) : null), [q, state, removedBy]);

  const ctx: TreeCtx = {
    index,
    direct,
    removedBy,
    filter,
    open,
    toggle: (path, now) => setOpen((m) => new Map(m).set(path, now)),
    all,
    showAll: (path) => setAll((s) => new Set(s).add(path)),
    raw,
    toggleRaw: (path) =>
      setRaw((s) => {
        const n = new Set(s);
        if (n.has(path)) n.delete(path);
        else n.add(path);
        return n;
      }),
    editable,
    editing,
    startEdit: (key, value) => setEditing({ key, text: pretty(value), error: null, busy: false }),
    setEditText: (text) => setEditing((e) => (e ? { ...e, text, error: null } : e)),
    cancelEdit: () => setEditing(null),
    saveEdit: () => {
      const e = editRef.current;
      if (!e || e.busy) return;
      setEditing({ ...e, busy: true });
      void dbg
        .getState()
        .editState(e.key, e.text)
        .then(
          (err) => setEditing((cur) => (cur && cur.key === e.key ? (err ? { ...cur, busy: false, error: err } : null) : cur)),
          (x: unknown) => setEditing((cur) => (cur ? { ...cur, busy: false, error: x instanceof Error ? x.message : String(x) } : cur)),
        );
    },
  };

  const counts = { added: 0, changed: 0, removed: 0 };
  for (const e of diff ?? []) counts[e.kind]++;
  const total = (diff ?? []).length;
  // The top-level keys that changed: shown next to the summary, a click filters to one.
  const changedKeys = [...new Set((diff ?? []).map((d) => String(d.path[0] ?? '')))].filter(Boolean);

  let body: ReactNode;
  if (!sv) body = <div className="st-msg muted small">Select a step in the timeline to see the state after it.</div>;
  else if (sv.error) body = <div className="st-msg error">Could not load the state after step {sv.step}: {sv.error}</div>;
  else if (!state) body = <div className="st-msg muted small">{sv.loading ? `Loading the state after step ${sv.step}…` : 'No state.'}</div>;
  else {
    const top = Object.entries(state);
    const removedTop = removedBy.get('') ?? [];
    const visibleTop = filter ? top.filter(([k]) => filter.visible.has(k)) : top;
    const visibleRemoved = filter ? removedTop.filter((r) => filter.visible.has(r.key)) : removedTop;
    body = (
      <div className="st-scroll" role="tree" aria-label="State">
        {visibleTop.map(([k, v]) => (
          <StateNode key={k} name={k} path={[k]} value={v} depth={0} filtered={!!filter} />
        ))}
        {visibleRemoved.map((r) => (
          <StateNode key={`removed:${r.key}`} name={r.key} path={[r.key]} value={r.before} depth={0} removed filtered={!!filter} />
        ))}
        {top.length === 0 && removedTop.length === 0 ? <div className="st-msg muted small">(the state is empty)</div> : null}
        {filter && visibleTop.length === 0 && visibleRemoved.length === 0 ? <div className="st-msg muted small">Nothing matches “{query.trim()}”.</div> : null}
      </div>
    );
  }

  return (
    <div className="state-tree" data-testid="state-tree" data-step={sv?.step ?? ''} data-loading={sv?.loading ? 'true' : 'false'} data-nested={nested ? nested.run : ''}>
      <Ctx.Provider value={ctx}>
        <div className="dp-toolbar">
          {nested ? (
            <strong className="small st-nested-title" data-testid="state-nested-title" title={`the state of the nested run ${nested.run}`}>
              Nested run {nested.agent || nested.run} (in {nested.node}): {nested.step === 0 ? 'initial state' : `state after its step ${nested.step}`}
            </strong>
          ) : (
            <strong className="small">{sv ? (sv.step === 0 ? 'Initial state' : `State after step ${sv.step}`) : 'State'}</strong>
          )}
          {sv && (nested ? nested.prevStep != null : sv.step > 0) && !sv.error ? (
            <span className="st-summary" data-testid="state-summary">
              {total} changed since {nested ? `its step ${nested.prevStep}` : `step ${sv.step - 1}`}
              {total ? (
                <>
                  {' ('}
                  <span className="n-added">+{counts.added}</span> <span className="n-changed">~{counts.changed}</span>{' '}
                  <span className="n-removed">−{counts.removed}</span>
                  {')'}
                  {changedKeys.slice(0, 4).map((k) => (
                    <button
                      key={k}
                      type="button"
                      className="st-chip"
                      data-testid="state-changed-key"
                      title={`Show only ${k}`}
                      onClick={() => setQuery(query.trim() === k ? '' : k)}
                    >
                      {k}
                    </button>
                  ))}
                  {changedKeys.length > 4 ? <span className="muted small"> +{changedKeys.length - 4} more</span> : null}
                </>
              ) : null}
            </span>
          ) : null}
          {sv?.loading && state ? <span className="muted small">updating…</span> : null}
          <span className="spacer" />
          <input
            className="input"
            type="search"
            data-testid="state-search"
            placeholder="Filter by key or value…"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            onKeyDown={(e) => e.key === 'Escape' && setQuery('')}
            spellCheck={false}
            aria-label="Filter the state by key or value"
          />
        </div>
        {nested ? (
          <div className="st-note" data-testid="state-nested-note">
            The state of the nested run the run is paused in{editable ? '; edits change it' : ''} · Step Out (Shift+F11) returns to the parent.
          </div>
        ) : editable && sv && sv.step !== latest ? (
          <div className="st-note">Edits change the current state (after step {latest}), not the step shown.</div>
        ) : null}
        {!nested && sv?.warning && !sv.error ? (
          <div className="st-note st-warning" data-testid="state-warning" role="note">
            {sv.warning}
          </div>
        ) : null}
        {state && !sv?.error ? <SkillsBar skills={loadedSkills(state, diff ?? [])} /> : null}
        {body}
      </Ctx.Provider>
    </div>
  );
}
