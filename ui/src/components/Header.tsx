import { useEffect, useRef, useState } from 'react';
import { useApp, useAppStore } from '../store';
import { buildSvg, svgToPngBase64 } from '../exportDiagram';
import { useDarkTheme } from '../theme';
import type { ExportFormat } from '../types';
import { BundleSwitcher } from './BundlePanel';
import { isRemotePath } from '../debug/types';

function SearchBox() {
  const store = useAppStore();
  const search = useApp((s) => s.search);
  const focusTick = useApp((s) => s.searchFocus);
  const nodes = useApp((s) => s.view?.nodes);
  const ref = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (focusTick > 0) {
      ref.current?.focus();
      ref.current?.select();
    }
  }, [focusTick]);
  return (
    <>
      <input
        ref={ref}
        data-testid="search"
        className="input search"
        type="search"
        placeholder="Find node…  (Ctrl+F)"
        value={search}
        list="sy-node-names"
        onChange={(e) => store.getState().setSearch(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') store.getState().searchNode(search);
          if (e.key === 'Escape') {
            store.getState().setSearch('');
            ref.current?.blur();
          }
        }}
      />
      <datalist id="sy-node-names">
        {nodes && nodes.length <= 500 ? nodes.map((n) => <option key={n.id} value={n.id} />) : null}
      </datalist>
    </>
  );
}

function ExportMenu() {
  const store = useAppStore();
  const dark = useDarkTheme();
  const [open, setOpen] = useState(false);
  const run = async (format: ExportFormat) => {
    setOpen(false);
    const view = store.getState().view;
    if (!view) return;
    const svg = buildSvg(view, dark);
    if (format === 'svg') return store.getState().exportDiagram('svg', svg);
    try {
      const png = await svgToPngBase64(svg);
      await store.getState().exportDiagram('png', png);
    } catch (e) {
      store.getState().toast('error', `Exporting PNG failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  return (
    <div className="menu">
      <button type="button" className="btn" data-testid="export-button" onClick={() => setOpen(!open)} aria-expanded={open}>
        Export ▾
      </button>
      {open ? (
        <div className="menu-pop" role="menu">
          <button type="button" role="menuitem" data-testid="export-svg" onClick={() => void run('svg')}>
            Diagram as SVG
          </button>
          <button type="button" role="menuitem" data-testid="export-png" onClick={() => void run('png')}>
            Diagram as PNG
          </button>
        </div>
      ) : null}
    </div>
  );
}

export function Header() {
  const store = useAppStore();
  const remoteDoc = useApp((s) => isRemotePath(s.view?.path));
  const fileName = useApp((s) => s.view?.file_name ?? null);
  const path = useApp((s) => s.view?.path ?? '');
  const dirty = useApp((s) => !!s.view?.dirty);
  const canUndo = useApp((s) => !!s.view?.can_undo);
  const canRedo = useApp((s) => !!s.view?.can_redo);
  const dialect = useApp((s) => s.view?.dialect ?? null);
  const agents = useApp((s) => s.view?.agents);
  const agent = useApp((s) => s.view?.agent ?? null);
  const theme = useApp((s) => s.theme);
  const hasView = fileName !== null;

  useEffect(() => {
    document.title = hasView ? `${fileName}${dirty ? ' •' : ''} — Switchyard` : 'Switchyard';
  }, [hasView, fileName, dirty]);

  const nextTheme = theme === 'system' ? 'dark' : theme === 'dark' ? 'light' : 'system';

  return (
    <header className="header">
      <div className="brand" title="Switchyard">
        <span className="logo">⇄</span> Switchyard
      </div>
      {hasView ? (
        <div className="file" title={path}>
          <span className="file-name" data-testid="file-name">
            {fileName}
          </span>
          {dirty ? <span className="dirty-dot" data-testid="dirty-dot" title="Unsaved changes" /> : null}
          {dialect ? <span className="dialect">{dialect}</span> : null}
          {agents && agents.length > 1 ? (
            <select data-testid="agent-select" className="input agent-select" value={agent ?? ''} onChange={(e) => void store.getState().selectAgent(e.target.value)}>
              {agents.map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </select>
          ) : null}
        </div>
      ) : null}
      <div className="spacer" />
      {hasView ? (
        <>
          <SearchBox />
          <div className="btn-group">
            <button type="button" className="btn" data-testid="undo-button" disabled={!canUndo} onClick={() => void store.getState().undo()} title="Undo (Ctrl+Z)">
              ↶ Undo
            </button>
            <button type="button" className="btn" data-testid="redo-button" disabled={!canRedo} onClick={() => void store.getState().redo()} title="Redo (Ctrl+Shift+Z)">
              ↷ Redo
            </button>
          </div>
          <button type="button" className="btn" data-testid="relayout-button" onClick={() => void store.getState().relayout()} title="Drop dragged positions and lay out again">
            Auto-layout
          </button>
          <ExportMenu />
          <button
            type="button"
            className="btn primary"
            data-testid="save-button"
            disabled={remoteDoc}
            onClick={() => void store.getState().save()}
            title={remoteDoc ? "A server's agent file, shown read-only: there is nothing to save here" : 'Save (Ctrl+S)'}
          >
            Save
          </button>
        </>
      ) : null}
      <BundleSwitcher />
      <button type="button" className="btn" data-testid="open-header-button" onClick={() => void store.getState().openDialog()} title="Open (Ctrl+O)">
        Open…
      </button>
      <button type="button" className="btn" data-testid="open-folder-header-button" onClick={() => void store.getState().openFolderDialog()} title="Open an agent folder or a coyote bundle">
        Folder…
      </button>
      <button
        type="button"
        className="btn icon-btn"
        data-testid="settings-button"
        onClick={() => store.getState().openSettings(true)}
        title="Settings: LLM providers, API keys, default model (Ctrl+,)"
        aria-label="Settings"
      >
        ⚙
      </button>
      <button type="button" className="btn icon-btn" data-testid="theme-toggle" onClick={() => store.getState().setTheme(nextTheme)} title={`Theme: ${theme} (click for ${nextTheme})`}>
        {theme === 'system' ? '◐' : theme === 'dark' ? '☾' : '☀'}
      </button>
    </header>
  );
}
