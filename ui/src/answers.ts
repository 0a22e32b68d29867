// Answers to a run's questions, shared by the desktop's interrupt dialog
// (components/debug/InterruptDialog.tsx) and the approvals inbox (inbox/): what a typed answer
// sends. Pure functions.

/** A sherma interrupt answer: a JSON object/array when the text is one, otherwise the text. */
export function interruptAnswerValue(text: string): unknown {
  const t = text.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      const v: unknown = JSON.parse(t);
      if (v !== null && typeof v === 'object') return v;
    } catch {
      // not JSON: send the text
    }
  }
  return text;
}
