// Skills loaded at a step (sherma's `__sherma__` bookkeeping), for the state panel's skills bar.
import { diffIndex, pathKey, type DiffEntry } from './diff';

/** A skill loaded in the state: a sherma skill (`loaded_skills`) or an activated Agent Skill. */
export interface LoadedSkill {
  id: string;
  kind: 'skill' | 'agent-skill';
  /** The version as recorded (`1.0.0`, `==1.0.0`, `*`); null for Agent Skills. */
  version: string | null;
  /** Tool ids the skill bound (sherma skills). */
  tools: string[];
  /** Where an Agent Skill came from: project, user or url. */
  scope: string | null;
  /** Loaded by the step shown (its entry is new in the diff against the step before). */
  added: boolean;
}

function objectAt(v: unknown, key: string): Record<string, unknown> | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const x = (v as Record<string, unknown>)[key];
  return x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : null;
}

/**
 * The skills loaded in a sherma state: `__sherma__.loaded_skills` (id → `{version, tools}`) then
 * `__sherma__.activated_skills` (name → `{scope, location}`), in the engine's order. `null` when
 * the state has no skill bookkeeping at all (a Loki run, a sherma file without skills). `diff`
 * (against the step before) marks the ones this step loaded.
 */
export function loadedSkills(state: unknown, diff: DiffEntry[] = []): LoadedSkill[] | null {
  const internal = objectAt(state, '__sherma__');
  if (!internal) return null;
  const loaded = objectAt(internal, 'loaded_skills');
  const activated = objectAt(internal, 'activated_skills');
  if (!loaded && !activated) return null;
  const index = diffIndex(diff);
  const isNew = (group: string, id: string) =>
    index.get(pathKey(['__sherma__', group, id])) === 'added' ||
    index.get(pathKey(['__sherma__', group])) === 'added' ||
    index.get('__sherma__') === 'added';
  const out: LoadedSkill[] = [];
  for (const [id, entry] of Object.entries(loaded ?? {})) {
    const e = entry && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
    const tools = Array.isArray(e.tools) ? e.tools.map((t) => (typeof t === 'string' ? t : JSON.stringify(t))) : [];
    out.push({
      id,
      kind: 'skill',
      version: typeof e.version === 'string' ? e.version : e.version == null ? null : JSON.stringify(e.version),
      tools,
      scope: null,
      added: isNew('loaded_skills', id),
    });
  }
  for (const [id, entry] of Object.entries(activated ?? {})) {
    const e = entry && typeof entry === 'object' ? (entry as Record<string, unknown>) : {};
    out.push({
      id,
      kind: 'agent-skill',
      version: null,
      tools: [],
      scope: typeof e.scope === 'string' ? e.scope : null,
      added: isNew('activated_skills', id),
    });
  }
  return out;
}
