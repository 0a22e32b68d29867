// Rules for showing text the UI did not write: LLM replies, tool results, interrupt questions and
// run state. Pure functions, shared by the Markdown renderer and the debugger's views.
//
// - Links: only absolute http, https and mailto URLs survive (`safeUrl`); everything else
//   (javascript:, data:, vbscript:, file:, relative paths, fragments) is removed.
// - Secrets (a second layer behind the engine's own redaction of known secret values): values
//   under secret-looking names (`isSecretName`) and strings shaped like common API keys
//   (`maskSecrets`) are shown as `MASK`, with no way to reveal them.

/** What a hidden value shows instead. */
export const MASK = '••••••';
/** The tooltip of a hidden value. */
export const SECRET_TITLE = 'hidden: looks like a secret';

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/**
 * The URL to use for a link found in untrusted text, or undefined when it must not be one.
 * Parsed with the WHATWG URL parser (the browser's own rules: surrounding control characters and
 * spaces trimmed, tabs and newlines removed), so `jav&#x09;ascript:` and friends are judged as the
 * webview would judge them. Relative URLs have no base and are refused: inside the app they would
 * navigate the app itself. Returns the parser's normalised form, so what was checked is what is
 * rendered.
 */
export function safeUrl(url: string | null | undefined): string | undefined {
  if (typeof url !== 'string' || url.length === 0 || url.length > 8192) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (!SAFE_PROTOCOLS.has(u.protocol)) return undefined;
  return u.href;
}

/*
 * Secret names. A name is split into word parts: at `_`, `-`, `.`, spaces and digits, and at
 * camelCase boundaries (`apiKey` → api|key, `APIKey` → api|key, `ACCESS_TOKEN` → access|token).
 * It is secret when
 *   - its LAST part is `key`, `token`, `secret`, `password`, `passwd`, `pwd`, `passphrase`,
 *     `credential(s)`, `authorization`, `cookie`, or one of those glued to a usual prefix
 *     (`apikey`, `accesstoken`, `authtoken`, `secretkey`, `privatekey`, …): the head noun of the
 *     name is the secret (api_key, apiKey, ACCESS_TOKEN, db_password, client_secret, x-api-key);
 *   - or ANY part is `secret(s)`, `password(s)` or `passwd`: those words rarely name anything else
 *     (secret_value, password_plain).
 * So `keyboard`, `monkey`, `max_tokens`, `input_tokens`, `token_count`, `key_name` and
 * `token_type` are not secret: `key` and `token` only count as the last part, and `tokens` (token
 * counts are everywhere in LLM state) never does.
 */
const STRONG_PARTS = new Set(['secret', 'secrets', 'password', 'passwords', 'passwd']);
const LAST_PART =
  /^(?:api|access|auth|refresh|bearer|session|client|private|secret|signing|master|app|bot|id|oauth|github|openai|anthropic)?(?:key|token|secret|secrets|password|passwords|passwd|pwd|passphrase|credential|credentials|authorization|cookie)$/;

/** The word parts of a name, lower case. */
export function nameParts(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .filter(Boolean)
    .map((p) => p.toLowerCase());
}

/** True when values under this name are hidden (see the rule above). */
export function isSecretName(name: string): boolean {
  const parts = nameParts(name);
  if (parts.length === 0) return false;
  if (LAST_PART.test(parts[parts.length - 1])) return true;
  return parts.some((p) => STRONG_PARTS.has(p));
}

/** True when a scalar under a secret name is hidden: everything but null, booleans and "". */
export function hidesScalar(v: unknown): boolean {
  return !(v === null || v === undefined || typeof v === 'boolean' || v === '');
}

/*
 * Strings shaped like common API keys, hidden wherever they appear in state or conversation text.
 * Each needs enough characters after its prefix that prose ("sk-learn", "AKIA" alone) is left
 * alone, and must not be glued to a word before it.
 */
const KEY_SHAPES = [
  'sk-ant-[A-Za-z0-9_-]{16,}', // Anthropic
  'sk-(?:proj-|svcacct-|admin-|live_|test_)?[A-Za-z0-9_-]{20,}', // OpenAI, Stripe-like
  'gh[pousr]_[A-Za-z0-9]{30,}', // GitHub tokens
  'github_pat_[A-Za-z0-9_]{30,}', // GitHub fine-grained tokens
  'xox[abposr]-[A-Za-z0-9-]{10,}', // Slack
  '(?:AKIA|ASIA)[0-9A-Z]{16}', // AWS access key ids
  'AIza[0-9A-Za-z_-]{35}', // Google API keys
  'hf_[A-Za-z0-9]{30,}', // Hugging Face
  'glpat-[A-Za-z0-9_-]{20,}', // GitLab
];
// No lookbehind (the build targets Safari 15): the character before is captured and put back.
const KEY_RE = new RegExp(`(^|[^A-Za-z0-9_-])(?:${KEY_SHAPES.join('|')})(?![A-Za-z0-9])`, 'g');

/** `text` with every API-key-shaped string replaced by `MASK`. */
export function maskSecrets(text: string): string {
  if (text.length < 14) return text;
  KEY_RE.lastIndex = 0;
  return text.replace(KEY_RE, (_m, before: string) => before + MASK);
}

/**
 * A copy of `v` as it may be shown: scalars under secret names replaced by `MASK` (`secret` says
 * the value itself is under one), API-key shapes in every string masked, object keys kept.
 * Cheap when nothing is hidden (the same objects come back).
 */
export function redact(v: unknown, secret = false, depth = 0): unknown {
  if (v === null || typeof v !== 'object') {
    if (secret && hidesScalar(v)) return MASK;
    return typeof v === 'string' ? maskSecrets(v) : v;
  }
  if (depth > 200) return v;
  if (Array.isArray(v)) {
    let changed = false;
    const out = v.map((x) => {
      const r = redact(x, secret, depth + 1);
      if (r !== x) changed = true;
      return r;
    });
    return changed ? out : v;
  }
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const r = redact(x, secret || isSecretName(k), depth + 1);
    if (r !== x) changed = true;
    out[k] = r;
  }
  return changed ? out : v;
}

/** True when showing `v` (under a name that is secret or not) hides anything. */
export function hidesAnything(v: unknown, secret = false): boolean {
  return redact(v, secret) !== v;
}
