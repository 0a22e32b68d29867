import { describe, expect, it } from 'vitest';
import { render, screen, waitFor } from '@testing-library/react';
import { EditorView } from '@codemirror/view';
import { forEachDiagnostic } from '@codemirror/lint';
import { whenIdle } from '../idle';
import { App } from '../App';
import { createFakeBackend } from '../fake/backend';
import { createAppStore } from '../store';
import { bigView } from '../fake/demo';
import { DEFER_EDITOR_CHARS } from '../components/SourceView';
import { PANES_KEY } from '../panes';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('whenIdle', () => {
  it('runs the work later, not synchronously', async () => {
    let ran = 0;
    whenIdle(() => ran++);
    expect(ran).toBe(0);
    await waitFor(() => expect(ran).toBe(1));
  });

  it('can be cancelled', async () => {
    let ran = 0;
    const cancel = whenIdle(() => ran++);
    cancel();
    await sleep(150);
    expect(ran).toBe(0);
  });
});

describe('big documents', () => {
  it('build the source editor (text, lint) and the minimap after the canvas', async () => {
    const view = bigView(800, true);
    expect(view.text.length).toBeGreaterThan(DEFER_EDITOR_CHARS);
    view.diagnostics = [{ severity: 'warning', code: 'W1', message: 'look here', file: view.file_name ?? '', line: 3, column: 3, end_line: 3, end_column: 8, hint: null }];
    // A user who left the source view open: it opens with the document (after the canvas).
    localStorage.setItem(PANES_KEY, JSON.stringify({ source: true }));
    const store = createAppStore(createFakeBackend(view));
    render(<App store={store} />);
    await waitFor(() => expect(screen.getAllByTestId('node').length).toBeGreaterThan(0));
    await waitFor(() => expect(screen.getByTestId('source-view').querySelector('.cm-editor')).not.toBeNull());
    const ed = EditorView.findFromDOM(screen.getByTestId('source-view').querySelector('.cm-editor') as HTMLElement)!;
    expect(ed.state.doc.toString()).toBe(view.text);
    await waitFor(() => {
      const msgs: string[] = [];
      forEachDiagnostic(ed.state, (d) => msgs.push(d.message));
      expect(msgs).toEqual(['look here']);
    });
    await waitFor(() => expect(document.querySelector('.react-flow__minimap')).not.toBeNull());
  });
});
