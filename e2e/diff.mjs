// Window test of the graph diff (issue 33 item 5): a copy of the example Loki agent committed in
// a temporary git repository, then changed on disk (the `held` end node renamed `parked`, the
// summariser's instructions changed); opened in the app, Diff → Compare against HEAD marks the
// renamed and the changed nodes on the canvas, lists them in the panel, and the inspector shows
// the changed field's old and new values. A run comparison is not driven here (its dialog is
// tested by ui/src/test/run-compare.test.tsx; the engine's comparison by tests/integration/diff.rs).
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { T, click, fixture, nodeSel, testid, waitForView } from './lib.mjs';

function gitRepoFixture() {
  const dir = fixture('release-gate');
  const root = path.dirname(dir);
  const git = (...args) =>
    execFileSync('git', ['-C', root, '-c', 'user.name=Switchyard e2e', '-c', 'user.email=e2e@example.invalid', '-c', 'commit.gpgsign=false', ...args], { stdio: 'pipe' });
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'the agent as committed');
  const file = path.join(dir, 'graph.yaml');
  const text = fs.readFileSync(file, 'utf8');
  const changed = text
    .replace('hold: held', 'hold: parked')
    .replace(/\n {2}held:\n/, '\n  parked:\n')
    .replace('You summarise release checks for a release manager.', 'You summarise release checks in three bullet points.');
  if (changed === text) throw new Error('the fixture did not change');
  fs.writeFileSync(file, changed);
  return { dir, file };
}

/** Each node's `data-diff` mark, by id. */
async function marks(b) {
  return b.execute(() => Object.fromEntries([...document.querySelectorAll('[data-testid="node"]')].map((e) => [e.getAttribute('data-node-id'), e.getAttribute('data-diff') || ''])));
}

export function registerDiffTests(test, { assert, assertEq }) {
  test(
    'diff: against git HEAD, a renamed and a changed node are marked on the canvas and the inspector shows old and new values',
    async ({ b }) => {
      await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'parked'), 'the changed release-gate agent');
      await click(b, testid('diff-toggle'));
      await click(b, testid('diff-compare'));
      const summary = await b.$(testid('diff-summary'));
      await summary.waitForDisplayed({ timeout: T.ui });
      let m = {};
      await b.waitUntil(async () => (m = await marks(b)).parked === 'renamed', { timeout: T.ui, timeoutMsg: 'the renamed node is not marked' });
      assertEq(m.summarise, 'changed', 'the summariser is marked changed');
      assertEq(m.approve, '', 'the approval naming it is not changed: its route follows the rename');
      assertEq(m.plan, '', 'an unchanged node is not marked');
      const rows = await b.execute(() => [...document.querySelectorAll('[data-testid="diff-node"]')].map((r) => `${r.getAttribute('data-change')} ${r.getAttribute('data-node-id')}`));
      assert(rows.includes('renamed parked') && rows.includes('changed summarise'), `the panel lists them: ${rows}`);
      // The inspector of the changed node: the instructions' old and new values.
      const n = await b.$(nodeSel('summarise'));
      await n.click();
      const insp = await b.$(testid('inspector-diff'));
      await insp.waitForDisplayed({ timeout: T.ui });
      const cells = await b.execute(() => {
        const s = document.querySelector('[data-testid="inspector-diff"]');
        return [...s.querySelectorAll('[data-testid="diff-field"]')].map((r) => [r.getAttribute('data-path'), r.querySelector('[data-testid="diff-old"]').textContent, r.querySelector('[data-testid="diff-new"]').textContent]);
      });
      assertEq(cells.length, 1, `one changed field: ${JSON.stringify(cells)}`);
      assertEq(cells[0][0], 'instructions', 'the changed field');
      assert(cells[0][1].includes('for a release manager') && cells[0][2].includes('three bullet points'), `old and new: ${JSON.stringify(cells)}`);
    },
    {
      setup: () => {
        const { dir, file } = gitRepoFixture();
        return { args: [dir], file };
      },
    },
  );
}
