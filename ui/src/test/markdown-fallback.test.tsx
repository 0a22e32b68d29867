// If the Markdown renderer throws (a parser bug, or a webview without a regex feature the GFM
// autolinker needs), the text is shown as plain text instead of failing the pane.
import { describe, expect, it, vi } from 'vitest';
import { render, screen } from '@testing-library/react';

vi.mock('react-markdown', () => ({
  default: () => {
    throw new SyntaxError('Invalid regular expression: invalid group specifier name');
  },
}));

import { Markdown } from '../components/Markdown';

describe('Markdown fallback', () => {
  it('shows the text as plain text when Markdown cannot be drawn', () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    render(<Markdown testid="md" className="call-text" text={'**hi** <b>x</b> sk-abcdefghijklmnopqrstuvwxyz0123'} />);
    const el = screen.getByTestId('md');
    expect(el.getAttribute('data-format')).toBe('plain');
    expect(el.className).toBe('call-text');
    expect(el.textContent).toBe('**hi** <b>x</b> ••••••');
    expect(el.querySelector('b')).toBeNull();
    err.mockRestore();
  });
});
