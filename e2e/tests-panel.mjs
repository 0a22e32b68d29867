// Window test of agent test suites (issue 33): a copy of the example Loki agent with its suite
// (`release-gate.tests.yaml`) and one more case that must fail; Tests → Run all runs the suite in
// the app, each case shows its result, the failing one its expectation's line, the canvas the
// routing coverage (a count on each node that ran), and "open at step" opens the failing run's
// trace in the debugger at the step where the expectation failed.
import fs from 'node:fs';
import path from 'node:path';
import { T, click, fixture, testid, waitForView } from './lib.mjs';

function suiteFixture() {
  const dir = fixture('release-gate');
  const suite = path.join(dir, 'release-gate.tests.yaml');
  fs.appendFileSync(
    suite,
    ['', '  - name: must fail', '    input: v1.2', '    answers: [hold]', '    expect:', '      nodes: [plan, lint, tests, summarise, approve, shipped]', ''].join('\n'),
  );
  return { args: [dir], file: path.join(dir, "graph.yaml") };
}

export function registerTestsPanelTests(test, { assert, assertEq }) {
  test(
    'tests panel: runs the agent suite, shows results and coverage, opens a failing run at its step',
    async ({ b }) => {
      await waitForView(b, (v) => v.dialect === 'loki' && v.nodes.some((n) => n.id === 'held'), 'the release-gate agent');
      await click(b, testid('tests-toggle'));
      await (await b.$(testid('tests-suite'))).waitForDisplayed({ timeout: T.ui });
      await click(b, testid('tests-run-all'));
      let outcomes = {};
      await b.waitUntil(
        async () => {
          outcomes = await b.execute(() =>
            Object.fromEntries([...document.querySelectorAll('[data-testid="tests-case"]')].map((e) => [e.getAttribute('data-case'), e.getAttribute('data-outcome')])),
          );
          return Object.values(outcomes).length > 0 && Object.values(outcomes).every((o) => o !== 'none');
        },
        { timeout: 2 * T.ui, interval: 200, timeoutMsg: 'the suite never finished' },
      );
      assertEq(outcomes['ships when approved'], 'passed', JSON.stringify(outcomes));
      assertEq(outcomes['holds when the summary says hold'], 'passed', JSON.stringify(outcomes));
      assertEq(outcomes['must fail'], 'failed', JSON.stringify(outcomes));
      const failure = await b.execute(() => document.querySelector('[data-case="must fail"] [data-testid="tests-failure"]')?.textContent ?? '');
      assert(failure.includes('expected `shipped`'), `the failing expectation: ${failure}`);
      // Coverage on the canvas: every node of the agent ran in some case.
      const counts = await b.execute(() =>
        Object.fromEntries([...document.querySelectorAll('[data-testid="node"]')].map((e) => [e.getAttribute('data-node-id'), e.querySelector('[data-testid="node-coverage"]')?.textContent ?? ''])),
      );
      assert(counts.plan && counts.plan.endsWith('×') && counts.held && counts.held !== '0×', `coverage counts on the nodes: ${JSON.stringify(counts)}`);
      // The failing run's trace, in the debugger at the failing step (5: `held` ran where
      // `shipped` was expected; `lint` and `tests` share step 2).
      const button = await b.execute(() => document.querySelector('[data-case="must fail"] [data-testid="tests-open-trace"]')?.textContent ?? '');
      assertEq(button, 'open at step 5', 'the failing step');
      await click(b, '[data-case="must fail"] [data-testid="tests-open-trace"]');
      let dbg = null;
      await b.waitUntil(async () => (dbg = await b.execute(() => window.__switchyard?.debug ?? null))?.selectedStep === 5, {
        timeout: T.ui,
        timeoutMsg: 'the debugger never showed step 5 of the failing run',
      }).catch((e) => {
        throw new Error(`${e.message}: ${JSON.stringify(dbg)}`);
      });
    },
    { setup: () => suiteFixture() },
  );
}
