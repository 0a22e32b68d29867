import { useEffect, useRef, useState } from 'react';
import { Compartment, EditorSelection, EditorState, type Text } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { yaml } from '@codemirror/lang-yaml';
import { lintGutter, setDiagnostics, type Diagnostic as CmDiagnostic } from '@codemirror/lint';
import { basicSetup } from '@uiw/codemirror-extensions-basic-setup';
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { tags as t } from '@lezer/highlight';
import { useApp, useAppStore } from '../store';
import { useDarkTheme } from '../theme';
import type { Diagnostic } from '../types';
import { whenIdle } from '../idle';

const SET_TEXT_DELAY_MS = 400;
/** Documents longer than this get their editor once the canvas has been painted. */
export const DEFER_EDITOR_CHARS = 100_000;

/** Offset of a 1-based line/column in `doc`, clamped into the document. */
export function lineColToOffset(doc: Text, line: number, column: number): number {
  const ln = doc.line(Math.min(Math.max(1, line || 1), doc.lines));
  return Math.min(ln.from + Math.max(0, (column || 1) - 1), ln.to);
}

function baseName(p: string): string {
  const parts = p.split(/[\\/]/);
  return parts[parts.length - 1] ?? p;
}

/** Engine diagnostics → CodeMirror lint diagnostics (only those about the file being shown). */
export function toCmDiagnostics(doc: Text, diags: Diagnostic[], fileName?: string): CmDiagnostic[] {
  const out: CmDiagnostic[] = [];
  for (const d of diags) {
    if (fileName && d.file && baseName(d.file) !== fileName) continue;
    const from = lineColToOffset(doc, d.line, d.column);
    let to = lineColToOffset(doc, d.end_line || d.line, d.end_column || d.column);
    if (to < from) to = from;
    const severity = d.severity === 'error' ? 'error' : d.severity === 'warning' ? 'warning' : 'info';
    out.push({ from, to, severity, source: d.code, message: d.hint ? `${d.message}\nhint: ${d.hint}` : d.message });
  }
  return out;
}

/** The smallest single replacement turning `a` into `b` (so the cursor survives remote edits). */
export function minimalChange(a: string, b: string): { from: number; to: number; insert: string } | null {
  if (a === b) return null;
  let start = 0;
  const max = Math.min(a.length, b.length);
  while (start < max && a.charCodeAt(start) === b.charCodeAt(start)) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a.charCodeAt(endA - 1) === b.charCodeAt(endB - 1)) {
    endA--;
    endB--;
  }
  return { from: start, to: endA, insert: b.slice(start, endB) };
}

const darkHighlight = HighlightStyle.define([
  { tag: [t.propertyName, t.definition(t.propertyName)], color: '#8fb4ff' },
  { tag: [t.string, t.special(t.string)], color: '#a5d6a7' },
  { tag: [t.number, t.bool, t.null, t.atom], color: '#f0b27a' },
  { tag: [t.comment, t.lineComment, t.blockComment], color: '#7f8796', fontStyle: 'italic' },
  { tag: [t.keyword, t.meta, t.processingInstruction], color: '#d7a6ff' },
  { tag: [t.punctuation, t.separator, t.squareBracket, t.brace], color: '#aab2c0' },
  { tag: [t.labelName, t.typeName, t.tagName], color: '#7dd3c0' },
  { tag: t.invalid, color: '#ff8a80' },
]);

const lightTheme = EditorView.theme({}, { dark: false });
const darkTheme = [syntaxHighlighting(darkHighlight), EditorView.theme(
  {
    '&': { backgroundColor: 'var(--panel)', color: 'var(--text)' },
    '.cm-gutters': { backgroundColor: 'var(--panel-2)', color: 'var(--muted)', borderRight: '1px solid var(--border)' },
    '.cm-activeLine': { backgroundColor: 'rgba(255,255,255,0.04)' },
    '.cm-activeLineGutter': { backgroundColor: 'rgba(255,255,255,0.06)' },
    '&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection': { backgroundColor: 'rgba(99,140,255,0.35)' },
    '.cm-cursor': { borderLeftColor: 'var(--text)' },
  },
  { dark: true },
)];

export function SourceView() {
  const store = useAppStore();
  const text = useApp((s) => s.view?.text);
  const diagnostics = useApp((s) => s.view?.diagnostics);
  const fileName = useApp((s) => s.view?.file_name);
  const reveal = useApp((s) => s.reveal);
  const dark = useDarkTheme();
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<EditorView | null>(null);
  const remote = useRef(false);
  const timer = useRef<number | undefined>(undefined);
  const theme = useRef(new Compartment());
  // Bumped when the editor exists, so the effects below (theme, text, lint, reveal) run for it.
  const [editorReady, setEditorReady] = useState(0);

  useEffect(() => {
    const create = (deferred: boolean) => {
      const onChange = EditorView.updateListener.of((u) => {
        // Moving the cursor into a node's lines selects that node (without scrolling the editor).
        if (u.selectionSet && !u.docChanged && u.transactions.some((tr) => tr.isUserEvent('select'))) {
          const line = u.state.doc.lineAt(u.state.selection.main.head).number;
          const st = store.getState();
          let best: { id: string; span: number } | null = null;
          for (const n of st.view?.nodes ?? []) {
            if (n.line == null || n.derived) continue;
            const end = n.end_line ?? n.line;
            if (line >= n.line && line <= end && (!best || end - n.line < best.span)) best = { id: n.id, span: end - n.line };
          }
          if (best && !(st.selection?.type === 'node' && st.selection.id === best.id)) st.select({ type: 'node', id: best.id }, { reveal: false });
        }
        if (!u.docChanged || remote.current) return;
        const t = u.state.doc.toString();
        store.getState().setPendingText(t);
        window.clearTimeout(timer.current);
        timer.current = window.setTimeout(() => {
          if (store.getState().pendingText === t) void store.getState().setText(t);
        }, SET_TEXT_DELAY_MS);
      });
      const view = new EditorView({
        parent: host.current!,
        state: EditorState.create({
          doc: store.getState().view?.text ?? '',
          extensions: [
            // The engine owns undo/redo (set_text is undoable there), so the editor keeps no history.
            basicSetup({ history: false, historyKeymap: false, searchKeymap: true }),
            yaml(),
            lintGutter(),
            theme.current.of(lightTheme),
            onChange,
          ],
        }),
      });
      editor.current = view;
      if (deferred) setEditorReady((n) => n + 1);
    };
    // A big document (hundreds of KB) costs a noticeable share of opening it: let the canvas
    // come first and build the editor once that frame is out.
    const cancel = (store.getState().view?.text?.length ?? 0) > DEFER_EDITOR_CHARS ? whenIdle(() => create(true)) : (create(false), undefined);
    return () => {
      cancel?.();
      window.clearTimeout(timer.current);
      editor.current?.destroy();
      editor.current = null;
    };
  }, [store]);

  useEffect(() => {
    editor.current?.dispatch({ effects: theme.current.reconfigure(dark ? darkTheme : lightTheme) });
  }, [dark, editorReady]);

  // Text from the engine: apply it unless the user has typed ahead of it.
  useEffect(() => {
    const view = editor.current;
    if (!view || text == null) return;
    if (store.getState().pendingText != null) return;
    const change = minimalChange(view.state.doc.toString(), text);
    if (!change) return;
    remote.current = true;
    try {
      view.dispatch({ changes: change });
    } finally {
      remote.current = false;
    }
  }, [text, store, editorReady]);

  useEffect(() => {
    const view = editor.current;
    if (!view) return;
    view.dispatch(setDiagnostics(view.state, toCmDiagnostics(view.state.doc, diagnostics ?? [], fileName)));
  }, [diagnostics, fileName, text, editorReady]);

  useEffect(() => {
    const view = editor.current;
    if (!view || !reveal) return;
    const doc = view.state.doc;
    const first = doc.line(Math.min(Math.max(1, reveal.line), doc.lines));
    const last = doc.line(Math.min(Math.max(first.number, reveal.endLine), doc.lines));
    const sel =
      reveal.column != null
        ? EditorSelection.cursor(lineColToOffset(doc, reveal.line, reveal.column))
        : EditorSelection.range(first.from, last.to);
    view.dispatch({ selection: sel, effects: EditorView.scrollIntoView(first.from, { y: 'start', yMargin: 24 }) });
  }, [reveal, editorReady]);

  return <div className="source-view" data-testid="source-view" ref={host} />;
}
