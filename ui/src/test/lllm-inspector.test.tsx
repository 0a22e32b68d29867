import { describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { createFakeBackend } from '../fake/backend';
import { viewEdge, viewNode } from '../fake/demo';
import { StoreContext, createAppStore } from '../store';
import { Inspector } from '../components/Inspector';
import { describeOrigin, type Origin, type PVal } from '../components/LllmInspector';
import type { View } from '../types';

// Modelled on the corpus' pkg_alpha/configs/production.yaml (`base: default`), with an agent
// whose temperature is its own, a model from this file's global, a retry knob from the base's
// global and a knob left to LLLM's default — the data crates/editor/src/studio/lllm_view.rs sends.
const FILE = '/pkg/configs/production.yaml';
const BASE = '/pkg/configs/default.yaml';
const at = (section: Origin['section'], file: string, line: number, config = file === FILE ? 'production' : 'default'): Origin =>
  section === 'default' ? { section, config: '', file: '', line: 0, column: 0 } : { section, config, file, line, column: 5 };
const v = (value: PVal extends infer T ? T extends { kind: 'value'; value: infer J } ? J : never : never, from: Origin): PVal => ({ kind: 'value', value, from });

function lllmView(): View {
  const reviewer = {
    config: { name: 'reviewer', system_prompt: 'You critically review responses.', model_args: { temperature: 0.0, max_tokens: 2000 } },
    file: FILE,
    from: at('agent', FILE, 16),
    effective: {
      config: {
        model_name: v('gpt-4o', at('global', FILE, 4)),
        max_exception_retry: v(5, at('global', FILE, 8)),
        max_interrupt_steps: v(5, at('global', BASE, 7)),
        name: v('reviewer', at('agent', FILE, 16)),
        system_prompt: v('You critically review responses.', at('agent', FILE, 17)),
        skills: v(['pdf', 'skill_01abc'], at('agent', FILE, 21)),
        api_type: v('completion', at('default', '', 0)),
        max_llm_recall: v(0, at('default', '', 0)),
      },
      model_args: { temperature: v(0.0, at('agent', FILE, 19)), max_tokens: v(2000, at('agent', FILE, 20)) },
    },
    moved_to_model_args: [],
    replaced_lists: ['skills'],
    prompt: null,
    skills: [
      { entry: 'pdf', kind: 'local' },
      { entry: 'skill_01abc', kind: 'anthropic_id' },
    ],
  };
  const inherited = {
    ...reviewer,
    config: null,
    from: at('agent', BASE, 10),
    effective: { config: { model_name: v('gpt-4o-mini', at('global', BASE, 2)) }, model_args: {} },
    replaced_lists: [],
    skills: [],
  };
  const global = {
    config: { model_name: 'gpt-4o' },
    effective: {
      model_name: v('gpt-4o', at('global', FILE, 4)),
      model_args: { kind: 'map', entries: { temperature: v(0.1, at('global', FILE, 6)), max_tokens: v(1000, at('global', BASE, 5)) }, from: at('global', FILE, 5) },
      max_interrupt_steps: v(5, at('global', BASE, 7)),
    },
    file: FILE,
    base: 'default',
    agents_from: 'production',
    shape: 'current',
  };
  return {
    path: FILE,
    file_name: 'production.yaml',
    dialect: 'lllm',
    text: 'base: default\n',
    dirty: false,
    conflict: false,
    width: 600,
    height: 400,
    can_undo: false,
    can_redo: false,
    revision: 1,
    agents: ['production'],
    agent: 'production',
    nodes: [
      viewNode({ id: 'global', kind: 'global', summary: 'gpt-4o · 3 defaults', line: 3, end_line: 10, data: global as never }),
      viewNode({ id: 'base:default', kind: 'base', summary: 'default.yaml', data: { config: 'default', file: BASE }, sub_agent: BASE }),
      viewNode({ id: 'reviewer', kind: 'agent', summary: 'gpt-4o · inline prompt', line: 16, end_line: 21, data: reviewer as never }),
      viewNode({ id: 'helper', kind: 'agent', summary: 'gpt-4o-mini', data: inherited as never }),
    ],
    edges: [
      viewEdge({ id: 'e0', from: 'base:default', to: 'global', kind: 'inherits', label: 'base' }),
      viewEdge({ id: 'e1', from: 'global', to: 'reviewer', kind: 'inherits', label: 'defaults' }),
    ],
    diagnostics: [],
    node_kinds: ['global', 'agent', 'base'],
    schema: {
      agent: {
        name: 'agent config',
        fields: [
          { name: 'name', type: { kind: 'string' }, required: true, doc: '' },
          { name: 'model_name', type: { kind: 'string' }, required: false, doc: '' },
          { name: 'api_type', type: { kind: 'enum', values: ['completion', 'response'] }, required: false, doc: '' },
          { name: 'max_exception_retry', type: { kind: 'int', min: 0 }, required: false, doc: '' },
          { name: 'max_llm_recall', type: { kind: 'int', min: 0 }, required: false, doc: '' },
          { name: 'skills', type: { kind: 'one_of', alternatives: [{ kind: 'enum', values: ['*'] }, { kind: 'list', items: { kind: 'string' } }] }, required: false, doc: '' },
        ],
        open: true,
      },
      global: { name: 'global', fields: [{ name: 'model_name', type: { kind: 'string' }, required: false, doc: '' }], open: true },
    },
  } as View;
}

async function renderInspector(nodeId: string) {
  const backend = createFakeBackend(lllmView());
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

const lastOp = (b: { calls: { cmd: string; args?: unknown }[] }) => (b.calls.filter((c) => c.cmd === 'apply_edit').at(-1)?.args as { op: unknown } | undefined)?.op;

describe('LLLM inspector', () => {
  it("shows an agent's effective config with where each value came from", async () => {
    await renderInspector('reviewer');
    expect(screen.getByTestId('lllm-inspector')).toBeTruthy();
    const origin = (k: string) => [screen.getByTestId(`lllm-row-${k}`).getAttribute('data-origin'), screen.getByTestId(`lllm-origin-${k}`).textContent];
    expect(origin('model_name')).toEqual(['global', 'global']);
    expect(origin('max_interrupt_steps')).toEqual(['base', 'global of default']);
    expect(origin('system_prompt')).toEqual(['own', 'this agent']);
    expect(origin('api_type')).toEqual(['default', 'LLLM default']);
    expect(origin('temperature')).toEqual(['own', 'this agent']);
    expect(screen.getByTestId('lllm-origin-max_interrupt_steps').getAttribute('title')).toBe('default.yaml:7');
    expect((screen.getByTestId('lllm-value-model_name') as HTMLInputElement).value).toBe('gpt-4o');
    expect((screen.getByTestId('lllm-value-skills') as HTMLInputElement).value).toBe('pdf, skill_01abc');
    // `name` is the header, not a row; the skills are classified; the list replaced global's.
    expect(screen.queryByTestId('lllm-row-name')).toBeNull();
    expect(within(screen.getByTestId('lllm-skills')).getByText('anthropic id')).toBeTruthy();
    expect(screen.getByTestId('lllm-replaced').textContent).toContain('skills');
    // Only the agent's own values can be cleared (to inherit again).
    expect(screen.queryByTestId('lllm-clear-temperature')).toBeTruthy();
    expect(screen.queryByTestId('lllm-clear-model_name')).toBeNull();
  });

  it("edits write the agent's own value: set_field on its entry, typed by the schema", async () => {
    const { backend } = await renderInspector('reviewer');
    const t = screen.getByTestId('lllm-value-temperature') as HTMLInputElement;
    fireEvent.change(t, { target: { value: '0.4' } });
    fireEvent.blur(t);
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['model_args', 'temperature'], value: 0.4 }));
    // An inherited value typed over becomes the agent's own.
    const m = screen.getByTestId('lllm-value-model_name') as HTMLInputElement;
    fireEvent.change(m, { target: { value: 'o4-mini' } });
    fireEvent.keyDown(m, { key: 'Enter' });
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['model_name'], value: 'o4-mini' }));
    const r = screen.getByTestId('lllm-value-max_exception_retry') as HTMLInputElement;
    fireEvent.change(r, { target: { value: '2.5' } });
    fireEvent.blur(r);
    expect(screen.getByTestId('lllm-error-max_exception_retry').textContent).toContain('whole number');
    const s = screen.getByTestId('lllm-value-skills') as HTMLInputElement;
    fireEvent.change(s, { target: { value: 'pdf, commit' } });
    fireEvent.blur(s);
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['skills'], value: ['pdf', 'commit'] }));
    // Enums are lists: LLLM's default `completion` overridden by `response`.
    const api = screen.getByTestId('lllm-value-api_type') as HTMLSelectElement;
    expect(Array.from(api.options).map((o) => o.value)).toEqual(['completion', 'response']);
    fireEvent.change(api, { target: { value: 'response' } });
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['api_type'], value: 'response' }));
    fireEvent.click(screen.getByTestId('lllm-clear-temperature'));
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['model_args', 'temperature'], value: null }));
    // A new key: an agent key goes to the entry, anything else into model_args.
    fireEvent.change(screen.getByTestId('lllm-add-key'), { target: { value: 'top_p' } });
    fireEvent.change(screen.getByTestId('lllm-add-value'), { target: { value: '0.9' } });
    fireEvent.click(screen.getByTestId('lllm-add'));
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['model_args', 'top_p'], value: 0.9 }));
    fireEvent.change(screen.getByTestId('lllm-add-key'), { target: { value: 'max_llm_recall' } });
    fireEvent.change(screen.getByTestId('lllm-add-value'), { target: { value: '2' } });
    fireEvent.click(screen.getByTestId('lllm-add'));
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['max_llm_recall'], value: 2 }));
  });

  it('a model argument written outside model_args is overridden where LLLM reads it', async () => {
    const v = lllmView();
    const r = v.nodes.find((n) => n.id === 'reviewer')!.data as unknown as { moved_to_model_args: string[]; effective: { model_args: Record<string, PVal> } };
    r.moved_to_model_args = ['top_k'];
    r.effective.model_args.top_k = { kind: 'value', value: 40, from: at('global', FILE, 9) };
    const backend = createFakeBackend(v);
    const store = createAppStore(backend);
    await store.getState().init();
    store.getState().select({ type: 'node', id: 'reviewer' });
    render(
      <StoreContext.Provider value={store}>
        <Inspector />
      </StoreContext.Provider>,
    );
    expect(screen.getByTestId('lllm-moved').textContent).toContain('top_k');
    const t = screen.getByTestId('lllm-value-top_k') as HTMLInputElement;
    fireEvent.change(t, { target: { value: '20' } });
    fireEvent.blur(t);
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'reviewer', path: ['top_k'], value: 20 }));
  });

  it('an agent of the base config is read-only with the file to open', async () => {
    await renderInspector('helper');
    expect(screen.getByTestId('lllm-from-base').textContent).toContain('default.yaml');
    expect((screen.getByTestId('lllm-value-model_name') as HTMLInputElement).disabled).toBe(true);
    expect(screen.getByTestId('lllm-origin-model_name').textContent).toBe('global of default');
    expect(screen.queryByTestId('delete-node')).toBeNull();
  });

  it('global shows its defaults after the chain and edits base', async () => {
    const { backend } = await renderInspector('global');
    expect(screen.getByTestId('lllm-row-model_name').getAttribute('data-origin')).toBe('own');
    expect(screen.getByTestId('lllm-origin-max_tokens').textContent).toBe('global of default');
    const t = screen.getByTestId('lllm-value-temperature') as HTMLInputElement;
    fireEvent.change(t, { target: { value: '0.3' } });
    fireEvent.blur(t);
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_field', node: 'global', path: ['model_args', 'temperature'], value: 0.3 }));
    const b = screen.getByTestId('lllm-base') as HTMLInputElement;
    expect(b.value).toBe('default');
    fireEvent.change(b, { target: { value: 'pkg_beta:beta_default' } });
    fireEvent.blur(b);
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'set_doc_field', path: ['base'], value: 'pkg_beta:beta_default' }));
  });

  it('the nearest base can be dropped', async () => {
    const { backend } = await renderInspector('base:default');
    expect(screen.getByTestId('lllm-base-file').textContent).toBe(BASE);
    fireEvent.click(screen.getByTestId('lllm-unbase'));
    await waitFor(() => expect(lastOp(backend)).toEqual({ op: 'delete_node', name: 'base:default' }));
  });

  it('describes origins from the node inspected', () => {
    expect(describeOrigin(at('agent', BASE, 3), FILE).label).toBe('agent in default');
    expect(describeOrigin(at('global', FILE, 3), FILE, true)).toMatchObject({ kind: 'own', label: 'this config', where: 'production.yaml:3' });
  });
});
