import { describe, expect, it } from 'vitest';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { EditorView } from '@codemirror/view';
import { forEachDiagnostic } from '@codemirror/lint';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { demoView } from '../fake/demo';

async function setup() {
  const backend = createFakeBackend(demoView());
  const store = createAppStore(backend);
  render(<App store={store} />);
  await waitFor(() => expect(store.getState().ready).toBe(true));
  // The source view opens when wanted (collapsed by default: ui/src/panes.ts).
  fireEvent.click(screen.getByTestId('pane-toggle-source'));
  const dom = screen.getByTestId('source-view').querySelector('.cm-editor') as HTMLElement;
  const view = EditorView.findFromDOM(dom)!;
  return { backend, store, view };
}

describe('source view', () => {
  it('sends typed text with set_text after a pause, without clobbering the editor', async () => {
    const { backend, store, view } = await setup();
    act(() => view.dispatch({ changes: { from: 0, insert: '# hi\n' }, selection: { anchor: 4 }, userEvent: 'input.type' }));
    expect(store.getState().pendingText?.startsWith('# hi\n')).toBe(true);
    await waitFor(() => expect(backend.calls.some((c) => c.cmd === 'set_text')).toBe(true), { timeout: 2000 });
    const sent = backend.calls.find((c) => c.cmd === 'set_text')!.args as { text: string };
    expect(sent.text).toBe(view.state.doc.toString());
    await waitFor(() => expect(store.getState().pendingText).toBeNull());
    expect(view.state.selection.main.head).toBe(4);
    expect(store.getState().view?.text.startsWith('# hi\n')).toBe(true);
  });

  it('shows text coming from the engine (e.g. after an op or undo)', async () => {
    const { store, view } = await setup();
    const v = structuredClone(store.getState().view!);
    v.text = v.text.replace('gpt-4o-mini', 'gpt-4.1');
    act(() => store.getState().setView(v));
    await waitFor(() => expect(view.state.doc.toString()).toContain('model_name: gpt-4.1'));
  });

  it('selecting a node selects its lines; diagnostics become lint markers', async () => {
    const { store, view } = await setup();
    act(() => store.getState().select({ type: 'node', id: 'confirm' }));
    await waitFor(() => expect(view.state.doc.lineAt(view.state.selection.main.from).number).toBe(66));
    expect(view.state.doc.lineAt(view.state.selection.main.to).number).toBe(69);
    const found: string[] = [];
    forEachDiagnostic(view.state, (d) => found.push(`${d.severity}:${view.state.doc.lineAt(d.from).number}`));
    expect(found.sort()).toEqual(['error:69', 'warning:57']);
  });
});
