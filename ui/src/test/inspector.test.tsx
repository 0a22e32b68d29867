import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { createFakeBackend } from '../fake/backend';
import { StoreContext, createAppStore } from '../store';
import { Inspector } from '../components/Inspector';
import { demoView, lokiView } from '../fake/demo';
import type { View } from '../types';

async function renderInspector(view: View, nodeId: string) {
  const backend = createFakeBackend(view);
  const store = createAppStore(backend);
  await store.getState().init();
  store.getState().select({ type: 'node', id: nodeId });
  render(
    <StoreContext.Provider value={store}>
      <Inspector />
    </StoreContext.Provider>,
  );
  return { backend, store };
}

describe('inspector', () => {
  it('renders enums as selects and sends set_field', async () => {
    const v = demoView();
    v.schema.interrupt.fields.push({ name: 'mode', type: { kind: 'enum', values: ['ask', 'tell'] }, required: false, doc: 'how' });
    const { backend } = await renderInspector(v, 'confirm');
    const sel = screen.getByTestId('field-mode') as HTMLSelectElement;
    expect(sel.tagName).toBe('SELECT');
    expect(Array.from(sel.options).map((o) => o.value)).toEqual(['', 'ask', 'tell']);
    fireEvent.change(sel, { target: { value: 'tell' } });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'set_field', node: 'confirm', path: ['args', 'mode'], value: 'tell' } } }));
  });

  it('shows CEL syntax errors as you type (via check_expr) and commits on blur', async () => {
    const { backend } = await renderInspector(demoView(), 'count');
    const input = screen.getByTestId('field-expression') as HTMLTextAreaElement;
    expect(input.value).toBe('{"turns": state.turns + 1}');
    fireEvent.change(input, { target: { value: '{"turns": state.turns + 1' } });
    const err = await screen.findByTestId('field-error-expression');
    expect(err.textContent).toContain('unclosed bracket');
    expect(backend.calls.some((c) => c.cmd === 'check_expr' && (c.args as { kind: string }).kind === 'cel')).toBe(true);
    fireEvent.change(input, { target: { value: '{"turns": state.turns + 2}' } });
    await waitFor(() => expect(screen.queryByTestId('field-error-expression')).toBeNull());
    fireEvent.blur(input);
    await waitFor(() =>
      expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'set_field', node: 'count', path: ['args', 'expression'], value: '{"turns": state.turns + 2}' } } }),
    );
  });

  it('renders bools as checkboxes and lists/maps as editable text (JSON or YAML-ish)', async () => {
    const { backend } = await renderInspector(demoView(), 'answer');
    const cb = screen.getByTestId('field-use_tools_from_registry') as HTMLInputElement;
    expect(cb.type).toBe('checkbox');
    fireEvent.click(cb);
    await waitFor(() => expect(backend.calls.at(-1)).toMatchObject({ args: { op: { path: ['args', 'use_tools_from_registry'], value: true } } }));

    const updates = screen.getByTestId('field-state_updates') as HTMLTextAreaElement;
    expect(updates.value).toBe('messages: "[llm_response]"');
    fireEvent.change(updates, { target: { value: 'messages: "[llm_response]"\nturns: state.turns' } });
    fireEvent.blur(updates);
    await waitFor(() =>
      expect(backend.calls.at(-1)).toMatchObject({ args: { op: { op: 'set_field', path: ['args', 'state_updates'], value: { messages: '[llm_response]', turns: 'state.turns' } } } }),
    );
  });

  it('rejects malformed structured input inline instead of sending it', async () => {
    const { backend } = await renderInspector(demoView(), 'answer');
    const before = backend.calls.length;
    const tools = screen.getByTestId('field-tools') as HTMLTextAreaElement;
    fireEvent.change(tools, { target: { value: '[{"id": ' } });
    fireEvent.blur(tools);
    expect(screen.getByTestId('field-error-tools').textContent).toMatch(/expected/);
    expect(backend.calls.length).toBe(before);
  });

  it('Loki fields have no args prefix; node refs are selects; id/type are hidden', async () => {
    const { backend } = await renderInspector(lokiView(), 'approve');
    expect(screen.queryByTestId('field-id')).toBeNull();
    expect(screen.queryByTestId('field-type')).toBeNull();
    const other = screen.getByTestId('field-on_other') as HTMLSelectElement;
    expect(other.tagName).toBe('SELECT');
    expect(other.value).toBe('note');
    fireEvent.change(other, { target: { value: 'held' } });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'set_field', node: 'approve', path: ['on_other'], value: 'held' } } }));
    expect((screen.getByTestId('field-question') as HTMLTextAreaElement).value).toBe('{{summary}}');
  });

  it('sherma nodes have an on_error fallback select', async () => {
    const { backend } = await renderInspector(demoView(), 'count');
    fireEvent.change(screen.getByTestId('field-fallback'), { target: { value: 'confirm' } });
    await waitFor(() => expect(backend.calls.at(-1)).toEqual({ cmd: 'apply_edit', args: { op: { op: 'set_field', node: 'count', path: ['on_error', 'fallback'], value: 'confirm' } } }));
  });

  it('derived nodes are read-only', async () => {
    await renderInspector(demoView(), 'answer_tools');
    expect((screen.getByTestId('inspector-name') as HTMLInputElement).disabled).toBe(true);
    expect(screen.queryByTestId('field-tools')).toBeNull();
    expect(screen.getByText(/derived from other parts/)).toBeTruthy();
  });
});
