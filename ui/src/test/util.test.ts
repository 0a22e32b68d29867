import { describe, expect, it } from 'vitest';
import { Text } from '@codemirror/state';
import { lineDiff } from '../diff';
import { parseNumber, parseStruct, structToText } from '../fieldValue';
import { lineColToOffset, minimalChange, toCmDiagnostics } from '../components/SourceView';
import { buildSvg } from '../exportDiagram';
import { freshName } from '../components/Palette';
import { errorMessage, isConflictError } from '../backend';
import { demoView, lokiView } from '../fake/demo';

describe('line diff', () => {
  it('marks removed and added lines', () => {
    const d = lineDiff('a\nb\nc\nd', 'a\nB\nc\nd\ne');
    expect(d).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'B' },
      { op: ' ', text: 'c' },
      { op: ' ', text: 'd' },
      { op: '+', text: 'e' },
    ]);
    expect(lineDiff('same', 'same')).toEqual([{ op: ' ', text: 'same' }]);
  });
});

describe('field values', () => {
  it('parses JSON and YAML-ish lists and maps', () => {
    expect(parseStruct('["a", 1]', { kind: 'list' })).toEqual({ value: ['a', 1] });
    expect(parseStruct('- a\n- "b c"\n- 3', { kind: 'list' })).toEqual({ value: ['a', 'b c', 3] });
    expect(parseStruct("k: v\nn: 2\ns: 'x'", { kind: 'map' })).toEqual({ value: { k: 'v', n: 2, s: 'x' } });
    expect(parseStruct('', { kind: 'map' })).toEqual({ value: null });
    expect(parseStruct('nonsense', { kind: 'list' })).toHaveProperty('error');
    expect(parseStruct('all', { kind: 'one_of', alternatives: [{ kind: 'bool' }, { kind: 'enum', values: ['all'] }] })).toEqual({ value: 'all' });
    expect(structToText({ a: { b: 1 } })).toBe('{\n  "a": {\n    "b": 1\n  }\n}');
    expect(structToText(['ship', 'hold'])).toBe('- ship\n- hold');
    expect(structToText({ turns: '0', status: '"open"', n: 2 })).toBe('turns: "0"\nstatus: "\\"open\\""\nn: 2');
  });
  it('YAML-ish text reads back to the same value', () => {
    const cases: [unknown, 'list' | 'map'][] = [
      [['ship', 'hold', '123', 'true', '', ' pad', '- x', '[a]', 'a: b'], 'list'],
      [{ messages: '[llm_response]', turns: 'state.turns + 1', status: '"open"', n: 3, ok: false, url: 'http://x' }, 'map'],
    ];
    for (const [v, kind] of cases) expect(parseStruct(structToText(v), { kind })).toEqual({ value: v });
  });
  it('checks numbers against kind and minimum', () => {
    expect(parseNumber('3', { kind: 'int', min: 1 })).toEqual({ value: 3 });
    expect(parseNumber('0', { kind: 'int', min: 1 })).toHaveProperty('error');
    expect(parseNumber('1.5', { kind: 'int' })).toHaveProperty('error');
    expect(parseNumber('1.5', { kind: 'number' })).toEqual({ value: 1.5 });
    expect(parseNumber('x', { kind: 'number' })).toHaveProperty('error');
  });
});

describe('source view helpers', () => {
  const doc = Text.of(['abc', 'défg', '']);
  it('converts 1-based line/column to offsets, clamped', () => {
    expect(lineColToOffset(doc, 1, 1)).toBe(0);
    expect(lineColToOffset(doc, 2, 3)).toBe(6);
    expect(lineColToOffset(doc, 2, 99)).toBe(8);
    expect(lineColToOffset(doc, 99, 1)).toBe(9);
  });
  it('converts diagnostics to lint diagnostics of the shown file', () => {
    const d = toCmDiagnostics(
      doc,
      [
        { severity: 'error', code: 'x', message: 'bad', file: '/a/agent.yaml', line: 2, column: 2, end_line: 2, end_column: 4, hint: 'fix it' },
        { severity: 'warning', code: 'y', message: 'other file', file: '/a/other.yaml', line: 1, column: 1, end_line: 1, end_column: 2, hint: null },
      ],
      'agent.yaml',
    );
    expect(d).toHaveLength(1);
    expect(d[0]).toMatchObject({ from: 5, to: 7, severity: 'error', source: 'x' });
    expect(d[0].message).toContain('hint: fix it');
  });
  it('computes a minimal change', () => {
    expect(minimalChange('hello world', 'hello brave world')).toEqual({ from: 6, to: 6, insert: 'brave ' });
    expect(minimalChange('same', 'same')).toBeNull();
  });
});

describe('misc', () => {
  it('builds an SVG with every node and edge label', () => {
    const svg = buildSvg(lokiView());
    for (const n of lokiView().nodes) expect(svg).toContain(`data-id="${n.id}"`);
    expect(svg).toContain('>ship<');
    expect(svg).toContain('>dynamic<');
    expect(svg.match(/<path d="M[^"]* C/g)).toHaveLength(lokiView().edges.length);
    expect(buildSvg(demoView(), true)).toContain('#111318');
  });
  it('picks fresh node names', () => {
    expect(freshName('call_llm', new Set(['call_llm', 'call_llm_2']))).toBe('call_llm_3');
    expect(freshName('llm', new Set())).toBe('llm');
  });
  it('recognises conflict errors and extracts messages', () => {
    expect(isConflictError({ kind: 'conflict', message: 'x' })).toBe(true);
    expect(isConflictError({ message: 'file changed on disk' })).toBe(true);
    expect(isConflictError({ message: 'permission denied' })).toBe(false);
    expect(errorMessage({ message: 'm' })).toBe('m');
    expect(errorMessage('s')).toBe('s');
    expect(errorMessage(null)).toBe('unknown error');
  });
});
