// A Loki `input` node's `validation` checked in the browser before the answer is sent, with the
// engine's grammar and rule (crates/expr/src/template.rs: `check_input_validation`,
// `InputValidation::check`, `input_validation_error`): `len(input) OP N`, OP one of >= <= == > <,
// N a non-negative integer; the length is the answer's UTF-8 byte length (as upstream), the
// message counts characters (as upstream's does). An empty answer stands for the node's default.
// A rule this parser does not understand is left to the server (its 422 is shown).

export type CompareOp = '>=' | '<=' | '==' | '>' | '<';
export type InputValidation = { op: CompareOp; n: number };

/** Parses `len(input) OP N`; a string is why it is not one (the engine's wording). */
export function parseValidation(expr: string): InputValidation | string {
  const usage = 'expected `len(input) <op> <N>` with <op> one of >=, <=, ==, >, < and N a non-negative integer';
  const fail = (what: string) => `invalid validation '${expr}': ${what}; ${usage}`;
  let s = expr.trim();
  for (const token of ['len', '(', 'input', ')']) {
    if (!s.startsWith(token)) return fail(`expected '${token}'`);
    s = s.slice(token.length).trimStart();
  }
  let op: CompareOp;
  if (s.startsWith('>=')) op = '>=';
  else if (s.startsWith('<=')) op = '<=';
  else if (s.startsWith('==')) op = '==';
  else if (s.startsWith('!=')) return fail("'!=' is not supported");
  else if (s.startsWith('>')) op = '>';
  else if (s.startsWith('<')) op = '<';
  else return fail('missing comparison operator');
  const digits = s.slice(op.length).trim();
  if (!/^[0-9]+$/.test(digits)) return fail(`'${digits}' is not a non-negative integer`);
  const n = Number(digits);
  if (!Number.isSafeInteger(n)) return fail(`'${digits}' is too large`);
  return { op, n };
}

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

/** Whether `input` passes (UTF-8 byte length, as the engine). */
export function passes(v: InputValidation, input: string): boolean {
  const len = utf8Length(input);
  switch (v.op) {
    case '>=':
      return len >= v.n;
    case '<=':
      return len <= v.n;
    case '==':
      return len === v.n;
    case '>':
      return len > v.n;
    case '<':
      return len < v.n;
  }
}

/** The engine's refusal message (characters counted, as upstream's). */
export function validationError(expr: string, input: string): string {
  return `Input failed validation '${expr}' (got ${[...input].length} chars)`;
}

/**
 * Why an input answer would be refused, or null when it would pass (or when the rule is one this
 * page cannot judge: the server then decides). An empty answer is judged as the default.
 */
export function checkInputAnswer(validation: string | null | undefined, text: string, dflt: string | null | undefined): string | null {
  if (!validation) return null;
  const rule = parseValidation(validation);
  if (typeof rule === 'string') return null;
  const effective = text === '' ? (dflt ?? '') : text;
  return passes(rule, effective) ? null : validationError(validation, effective);
}
