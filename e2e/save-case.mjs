// Window test of *Save run as test case* (issue 33): a copy of the example Loki agent with its
// suite; F5 runs it, the approval is answered, *Save as test…* saves the run under a name; the
// suite file on disk then holds the case after its untouched bytes (comments kept), its cassette
// lies beside it, the Tests panel lists it, and `switchyard test` passes it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI, T, click, fixture, press, testid, waitForView } from './lib.mjs';

export function registerSaveCaseTests(test, { assert }) {
  let dir = null;
  test(
    'save run as test case: a run answered in the window becomes a suite case that switchyard test passes',
    async ({ b }) => {
      const suite = path.join(dir, 'release-gate.tests.yaml');
      const before = fs.readFileSync(suite, 'utf8');
      await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'shipped'), 'the release-gate agent');
      await press(b, 'F5');
      const dialog = await b.$('[data-testid="interrupt-dialog"][data-kind="approval"]');
      await dialog.waitForDisplayed({ timeout: T.ui });
      const input = await b.$(testid('interrupt-answer'));
      await input.waitForDisplayed({ timeout: T.ui });
      await input.clearValue();
      await input.setValue('ship');
      await click(b, testid('interrupt-submit'));
      await b.waitUntil(async () => (await b.execute(() => document.querySelector('[data-testid="dbg-status"]')?.getAttribute('data-finished') ?? '')) === 'completed', {
        timeout: T.ui,
        timeoutMsg: 'the run never completed',
      });
      await click(b, testid('dbg-save-case'));
      const name = await b.$(testid('dbg-save-case-name'));
      await name.waitForDisplayed({ timeout: T.ui });
      await name.clearValue();
      await name.setValue('saved in the window');
      await click(b, testid('dbg-save-case-ok'));
      const toast = await b.$(testid('toast'));
      await toast.waitForDisplayed({ timeout: T.ui });
      const said = await toast.getText();
      assert(said.includes('saved in the window') && said.includes('release-gate.tests.yaml'), `the toast says where the case went: ${said}`);
      const after = fs.readFileSync(suite, 'utf8');
      assert(after.startsWith(before.trimEnd()), 'the suite keeps its bytes before the new case');
      assert(after.includes('- name: saved in the window') && after.includes('cassette: cassettes/saved-in-the-window.json'), `the case on disk:\n${after.slice(before.length - 40)}`);
      assert(/answers:\s*\n\s*- ship/.test(after), `the typed answer is in the case:\n${after.slice(before.length - 40)}`);
      assert(fs.existsSync(path.join(dir, 'cassettes', 'saved-in-the-window.json')), 'the cassette beside the suite');
      // The Tests panel lists it (refreshed when it is open; open it now).
      await click(b, testid('tests-toggle'));
      await b.waitUntil(async () => b.execute(() => !!document.querySelector('[data-testid="tests-case"][data-case="saved in the window"]')), {
        timeout: T.ui,
        timeoutMsg: 'the Tests panel does not list the saved case',
      });
      // `switchyard test` passes it (and the suite's other cases).
      const out = execFileSync(CLI, ['test', dir, '--trust', '--filter', 'saved in the window'], { encoding: 'utf8', stdio: 'pipe' });
      assert(/1 passed; 0 failed/.test(out), `switchyard test: ${out}`);
    },
    {
      setup: () => {
        dir = fixture('release-gate');
        return { args: [dir], file: path.join(dir, 'graph.yaml') };
      },
    },
  );
}
