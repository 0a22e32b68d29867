// The provider form of the Settings dialog, as pure functions (tested without React): the form's
// state from a provider, validation, and the `settings_save` payload.
import type { ProviderInfo, ProviderInput, Wire } from './types';

export interface ProviderForm {
  /** Editing an existing provider (its name cannot change) or adding one. */
  isNew: boolean;
  /** A built-in provider (base URL optional: the built-in one applies). */
  builtin: boolean;
  name: string;
  wire: Wire;
  baseUrl: string;
  /** A new key typed by the user; "" keeps the saved one. Never prefilled. */
  key: string;
  /** Forget the saved key. */
  clearKey: boolean;
  /** One model per line (commas also separate). */
  models: string;
  /** Seconds; "" = the default (120 s). */
  timeout: string;
}

export type FormErrors = Partial<Record<'name' | 'baseUrl' | 'timeout' | 'key' | 'models', string>>;

export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export function emptyForm(): ProviderForm {
  return { isNew: true, builtin: false, name: '', wire: 'openai', baseUrl: '', key: '', clearKey: false, models: '', timeout: '' };
}

export function formFromProvider(p: ProviderInfo): ProviderForm {
  return {
    isNew: false,
    builtin: p.builtin,
    name: p.name,
    wire: p.wire ?? 'openai',
    baseUrl: p.base_url ?? '',
    key: '',
    clearKey: false,
    models: p.models.join('\n'),
    timeout: p.timeout_s != null ? String(p.timeout_s) : '',
  };
}

/** Why `url` is not a usable base URL (null when it is). */
export function baseUrlProblem(url: string): string | null {
  const u = url.trim();
  const m = /^https?:\/\/([^/\s]+)(\/\S*)?$/.exec(u);
  if (!m) return 'Must start with http:// or https:// and name a host, e.g. http://127.0.0.1:8080/v1';
  return null;
}

export function parseModels(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(/[\n,]/)) {
    const m = raw.trim();
    if (m && !out.includes(m)) out.push(m);
  }
  return out;
}

export function validateForm(f: ProviderForm, existing: string[]): FormErrors {
  const e: FormErrors = {};
  const name = f.name.trim();
  if (!name) e.name = 'A name is needed: it is the part before `:` in `provider:model`';
  else if (!NAME_RE.test(name)) e.name = 'Use letters, digits, `-`, `_` or `.` (no spaces or `:`)';
  else if (f.isNew && existing.includes(name)) e.name = `\`${name}\` already exists: edit it in the list`;
  if (f.baseUrl.trim()) {
    const p = baseUrlProblem(f.baseUrl);
    if (p) e.baseUrl = p;
  } else if (!f.builtin) e.baseUrl = 'A base URL is needed for a provider that is not built in';
  if (f.timeout.trim()) {
    const t = Number(f.timeout);
    if (!Number.isFinite(t) || t <= 0 || t > 3600) e.timeout = 'Seconds between 1 and 3600 (empty = 120)';
  }
  if (/\s/.test(f.key.trim())) e.key = 'A key has no spaces: paste it again';
  for (const m of parseModels(f.models)) {
    if (m.includes(' ')) {
      e.models = `\`${m}\`: model names have no spaces (one per line)`;
      break;
    }
  }
  return e;
}

/** The `settings_save` provider payload of a valid form. */
export function toInput(f: ProviderForm): ProviderInput {
  const key = f.key.trim();
  return {
    name: f.name.trim(),
    wire: f.wire,
    base_url: f.baseUrl.trim() ? f.baseUrl.trim().replace(/\/+$/, '') : null,
    models: parseModels(f.models),
    timeout_s: f.timeout.trim() ? Number(f.timeout) : null,
    api_key: key ? key : null,
    clear_key: !key && f.clearKey,
  };
}

/** Where a provider's key comes from, in words. */
export function keyText(p: ProviderInfo): string {
  switch (p.key_source) {
    case 'env':
      return `from the environment variable ${p.key_var}`;
    case 'keyring':
      return 'in the OS keyring';
    case 'file':
      return 'in the provider file';
    default:
      return p.key_optional ? 'none needed (local server)' : `not set (Settings, or ${p.key_var})`;
  }
}
