import { useEffect, useState } from 'react';
import { useApp } from './store';

function systemDark(): boolean {
  return typeof window !== 'undefined' && typeof window.matchMedia === 'function' && window.matchMedia('(prefers-color-scheme: dark)').matches;
}

/** True when the dark theme is in effect (explicit choice, or the OS preference under "system"). */
export function useDarkTheme(): boolean {
  const pref = useApp((s) => s.theme);
  const [sys, setSys] = useState(systemDark);
  useEffect(() => {
    if (typeof window === 'undefined' || typeof window.matchMedia !== 'function') return;
    const mq = window.matchMedia('(prefers-color-scheme: dark)');
    const on = () => setSys(mq.matches);
    mq.addEventListener?.('change', on);
    return () => mq.removeEventListener?.('change', on);
  }, []);
  return pref === 'dark' || (pref === 'system' && sys);
}
