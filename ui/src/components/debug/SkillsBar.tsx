// The skills loaded at the selected step (sherma's `__sherma__.loaded_skills` and the Agent Skills
// activated through `activate_skill`), one chip each with its version, tools or origin; the ones
// the step itself loaded are marked.
import type { LoadedSkill } from '../../debug/model';

function detail(s: LoadedSkill): string {
  if (s.kind === 'agent-skill') return `Agent Skill activated with activate_skill${s.scope ? ` (${s.scope})` : ''}`;
  const tools = s.tools.length ? `tools: ${s.tools.join(', ')}` : 'no tools';
  return `skill ${s.id}${s.version ? ` ${s.version}` : ''}: ${tools}`;
}

export function SkillsBar({ skills }: { skills: LoadedSkill[] | null }) {
  if (skills === null) return null;
  return (
    <div className="st-skills" data-testid="state-skills" aria-label="Loaded skills">
      <span className="small muted">Skills:</span>
      {skills.length === 0 ? (
        <span className="small muted" data-testid="state-skills-none">
          none loaded
        </span>
      ) : (
        skills.map((s) => (
          <span
            key={`${s.kind}:${s.id}`}
            className={`st-chip st-skill${s.added ? ' n-added' : ''}`}
            data-testid="state-skill"
            data-skill={s.id}
            data-kind={s.kind}
            data-added={s.added ? 'true' : 'false'}
            title={detail(s)}
          >
            {s.added ? '+ ' : ''}
            {s.id}
            {s.version ? <span className="muted"> {s.version}</span> : null}
            {s.kind === 'skill' && s.tools.length ? <span className="muted"> · {s.tools.join(', ')}</span> : null}
            {s.kind === 'agent-skill' ? <span className="muted"> · {s.scope ?? 'agent skill'}</span> : null}
          </span>
        ))
      )}
    </div>
  );
}
