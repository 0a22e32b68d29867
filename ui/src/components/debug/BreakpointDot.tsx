// The breakpoint gutter dot at a node card's left edge, and its in-place condition editor.
import { useContext, useEffect, useRef, useState } from 'react';
import { NodeToolbar, Position } from '@xyflow/react';
import { useStore } from 'zustand';
import '../../debug/debug.css';
import { DebugContext, type DebugState } from '../../debug/store';
import { useApp } from '../../store';
import type { StoreApi } from 'zustand';
import { bpEditor } from '../../debug/bpEditor';
import { breakpointCondition, breakpointMark, useBpEditorOpen, useDebugSafe } from './canvasOverlay';

const stop = (e: React.SyntheticEvent) => e.stopPropagation();
/** Keys stay inside the editor, except the debugger's function keys. */
const keepKeys = (e: React.KeyboardEvent) => {
  if (!/^F\d+$/.test(e.key)) e.stopPropagation();
};

export function BreakpointDot({ node }: { node: string }) {
  const dbg = useContext(DebugContext);
  const mark = useDebugSafe((s) => breakpointMark(s, node), '');
  const condition = useDebugSafe((s) => breakpointCondition(s, node), '');
  const editing = useBpEditorOpen(node);
  /** The condition before the first click of a double click (the two clicks toggle twice). */
  const before = useRef<string | null>(null);
  const dot = useRef<HTMLButtonElement>(null);
  if (!dbg) return null;

  const active = mark === 'active' || mark === 'conditional';
  const title =
    mark === 'conditional'
      ? `Breakpoint when ${condition}\nclick: remove · double-click / Shift+F9: edit the condition`
      : mark === 'active'
        ? 'Breakpoint (F9)\nclick: remove · double-click / Shift+F9: add a condition'
        : mark === 'disabled'
          ? 'Breakpoint (disabled)\nclick: remove'
          : 'Click to break before this node (F9) · double-click for a conditional breakpoint';

  return (
    <>
      <button
        type="button"
        ref={dot}
        className={`bp-dot nodrag nopan${mark ? ` bp-${mark}` : ''}`}
        data-testid="bp-dot"
        data-active={String(active)}
        data-conditional={String(mark === 'conditional')}
        aria-label={active ? `Remove the breakpoint on ${node}` : `Set a breakpoint on ${node}`}
        aria-pressed={active}
        title={title}
        onPointerDown={stop}
        onMouseDown={stop}
        onClick={(e) => {
          e.stopPropagation();
          if (e.detail <= 1) before.current = condition || null;
          void dbg.getState().toggleBreakpoint(node);
        }}
        onDoubleClick={(e) => {
          e.stopPropagation();
          // The two clicks toggled the breakpoint off and on again: bring its condition back.
          const cond = before.current;
          before.current = null;
          if (cond) void dbg.getState().setBreakpointCondition(node, cond);
          bpEditor.getState().open(node, cond);
        }}
      >
        {mark === 'conditional' ? '?' : null}
      </button>
      {editing ? <BreakpointEditor node={node} store={dbg} initial={bpEditor.getState().initial ?? condition} place={placeEditor(dot.current)} /> : null}
    </>
  );
}

type Place = { position: Position; align: 'start' | 'end' };

/** Where the editor goes: below the node (above it in the lower half of the canvas), growing
 *  towards the middle of the canvas, so it stays inside the visible pane. */
function placeEditor(dot: HTMLElement | null): Place {
  const pane = dot?.closest('.react-flow')?.getBoundingClientRect();
  const card = dot?.closest('.react-flow__node')?.getBoundingClientRect();
  if (!pane || !card || !pane.height) return { position: Position.Bottom, align: 'start' };
  const lower = card.top + card.height / 2 - pane.top > pane.height * 0.6;
  const right = card.left + card.width / 2 - pane.left > pane.width / 2;
  return { position: lower ? Position.Top : Position.Bottom, align: right ? 'end' : 'start' };
}

function BreakpointEditor({ node, store, initial, place }: { node: string; store: StoreApi<DebugState>; initial: string; place: Place }) {
  const dialect = useApp((s) => s.view?.dialect ?? null);
  const hasBp = useStore(store, (s) => s.breakpoints.some((b) => b.node === node));
  const [text, setText] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);

  const close = () => bpEditor.getState().close();
  const save = async () => {
    setBusy(true);
    const err = await store.getState().setBreakpointCondition(node, text);
    setBusy(false);
    if (err) {
      setError(err);
      input.current?.focus();
    } else close();
  };

  const placeholder =
    dialect === 'loki'
      ? 'template, e.g. {{count}} (empty: always)'
      : 'CEL, e.g. state.turns >= 3 (empty: always)';

  return (
    <NodeToolbar isVisible position={place.position} offset={8} align={place.align}>
      <div
        className="bp-editor nodrag nopan nowheel"
        data-testid="bp-editor"
        role="dialog"
        aria-label={`Breakpoint condition on ${node}`}
        onClick={stop}
        onDoubleClick={stop}
        onPointerDown={stop}
        onMouseDown={stop}
        onKeyDown={keepKeys}
      >
        <label className="bp-editor-label" htmlFor={`bp-cond-${node}`}>
          Break before <b>{node}</b> when {dialect === 'loki' ? '(template)' : '(CEL)'}
        </label>
        <input
          id={`bp-cond-${node}`}
          ref={input}
          className={`input mono${error ? ' invalid' : ''}`}
          data-testid="bp-condition"
          value={text}
          placeholder={placeholder}
          spellCheck={false}
          autoComplete="off"
          readOnly={busy}
          aria-busy={busy}
          onChange={(e) => {
            setText(e.target.value);
            setError(null);
          }}
          onKeyDown={(e) => {
            keepKeys(e);
            if (e.key === 'Enter') {
              e.preventDefault();
              if (!busy) void save();
            } else if (e.key === 'Escape') {
              e.preventDefault();
              close();
            }
          }}
        />
        {error ? (
          <div className="bp-error" data-testid="bp-error" role="alert">
            {error}
          </div>
        ) : null}
        <div className="bp-editor-actions">
          <span className="muted small">Enter saves · Esc cancels</span>
          <div className="spacer" />
          {hasBp ? (
            <button
              type="button"
              className="btn danger small"
              onClick={() => {
                void store.getState().toggleBreakpoint(node);
                close();
              }}
            >
              Remove
            </button>
          ) : null}
          <button type="button" className="btn small" onClick={close}>
            Cancel
          </button>
          <button type="button" className="btn primary small" disabled={busy} onClick={() => void save()}>
            Save
          </button>
        </div>
      </div>
    </NodeToolbar>
  );
}
