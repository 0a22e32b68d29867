// The Diff panel: compare the open document with a git revision (default HEAD) or another
// file, list what changed (nodes, edges, reorders, document fields), and colour the canvas
// (NodeCard / EdgeLine read the same store). Removed nodes and edges are listed here as ghosts:
// they have no place in the current layout.
import { useEffect, useRef } from 'react';
import { useApp, useAppStore } from '../store';
import type { EdgeChange, NodeChange } from '../contract/diff';
import { agentDiff, removedEdges, removedNodes, summary } from './model';
import { diffStore, useDiff } from './store';

const diffStoreHasDiff = () => diffStore.getState().diff !== null;
import { DiffFieldList } from './DiffFields';
import './diff.css';

function edgeText(e: EdgeChange): string {
  const label = e.label ? ` [${e.label}]` : '';
  const was: string[] = [];
  if (e.old_label !== null) was.push(`was [${e.old_label}]`);
  if (e.old_to !== null) was.push(`was → ${e.old_to}`);
  return `${e.from} → ${e.to} (${e.kind})${label}${was.length ? ` — ${was.join(', ')}` : ''}`;
}

function NodeRow({ n }: { n: NodeChange }) {
  const store = useAppStore();
  const name = n.change === 'renamed' && n.old_id ? `${n.old_id} → ${n.id}` : n.id;
  const pick = () => {
    if (n.change !== 'removed') store.getState().select({ type: 'node', id: n.id }, { focus: true });
  };
  return (
    <li className={`sy-diff-row sy-diff-${n.change}`} data-testid="diff-node" data-change={n.change} data-node-id={n.id}>
      <button type="button" className="sy-diff-link" onClick={pick} disabled={n.change === 'removed'}>
        <span className="sy-diff-sign">{n.change === 'added' ? '+' : n.change === 'removed' ? '−' : n.change === 'renamed' ? '→' : '~'}</span>
        {name} <span className="sy-diff-kind">({n.old_kind ? `${n.old_kind} → ${n.kind}` : n.kind})</span>
      </button>
      {n.fields.length ? <DiffFieldList fields={n.fields} /> : null}
    </li>
  );
}

export function DiffPanel() {
  const store = useAppStore();
  const hasView = useApp((s) => s.view !== null);
  const agent = useApp((s) => s.view?.agent ?? null);
  const open = useDiff((s) => s.open);
  const against = useDiff((s) => s.against);
  const diff = useDiff((s) => s.diff);
  const diffAgent = useDiff((s) => s.agent);
  const error = useDiff((s) => s.error);
  const busy = useDiff((s) => s.busy);
  const setOpen = useDiff((s) => s.setOpen);
  const setAgainst = useDiff((s) => s.setAgainst);
  const compare = useDiff((s) => s.compare);
  const clear = useDiff((s) => s.clear);
  const path = useApp((s) => s.view?.path ?? null);
  const revision = useApp((s) => s.view?.revision ?? 0);
  // Another document: the diff was of the old one. An edit: compare again (the shown diff is live).
  const last = useRef<{ path: string | null; revision: number; agent: string | null }>({ path, revision, agent });
  useEffect(() => {
    const prev = last.current;
    last.current = { path, revision, agent };
    if (prev.path !== path) clear();
    else if ((prev.revision !== revision || prev.agent !== agent) && diffStoreHasDiff()) void compare(store.getState().backend, agent);
  }, [path, revision, agent, clear, compare, store]);
  if (!hasView) return null;
  const run = () => void compare(store.getState().backend, agent);
  const a = agentDiff(diff, diffAgent);
  const ghosts = removedNodes(diff, diffAgent);
  const ghostEdges = removedEdges(diff, diffAgent);
  return (
    <>
      <button type="button" className="sy-diff-toggle" data-testid="diff-toggle" aria-pressed={open} onClick={() => setOpen(!open)} title="Compare with git HEAD or another file">
        Diff{diff && !diff.same ? ' •' : ''}
      </button>
      {open ? (
        <section className="sy-diff-panel" data-testid="diff-panel" aria-label="Graph diff">
          <div className="sy-diff-head">
            <label>
              against{' '}
              <input
                className="input"
                data-testid="diff-against"
                value={against}
                spellCheck={false}
                onChange={(e) => setAgainst(e.target.value)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter') run();
                }}
                aria-label="A git revision (HEAD, HEAD~1, a tag) or another agent file"
              />
            </label>
            <button type="button" className="btn" data-testid="diff-compare" disabled={busy} onClick={run}>
              {busy ? 'Comparing…' : 'Compare'}
            </button>
            {diff ? (
              <button type="button" className="btn" data-testid="diff-clear" onClick={clear}>
                Clear
              </button>
            ) : null}
          </div>
          {error ? (
            <p className="sy-diff-error" data-testid="diff-error">
              {error}
            </p>
          ) : null}
          {diff ? (
            <div className="sy-diff-body">
              <p data-testid="diff-summary">{summary(diff, diffAgent)}</p>
              {a?.change ? <p>agent {a.change}{a.old_agent ? ` (was ${a.old_agent})` : ''}</p> : null}
              <ul className="sy-diff-list">
                {a?.nodes.filter((n) => n.change !== 'removed').map((n) => <NodeRow key={`n-${n.id}`} n={n} />)}
              </ul>
              {ghosts.length ? (
                <>
                  <h4>Removed (ghosts)</h4>
                  <div className="sy-diff-ghosts">
                    {ghosts.map((n) => (
                      <div key={n.id} className="sy-node sy-diff-ghost" data-testid="diff-ghost" data-node-id={n.id} title={`${n.id} (${n.kind}) was removed`}>
                        <span className="sy-name">{n.id}</span>
                        <span className="sy-kind">{n.kind}</span>
                      </div>
                    ))}
                  </div>
                </>
              ) : null}
              {a && a.edges.length ? (
                <>
                  <h4>Edges</h4>
                  <ul className="sy-diff-list">
                    {a.edges.map((e, i) => (
                      <li key={i} className={`sy-diff-row sy-diff-${e.change}${ghostEdges.includes(e) ? ' sy-diff-ghost-edge' : ''}`} data-testid="diff-edge" data-change={e.change}>
                        <span className="sy-diff-sign">{e.change === 'added' ? '+' : e.change === 'removed' ? '−' : '~'}</span>
                        {edgeText(e)}
                      </li>
                    ))}
                  </ul>
                </>
              ) : null}
              {a && a.reorders.length ? (
                <>
                  <h4>Order</h4>
                  <ul className="sy-diff-list">
                    {a.reorders.map((r) => (
                      <li key={`${r.node}-${r.kind}`} className="sy-diff-row sy-diff-changed" data-testid="diff-reorder">
                        ↕ {r.kind === 'route' ? 'options' : 'branches'} of {r.node}: was {r.old.join(', ')}; now {r.new.join(', ')}
                      </li>
                    ))}
                  </ul>
                </>
              ) : null}
              {diff.fields.length ? (
                <>
                  <h4>Outside the graph</h4>
                  <DiffFieldList fields={diff.fields} />
                </>
              ) : null}
              {a === null && !diff.same ? <p>Changes are in other agents of the file.</p> : null}
              {diff.same ? null : <p className="sy-diff-note">Values as written: environment placeholders are not filled in.</p>}
            </div>
          ) : null}
        </section>
      ) : null}
    </>
  );
}
