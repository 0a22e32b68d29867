// The LLM and tool calls of the selected step (or of the latest step when following): the exact
// messages sent, the tools bound, the response and its tool calls, model, tokens, latency and
// cost; the reply text growing while it streams; failed calls with their kind; tool calls with
// their arguments and result or error. A finished reply is shown as Markdown (switchable to plain
// text; see `Markdown.tsx`), a reply still streaming, tool results and errors as text, arguments
// and structured results as JSON; API-key shapes are masked everywhere.
import { useState, type ReactNode } from 'react';
import { FormatToggle, Markdown, PlainText, type TextFormat } from '../Markdown';
import { maskSecrets } from '../../untrusted';
import { shownModel, useDebug } from '../../debug/store';
import { rowAt, type CallRecord } from '../../debug/model';
import { Conversation, isMessageList } from './Conversation';
import { JsonView } from './JsonView';
import { fmtMs } from './Timeline';

function Section({ title, children, start = true, testid }: { title: ReactNode; children: ReactNode; start?: boolean; testid?: string }) {
  const [open, setOpen] = useState(start);
  return (
    <section className="call-section" data-testid={testid}>
      <h4>
        <button type="button" className="jv-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? '▾' : '▸'}
        </button>
        {title}
      </h4>
      {open ? children : null}
    </section>
  );
}

interface ToolSpec {
  name: string;
  description?: string;
  schema: unknown;
}

function toolSpecs(tools: unknown): ToolSpec[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((t) => {
    if (typeof t === 'string') return { name: t, schema: null };
    const o = (t ?? {}) as Record<string, unknown>;
    const fn = (o.function ?? null) as Record<string, unknown> | null;
    const src = fn ?? o;
    return {
      name: String(src.name ?? '?'),
      description: typeof src.description === 'string' ? src.description : undefined,
      schema: src.parameters ?? src.input_schema ?? src.schema ?? t,
    };
  });
}

function ToolBound({ spec }: { spec: ToolSpec }) {
  const [open, setOpen] = useState(false);
  return (
    <div className="call-tool" data-testid="call-tool" data-tool={spec.name}>
      <button type="button" className="jv-toggle" aria-expanded={open} onClick={() => setOpen(!open)} title="Show the schema">
        {open ? '▾' : '▸'}
      </button>
      <span className="mono call-name">{spec.name}</span>
      {spec.description ? <span className="call-tool-desc">{maskSecrets(spec.description)}</span> : null}
      {/* A schema's property names (`api_key`, `password`) describe parameters, they hold no values. */}
      {open ? <JsonView value={spec.schema} open={3} maskNames={false} /> : null}
    </div>
  );
}

function latency(c: CallRecord): string {
  if (c.durationMs != null) return fmtMs(c.durationMs);
  return c.endMs == null ? 'running…' : fmtMs(c.endMs - c.startMs);
}

/** `$0.0012`: enough digits to see a cheap call. */
export function fmtCost(usd: number | null | undefined): string {
  if (usd == null || !Number.isFinite(usd)) return '';
  if (usd === 0) return '$0';
  if (usd < 0.01) return `$${usd.toPrecision(2)}`;
  return `$${usd.toFixed(usd < 1 ? 4 : 2)}`;
}

/** What each failure kind means, for the tooltip. */
const ERROR_KIND_TEXT: Record<string, string> = {
  timeout: 'no answer in time',
  connection: 'the connection failed',
  rate_limited: 'rate limited (HTTP 429)',
  server: 'server error (HTTP 5xx)',
  malformed: 'the answer was not in the expected format',
  auth: 'the key was refused (HTTP 401/403)',
  bad_request: 'the request was refused (HTTP 4xx)',
  cancelled: 'cancelled: the run was stopped',
  config: 'the provider is not set up',
  other: 'failed',
};

/** The reply text of a finished call, as Markdown or plain text. */
function ReplyText({ text }: { text: string }) {
  const [format, setFormat] = useState<TextFormat>('markdown');
  return (
    <>
      <div className="fmt-row">
        <FormatToggle value={format} onChange={setFormat} testid="call-response-format" />
      </div>
      {format === 'markdown' ? (
        <Markdown className="call-text" testid="call-response-text" text={text} />
      ) : (
        <PlainText className="call-text" testid="call-response-text" text={text} />
      )}
    </>
  );
}

function LlmCall({ c, top }: { c: CallRecord; top: string | null }) {
  const messages = c.request?.messages;
  const list = Array.isArray(messages) ? messages : null;
  const tools = toolSpecs(c.request?.tools);
  const usage = c.response?.usage ?? null;
  const calls = c.response?.tool_calls ?? [];
  const waiting = c.endMs == null;
  const streaming = waiting && !!c.stream;
  const failed = !!c.errorKind || (c.error != null && c.error !== '');
  const state = waiting ? (streaming ? 'streaming' : 'waiting') : failed ? 'error' : 'done';
  return (
    <div className={`call kind-llm${failed ? ' failed' : ''}`} data-testid="call" data-kind="llm" data-node={c.node} data-state={state}>
      <div className="call-head">
        <span className="call-kind">LLM</span>
        <span className="call-name">{c.node}</span>
        {c.model ? (
          <span className="kind-pill mono" data-testid="call-model" title="model">
            {c.model}
          </span>
        ) : null}
        {top && c.run !== top ? <span className="kind-pill">nested: {c.run.slice(top.length + 1)}</span> : null}
        {streaming ? (
          <span className="call-live" data-testid="call-streaming">
            streaming…
          </span>
        ) : null}
        {c.errorKind ? (
          <span className="call-error-kind" data-testid="call-error-kind" data-kind={c.errorKind} title={ERROR_KIND_TEXT[c.errorKind] ?? c.errorKind}>
            ✕ {c.errorKind.replace('_', ' ')}
          </span>
        ) : null}
        <span className="call-metrics">
          <span data-testid="call-tokens" title="tokens in / out">
            {usage ? `${usage.input} in / ${usage.output} out` : waiting || failed ? '' : 'no usage'}
          </span>
          {c.costUsd != null ? (
            <span data-testid="call-cost" title="cost (from the model's list price)">
              {fmtCost(c.costUsd)}
            </span>
          ) : null}
          <span data-testid="call-latency" title="latency">
            {latency(c)}
          </span>
        </span>
      </div>
      <div className="call-body">
        {c.request ? (
          <Section title={`Messages sent (${list ? list.length : '?'})`} testid="call-messages">
            {list && (list.length === 0 || isMessageList(list)) ? <Conversation messages={list} collapsible /> : <JsonView value={messages} open={2} />}
          </Section>
        ) : (
          <div className="muted small">The request was not recorded.</div>
        )}
        {c.request ? (
          <Section title={`Tools bound (${tools.length})`} testid="call-tools" start={tools.length > 0}>
            {tools.length ? (
              <div className="call-tools">
                {tools.map((t, i) => (
                  <ToolBound key={`${t.name}:${i}`} spec={t} />
                ))}
              </div>
            ) : (
              <div className="muted small">No tools bound.</div>
            )}
          </Section>
        ) : null}
        <Section title="Response" testid="call-response">
          {c.error ? (
            <div className="call-error" data-testid="call-error">
              {maskSecrets(c.error)}
            </div>
          ) : null}
          {c.response?.content ? (
            <ReplyText text={c.response.content} />
          ) : c.stream ? (
            // Still streaming (or cut off): the text as it came, without Markdown.
            <div className={`call-text${waiting ? ' call-streaming' : ' call-partial'}`} data-testid="call-response-text" data-streaming={waiting ? 'true' : 'false'}>
              {maskSecrets(c.stream)}
            </div>
          ) : waiting ? (
            <div className="muted small call-streaming">waiting for the model</div>
          ) : calls.length === 0 && !failed ? (
            <div className="muted small">(no content)</div>
          ) : null}
          {calls.map((tc, i) => (
            <div className="msg-toolcall" key={tc.id ?? i} data-testid="call-tool-call">
              <span className="msg-toolcall-name mono">
                ⚙ {tc.name}
                {tc.id ? <span className="muted"> #{tc.id}</span> : null}
              </span>
              <JsonView value={tc.args} open={2} />
            </div>
          ))}
        </Section>
      </div>
    </div>
  );
}

function ToolCallCard({ c, top }: { c: CallRecord; top: string | null }) {
  const name = c.call?.name ?? '?';
  const failed = c.error != null && c.error !== '';
  return (
    <div className={`call kind-tool${failed ? ' failed' : ''}`} data-testid="call" data-kind="tool" data-node={c.node} data-tool={name}>
      <div className="call-head">
        <span className="call-kind">Tool</span>
        <span className="call-name mono">{name}</span>
        <span className="muted small">in {c.node}</span>
        {c.id ? <span className="muted small mono">#{c.id}</span> : null}
        {top && c.run !== top ? <span className="kind-pill">nested: {c.run.slice(top.length + 1)}</span> : null}
        <span className="call-metrics">
          <span data-testid="call-latency" title="latency">
            {latency(c)}
          </span>
        </span>
      </div>
      <div className="call-body">
        <Section title="Arguments" testid="call-args">
          {c.call?.args === null || c.call?.args === undefined ? <div className="muted small">(none recorded)</div> : <JsonView value={c.call.args} open={2} />}
        </Section>
        <Section title={failed ? 'Error' : 'Result'} testid="call-result">
          {failed ? (
            <div className="call-error">{maskSecrets(c.error ?? '')}</div>
          ) : c.endMs == null ? (
            <div className="muted small call-streaming">running</div>
          ) : typeof c.result === 'string' ? (
            <div className="call-text" data-testid="call-result-text">
              {maskSecrets(c.result)}
            </div>
          ) : (
            <JsonView value={c.result} open={2} />
          )}
        </Section>
      </div>
    </div>
  );
}

export function CallInspector() {
  const model = useDebug(shownModel);
  const selected = useDebug((s) => s.selectedStep);
  const row = selected != null ? rowAt(model, selected) : model.steps[model.steps.length - 1];
  const calls = row?.calls ?? [];
  const top = model.run;
  const llm = calls.filter((c) => c.kind === 'llm');
  const tokens = llm.reduce(
    (t, c) => (c.response?.usage ? { input: t.input + c.response.usage.input, output: t.output + c.response.usage.output } : t),
    { input: 0, output: 0 },
  );
  const failed = llm.filter((c) => c.errorKind).length;
  const cost = llm.reduce<number | null>((sum, c) => (c.costUsd != null ? (sum ?? 0) + c.costUsd : sum), null);
  return (
    <div className="call-inspector" style={{ display: 'flex', flexDirection: 'column', flex: 1, minHeight: 0 }}>
      <div className="dp-toolbar">
        <strong className="small">
          {row ? `Calls of step ${row.step}` : 'Calls'}
          {row ? <span className="muted"> · {row.nodes.join(', ')}</span> : null}
        </strong>
        {row && selected == null ? <span className="muted small">(latest step; select a step in the timeline)</span> : null}
        <span className="spacer" />
        {calls.length ? (
          <span className="muted small">
            {llm.length} LLM{failed ? ` (${failed} failed)` : ''} · {calls.length - llm.length} tool · {tokens.input} in / {tokens.output} out
            {cost != null ? ` · ${fmtCost(cost)}` : ''}
          </span>
        ) : null}
      </div>
      <div className="calls">
        {!row ? <div className="muted small">No steps yet.</div> : null}
        {row && calls.length === 0 ? <div className="muted small">Step {row.step} made no LLM or tool calls.</div> : null}
        {calls.map((c, i) => (c.kind === 'llm' ? <LlmCall key={`${i}:${c.run}:${c.id}`} c={c} top={top} /> : <ToolCallCard key={`${i}:${c.run}:${c.id}`} c={c} top={top} />))}
      </div>
    </div>
  );
}
