// Window test of LLLM configs on the canvas (issue 32 item 2): a copy of the corpus' pkg_alpha
// package (lllm.toml, configs/default.yaml and production.yaml, which inherits from it) opens
// with every node of `switchyard graph` on the canvas; an agent's inspector shows its effective
// model with where it came from; its temperature changed in the inspector and saved changes that
// value on disk and nothing else; a config inheriting its model from its base shows that origin.
// Screenshots at 1280×800, light and dark, go to e2e/artifacts/lllm/.
import fs from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, T, cliGraph, conformanceDir, eventually, nodeSel, testid, tmpDir, waitForView } from './lib.mjs';
import { setTheme, settle } from './laptop.mjs';

function lllmFixture() {
  const src = path.join(conformanceDir(), 'lllm', 'main-6845bfa', 'tests', 'test_cases', 'packages', 'pkg_alpha');
  if (!fs.existsSync(src)) throw new Error(`the LLLM corpus is missing: ${src} (set SWITCHYARD_CONFORMANCE)`);
  const dir = path.join(tmpDir(), 'pkg_alpha');
  fs.cpSync(src, dir, { recursive: true });
  return dir;
}

async function select(b, id) {
  const n = await b.$(nodeSel(id));
  await n.waitForDisplayed({ timeout: T.ui });
  await n.click();
  await (await b.$(testid('lllm-inspector'))).waitForDisplayed({ timeout: T.ui });
  await b.waitUntil(async () => (await (await b.$(testid('inspector-name'))).getValue()) === id, { timeout: T.ui, timeoutMsg: `the inspector of ${id}` });
}

/** `[data-origin, origin label, origin title, value]` of a row of the inspector. */
async function row(b, key) {
  return b.execute((k) => {
    const r = document.querySelector(`[data-testid="lllm-row-${k}"]`);
    const o = document.querySelector(`[data-testid="lllm-origin-${k}"]`);
    const v = document.querySelector(`[data-testid="lllm-value-${k}"]`);
    return r && o && v ? [r.getAttribute('data-origin'), o.textContent, o.getAttribute('title'), v.value] : null;
  }, key);
}

export function registerLllmTests(test, { assert, assertEq }) {
  test('LLLM config: every node of `switchyard graph` on the canvas; the inspector shows effective values with their origin; a temperature edited and saved changes only that value', async ({ b, file, relaunch }) => {
    const before = fs.readFileSync(file, 'utf8');
    const view = await waitForView(b, (v) => v.dialect === 'lllm' && v.nodes.length > 0, 'the LLLM config');
    const ids = async () => (await b.execute(() => [...document.querySelectorAll('[data-testid="node"]')].map((e) => e.getAttribute('data-node-id')))).sort();
    await b.waitUntil(async () => (await ids()).length === view.nodes.length, { timeout: T.ui, timeoutMsg: 'every node of the view drawn' });
    const g = cliGraph(file);
    assertEq(await ids(), ['assistant', 'base:default', 'global', 'reviewer'], 'global, the base and the agents on the canvas');
    if (g) assertEq(await ids(), g.nodes.map((n) => n.id).sort(), 'DOM nodes = `switchyard graph --format json` nodes');
    const labels = await b.execute(() => [...document.querySelectorAll('[data-testid="edge-label"]')].map((e) => e.textContent));
    assert(labels.includes('base') && labels.filter((l) => l === 'defaults').length === 2, `the inherits edges are drawn: ${labels}`);

    await select(b, 'reviewer');
    assertEq(await row(b, 'model_name'), ['global', 'global', 'production.yaml:4', 'gpt-4o'], 'the effective model and where it came from');
    assertEq(await row(b, 'temperature'), ['own', 'this agent', 'production.yaml:19', '0'], "the agent's own temperature");
    assertEq((await row(b, 'max_llm_recall')).slice(0, 2), ['default', 'LLLM default'], "a knob left to LLLM's default");
    assertEq((await row(b, 'max_exception_retry')).slice(0, 2), ['global', 'global'], 'a knob from global');

    const t = await b.$(testid('lllm-value-temperature'));
    await t.click();
    await t.clearValue();
    await t.setValue('0.4');
    await b.keys('Enter');
    await waitForView(b, (v) => v.dirty && v.nodes.find((n) => n.id === 'reviewer')?.data?.effective?.model_args?.temperature?.value === 0.4, 'the new temperature in the view');
    await b.waitUntil(async () => (await row(b, 'temperature'))?.[3] === '0.4', { timeout: T.ui, timeoutMsg: 'the inspector shows 0.4' });
    await (await b.$(testid('save-button'))).click();
    const after = await eventually(() => fs.readFileSync(file, 'utf8'), (s) => s !== before, 'the save on disk');
    assertEq(after, before.replace('      temperature: 0.0\n', '      temperature: 0.4\n'), 'only the temperature changed on disk');
    await waitForView(b, (v) => !v.dirty, 'a clean document after save');

    // Screenshots at 1280×800 in both themes, the agent selected.
    const out = path.join(ARTIFACTS, 'lllm');
    fs.mkdirSync(out, { recursive: true });
    await b.setWindowSize(1280, 800);
    for (const theme of ['light', 'dark']) {
      await setTheme(b, theme);
      await (await b.$(testid('fit-view'))).click();
      await settle(b);
      await b.saveScreenshot(path.join(out, `production-1280-${theme}.png`));
    }

    // The palette adds agents (only): the new one after the selected agent, inheriting global's model.
    const palette = await b.execute(() => [...document.querySelectorAll('[data-testid^="palette-"]')].map((e) => e.getAttribute('data-testid')));
    assertEq(palette, ['palette-agent'], 'the palette of an LLLM config');
    await select(b, 'reviewer');
    await (await b.$(testid('palette-agent'))).click();
    await select(b, 'agent');
    assertEq((await row(b, 'model_name')).slice(0, 2), ['global', 'global'], "the new agent takes global's model");
    await waitForView(b, (v) => /- name: reviewer[\s\S]*- name: agent\n {4}system_prompt: You are agent\.\n$/.test(v.text) && v.text.startsWith(after.trimEnd()), 'the new entry after reviewer, the rest of the text unchanged');

    // A config whose model comes from its base's global says so.
    const dev = path.join(path.dirname(file), 'development.yaml');
    const b2 = await relaunch([dev]);
    await waitForView(b2, (v) => v.dialect === 'lllm' && v.file_name === 'development.yaml', 'development.yaml');
    await select(b2, 'assistant');
    assertEq(await row(b2, 'model_name'), ['base', 'global of default', 'default.yaml:2', 'gpt-4o-mini'], "the model from the base's global");
    assertEq((await row(b2, 'temperature')).slice(0, 2), ['global', 'global'], "this config's global temperature");
    await b2.setWindowSize(1280, 800);
    await settle(b2);
    await b2.saveScreenshot(path.join(out, 'development-1280-light.png'));
    // `global` shows its values after the chain, and the file's base.
    await (await b2.$(nodeSel('global'))).click();
    await b2.waitUntil(async () => (await (await b2.$(testid('lllm-base'))).isExisting()), { timeout: T.ui, timeoutMsg: 'the inspector of global' });
    assertEq(await (await b2.$(testid('lllm-base'))).getValue(), 'default', "global's inspector shows the base");
    assertEq((await row(b2, 'model_name')).slice(0, 3), ['base', 'global of default', 'default.yaml:2'], "global's model from the base");
    assertEq((await row(b2, 'max_exception_retry')).slice(0, 2), ['own', 'this config'], "global's own retry knob");
    await settle(b2);
    await b2.saveScreenshot(path.join(out, 'development-1280-global.png'));
  }, { setup: () => { const d = lllmFixture(); const f = path.join(d, 'configs', 'production.yaml'); return { args: [f], file: f }; } });
}
