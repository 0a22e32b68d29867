// Untrusted text never becomes markup: every payload of the XSS corpus is rendered through every
// component that shows LLM, tool or state text, and each render is checked for elements the
// payload could have created, event-handler attributes, URLs other than http(s)/mailto, and the
// canary `window.__xss` / `alert` (vitest's jsdom runs scripts and inline handlers, so a payload
// that got through would set them: the control tests below prove the harness notices). The text
// itself must still be on screen: nothing is silently dropped. Plus the secret-masking rules.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, within } from '@testing-library/react';
import type { ReactElement } from 'react';
import { createFakeBackend } from '../fake/backend';
import { StoreContext, createAppStore } from '../store';
import { DebugContext, createDebugStore } from '../debug/store';
import { emptyModel, foldEvents } from '../debug/model';
import type { DebugEvent, Pending, RunStatusInfo } from '../debug/types';
import { Conversation } from '../components/debug/Conversation';
import { CallInspector } from '../components/debug/CallInspector';
import { StateTree } from '../components/debug/StateTree';
import { JsonView } from '../components/debug/JsonView';
import { InterruptDialog } from '../components/debug/InterruptDialog';
import { Timeline } from '../components/debug/Timeline';
import { Problems } from '../components/Problems';
import { Toasts } from '../components/Toasts';
import { Markdown } from '../components/Markdown';
import { demoView } from '../fake/demo';
import { MASK, SECRET_TITLE, hidesAnything, isSecretName, maskSecrets, redact, safeUrl } from '../untrusted';
import { XSS_CORPUS } from './xss-corpus';

type W = Window & { __xss?: unknown };
/** The window scripts and inline handlers run in: vitest copies jsdom's globals onto Node's global
 *  object, but a payload's code would run in jsdom's own realm (`jsdom.window`). */
const realm = (globalThis as unknown as { jsdom: { window: W } }).jsdom.window;
const win = window as W;
const canary = () => realm.__xss ?? win.__xss;

// ------------------------------------------------------------------------------------------------
// The checks

/** Elements no payload may create (on top of "only tags the component renders anyway"). */
const FORBIDDEN = [
  'script', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'style', 'link', 'meta', 'base', 'form',
  'img', 'svg', 'math', 'video', 'audio', 'source', 'track', 'template', 'noscript', 'details', 'marquee', 'body',
  'html', 'head', 'title', 'xmp', 'listing', 'plaintext', 'portal', 'dialog', 'select', 'set', 'animate',
];
/** What Markdown itself may produce (components/Markdown.tsx). */
const MARKDOWN_TAGS = [
  'div', 'span', 'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li', 'input',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'a', 'sup', 'section',
];
const URL_ATTRS = [
  'href', 'src', 'action', 'formaction', 'xlink:href', 'data', 'srcdoc', 'srcset', 'background', 'poster', 'cite',
  'ping', 'manifest', 'codebase', 'lowsrc', 'dynsrc', 'longdesc', 'usemap', 'icon',
];
const SAFE_URL = /^(https?:\/\/|mailto:)/i;
/** Events whose inline handlers payloads use. */
const EVENTS = ['error', 'load', 'mouseover', 'focus', 'toggle', 'begin', 'start', 'submit'];

function tagCounts(root: ParentNode, tags: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of tags) out[t] = root.querySelectorAll(t).length;
  return out;
}

/** The text a reader can find: text content and tooltips. */
function visibleText(root: Element): string {
  const titles = Array.from(root.querySelectorAll('[title]')).map((e) => e.getAttribute('title') ?? '');
  return `${root.textContent ?? ''}\n${titles.join('\n')}`;
}

function decodeEntities(s: string): string {
  const t = document.createElement('textarea');
  t.innerHTML = s;
  return t.value;
}

/** The longest run of 3+ ASCII letters: what Markdown rendering must keep visible of a payload. */
function longestWord(s: string): string {
  return (s.match(/[A-Za-z]{3,}/g) ?? []).reduce((a, b) => (b.length > a.length ? b : a), '');
}

interface Baseline {
  counts: Record<string, number>;
  tags: Set<string>;
}

function baselineOf(root: Element): Baseline {
  return { counts: tagCounts(root, FORBIDDEN), tags: new Set(Array.from(root.querySelectorAll('*')).map((e) => e.localName)) };
}

/** Fire every event a payload's handler could wait for, on every element (clicks without navigation). */
function poke(root: Element) {
  const stop = (e: Event) => e.preventDefault();
  window.addEventListener('click', stop, true);
  try {
    for (const el of Array.from(root.querySelectorAll('*'))) {
      for (const type of EVENTS) el.dispatchEvent(new Event(type, { bubbles: false, cancelable: true }));
      if (el.localName !== 'button' && el.localName !== 'input') el.dispatchEvent(new MouseEvent('click', { bubbles: false, cancelable: true }));
    }
  } finally {
    window.removeEventListener('click', stop, true);
  }
}

/** Everything `xss.test` asserts about one render of one payload. */
function assertInert(root: Element, base: Baseline, label: string, fire = true) {
  // No element the component does not render anyway (beyond Markdown's own), none of the
  // dangerous ones more often than without the payload.
  const allowed = new Set([...base.tags, ...MARKDOWN_TAGS]);
  for (const el of Array.from(root.querySelectorAll('*'))) {
    expect(allowed.has(el.localName), `${label}: unexpected <${el.localName}>`).toBe(true);
    if (el.localName === 'input' && !base.tags.has('input')) {
      expect((el as HTMLInputElement).type, `${label}: input`).toBe('checkbox');
      expect((el as HTMLInputElement).disabled, `${label}: input disabled`).toBe(true);
    }
  }
  expect(tagCounts(root, FORBIDDEN), `${label}: dangerous elements`).toEqual(base.counts);
  for (const el of Array.from(document.querySelectorAll('*'))) {
    for (const name of el.getAttributeNames()) {
      const n = name.toLowerCase();
      const v = el.getAttribute(name) ?? '';
      expect(n.startsWith('on'), `${label}: <${el.localName} ${name}="${v}">`).toBe(false);
      if (URL_ATTRS.includes(n)) expect(SAFE_URL.test(v) && safeUrl(v) === v, `${label}: <${el.localName} ${name}="${v}">`).toBe(true);
      if (n === 'style') expect(/url\(|expression|javascript|@import/i.test(v), `${label}: style="${v}"`).toBe(false);
    }
    if (el.localName === 'a' && el.getAttribute('target') === '_blank') {
      const rel = (el.getAttribute('rel') ?? '').split(/\s+/);
      expect(rel.includes('noopener') && rel.includes('noreferrer'), `${label}: rel`).toBe(true);
    }
  }
  if (fire) poke(root);
  expect(canary(), `${label}: canary`).toBeUndefined();
  expect(realm.alert, `${label}: alert`).not.toHaveBeenCalled();
  expect(window.alert, `${label}: alert`).not.toHaveBeenCalled();
}

/** The payload is on screen as it is (plain surfaces). */
function assertShownAsIs(text: string, payload: string, label: string) {
  expect(text.includes(payload), `${label}: ${JSON.stringify(payload)} not shown as text in ${JSON.stringify(text.slice(0, 400))}`).toBe(true);
}

/** The payload left a visible trace (Markdown surfaces: syntax is consumed, words stay). */
function assertTraceShown(root: Element, payload: string, label: string) {
  const text = visibleText(root).toLowerCase();
  const words = [longestWord(payload), longestWord(decodeEntities(payload))].map((w) => w.toLowerCase());
  expect(words[0].length, `${label}: payload without a word`).toBeGreaterThan(2);
  expect(words.some((w) => text.includes(w)), `${label}: none of ${words.join(', ')} shown in ${JSON.stringify(text.slice(0, 400))}`).toBe(true);
  // Raw HTML is never dropped: every tag-like piece of it stays as text.
  for (const m of payload.matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)[\s/>]/g)) {
    if (/^(https?|mailto|javascript)$/i.test(m[1])) continue;
    expect(text.includes(`<${m[1].toLowerCase()}`) || text.includes(`&lt;${m[1].toLowerCase()}`) || text.includes(m[1].toLowerCase()), `${label}: <${m[1]} dropped`).toBe(true);
  }
}

// ------------------------------------------------------------------------------------------------
// Rendering helpers

let ts = 1_700_000_000_000;

async function stores() {
  const backend = createFakeBackend(demoView());
  const app = createAppStore(backend);
  await app.getState().init();
  const dbg = createDebugStore(backend, app);
  return { backend, app, dbg };
}

type Stores = Awaited<ReturnType<typeof stores>>;

function mount(s: Stores, ui: ReactElement) {
  return render(
    <StoreContext.Provider value={s.app}>
      <DebugContext.Provider value={s.dbg}>{ui}</DebugContext.Provider>
    </StoreContext.Provider>,
  );
}

function modelOf(events: Record<string, unknown>[]) {
  const run = 'r1';
  return foldEvents(
    emptyModel(),
    events.map((e) => ({ run, ts_ms: (ts += 10), ...e }) as unknown as DebugEvent),
  );
}

/** A step whose LLM call sent, answered and called tools with the payload everywhere. */
function callEvents(p: string): Record<string, unknown>[] {
  return [
    { event: 'run_started', agent: 'a', input: p },
    { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
    {
      event: 'llm_request',
      node: 'answer',
      messages: [
        { role: 'system', content: p },
        { role: 'user', content: p },
        { role: 'assistant', content: p, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ q: p }) } }] },
        { role: 'tool', tool_call_id: 'c1', content: p },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', description: p, parameters: { type: 'object', properties: { q: { type: 'string', description: p } } } } }],
      model: 'm',
    },
    { event: 'llm_response', node: 'answer', content: p, tool_calls: [{ id: 'c2', name: 'lookup', args: { q: p } }], usage: { input_tokens: 1, output_tokens: 1 }, duration_ms: 5 },
    { event: 'tool_call', node: 'answer', call: { id: 'c2', name: 'lookup', args: { q: p, [p]: p } } },
    { event: 'tool_result', node: 'answer', id: 'c2', name: 'lookup', result: p },
    { event: 'tool_call', node: 'answer', call: { id: 'c3', name: 'fails', args: null } },
    { event: 'tool_result', node: 'answer', id: 'c3', name: 'fails', result: null, error: p },
    { event: 'node_exit', step: 1, node: 'answer', update: { out: p }, duration_ms: 7 },
    { event: 'node_enter', step: 2, node: 'broken', kind: 'call_llm' },
    { event: 'llm_request', node: 'broken', messages: [{ role: 'user', content: 'hi' }], tools: [], model: 'm' },
    { event: 'llm_error', node: 'broken', kind: 'server', message: p, duration_ms: 3 },
  ];
}

/** Timeline rows where node output reaches labels and tooltips (hook details, route options). */
function timelineEvents(p: string): Record<string, unknown>[] {
  return [
    { event: 'run_started', agent: 'a', input: p },
    { event: 'node_enter', step: 1, node: 'approve', kind: 'approval' },
    { event: 'hook', point: 'after_llm_call', executor: 'py', outcome: 'failed', detail: p, node: 'approve', duration_ms: 1 },
    { event: 'node_exit', step: 1, node: 'approve', update: { answer: p }, duration_ms: 3 },
    { event: 'route', from: 'approve', to: 'ship', reason: { type: 'route_option', option: p } },
  ];
}

function stateOf(p: string): Record<string, unknown> {
  return {
    text: p,
    [p]: p,
    nested: { deep: [p, { inner: p }] },
    messages: [
      { role: 'user', content: p },
      { role: 'assistant', content: p },
    ],
    changed: `new ${p}`,
  };
}

function pendingOf(p: string, kind: Pending['kind']): Pending {
  return kind === 'interrupt'
    ? { id: 'i1', node: 'ask', kind, prompt: p, options: [], value: p, default: null, validation: null }
    : { id: 'i1', node: 'ask', kind, prompt: p, options: ['ship', p], value: null, default: null, validation: null };
}

function interrupted(s: Stores, pending: Pending) {
  s.dbg.setState({
    dialogOpen: true,
    status: { state: 'interrupted', step: 1, due: [], reason: null, pending } as unknown as RunStatusInfo,
  });
}

/** Each surface: how to render a payload, and what must stay visible. */
interface Surface {
  name: string;
  render(s: Stores, p: string): Promise<Element> | Element;
  check(root: Element, p: string, label: string): void;
}

const plainMessages = (root: Element, p: string, label: string) => {
  const contents = Array.from(root.querySelectorAll('.msg-content'));
  expect(contents.length, label).toBeGreaterThan(0);
  for (const c of contents.filter((c) => c.getAttribute('data-format') === 'plain')) assertShownAsIs(c.textContent ?? '', p, label);
};

const SURFACES: Surface[] = [
  {
    name: 'Conversation, Markdown',
    render: (_s, p) =>
      render(
        <Conversation
          format="markdown"
          collapsible
          messages={[
            { role: 'assistant', content: p },
            { role: 'user', content: p },
            { role: 'system', content: p },
            { role: 'tool', content: p, tool_call_id: 't1', name: p },
            { role: 'assistant', content: '', tool_calls: [{ id: 'c', name: p, args: { q: p } }] },
            { type: 'ai', content: [{ type: 'text', text: p }, { type: 'image_url', image_url: { url: p } }] },
          ]}
        />,
      ).container,
    check: (root, p, label) => {
      expect(root.querySelectorAll('[data-format="markdown"].md').length, label).toBe(4);
      for (const md of Array.from(root.querySelectorAll('.md'))) assertTraceShown(md, p, label);
      // Tool results stay text.
      assertShownAsIs(root.querySelector('[data-role="tool"] .msg-content')?.textContent ?? '', p, `${label} (tool)`);
    },
  },
  {
    name: 'Conversation, plain',
    render: (_s, p) =>
      render(
        <Conversation
          format="plain"
          messages={[
            { role: 'assistant', content: p },
            { role: 'user', content: p },
            { role: 'tool', content: p, tool_call_id: 't1' },
          ]}
        />,
      ).container,
    check: (root, p, label) => {
      expect(root.querySelectorAll('.md').length, label).toBe(0);
      plainMessages(root, p, label);
    },
  },
  {
    name: 'Markdown (component)',
    render: (_s, p) => render(<Markdown text={p} />).container,
    check: (root, p, label) => assertTraceShown(root, p, label),
  },
  {
    name: 'CallInspector',
    render: async (s, p) => {
      s.dbg.setState({ model: modelOf(callEvents(p)), selectedStep: 1 });
      const { container } = mount(s, <CallInspector />);
      // Open the bound tool's schema too.
      for (const b of within(container).getAllByTitle('Show the schema')) fireEvent.click(b);
      return container;
    },
    check: (root, p, label) => {
      const reply = within(root as HTMLElement).getByTestId('call-response-text');
      expect(reply.getAttribute('data-format')).toBe('markdown');
      assertTraceShown(reply, p, `${label} (reply)`);
      assertShownAsIs(within(root as HTMLElement).getByTestId('call-result-text').textContent ?? '', p, `${label} (tool result)`);
      assertShownAsIs(root.querySelector('.call.kind-tool.failed .call-error')?.textContent ?? '', p, `${label} (tool error)`);
      assertShownAsIs(root.querySelector('.call-tool-desc')?.textContent ?? '', p, `${label} (tool description)`);
      // JSON views show the payload as a JSON string.
      assertShownAsIs(root.textContent ?? '', JSON.stringify(p), `${label} (arguments)`);
      // And as plain text.
      fireEvent.click(within(within(root as HTMLElement).getByTestId('call-response-format')).getByText('Plain'));
      const plain = within(root as HTMLElement).getByTestId('call-response-text');
      expect(plain.getAttribute('data-format')).toBe('plain');
      assertShownAsIs(plain.textContent ?? '', p, `${label} (reply, plain)`);
    },
  },
  {
    name: 'CallInspector, streaming',
    render: (s, p) => {
      s.dbg.setState({
        model: modelOf([
          { event: 'run_started', agent: 'a', input: 'x' },
          { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
          { event: 'llm_request', node: 'answer', messages: [{ role: 'user', content: 'hi' }], tools: [], model: 'm' },
          { event: 'llm_delta', node: 'answer', text: p },
        ]),
        selectedStep: 1,
      });
      return mount(s, <CallInspector />).container;
    },
    check: (root, p, label) => assertShownAsIs(within(root as HTMLElement).getByTestId('call-response-text').textContent ?? '', p, label),
  },
  {
    name: 'StateTree',
    render: (s, p) => {
      const state = stateOf(p);
      s.dbg.setState({
        stateView: {
          step: 2,
          state,
          prev: null,
          diff: [
            { path: ['changed'], kind: 'changed', before: p, after: state.changed },
            { path: ['gone'], kind: 'removed', before: p },
            { path: ['nested', 'old'], kind: 'removed', before: { inner: p } },
          ],
          loading: false,
          error: null,
        },
      });
      return mount(s, <StateTree />).container;
    },
    check: (root, p, label) => {
      const json = JSON.stringify(p).slice(1, -1);
      const shown = root.textContent ?? '';
      if (p.length <= 200) assertShownAsIs(shown, json, label);
      assertShownAsIs(shown, p, `${label} (key)`);
      assertShownAsIs(visibleText(root), `was ${JSON.stringify(p)}`.slice(0, 60), `${label} (old value)`);
      const conv = within(root as HTMLElement).getByTestId('conversation');
      plainMessages(conv, p, `${label} (conversation)`);
      for (const md of Array.from(conv.querySelectorAll('.md'))) assertTraceShown(md, p, `${label} (conversation)`);
    },
  },
  {
    name: 'JsonView',
    render: (_s, p) => render(<JsonView value={{ text: p, [p]: [p], nested: { deep: p } }} open={5} />).container,
    check: (root, p, label) => {
      if (p.length <= 200) assertShownAsIs(root.textContent ?? '', JSON.stringify(p).slice(1, -1), label);
      assertShownAsIs(root.textContent ?? '', p, `${label} (key)`);
    },
  },
  {
    name: 'InterruptDialog, Markdown',
    render: (s, p) => {
      interrupted(s, pendingOf(p, 'interrupt'));
      return mount(s, <InterruptDialog />).container;
    },
    check: (root, p, label) => {
      const prompt = within(root as HTMLElement).getByTestId('interrupt-prompt');
      expect(prompt.getAttribute('data-format')).toBe('markdown');
      assertTraceShown(prompt, p, label);
    },
  },
  {
    name: 'InterruptDialog, plain',
    render: (s, p) => {
      interrupted(s, pendingOf(p, 'interrupt'));
      const { container } = mount(s, <InterruptDialog />);
      fireEvent.click(within(within(container).getByTestId('interrupt-format')).getByText('Plain'));
      return container;
    },
    check: (root, p, label) => {
      const prompt = within(root as HTMLElement).getByTestId('interrupt-prompt');
      expect(prompt.getAttribute('data-format')).toBe('plain');
      assertShownAsIs(prompt.textContent ?? '', p, label);
    },
  },
  {
    name: 'InterruptDialog, approval',
    render: (s, p) => {
      interrupted(s, pendingOf(p, 'approval'));
      return mount(s, <InterruptDialog />).container;
    },
    check: (root, p, label) => {
      assertTraceShown(within(root as HTMLElement).getByTestId('interrupt-prompt'), p, label);
      const options = within(root as HTMLElement).getAllByTestId('interrupt-option');
      assertShownAsIs(options[1].textContent ?? '', p, `${label} (option)`);
    },
  },
  {
    name: 'InterruptDialog, structured value',
    render: (s, p) => {
      interrupted(s, { id: 'i1', node: 'ask', kind: 'interrupt', prompt: JSON.stringify({ draft: p }), options: [], value: { draft: p, [p]: 1 }, default: null, validation: null });
      return mount(s, <InterruptDialog />).container;
    },
    check: (root, p, label) => assertShownAsIs(within(root as HTMLElement).getByTestId('interrupt-prompt').textContent ?? '', JSON.stringify(p).slice(1, -1), label),
  },
  {
    name: 'Timeline',
    render: (s, p) => {
      s.dbg.setState({ model: modelOf(timelineEvents(p)) });
      return mount(s, <Timeline />).container;
    },
    check: (root, p, label) => {
      const text = visibleText(root);
      assertShownAsIs(text, `failed: ${p}`, `${label} (hook detail)`);
      assertShownAsIs(text, `option: ${p}`, `${label} (route label)`);
    },
  },
  {
    name: 'Problems',
    render: (s, p) => {
      const view = s.app.getState().view!;
      s.app.setState({
        view: {
          ...view,
          diagnostics: [{ severity: 'error', code: 'x', message: p, hint: p, file: 'a.yaml', line: 1, column: 1, end_line: 1, end_column: 2 }],
        },
      });
      return mount(s, <Problems />).container;
    },
    check: (root, p, label) => {
      assertShownAsIs(root.querySelector('.msg')?.textContent ?? '', p, label);
      assertShownAsIs(root.querySelector('[data-testid="problem"]')?.getAttribute('title') ?? '', p, `${label} (hint)`);
    },
  },
  {
    name: 'Toasts',
    render: (s, p) => {
      s.app.setState({ toasts: [{ id: 1, kind: 'error', message: p }, { id: 2, kind: 'info', message: p }] });
      return mount(s, <Toasts />).container;
    },
    check: (root, p, label) => {
      for (const t of Array.from(root.querySelectorAll('.toast-msg'))) assertShownAsIs(t.textContent ?? '', p, label);
    },
  },
];

// ------------------------------------------------------------------------------------------------

beforeEach(() => {
  delete realm.__xss;
  delete win.__xss;
  vi.spyOn(realm, 'alert').mockImplementation(() => {});
  if (window.alert !== realm.alert) vi.spyOn(window, 'alert').mockImplementation(() => {});
});
afterEach(() => {
  vi.restoreAllMocks();
  delete realm.__xss;
  delete win.__xss;
});

describe('the XSS harness', () => {
  it('has a big corpus with unique names', () => {
    expect(XSS_CORPUS.length).toBeGreaterThanOrEqual(60);
    expect(new Set(XSS_CORPUS.map((c) => c.name)).size).toBe(XSS_CORPUS.length);
    for (const c of XSS_CORPUS) expect(longestWord(c.payload).length, c.name).toBeGreaterThan(2);
  });

  it('would notice: scripts and inline handlers do run in this environment', () => {
    const box = document.createElement('div');
    document.body.appendChild(box);
    try {
      box.innerHTML = '<img src="x" onerror="window.__xss = 1">';
      poke(box);
      expect(canary()).toBe(1);
      delete realm.__xss;
      box.innerHTML = '<a href="https://ok.example" onclick="window.__xss = 3">x</a>';
      poke(box);
      expect(canary()).toBe(3);
      delete realm.__xss;
      const s = document.createElement('script');
      s.textContent = 'window.__xss = 2; alert(1)';
      box.appendChild(s);
      expect(canary()).toBe(2);
      expect(realm.alert).toHaveBeenCalled();
    } finally {
      box.remove();
    }
  });

  it('would notice: a javascript: link or a handler attribute fails the checks', () => {
    const { container } = render(<div>plain</div>);
    const base = baselineOf(container);
    const a = document.createElement('a');
    a.setAttribute('href', 'javascript:void 0');
    a.textContent = 'x';
    container.firstElementChild!.appendChild(a);
    expect(() => assertInert(container, base, 'control')).toThrow();
    a.remove();
    const span = document.createElement('span');
    span.setAttribute('onmouseover', 'void 0');
    container.firstElementChild!.appendChild(span);
    expect(() => assertInert(container, base, 'control')).toThrow();
    span.remove();
    const style = document.createElement('style');
    container.firstElementChild!.appendChild(style);
    expect(() => assertInert(container, base, 'control')).toThrow();
    style.remove();
    assertInert(container, base, 'control');
  });
});

describe('the UI source', () => {
  it('never writes HTML strings into the page', () => {
    const sources = import.meta.glob(['../**/*.ts', '../**/*.tsx', '!../test/**'], { query: '?raw', import: 'default', eager: true }) as Record<string, string>;
    expect(Object.keys(sources).length).toBeGreaterThan(20);
    for (const [file, text] of Object.entries(sources)) {
      expect(/dangerouslySetInnerHTML|\.innerHTML\s*=|\.outerHTML\s*=|insertAdjacentHTML|document\.write\(/.test(text), file).toBe(false);
      expect(/from ['"]rehype-raw['"]/.test(text), file).toBe(false);
    }
  });
});

describe.each(SURFACES)('untrusted text in $name', (surface) => {
  let base: Baseline | null = null;
  const baseline = async () => {
    if (!base) {
      const s = await stores();
      const root = await surface.render(s, 'hello plain words');
      base = baselineOf(root);
      cleanup();
    }
    return base;
  };

  it.each(XSS_CORPUS)('$name', async ({ name, payload }) => {
    const b = await baseline();
    const s = await stores();
    const root = await surface.render(s, payload);
    const label = `${surface.name} / ${name}`;
    assertInert(root, b, label);
    surface.check(root, payload, label);
    assertInert(root, b, `${label} (after switching)`, false);
  });
});

// ------------------------------------------------------------------------------------------------

describe('Markdown rendering rules', () => {
  it('renders Markdown: emphasis, lists, code blocks, tables', () => {
    const { container } = render(<Markdown text={'# Title\n\n**bold** and `code`\n\n- one\n- two\n\n```\nconst x = 1;\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |'} />);
    expect(container.querySelector('h1')?.textContent).toBe('Title');
    expect(container.querySelector('strong')?.textContent).toBe('bold');
    expect(container.querySelectorAll('li')).toHaveLength(2);
    expect(container.querySelector('pre code')?.textContent).toBe('const x = 1;\n');
    expect(container.querySelector('td')?.textContent).toBe('1');
  });

  it('http(s) and mailto links are external links that never navigate; other schemes are removed, with the URL in the tooltip', () => {
    const { container } = render(<Markdown text={'[web](https://example.com/a?b=1) [mail](mailto:me@example.com) [js](javascript:alert(1)) [rel](./x) www.example.org'} />);
    const anchors = Array.from(container.querySelectorAll('a'));
    expect(anchors.map((a) => a.getAttribute('href'))).toEqual(['https://example.com/a?b=1', 'mailto:me@example.com', 'http://www.example.org/']);
    for (const a of anchors) {
      // No target: a click is handled by the app (it asks first), never by the webview.
      expect(a.getAttribute('target')).toBeNull();
      expect(a.getAttribute('data-testid')).toBe('external-link');
    }
    const mail = within(container).getByText('mail');
    expect(mail.getAttribute('title')).toBe('mailto:me@example.com');
    const js = within(container).getByText('js');
    expect(js.tagName).toBe('SPAN');
    expect(js.className).toBe('md-link-removed');
    expect(js.getAttribute('title')).toContain('javascript:alert(1)');
    expect(within(container).getByText('rel').tagName).toBe('SPAN');
  });

  it('never loads an image: the alt text is shown (a link to it for http(s))', () => {
    const { container } = render(<Markdown text={'![a chart](https://example.com/c.png) ![local](file:///etc/x.png)'} />);
    expect(container.querySelector('img')).toBeNull();
    const chart = within(container).getByText('🖼 a chart');
    expect(chart.tagName).toBe('A');
    expect(chart.getAttribute('href')).toBe('https://example.com/c.png');
    const local = within(container).getByText('🖼 local');
    expect(local.tagName).toBe('SPAN');
    expect(local.getAttribute('title')).toBe('image not loaded: file:///etc/x.png');
  });

  it('raw HTML is shown as text', () => {
    const { container } = render(<Markdown text={'Hello <b>there</b> <script>x()</script>'} />);
    expect(container.querySelector('b')).toBeNull();
    expect(container.querySelector('script')).toBeNull();
    expect(container.textContent).toBe('Hello <b>there</b> <script>x()</script>');
  });

  it('safeUrl: only absolute http, https and mailto URLs, judged as the browser would', () => {
    for (const ok of ['http://a.example/', 'https://a.example/x?y#z', 'mailto:a@b.example', 'HTTPS://A.EXAMPLE/'])
      expect(safeUrl(ok), ok).toBeDefined();
    for (const bad of [
      'javascript:alert(1)',
      ' javascript:alert(1)',
      'java\tscript:alert(1)',
      'java\nscript:alert(1)',
      '\u0000javascript:alert(1)',
      'JAVASCRIPT:alert(1)',
      'data:text/html,<script>',
      'vbscript:msgbox(1)',
      'file:///etc/passwd',
      'ftp://a.example/',
      '/relative',
      './relative',
      '#fragment',
      '//evil.example/x',
      '',
    ])
      expect(safeUrl(bad), JSON.stringify(bad)).toBeUndefined();
  });

  it('the Markdown / Plain switch of a message keeps whitespace in plain mode', () => {
    const { container } = render(<Conversation messages={[{ role: 'assistant', content: '**hi**\n  indented' }]} />);
    const content = () => container.querySelector('.msg-content')!;
    expect(content().getAttribute('class')).toContain('msg-md');
    expect(content().querySelector('strong')?.textContent).toBe('hi');
    fireEvent.click(within(within(container).getByTestId('message-format')).getByText('Plain'));
    expect(content().querySelector('strong')).toBeNull();
    expect(content().textContent).toBe('**hi**\n  indented');
    fireEvent.click(within(within(container).getByTestId('message-format')).getByText('Markdown'));
    expect(content().querySelector('strong')?.textContent).toBe('hi');
  });

  it('user and system messages start as plain text, tool results have no switch', () => {
    const { container } = render(
      <Conversation
        messages={[
          { role: 'user', content: '**u**' },
          { role: 'tool', content: '**t**', tool_call_id: 'x' },
        ]}
      />,
    );
    const msgs = within(container).getAllByTestId('message');
    expect(msgs[0].querySelector('.msg-content')?.getAttribute('data-format')).toBe('plain');
    expect(within(msgs[0]).getByTestId('message-format')).toBeTruthy();
    expect(within(msgs[1]).queryByTestId('message-format')).toBeNull();
  });
});

describe('secret masking', () => {
  it('names: secret word parts', () => {
    for (const n of [
      'api_key',
      'apiKey',
      'APIKey',
      'ACCESS_TOKEN',
      'db_password',
      'client_secret',
      'x-api-key',
      'OPENAI_API_KEY',
      'key',
      'token',
      'password',
      'passwd',
      'Authorization',
      'refreshToken',
      'apikey',
      'accesstoken',
      'secret_value',
      'password_plain',
      'slack.bot.token',
      'password2',
      'credentials',
    ])
      expect(isSecretName(n), n).toBe(true);
    for (const n of ['keyboard', 'monkey', 'keys_pressed', 'max_tokens', 'input_tokens', 'tokens', 'token_count', 'key_name', 'token_type', 'keyword', 'tokenizer', 'turkey', 'messages', 'author', '0', ''])
      expect(isSecretName(n), n).toBe(false);
  });

  it('strings shaped like API keys are masked anywhere in a text', () => {
    const keys = [
      'sk-proj-abcdefghijklmnopqrstuvwxyz012345',
      'sk-ant-api03-abcdefghijklmnopqrstuvwxyz_0123456789',
      'sk-abcdefghijklmnopqrstuvwxyz0123',
      'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
      'github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz',
      'xoxb-1234567890-abcdefghij',
      'xoxp-1234567890-1234567890-abcdef',
      'AKIAIOSFODNN7EXAMPLE',
      'AIzaSyA-abcdefghijklmnopqrstuvwxyz01234',
      'hf_abcdefghijklmnopqrstuvwxyzABCDEFGH',
    ];
    for (const k of keys) {
      expect(maskSecrets(`key: ${k}.`), k).toBe(`key: ${MASK}.`);
      expect(maskSecrets(k), k).toBe(MASK);
    }
    expect(maskSecrets(`a ${keys[0]} b ${keys[5]} c`)).toBe(`a ${MASK} b ${MASK} c`);
    // Prose and short look-alikes are left alone.
    for (const t of ['use sk-learn for this', 'task-abcdefghijklmnopqrstuvwxyz0123', 'AKIA is a prefix', 'xoxb-short', 'ghp_short', 'the risk-assessment-of-everything-here'])
      expect(maskSecrets(t), t).toBe(t);
  });

  it('redact: scalars under secret names, key shapes in strings; null, booleans and "" stay', () => {
    const v = {
      api_key: 'abc',
      nested: { db_password: 1234, client_secret: null, token: '', ok: true },
      credentials: { user: 'u', pass: 'p', list: ['a'] },
      note: 'my key is sk-abcdefghijklmnopqrstuvwxyz0123',
      max_tokens: 512,
      keyboard: 'qwerty',
    };
    expect(redact(v)).toEqual({
      api_key: MASK,
      nested: { db_password: MASK, client_secret: null, token: '', ok: true },
      credentials: { user: MASK, pass: MASK, list: [MASK] },
      note: `my key is ${MASK}`,
      max_tokens: 512,
      keyboard: 'qwerty',
    });
    const clean = { a: 1, b: ['x'] };
    expect(redact(clean)).toBe(clean);
    expect(hidesAnything(clean)).toBe(false);
    expect(hidesAnything(v)).toBe(true);
  });

  it('the state panel shows hidden values as ••••••, with the tooltip, nowhere in clear, not editable', async () => {
    const s = await stores();
    const secretValues = ['hunter2-very-secret', 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz_0123456789', 'tok-123456789', 'AKIAIOSFODNN7EXAMPLE'];
    s.dbg.setState({
      stateView: {
        step: 2,
        state: {
          db_password: secretValues[0],
          config: { apiKey: 'plain-looking-value', keyboard: 'qwerty', max_tokens: 100 },
          ACCESS_TOKEN: secretValues[2],
          note: `use ${secretValues[1]} now`,
          messages: [{ role: 'assistant', content: `your key ${secretValues[3]} **works**` }],
          client_secret: 'changed-secret',
        },
        prev: null,
        diff: [{ path: ['client_secret'], kind: 'changed', before: 'old-secret-value', after: 'changed-secret' }],
        loading: false,
        error: null,
      },
    });
    const { container } = mount(s, <StateTree />);
    const everything = () => `${container.innerHTML}`;
    for (const v of [...secretValues, 'plain-looking-value', 'old-secret-value', 'changed-secret']) expect(everything(), v).not.toContain(v);
    expect(everything()).toContain('qwerty');
    expect(everything()).toContain('100');
    const row = (path: string) => container.querySelector(`[data-testid="state-row"][data-path="${path}"]`)!;
    const hidden = row('db_password').querySelector('[data-testid="secret"]')!;
    expect(hidden.textContent).toBe(MASK);
    expect(hidden.getAttribute('title')).toBe(SECRET_TITLE);
    expect(row('config.apiKey').textContent).toContain(MASK);
    expect(row('note').textContent).toContain(`use ${MASK} now`);
    expect(row('note').querySelector(`[title="${SECRET_TITLE}"]`)).toBeTruthy();
    expect(container.querySelector('[data-testid="conversation"]')!.textContent).toContain(`your key ${MASK}`);
    // Searching for a hidden value finds nothing.
    fireEvent.change(within(container).getByTestId('state-search'), { target: { value: 'hunter2' } });
    await within(container).findByText(/Nothing matches/);
  });

  it('a top-level value holding a hidden part cannot be edited (the editor would show it)', async () => {
    const s = await stores();
    s.dbg.setState({
      mode: 'live',
      info: { run: 'r1' } as never,
      status: { state: 'paused', step: 1, due: [], reason: 'step' } as unknown as RunStatusInfo,
      stateView: { step: 1, state: { api_key: 'x1', safe: 'y', nested: { token: 'z' } }, prev: null, diff: [], loading: false, error: null },
    });
    const { container } = mount(s, <StateTree />);
    const row = (path: string) => container.querySelector(`[data-testid="state-row"][data-path="${path}"]`)!;
    expect(row('safe').querySelector('[data-testid="state-edit"]')).toBeTruthy();
    expect(row('api_key').querySelector('[data-testid="state-edit"]')).toBeNull();
    expect(row('api_key').querySelector('[data-testid="state-edit-hidden"]')).toBeTruthy();
    expect(row('nested').querySelector('[data-testid="state-edit"]')).toBeNull();
  });

  it('the conversation, the call inspector and JSON views mask API-key shapes; tool schemas keep their names', async () => {
    const key = 'sk-proj-abcdefghijklmnopqrstuvwxyz012345';
    const { container } = render(<Conversation messages={[{ role: 'assistant', content: `key ${key}` }, { role: 'user', content: `mine: ${key}` }]} />);
    expect(container.innerHTML).not.toContain(key);
    expect(container.textContent).toContain(`key ${MASK}`);
    const s = await stores();
    s.dbg.setState({
      model: modelOf([
        { event: 'run_started', agent: 'a', input: 'x' },
        { event: 'node_enter', step: 1, node: 'answer', kind: 'call_llm' },
        {
          event: 'llm_request',
          node: 'answer',
          messages: [{ role: 'user', content: `use ${key}` }],
          tools: [{ type: 'function', function: { name: 'login', parameters: { type: 'object', properties: { password: { type: 'string' } } } } }],
          model: 'm',
        },
        { event: 'llm_response', node: 'answer', content: `done with ${key}`, tool_calls: [{ id: 'c', name: 'login', args: { password: 'pw-123', user: 'me' } }] },
        { event: 'tool_call', node: 'answer', call: { id: 'c', name: 'login', args: { password: 'pw-123', user: 'me' } } },
        { event: 'tool_result', node: 'answer', id: 'c', name: 'login', result: `token ${key}` },
        { event: 'node_exit', step: 1, node: 'answer', update: {}, duration_ms: 1 },
      ]),
      selectedStep: 1,
    });
    const view = mount(s, <CallInspector />);
    const html = () => view.container.innerHTML;
    expect(html()).not.toContain(key);
    expect(html()).not.toContain('pw-123');
    expect(view.container.textContent).toContain('"me"');
    fireEvent.click(within(view.container).getByTitle('Show the schema'));
    // The schema's `password` property is a parameter description, shown as is.
    expect(within(view.container).getByText('"string"')).toBeTruthy();
  });
});
