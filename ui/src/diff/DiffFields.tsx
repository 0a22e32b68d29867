// Changed fields with their old and new values: in the Diff panel under each node, and in the
// inspector for the selected node.
import { useApp } from '../store';
import type { FieldChange } from '../contract/diff';
import { fieldChanges, nodeChange, showValue } from './model';
import { useDiff } from './store';

export function DiffFieldList({ fields }: { fields: FieldChange[] }) {
  return (
    <table className="sy-diff-fields" data-testid="diff-fields">
      <tbody>
        {fields.map((f) => (
          <tr key={f.path} data-testid="diff-field" data-path={f.path}>
            <th scope="row">{f.reordered ? `↕ ${f.path}` : f.path}</th>
            <td className="sy-diff-old" data-testid="diff-old">
              {showValue(f.old)}
            </td>
            <td className="sy-diff-new" data-testid="diff-new">
              {showValue(f.new)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The inspector's section for node `id`: what changed since the compared version. */
export function DiffFields({ id }: { id: string }) {
  const agent = useDiff((s) => s.agent);
  const diff = useDiff((s) => s.diff);
  const viewAgent = useApp((s) => s.view?.agent ?? null);
  const against = useDiff((s) => s.against.trim() || 'HEAD');
  if (!diff || agent !== viewAgent) return null;
  const change = nodeChange(diff, agent, id);
  if (!change) return null;
  const fields = fieldChanges(diff, agent, id);
  return (
    <section className="sy-diff-inspector" data-testid="inspector-diff">
      <h4>
        {change.change === 'renamed' ? `Renamed from ${change.old_id}` : change.change === 'added' ? 'Added' : 'Changed'} since {against}
      </h4>
      {fields.length ? <DiffFieldList fields={fields} /> : null}
    </section>
  );
}
