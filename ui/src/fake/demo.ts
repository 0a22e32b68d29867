// A demo document (support-triage, sherma) used by `npm run dev` outside Tauri and by the tests.
import type { SchemaObj, SchemaType, View, ViewEdge, ViewNode } from '../types';

/** A view node with the engine's defaults for what `n` leaves out (fixtures stay short). */
export function viewNode(n: Pick<ViewNode, 'id' | 'kind'> & Partial<ViewNode>): ViewNode {
  return {
    derived: false, summary: '', dynamic_next: false, order: 0, line: null, end_line: null,
    x: 0, y: 0, w: 220, h: 64, pinned: false, data: null, errors: 0, warnings: 0, ...n,
  };
}

/** A view edge with the engine's defaults for what `e` leaves out. */
export function viewEdge(e: Pick<ViewEdge, 'id' | 'from' | 'to' | 'kind'> & Partial<ViewEdge>): ViewEdge {
  return { label: null, derived: false, dynamic: false, fanout: false, order: 0, index: null, ...e };
}

const REF: SchemaType = { kind: 'object', object: { name: 'registry ref', fields: [{ name: 'id', type: { kind: 'string' }, required: true, doc: 'id' }, { name: 'version', type: { kind: 'string' }, required: false, doc: 'version' }], open: false } };
const PROMPT_ITEM: SchemaObj = {
  name: 'prompt item',
  fields: [
    { name: 'role', type: { kind: 'enum', values: ['system', 'human', 'ai', 'messages'] }, required: true, doc: 'message role' },
    { name: 'content', type: { kind: 'cel' }, required: true, doc: 'CEL expression producing the content' },
  ],
  open: false,
};

export const SHERMA_SCHEMA: Record<string, SchemaObj> = {
  call_llm: {
    name: 'call_llm args',
    fields: [
      { name: 'llm', type: REF, required: false, doc: 'the llm to call; default `default_llm`' },
      { name: 'prompt', type: { kind: 'list', items: { kind: 'object', object: PROMPT_ITEM } }, required: true, doc: 'messages sent to the model, in order' },
      { name: 'tools', type: { kind: 'list', items: REF }, required: false, doc: 'tools bound to the model' },
      { name: 'use_tools_from_registry', type: { kind: 'bool' }, required: false, doc: 'bind every registered tool' },
      { name: 'state_updates', type: { kind: 'map', items: { kind: 'cel' } }, required: true, doc: 'field -> CEL over the state and `llm_response`' },
    ],
    open: false,
  },
  tool_node: { name: 'tool_node args', fields: [{ name: 'tools', type: { kind: 'list', items: REF }, required: false, doc: 'tools this node may run' }], open: false },
  call_agent: {
    name: 'call_agent args',
    fields: [
      { name: 'agent', type: REF, required: true, doc: 'sub-agent to call' },
      { name: 'input', type: { kind: 'cel' }, required: true, doc: 'CEL producing the message text' },
    ],
    open: false,
  },
  data_transform: { name: 'data_transform args', fields: [{ name: 'expression', type: { kind: 'cel' }, required: true, doc: 'CEL producing a map of state updates' }], open: false },
  set_state: { name: 'set_state args', fields: [{ name: 'values', type: { kind: 'map', items: { kind: 'cel' } }, required: true, doc: 'field -> CEL (string literals need inner quotes)' }], open: false },
  interrupt: { name: 'interrupt args', fields: [{ name: 'value', type: { kind: 'cel' }, required: true, doc: 'CEL producing the value shown to the user' }], open: false },
  load_skills: { name: 'load_skills args', fields: [{ name: 'skill_ids', type: { kind: 'cel' }, required: true, doc: 'CEL producing a list of {id, version} maps' }], open: false },
  custom: { name: 'custom args', fields: [{ name: 'metadata', type: { kind: 'map', items: { kind: 'any' } }, required: false, doc: 'free data for the node_execute hook' }], open: false },
};

export const DEMO_TEXT = "# Support triage: a sherma agent that classifies a request, looks up an order with a tool,\n# and asks a human before closing. Runs offline with the scripted replies beside it.\nmanifest_version: 1\n\nprompts:\n  - id: triage\n    version: \"1.0.0\"\n    instructions: >\n      You are a support assistant. Use the lookup_order tool when the user\n      mentions an order number. Answer in two sentences.\n\nllms:\n  - id: assistant\n    version: \"1.0.0\"\n    provider: openai\n    model_name: gpt-4o-mini\n\ntools:\n  - id: lookup_order\n    version: \"1.0.0\"\n    import_path: tools.lookup_order\n\nagents:\n  support-triage:\n    state:\n      fields:\n        - name: messages\n          type: list\n          default: []\n        - name: turns\n          type: int\n          default: 0\n        - name: status\n          type: str\n          default: \"open\"\n\n    graph:\n      entry_point: start\n      nodes:\n        - name: start\n          type: set_state\n          args:\n            values:\n              turns: \"0\"\n              status: '\"open\"'\n\n        - name: answer\n          type: call_llm\n          args:\n            llm: { id: assistant }\n            prompt:\n              - role: system\n                content: 'prompts[\"triage\"][\"instructions\"]'\n              - role: messages\n                content: state.messages\n            tools:\n              - id: lookup_order\n            state_updates:\n              messages: \"[llm_response]\"\n\n        - name: count\n          type: data_transform\n          args:\n            expression: '{\"turns\": state.turns + 1}'\n\n        - name: confirm\n          type: interrupt\n          args:\n            value: 'state.messages[size(state.messages) - 1].content'\n\n      edges:\n        - source: start\n          target: answer\n        - source: answer\n          target: count\n        - source: count\n          target: confirm\n        - source: confirm\n          branches:\n            - condition: 'state.messages[size(state.messages) - 1].content.lowerAscii().contains(\"done\")'\n              target: __end__\n            - condition: \"state.turns >= 3\"\n              target: __end__\n          default: answer\n";

export function demoView(): View {
  return {
    path: '/demo/agent.yaml',
    file_name: 'agent.yaml',
    dialect: 'sherma',
    text: DEMO_TEXT,
    dirty: false,
    conflict: false,
    width: 520,
    height: 640,
    can_undo: false,
    can_redo: false,
    revision: 1,
    agents: ['support-triage'],
    agent: 'support-triage',
    nodes: [
      viewNode({ id: '__start__', kind: '__start__', derived: false, x: 50, y: 0, w: 120, h: 40, line: null, end_line: null, data: null, errors: 0, warnings: 0 }),
      viewNode({ id: 'start', kind: 'set_state', derived: false, summary: 'turns, status', order: 0, line: 40, end_line: 45, x: 0, y: 100, w: 220, h: 64, data: { name: 'start', type: 'set_state', args: { values: { turns: '0', status: '"open"' } } }, errors: 0, warnings: 0 }),
      viewNode({ id: 'answer', kind: 'call_llm', derived: false, summary: 'gpt-4o-mini · 1 tool', order: 1, line: 47, end_line: 59, x: 0, y: 220, w: 220, h: 64, data: { name: 'answer', type: 'call_llm', args: { llm: { id: 'assistant' }, prompt: [{ role: 'system', content: 'prompts["triage"]["instructions"]' }, { role: 'messages', content: 'state.messages' }], tools: [{ id: 'lookup_order' }], state_updates: { messages: '[llm_response]' } } }, errors: 0, warnings: 1 }),
      viewNode({ id: 'count', kind: 'data_transform', derived: false, summary: '{"turns": state.turns + 1}', order: 2, line: 61, end_line: 64, x: 0, y: 340, w: 220, h: 64, data: { name: 'count', type: 'data_transform', args: { expression: '{"turns": state.turns + 1}' } }, errors: 0, warnings: 0 }),
      viewNode({ id: 'confirm', kind: 'interrupt', derived: false, summary: 'state.messages[size(state.messages) - 1].content', order: 3, line: 66, end_line: 69, x: 0, y: 460, w: 220, h: 64, data: { name: 'confirm', type: 'interrupt', args: { value: 'state.messages[size(state.messages) - 1].content' } }, errors: 1, warnings: 0 }),
      viewNode({ id: 'answer_tools', kind: 'tool_node', derived: true, summary: 'tools of answer', x: 300, y: 220, w: 220, h: 64, line: null, end_line: null, data: null, errors: 0, warnings: 0 }),
      viewNode({ id: '__end__', kind: '__end__', derived: false, x: 50, y: 600, w: 120, h: 40, line: null, end_line: null, data: null, errors: 0, warnings: 0 }),
    ],
    edges: [
      viewEdge({ id: 'e0', from: '__start__', to: 'start', kind: 'entry', label: null, derived: false, dynamic: false, fanout: false, order: 0 }),
      viewEdge({ id: 'e1', from: 'start', to: 'answer', kind: 'static', label: null, derived: false, dynamic: false, fanout: false, order: 1 }),
      viewEdge({ id: 'e2', from: 'answer', to: 'answer_tools', kind: 'branch', label: 'has_tool_calls', derived: true, dynamic: false, fanout: false, order: 2 }),
      viewEdge({ id: 'e3', from: 'answer', to: 'count', kind: 'default', label: 'default', derived: false, dynamic: false, fanout: false, order: 3 }),
      viewEdge({ id: 'e4', from: 'count', to: 'confirm', kind: 'static', label: null, derived: false, dynamic: false, fanout: false, order: 4 }),
      viewEdge({ id: 'e5', from: 'confirm', to: '__end__', kind: 'branch', label: 'state.messages[size(state.messages) - 1].content.lowerAscii().contains("done")', derived: false, dynamic: false, fanout: false, order: 5, index: 0 }),
      viewEdge({ id: 'e6', from: 'confirm', to: '__end__', kind: 'branch', label: 'state.turns >= 3', derived: false, dynamic: false, fanout: false, order: 6, index: 1 }),
      viewEdge({ id: 'e7', from: 'confirm', to: 'answer', kind: 'default', label: 'default', derived: false, dynamic: false, fanout: false, order: 7 }),
      viewEdge({ id: 'e8', from: 'answer_tools', to: 'answer', kind: 'static', label: null, derived: true, dynamic: false, fanout: false, order: 8 }),
    ],
    diagnostics: [
      { severity: 'warning', code: 'demo-warning', message: 'node `answer` binds a tool that has no description', file: '/demo/agent.yaml', line: 57, column: 17, end_line: 57, end_column: 33, hint: 'add a docstring to tools.lookup_order', node: 'answer' },
      { severity: 'error', code: 'demo-error', message: 'interrupt value may be empty when there are no messages', file: '/demo/agent.yaml', line: 69, column: 20, end_line: 69, end_column: 71, hint: null, node: 'confirm' },
    ],
    node_kinds: ['call_llm', 'tool_node', 'call_agent', 'data_transform', 'set_state', 'interrupt', 'load_skills', 'custom'],
    schema: SHERMA_SCHEMA,
  };
}

/** A Loki view modelled on agents/release-gate (dynamic script edges, fan-out, approval routes). */
export function lokiView(): View {
  const node = (id: string, kind: string, summary: string, y: number, x = 0, extra: Partial<ViewNode> = {}) =>
    viewNode({ id, kind, summary, x, y, line: 1, end_line: 2, data: { type: kind }, ...extra });
  return {
    path: '/demo/release-gate/graph.yaml',
    file_name: 'graph.yaml',
    dialect: 'loki',
    text: 'version: "1.0"\n',
    dirty: true,
    conflict: false,
    width: 590,
    height: 664,
    can_undo: true,
    can_redo: false,
    revision: 3,
    agents: ['release-gate'],
    agent: 'release-gate',
    nodes: [
      node('plan', 'script', 'scripts/plan.sh', 0, 0, { dynamic_next: true }),
      node('lint', 'script', 'scripts/lint.sh', 120, -150, { dynamic_next: true }),
      node('tests', 'script', 'scripts/tests.sh', 120, 150, { dynamic_next: true }),
      node('summarise', 'llm', 'openai:gpt-4o-mini', 240),
      node('approve', 'approval', '{{summary}}', 360, 0, { data: { type: 'approval', question: '{{summary}}', options: ['ship', 'hold'], routes: { ship: 'shipped', hold: 'held' }, on_other: 'note' } }),
      node('note', 'input', 'What should the release notes say?', 480, 200),
      node('shipped', 'end', 'Shipped. {{summary}}', 600, -150),
      node('held', 'end', 'Held: {{summary}}', 600, 150),
    ],
    edges: [
      viewEdge({ id: 'e0', from: 'plan', to: 'lint', kind: 'next', label: null, derived: false, dynamic: false, fanout: true }),
      viewEdge({ id: 'e1', from: 'plan', to: 'tests', kind: 'next', label: null, derived: false, dynamic: false, fanout: true }),
      viewEdge({ id: 'e2', from: 'lint', to: 'summarise', kind: 'next', label: null, derived: false, dynamic: false }),
      viewEdge({ id: 'e3', from: 'tests', to: 'summarise', kind: 'next', label: null, derived: false, dynamic: false }),
      viewEdge({ id: 'e4', from: 'summarise', to: 'approve', kind: 'next', label: null, derived: false, dynamic: false }),
      viewEdge({ id: 'e5', from: 'approve', to: 'shipped', kind: 'route', label: 'ship', derived: true, dynamic: false, index: 0 }),
      viewEdge({ id: 'e6', from: 'approve', to: 'held', kind: 'route', label: 'hold', derived: true, dynamic: false, index: 1 }),
      viewEdge({ id: 'e7', from: 'approve', to: 'note', kind: 'on_other', label: 'other', derived: true, dynamic: false }),
      viewEdge({ id: 'e8', from: 'note', to: 'shipped', kind: 'next', label: null, derived: false, dynamic: false }),
      viewEdge({ id: 'e9', from: 'plan', to: 'held', kind: 'next', label: null, derived: true, dynamic: true }),
    ],
    diagnostics: [],
    node_kinds: ['agent', 'script', 'approval', 'input', 'llm', 'rag', 'end', 'map'],
    schema: {
      approval: {
        name: 'approval node',
        fields: [
          { name: 'id', type: { kind: 'string' }, required: false, doc: 'node id' },
          { name: 'type', type: { kind: 'enum', values: ['agent', 'script', 'approval', 'input', 'llm', 'rag', 'end', 'map'] }, required: true, doc: 'node type' },
          { name: 'question', type: { kind: 'template' }, required: true, doc: 'question shown to the user' },
          { name: 'options', type: { kind: 'list', items: { kind: 'string' } }, required: true, doc: 'choices offered' },
          { name: 'routes', type: { kind: 'map', items: { kind: 'node_ref' } }, required: true, doc: 'option -> next node' },
          { name: 'on_other', type: { kind: 'node_ref' }, required: true, doc: 'next node for any other answer' },
        ],
        open: false,
      },
    },
  };
}

/**
 * A large synthetic graph (n nodes in layers of 20) for performance checks; `chain` lays it out
 * as one long column with a ~155 bytes/node YAML text, like the window benchmark's generated file.
 */
export function bigView(n: number, chain = false): View {
  const v = demoView();
  if (chain) {
    const lines = ['manifest_version: 1', 'agents:', '  chain:', '    graph:', '      nodes:'];
    for (let i = 0; i < n; i++) {
      lines.push(`        - name: n${i}`, '          type: data_transform', '          args:', `            expression: '{"sum": state.sum + state.step, "even": state.step % 2 == 0}'`);
    }
    v.text = lines.join('\n') + '\n';
  }
  const kinds = ['call_llm', 'data_transform', 'set_state', 'interrupt', 'custom'];
  v.nodes = Array.from({ length: n }, (_, i) => viewNode({
    id: `n${i}`,
    kind: kinds[i % kinds.length],
    derived: i % 17 === 5,
    summary: `node ${i}`,
    x: chain ? 0 : (i % 20) * 260,
    y: chain ? i * 120 : Math.floor(i / 20) * 120,
    w: 220,
    h: 64,
    line: null,
    end_line: null,
    data: { name: `n${i}`, type: kinds[i % kinds.length], args: {} },
    errors: i % 97 === 0 ? 1 : 0,
    warnings: i % 41 === 0 ? 1 : 0,
  }));
  v.edges = [];
  for (let i = 20; i < n; i++) {
    v.edges.push(viewEdge({ id: `s${i}`, from: `n${i - 20}`, to: `n${i}`, kind: 'static' }));
    if (i % 7 === 0) v.edges.push(viewEdge({ id: `b${i}`, from: `n${i - 19}`, to: `n${i}`, kind: 'branch', label: `state.k == ${i}`, index: 0 }));
  }
  v.diagnostics = [];
  return v;
}
