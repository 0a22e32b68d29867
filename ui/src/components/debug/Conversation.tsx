// A list of chat messages rendered as a conversation: LangChain-shaped messages as stored in sherma
// state (`{type: human|ai|system|tool, content, tool_calls?}`) and wire/Loki-shaped ones
// (`{role: system|user|assistant|tool, content, tool_calls?, tool_call_id?, name?}`).
// Assistant text is shown as Markdown (see `Markdown.tsx` for what that allows), everything else
// as plain text; each message has a "Markdown / Plain" switch (tool results stay text). API-key
// shapes are masked in both.
import { useState } from 'react';
import { FormatToggle, Markdown, PlainText, type TextFormat } from '../Markdown';
import { maskSecrets } from '../../untrusted';
import { JsonView, pretty } from './JsonView';

export type Role = 'system' | 'user' | 'assistant' | 'tool' | string;

export interface ToolCallView {
  id?: string;
  name: string;
  args: unknown;
}

export interface MessageView {
  role: Role;
  content: string;
  /** Content that is not plain text (content blocks other than text), as JSON. */
  extra?: unknown;
  toolCalls: ToolCallView[];
  toolCallId?: string;
  name?: string;
}

const ROLE_OF: Record<string, Role> = {
  human: 'user',
  user: 'user',
  ai: 'assistant',
  assistant: 'assistant',
  AIMessageChunk: 'assistant',
  system: 'system',
  developer: 'system',
  tool: 'tool',
  function: 'tool',
};

/** True when `v` looks like a list of chat messages (non-empty, every item has a role/type and content). */
export function isMessageList(v: unknown): v is Record<string, unknown>[] {
  return (
    Array.isArray(v) &&
    v.length > 0 &&
    v.every((m) => m !== null && typeof m === 'object' && !Array.isArray(m) && ('role' in m || 'type' in m) && 'content' in m)
  );
}

function parseArgs(a: unknown): unknown {
  if (typeof a !== 'string') return a;
  try {
    return JSON.parse(a);
  } catch {
    return a;
  }
}

function toolCallsOf(m: Record<string, unknown>): ToolCallView[] {
  const raw = m.tool_calls ?? (m.additional_kwargs as Record<string, unknown> | undefined)?.tool_calls;
  if (!Array.isArray(raw)) return [];
  return raw.map((c) => {
    const o = (c ?? {}) as Record<string, unknown>;
    const fn = o.function as Record<string, unknown> | undefined;
    return {
      id: typeof o.id === 'string' ? o.id : undefined,
      name: String(o.name ?? fn?.name ?? '?'),
      args: parseArgs(o.args ?? fn?.arguments ?? null),
    };
  });
}

/** One message normalised for display. */
export function messageView(raw: unknown): MessageView {
  const m = (raw ?? {}) as Record<string, unknown>;
  const kind = String(m.role ?? m.type ?? 'user');
  const role = ROLE_OF[kind] ?? kind;
  let content = '';
  let extra: unknown;
  const c = m.content;
  if (typeof c === 'string') content = c;
  else if (Array.isArray(c)) {
    const texts: string[] = [];
    const others: unknown[] = [];
    for (const b of c) {
      if (typeof b === 'string') texts.push(b);
      else if (b && typeof b === 'object' && (b as { type?: unknown }).type === 'text' && typeof (b as { text?: unknown }).text === 'string') texts.push((b as { text: string }).text);
      else others.push(b);
    }
    content = texts.join('\n');
    if (others.length) extra = others;
  } else if (c != null) extra = c;
  return {
    role,
    content,
    extra,
    toolCalls: toolCallsOf(m),
    toolCallId: typeof m.tool_call_id === 'string' ? m.tool_call_id : undefined,
    name: typeof m.name === 'string' ? m.name : undefined,
  };
}

/** Content longer than this starts cut, with "show all". */
const LONG_CONTENT = 1200;

function Content({ text, format }: { text: string; format: TextFormat }) {
  const [all, setAll] = useState(false);
  const cut = text.length > LONG_CONTENT && !all;
  const shown = cut ? `${text.slice(0, LONG_CONTENT)}…` : text;
  const more = cut ? (
    <>
      {' '}
      <button type="button" className="link" onClick={() => setAll(true)}>
        show all ({text.length} chars)
      </button>
    </>
  ) : null;
  if (format === 'markdown') {
    return (
      <div className="msg-content msg-md">
        <Markdown text={shown} />
        {more}
      </div>
    );
  }
  return (
    <PlainText className="msg-content" text={shown}>
      {more}
    </PlainText>
  );
}

/** How a role's text starts out: assistant replies as Markdown, the rest as text. */
export function defaultFormat(role: Role): TextFormat {
  return role === 'assistant' ? 'markdown' : 'plain';
}

function ToolCallLine({ call }: { call: ToolCallView }) {
  const simple = call.args === null || typeof call.args !== 'object';
  return (
    <div className="msg-toolcall" data-testid="message-tool-call">
      <span className="msg-toolcall-name mono">
        ⚙ {call.name}
        {call.id ? <span className="muted"> #{call.id}</span> : null}
      </span>
      {simple ? <span className="mono"> {maskSecrets(pretty(call.args))}</span> : <JsonView value={call.args} open={1} />}
    </div>
  );
}

export function Message({
  msg,
  diff,
  collapsible,
  index,
  format: initialFormat,
}: {
  msg: MessageView;
  diff?: string;
  collapsible?: boolean;
  index?: number;
  /** How the text starts out (default: `defaultFormat` of the role; tool results are always text). */
  format?: TextFormat;
}) {
  const [open, setOpen] = useState(true);
  const isTool = msg.role === 'tool';
  const [format, setFormat] = useState<TextFormat>(isTool ? 'plain' : (initialFormat ?? defaultFormat(msg.role)));
  const body = (
    <>
      {msg.content ? <Content text={msg.content} format={format} /> : null}
      {msg.extra !== undefined ? <JsonView value={msg.extra} open={1} /> : null}
      {msg.toolCalls.map((c, i) => (
        <ToolCallLine key={c.id ?? i} call={c} />
      ))}
      {!msg.content && msg.extra === undefined && msg.toolCalls.length === 0 ? <div className="muted small">(empty)</div> : null}
    </>
  );
  return (
    <div className={`message role-${msg.role}${diff ? ` diff-${diff}` : ''}`} data-testid="message" data-role={msg.role} data-diff={diff ?? ''}>
      <div className="msg-head">
        {collapsible ? (
          <button type="button" className="jv-toggle" aria-expanded={open} onClick={() => setOpen(!open)} title={open ? 'Collapse' : 'Expand'}>
            {open ? '▾' : '▸'}
          </button>
        ) : null}
        <span className="msg-role">{msg.role}</span>
        {msg.role === 'tool' && (msg.name || msg.toolCallId) ? (
          <span className="muted small mono">
            {msg.name ?? ''}
            {msg.toolCallId ? ` ← #${msg.toolCallId}` : ''}
          </span>
        ) : null}
        {index !== undefined ? <span className="msg-index muted small">#{index}</span> : null}
        {diff === 'added' ? <span className="diff-mark">+ new</span> : diff === 'changed' ? <span className="diff-mark">changed</span> : null}
        {!open ? <span className="muted small msg-preview">{maskSecrets(msg.content.slice(0, 120))}</span> : null}
        {open && msg.content && !isTool ? <FormatToggle value={format} onChange={setFormat} testid="message-format" /> : null}
      </div>
      {open ? body : null}
    </div>
  );
}

export interface ConversationProps {
  messages: unknown[];
  /** Diff mark per message index ('added' | 'changed' | 'removed'). */
  diffs?: (string | undefined)[];
  /** Each message can be folded (the call inspector). */
  collapsible?: boolean;
  /** Only these indices are shown (search). */
  only?: Set<number>;
  /** How message text starts out (default: per role, see `defaultFormat`). */
  format?: TextFormat;
}

export function Conversation({ messages, diffs, collapsible, only, format }: ConversationProps) {
  return (
    <div className="conversation" data-testid="conversation">
      {messages.map((m, i) =>
        only && !only.has(i) ? null : <Message key={i} index={i} msg={messageView(m)} diff={diffs?.[i]} collapsible={collapsible} format={format} />,
      )}
      {messages.length === 0 ? <div className="muted small">(no messages)</div> : null}
    </div>
  );
}
