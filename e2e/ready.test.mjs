// Self-test of the readiness helpers (no display, app or driver needed): node --test e2e/
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import test from 'node:test';
import {
  Fatal, WaitTimeout, descendants, isGone, poll, portFree, retry, signal, tagged, waitGone, waitGoneOrKill,
} from './ready.mjs';
import { transientSessionError } from './lib.mjs';

test('poll returns the first truthy value, counting throws as "not yet"', async () => {
  let n = 0;
  const v = await poll(() => {
    n++;
    if (n < 3) throw new Error('not up');
    return n === 4 ? { n } : false;
  }, { what: 'n to reach 4', timeout: 5000, interval: 5 });
  assert.deepEqual(v, { n: 4 });
});

test('poll fails after its deadline saying what it waited for and what it saw', async () => {
  const t0 = Date.now();
  await assert.rejects(
    poll(() => false, { what: 'the moon', timeout: 150, interval: 10, describe: () => 'last: cheese' }),
    (e) => e instanceof WaitTimeout && /waiting for the moon; last: cheese/.test(e.message),
  );
  assert.ok(Date.now() - t0 >= 150);
  await assert.rejects(
    poll(() => { throw new Error('ECONNREFUSED'); }, { what: 'a port', timeout: 50, interval: 10 }),
    /waiting for a port; last error: ECONNREFUSED/,
  );
});

test('poll stops at once on Fatal', async () => {
  const t0 = Date.now();
  await assert.rejects(poll(() => { throw new Fatal('driver exited'); }, { what: 'x', timeout: 10000 }), /driver exited/);
  assert.ok(Date.now() - t0 < 1000);
});

test('retry retries transient failures, cleans up between attempts, and stops at the cap', async () => {
  const cleaned = [];
  const v = await retry(async (n) => {
    if (n < 3) throw new Error('Request timed out!');
    return `ok on ${n}`;
  }, { what: 'a session', attempts: 4, deadline: 10000, between: async (e, n) => cleaned.push(n) });
  assert.equal(v, 'ok on 3');
  assert.deepEqual(cleaned, [1, 2]);

  let tries = 0;
  await assert.rejects(
    retry(async () => { tries++; throw new Error('Failed to connect to browser'); }, { what: 'a session', attempts: 3, deadline: 10000 }),
    (e) => /a session failed 3 time\(s\)/.test(e.message) && /attempt 1 .*\n.*attempt 2 .*\n.*attempt 3/.test(e.message),
  );
  assert.equal(tries, 3);

  tries = 0;
  await assert.rejects(
    retry(async () => { tries++; throw new Error('bad capabilities'); }, { what: 'a session', attempts: 3, deadline: 10000, transient: () => false }),
    /not retried/,
  );
  assert.equal(tries, 1);

  await assert.rejects(
    retry(async () => { throw new Error('timed out'); }, { what: 'a session', attempts: 3, deadline: 10000, between: async () => { throw new Error('stuck'); } }),
    /clean-up after attempt 1 failed: stuck/,
  );
});

test('which session errors are retried', () => {
  const yes = [
    'Request timed out! Consider increasing the "connectionRetryTimeout" option.',
    'Unable to connect to "http://127.0.0.1:4444/", make sure browser driver is running on that address.',
    'Failed to connect to browser: Error receiving data: Connection reset by peer',
    'Maximum number of active sessions',
    'Request failed with error code UND_ERR_SOCKET',
  ];
  for (const m of yes) assert.equal(transientSessionError(new Error(m)), true, m);
  const no = [
    'Failed to connect to browser: Failed to execute child process “/nope” (No such file or directory)',
    'Invalid or unsupported WebDriver capabilities found',
  ];
  for (const m of no) assert.equal(transientSessionError(new Error(m)), false, m);
  assert.equal(transientSessionError(new WaitTimeout('timed out after 120 s waiting for the driver')), false);
});

test('processes: tagged, descendants, waitGone, waitGoneOrKill', async () => {
  const tag = `selftest-${process.pid}-${Date.now()}`;
  const sh = spawn('sh', ['-c', 'sleep 30 & wait'], { env: { ...process.env, SELFTEST_TAG: tag }, stdio: 'ignore' });
  try {
    const found = await poll(() => (tagged('SELFTEST_TAG', tag).length === 2 ? tagged('SELFTEST_TAG', tag) : false), { what: 'sh and sleep tagged', timeout: 5000 });
    assert.deepEqual(found.map((p) => p.comm).sort(), ['sh', 'sleep']);
    const kids = descendants(sh.pid);
    assert.deepEqual(kids.map((p) => p.comm), ['sleep']);
    signal([sh.pid], 'SIGKILL');
    await waitGone([{ pid: sh.pid, comm: 'sh' }], { what: 'sh gone', timeout: 5000 });
    assert.ok(isGone(sh.pid));
    // The orphaned sleep does not exit by itself: killed after the grace.
    const killed = await waitGoneOrKill(kids, { what: 'sleep gone', grace: 100, timeout: 5000 });
    assert.deepEqual(killed.map((p) => p.comm), ['sleep']);
    assert.equal(tagged('SELFTEST_TAG', tag).length, 0);
  } finally {
    signal([sh.pid], 'SIGKILL');
  }
});

test('portFree follows a listener', async () => {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  assert.equal(await portFree(port), false);
  await new Promise((r) => srv.close(r));
  assert.equal(await portFree(port), true);
});
